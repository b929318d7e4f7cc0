"""Run every bench/bench_*.py and write one markdown report for BENCHMARKS.md.

    python bench/run_all.py [--quick] [--only native,views] [--output FILE]

Each benchmark file runs in its own process (a crash or a hang in one does not
take the others down). A file defining ``run(quick=False) -> list[dict]``
(see bench/runner.py) becomes a table; a file without it is run as a script
and its output is quoted as it printed it. Failures are reported as failures.
"""
import argparse
import ast
import glob
import json
import os
import runpy
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from runner import machine_description, report  # noqa: E402


def _defines_run(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    return any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body)


def _single(path, json_out, quick):
    """Child process: run one benchmark file, rows to json_out."""
    name = os.path.splitext(os.path.basename(path))[0]
    sys.argv = [path] + (["--quick"] if quick else [])
    rows = None
    if _defines_run(path):
        rows = list(runpy.run_path(path, run_name=name)["run"](quick=quick))
    else:
        runpy.run_path(path, run_name="__main__")
    with open(json_out, "w") as f:
        json.dump({"rows": rows}, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--only", default="", help="comma-separated names (bench_<name>.py)")
    ap.add_argument("--output", default=None, help="write the markdown report here too")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark file")
    ap.add_argument("--single", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.single:
        _single(args.single, args.json, args.quick)
        return 0

    files = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    if args.only:
        want = {f"bench_{n.strip()}.py" for n in args.only.split(",") if n.strip()}
        files = [f for f in files if os.path.basename(f) in want]
    if not files:
        print("no bench/bench_*.py to run", file=sys.stderr)
        return 1

    md = ["## Machine", "", "```", machine_description(), "```", ""]
    failed = 0
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"== {name}", flush=True)
        json_out = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                f"numdyn-{name}-{os.getpid()}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--single", path, "--json", json_out]
        if args.quick:
            cmd.append("--quick")
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = -1, e.stdout or "", f"timed out after {args.timeout:.0f} s"
            out = out.decode() if isinstance(out, bytes) else out
        took = time.perf_counter() - t0
        md += [f"## {name}", ""]
        rows = None
        if rc == 0 and os.path.exists(json_out):
            with open(json_out) as f:
                rows = json.load(f)["rows"]
        if os.path.exists(json_out):
            os.unlink(json_out)
        if rc != 0:
            failed += 1
            tail = "\n".join((err or "").strip().splitlines()[-15:])
            print(out, end="")
            print(f"{name} FAILED (exit {rc}):\n{tail}", file=sys.stderr)
            md += [f"**FAILED** (exit {rc}) after {took:.0f} s:", "", "```", tail, "```", ""]
        elif rows is None:
            print(out, end="")
            md += ["```", out.rstrip(), "```", ""]
        else:
            report(rows, describe_machine=False)
            import io
            buf = io.StringIO()
            report(rows, file=buf, markdown=True)
            md += [buf.getvalue().rstrip(), ""]
        print(f"   ({took:.0f} s)", flush=True)

    text = "\n".join(md) + "\n"
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as f:
            f.write(text)
        print(f"markdown report written to {args.output}")
    else:
        print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
