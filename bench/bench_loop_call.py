"""The per-call cost of a captured loop (issue 17): functions around loops
of a few elements, where the call around the loop -- the region's
arguments, its signature, the values handed back -- is most of the time.
The plain function, numdyn.compile of it and numba.njit of it are called
in turn `--rounds` times (default 3000), each call timed alone; medians
(and minima) per side, and numdyn/numba's ratio of medians. Run it from two
builds (PYTHONPATH) to compare them.

    python bench/bench_loop_call.py [--rounds N]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_programs  # noqa: E402,F401  (sets NUMDYN_CACHE_DIR before numdyn loads)

import numpy as np  # noqa: E402

import numdyn  # noqa: E402
import programs_loops as L  # noqa: E402


def sum_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def three_accumulators(x, a, b, c):
    s = 0.0
    t = 0
    u = 1.0
    for i in range(x.shape[0]):
        s += x[i] * a
        t += i * b
        u = u * c + x[i]
    return s, t, u


def cases():
    rng = np.random.default_rng(7)
    x8 = np.arange(8.0)
    yield "sum of squares, 8 elements", sum_squares, (x8,)
    yield "3 accumulators of mixed types, 8 elements", three_accumulators, (x8, 2.0, 3, 0.5)
    yield "Horner, 4 points, degree 11", L.horner, (rng.standard_normal(12), rng.uniform(-1.0, 1.0, 4))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3000)
    opt = ap.parse_args()
    import numba
    for name, fn, args in cases():
        nd, nb = numdyn.compile(fn), numba.njit(fn)
        for _ in range(200):
            nd(*args)
            nb(*args)
        want = fn(*args)
        np.testing.assert_allclose(np.asarray(nd(*args), dtype=float), np.asarray(want, dtype=float))
        t = {"python": [], "numdyn": [], "numba": []}
        for _ in range(opt.rounds):
            for k, f in (("python", fn), ("numdyn", nd), ("numba", nb)):
                t0 = time.perf_counter()
                f(*args)
                t[k].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) * 1e6 for k, v in t.items()}
        print(f"{name:44s} " + " | ".join(f"{k} min {min(v) * 1e6:5.2f} med {med[k]:5.2f} us" for k, v in t.items())
              + f" | numdyn/numba {med['numdyn'] / med['numba']:.2f}", flush=True)
    print(f"- load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
