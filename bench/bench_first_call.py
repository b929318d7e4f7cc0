"""First calls (issue 13, point 3): every row of bench_programs.py and
bench_loops.py, first call only, under each compile mode, side by side in
one run.

    python bench/bench_first_call.py [--quick] [--only NAME] [--output FILE.md]

Per row, interleaved (the modes of one row run back to back, in an order
that turns from row to row, so a change of the machine's load hits them
alike):

numpy        one call of the function as it is (the reference; the result
             of every mode is checked against it).
wait no pch  the default before session 11: numdyn.config.background_compile
             off (the call waits for every compiler it needs; independent
             kernels of one graph compile as up to one unit per core, in
             parallel) and no precompiled header (NUMDYN_PCH=0).
wait         the same with nd_kernel.h precompiled (src/toolchain/pch.c):
             what the header costs each compile.
budget 1 s   numdyn's default: background_compile on, compile_budget 1.0,
             the header precompiled: the call waits for its compilers up to
             1 s in all, runs compiled what was built, NumPy runs the rest.
no wait      background_compile on, compile_budget 0: NumPy runs every graph
             whose kernels are not built (captured loops still wait for
             their compiler).

Each first call is one call of a fresh numdyn.compile(fn) after
numdyn.reset() and numdyn.utils.clear_cache() (a private, fresh
NUMDYN_CACHE_DIR); background compiles are waited for
(numdyn.utils.wait_compiles()) before the next measurement. The process
start-up (extension, OpenMP, the compiler's first run) is paid once before
the first row.
"""
import argparse
import copy
import statistics
import sys
import time
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_programs as BP  # noqa: E402  (sets a fresh NUMDYN_CACHE_DIR first)
import bench_loops as BL  # noqa: E402
from runner import format_time, machine_description  # noqa: E402

import numdyn  # noqa: E402

# (name, background_compile, compile_budget, precompiled header)
MODES = (("wait no pch", False, 1.0, False), ("wait", False, 1.0, True),
         ("budget 1 s", True, 1.0, True), ("no wait", True, 0.0, True))


def first_call(case, background, budget, pch, ref, a_ref):
    numdyn.config.background_compile = background
    numdyn.config.compile_budget = budget
    os.environ["NUMDYN_PCH"] = "1" if pch else "0"  # read at each compile
    BP._reset_numdyn()
    args = copy.deepcopy(case.make_args())
    c0 = dict(numdyn.utils.counters)
    t0 = time.perf_counter()
    got = numdyn.compile(case.fn)(*args)
    t = time.perf_counter() - t0
    runs = numdyn.utils.counters["compiling_runs"] - c0.get("compiling_runs", 0)
    numdyn.utils.wait_compiles()
    err = BP.compare(ref, got, case.rtol, False, case.max_int_diff)
    if err is None:
        err = BP.compare(tuple(a_ref), tuple(args), case.rtol, False, None,
                         "arguments after the call")
    return t, runs, err


def measure(case, turn=0):
    args = case.make_args()
    a_ref = copy.deepcopy(args)
    t0 = time.perf_counter()
    ref = case.fn(*a_ref)
    row = {"benchmark": case.name, "numpy": time.perf_counter() - t0, "notes": []}
    ref = copy.deepcopy(ref)
    # the modes' order turns from row to row: what the first first-call of a
    # function pays beyond the others (if anything) is spread over all modes
    for name, bg, budget, pch in MODES[turn % len(MODES):] + MODES[:turn % len(MODES)]:
        try:
            t, runs, err = first_call(case, bg, budget, pch, ref, a_ref)
        except Exception as e:  # recorded, never a made-up figure
            row[name] = None
            row["notes"].append(f"{name}: {type(e).__name__}: {e}"[:160])
            continue
        if err is not None:
            row[name] = None
            row["notes"].append(f"{name}: WRONG ANSWER: {err}"[:200])
        else:
            row[name] = t
            if runs:
                row["notes"].append(f"{name}: {runs} graphs ran by NumPy")
    return row


def summary(rows, label):
    out = []
    for name, *_ in MODES:
        ts = [r[name] for r in rows if r.get(name) is not None]
        if ts:
            out.append(f"{label}, {name}: median {format_time(statistics.median(ts))}, "
                       f"max {format_time(max(ts))} ({len(ts)} rows)")
    return out


def table(rows):
    head = ["benchmark", "numpy"] + [m[0] for m in MODES] + ["note"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
    for r in rows:
        cells = [r["benchmark"], format_time(r["numpy"])]
        cells += ["-" if r.get(m[0]) is None else format_time(r[m[0]]) for m in MODES]
        cells.append("; ".join(r["notes"]).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--output")
    opts = ap.parse_args(argv)
    t_all = time.perf_counter()
    head = machine_description()
    print(head, flush=True)
    BP._warm_up()
    numdyn.utils.wait_compiles()  # the precompiled header, built once per compiler
    md = ["### First calls by compile mode (bench/bench_first_call.py)", "", "```", head, "```", ""]
    sums = []
    for label, cases in (("bench_programs", BP.program_cases(opts.quick)),
                         ("bench_loops", BL.loop_cases(opts.quick))):
        rows = []
        for case in cases:
            if opts.only and opts.only.lower() not in case.name.lower():
                continue
            r = measure(case, len(rows))
            print(f"  {case.name:<46} numpy {format_time(r['numpy']):>9}  " + "  ".join(
                f"{m[0]} {'-' if r.get(m[0]) is None else format_time(r[m[0]]):>9}" for m in MODES),
                flush=True)
            rows.append(r)
        if rows:
            md += [f"#### {label}", "", table(rows), ""]
            sums += summary(rows, label)
    md += [f"- {s}" for s in sums]
    md += [f"- total run time {time.perf_counter() - t_all:.0f} s", ""]
    text = "\n".join(md)
    print()
    print(text)
    if opts.output:
        with open(opts.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
