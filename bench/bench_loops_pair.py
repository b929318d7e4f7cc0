"""numdyn vs numba on the element-loop programs (bench/bench_loops.py's
cases), call against call: for each program, the compiled function and
numba.njit of the same function are called alternately `--rounds` times
(default 300) and each call is timed on its own; the minimum and the median
of each side are reported, and numba/numdyn's ratio of medians. On a loaded
machine a minimum over many single calls is the least disturbed figure, and
interleaving puts both sides under the same load; run it from two builds
(PYTHONPATH) to compare them.

    python bench/bench_loops_pair.py [--only SUBSTR[,SUBSTR...]] [--rounds N]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_loops  # noqa: E402  (bench_programs sets NUMDYN_CACHE_DIR before numdyn loads)

import numpy as np  # noqa: E402

import numdyn  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=300)
    opt = ap.parse_args()
    import numba
    keys = [k for k in opt.only.split(",") if k]
    rows = []
    for case in bench_loops.loop_cases():
        if keys and not any(k in case.name for k in keys):
            continue
        args = case.make_args()
        nd, nb = numdyn.compile(case.fn), numba.njit(case.fn)
        for _ in range(20):
            nd(*args)
            nb(*args)
        t = {"nd": [], "nb": []}
        for _ in range(opt.rounds):
            for k, f in (("nd", nd), ("nb", nb)):
                t0 = time.perf_counter()
                f(*args)
                t[k].append(time.perf_counter() - t0)
        md, mb = np.median(t["nd"]), np.median(t["nb"])
        rows.append(md / mb)
        print(f"{case.name:48s} numdyn min {min(t['nd']) * 1e6:8.1f} med {md * 1e6:8.1f} us | "
              f"numba min {min(t['nb']) * 1e6:8.1f} med {mb * 1e6:8.1f} us | numdyn/numba {md / mb:5.2f}",
              flush=True)
    if rows:
        print(f"- geomean numdyn/numba time (medians): {float(np.exp(np.mean(np.log(rows)))):.2f} "
              f"over {len(rows)} programs; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
