"""The programs the speed floor runs as NumPy (issue 13): NumPy vs numdyn's own
path (floor off) vs numdyn's default (floor on), interleaved in one process.

    python bench/bench_floor_rows.py [--cpu] [--reps N] [NAME ...]

The rows of bench_programs.py where numdyn's own warm call lost to NumPy, so
the floor (numdyn.config.floor) ran the function as plain NumPy. Columns:
median per call of NumPy, of the own path (compile(fn, options={"floor":
False})) and of the default compile (after 14 calls: the floor has decided),
each ratio numpy/that, the floor's choice, and the own path's flushes and
kernel runs per call.

--cpu times with time.thread_time() instead of wall time: on a machine other
work loads, CPU time of the calling thread is what stays comparable between
runs (run it with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 so that all work
is on that thread).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_programs as B  # noqa: E402  (sets NUMDYN_CACHE_DIR before numdyn loads)
import numdyn  # noqa: E402

ROWS = ["LU partial", "Jacobi until", "seam carving", "logistic regression", "RNN forward",
        "random walk", "Lorenz", "Mandelbrot boolean"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="thread CPU time instead of wall time")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("names", nargs="*", help="rows whose name contains one of these")
    opts = ap.parse_args(argv)
    clock = time.thread_time if opts.cpu else time.perf_counter
    print(B.machine_description())
    print(f"clock: {'thread CPU time' if opts.cpu else 'wall'}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| program | NumPy | own path | default (floor) | flushes / kernels a call |")
    print("|---|---:|---:|---:|---:|")
    cases = B.program_cases(False)
    for key in opts.names or ROWS:
        for case in [c for c in cases if key.lower() in c.name.lower()]:
            args = case.make_args()
            want = case.fn(*args)
            own = numdyn.compile(case.fn, options={"floor": False})
            flo = numdyn.compile(case.fn)
            for _ in range(14):
                for f in (own, flo):
                    e = B.compare(want, f(*args), case.rtol, True, case.max_int_diff)
                    if e:
                        raise SystemExit(f"{case.name}: numdyn differs from NumPy: {e}")
            numdyn.utils.wait_compiles()  # background compiles are not timed
            own(*args)
            c0 = dict(numdyn.utils.counters)
            own(*args)
            c1 = dict(numdyn.utils.counters)
            tn, to, tf = [], [], []
            for _ in range(opts.reps):
                t = clock(); case.fn(*args); tn.append(clock() - t)
                t = clock(); own(*args); to.append(clock() - t)
                t = clock(); flo(*args); tf.append(clock() - t)
            mn, mo, mf = (statistics.median(x) for x in (tn, to, tf))
            info = flo._floor_info_for(*args) or {}
            print(f"| {case.name} | {B.format_time(mn)} | {B.format_time(mo)} ({mn / mo:.2f}x) | "
                  f"{B.format_time(mf)} ({mn / mf:.2f}x, {info.get('path')}) | "
                  f"{c1['flushes'] - c0['flushes']} / {c1['kernel_runs'] - c0['kernel_runs']} |",
                  flush=True)


if __name__ == "__main__":
    main()
