"""Where the test suite's CPU time goes: pytest's process tree against the C
compiler's share of it (CI time work, BENCHMARKS.md "CI time").

    python bench/ci_profile.py [--replay [--flags="F..."]] [--keep DIR] [--top N]
                               TESTFILE... [-- PYTEST_ARGS]
    python bench/ci_profile.py --durations LOG [--top N]

Runs pytest on the given files in one process (a fresh kernel cache: the
conftest makes one per run) with $CC replaced by a wrapper that records each
compiler run's user+sys CPU time and keeps each kernel unit's source. Prints,
per file: the pytest tree's user+sys CPU seconds (getrusage of the waited-for
children: numdyn's compilers are pytest's children), the compiler's share,
the number of kernel units and their median cost.

--replay then compiles every recorded unit again, one after another, twice
with the flags it was compiled with: as it was, and with the parallel copy of
each task loop removed (codegen's split_parallel emits every parallel loop
twice, `if (ND_TEAM(E) && big) { omp parallel for LOOP } else { LOOP }`;
replacing `ND_TEAM(E) &&` by `0 &&` leaves GCC one copy to optimize). The
difference is what emitting each loop once would save the compiler. The
replayed kernels are not run: it measures compile time only.

--replay --flags="F..." compares the recorded flags with F appended
(e.g. "--param=max-combine-insns=2") instead of the one-copy text: the
precompiled header is built again with the same flags, as numdyn would.
--top N lists the N units that took the compiler longest (CPU s, size,
the test whose call compiled it, the unit's path) and the N tests whose
compiles took longest.

--durations LOG reads the times of a test run -- the JUnit XML file each
`make test` pass writes (build/test-times.xml, build/test-times-vector.xml),
or the output of a run with --durations=0 -- and prints the summed durations
per test file (setup + call + teardown: the time a worker spent in it) and
the N longest tests: where a CI run's time goes, and what SLOW_FIRST in
tests/conftest.py should start first.

Run it on a quiet machine or compare CPU seconds, not wall time.
"""
import argparse
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRAPPER = r"""#!/bin/bash
TIMEFORMAT='%U %S'
t0=$(mktemp)
{ time REALCC "$@" ; } 2>"$t0"; rc=$?
t=$(tail -n 1 "$t0"); head -n -1 "$t0" >&2; rm -f "$t0"
src=-
for a in "$@"; do case "$a" in *.c) if [ -f "$a" ]; then src=KEEP/$$.c; cp "$a" "$src"; fi;; esac; done
echo "$t $rc $src $PWD $*" >> LOG
printf '%s\t%s\n' "$src" "$PYTEST_CURRENT_TEST" >> LOG.tests
exit $rc
"""


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_file(path, extra, work, real_cc):
    log = os.path.join(work, "cc.log")
    keep = os.path.join(work, "units")
    os.makedirs(keep, exist_ok=True)
    wrap = os.path.join(work, "cc")
    with open(wrap, "w") as f:
        f.write(WRAPPER.replace("REALCC", shlex.quote(real_cc)).replace("KEEP", shlex.quote(keep))
                .replace("LOG", shlex.quote(log)))
    os.chmod(wrap, 0o755)
    for f in (log, log + ".tests"):
        if os.path.exists(f):
            os.remove(f)
    env = dict(os.environ, CC=wrap)
    before, t0 = children_cpu(), time.time()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path] + extra,
                          cwd=ROOT, env=env, capture_output=True, text=True)
    cpu, wall = children_cpu() - before, time.time() - t0
    summary = [ln for ln in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    return cpu, wall, (summary[-1] if summary else proc.stdout[-300:]), read_log(log)


def read_log(log):
    """the wrapper's records: (CPU s, kept source or "-", arguments, the
    test that was running: $PYTEST_CURRENT_TEST without its phase)"""
    units, tests = [], {}
    if os.path.exists(log + ".tests"):
        with open(log + ".tests") as f:
            for ln in f:
                src, _, test = ln.rstrip("\n").partition("\t")
                tests[src] = test.rsplit(" (", 1)[0]
    if os.path.exists(log):
        with open(log) as f:
            for ln in f:
                w = ln.split()
                units.append((float(w[0]) + float(w[1]), w[3], w[5:], tests.get(w[3], "?")))
    return units


def _junit_records(path):
    """(seconds, "all", node id) of each testcase of a --junitxml file"""
    import xml.etree.ElementTree as ET
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname", "")
        parts = cls.split(".")
        # classname is the module's dotted path, then any test classes
        k = next((i for i in range(len(parts), 0, -1)
                  if os.path.exists(os.path.join(ROOT, *parts[:i]) + ".py")), len(parts))
        node = "/".join(parts[:k]) + ".py::" + "::".join(parts[k:] + [case.get("name", "")])
        yield float(case.get("time", 0) or 0), "all", node


def _durations_records(path):
    """(seconds, phase, node id) of each line of a --durations=0 log"""
    pat = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*)$")
    with open(path, errors="replace") as f:
        for ln in f:
            m = pat.match(ln)
            if m:
                yield float(m.group(1)), m.group(2), m.group(3).strip()


def durations(log, top):
    """per-file sums and the longest tests of a --durations=0 pytest log or
    a --junitxml file (`make test` writes build/test-times*.xml)"""
    per_file, per_test, phase = {}, {}, {}
    records = _junit_records(log) if log.endswith(".xml") else _durations_records(log)
    for t, ph, node in records:
        fname = node.split("::", 1)[0]
        per_file[fname] = per_file.get(fname, 0.0) + t
        per_test[node] = per_test.get(node, 0.0) + t
        phase[ph] = phase.get(ph, 0.0) + t
    total = sum(per_file.values())
    print(f"{len(per_test)} tests, {total:.0f} s summed (" +
          ", ".join(f"{k} {v:.0f} s" for k, v in sorted(phase.items())) + ")")
    print("| file | tests | summed s | share |\n|---|---:|---:|---:|")
    counts = {}
    for node in per_test:
        counts[node.split("::", 1)[0]] = counts.get(node.split("::", 1)[0], 0) + 1
    for fname, t in sorted(per_file.items(), key=lambda kv: -kv[1])[:top or 30]:
        print(f"| {fname} | {counts[fname]} | {t:.1f} | {100 * t / max(total, 1e-9):.1f}% |")
    print("\nlongest tests (setup + call + teardown):")
    for node, t in sorted(per_test.items(), key=lambda kv: -kv[1])[:top or 30]:
        print(f"  {t:7.1f} s  {node}")


def replay(units, work, real_cc, extra_flags=()):
    """compile each recorded kernel unit as recorded and with one loop copy
    (or, given extra_flags, with those flags appended): (seconds as
    recorded, seconds of the variant), user+sys"""
    totals = [0.0, 0.0]
    built = [None, None]
    for _, src, args, _test in units:
        if src == "-" or "-shared" not in args:
            continue
        # the recorded flags up to the unit's own file, without its build
        # directory's -I of the precompiled header (built here instead)
        flags = [a for a in args if not a.startswith("-I../pch-")]
        i = next(k for k, a in enumerate(flags) if a.endswith(".c"))
        inc = [a for a in flags[:i] if a.startswith("-I")]
        opts = [a for a in flags[:i] if not a.startswith("-I") and a != "-shared"]
        # a precompiled header per variant (its flags must match the unit's)
        for k in (0, 1):
            vopts = opts + (list(extra_flags) if k else [])
            pch = os.path.join(work, f"pch{k}")
            if built[k] != vopts:
                shutil.rmtree(pch, ignore_errors=True)
                os.makedirs(pch)
                # what numdyn precompiles (toolchain.h, ND_PCH_SRC)
                hdr = os.path.join(work, "nd_pch.h")
                with open(hdr, "w") as f:
                    f.write('#include "nd_kernel.h"\n#include "nd_loop.h"\n')
                subprocess.run([real_cc] + vopts + inc + ["-x", "c-header", hdr, "-o",
                               os.path.join(pch, "nd_kernel.h.gch")], check=True)
                built[k] = vopts
        one = src
        if not extra_flags:
            with open(src) as f:
                text = f.read()
            one = os.path.join(work, "one.c")
            with open(one, "w") as f:
                f.write(text.replace("ND_TEAM(E) &&", "0 &&"))
        for k, s in enumerate((src, one)):
            cmd = ([real_cc] + flags[:i] + (list(extra_flags) if k else []) + ["-I" + os.path.join(work, f"pch{k}")]
                   + [s] + ["-o", os.path.join(work, "u.so")] + flags[i + 3:])
            before = children_cpu()
            subprocess.run(cmd, check=True)
            totals[k] += children_cpu() - before
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--durations", metavar="LOG", help="summarize a pytest --durations=0 log")
    ap.add_argument("--replay", action="store_true")
    ap.add_argument("--flags", help="replay with these flags appended (instead of one loop copy)")
    ap.add_argument("--top", type=int, default=0, help="list the N slowest units")
    ap.add_argument("--keep", help="keep the units and logs here")
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    a = ap.parse_args(argv)
    if a.durations:
        durations(a.durations, a.top)
        return
    if not a.files:
        ap.error("no test files")
    real_cc = shutil.which((os.environ.get("CC") or "cc").split()[0])
    print(f"load average {os.getloadavg()[0]:.1f}; compiler {real_cc}")
    extra_flags = shlex.split(a.flags) if a.flags else []
    variant = f"with {a.flags}" if a.flags else "one copy"
    print("| file | tests | CPU s | cc CPU s | cc share | units | median unit s |"
          + (f" replay s | {variant} s | saved |" if a.replay else ""))
    print("|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if a.replay else ""))
    for path in a.files:
        work = a.keep or tempfile.mkdtemp(prefix="nd-ci-profile-")
        if a.keep:
            work = os.path.join(a.keep, os.path.basename(path))
            os.makedirs(work, exist_ok=True)
        cpu, wall, summary, units = run_file(path, extra, work, real_cc)
        kern = [u for u in units if "-shared" in u[2]]
        cc = sum(u[0] for u in units)
        med = statistics.median(u[0] for u in kern) if kern else 0.0
        row = (f"| {path} | {summary.strip()} | {cpu:.1f} | {cc:.1f} | {100 * cc / max(cpu, 1e-9):.0f}% |"
               f" {len(kern)} | {med:.3f} |")
        if a.replay:
            r0, r1 = replay(kern, work, real_cc, extra_flags)
            row += f" {r0:.1f} | {r1:.1f} | {100 * (r0 - r1) / max(r0, 1e-9):.0f}% |"
        print(row, flush=True)
        for t, src, args, test in sorted(kern, key=lambda u: -u[0])[:a.top]:
            size = os.path.getsize(src) if os.path.exists(src) else 0
            print(f"    {t:6.2f} s  {size / 1024:6.1f} KB  {test}  {src}")
        by_test = {}
        for t, _src, _args, test in kern:
            by_test[test] = by_test.get(test, (0.0, 0))
            by_test[test] = (by_test[test][0] + t, by_test[test][1] + 1)
        if a.top:
            print("  tests whose compiles took longest (cc CPU s, units):")
        for test, (t, n) in sorted(by_test.items(), key=lambda kv: -kv[1][0])[:a.top]:
            print(f"    {t:6.2f} s  {n:4d}  {test}")
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
