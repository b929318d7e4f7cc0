"""Masked reductions and lengths (issue 13, numpy_shim/shim_masked.c):
a[m].max() / .min() / .std() / len(a[m]) with m computed in the graph. numdyn computes
only the mask's count (a flush of the count), never a[m]; before, each such
read compacted: a flush of the value and the mask, then NumPy's a[m] and its
reduction. NumPy and numdyn's own path (floor off) interleaved in one run.

    python bench/bench_masked_minmax.py [--reps N]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NUMDYN_BACKGROUND_COMPILE", "0")  # warm calls run compiled kernels
import bench_programs as B  # noqa: E402  (sets NUMDYN_CACHE_DIR before numdyn loads)
import numdyn  # noqa: E402
import numpy as np  # noqa: E402


def clipped_range(x, lo):
    # the spread and the number of the values above lo, after a transform
    m = x > lo
    v = np.sqrt(x[m]) * 2.0 + 1.0
    return v.max() - v.min(), len(v)


def normalize_selected(x, lo):
    # scale the selected values into [0, 1] in place
    m = x > lo
    hi = x[m].max()
    x[m] = x[m] / hi
    return x


def standardize_selected(x, lo):
    # z-scores of the selected values, written back
    m = x > lo
    mu, sd = x[m].mean(), x[m].std()
    x[m] = (x[m] - mu) / sd
    return x


PROGRAMS = [("clipped range", clipped_range), ("normalize selected", normalize_selected),
            ("standardize selected", standardize_selected)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=21)
    opts = ap.parse_args(argv)
    print(B.machine_description())
    print(f"load average at start {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print(f"{'program':<22}{'n':>9}{'numpy us':>11}{'numdyn us':>11}{'numpy/numdyn':>14}")
    for name, fn in PROGRAMS:
        for n in (1_000, 1_000_000):
            x0 = np.random.default_rng(0).random(n) + 0.01
            cf = numdyn.compile(fn, options={"floor": False})
            np.testing.assert_allclose(cf(x0.copy(), 0.3)[0], fn(x0.copy(), 0.3)[0])
            for _ in range(3):
                cf(x0.copy(), 0.3)
            tn, td = [], []
            for _ in range(opts.reps):
                for f, acc in ((fn, tn), (cf, td)):
                    x = x0.copy()
                    t0 = time.perf_counter()
                    f(x, 0.3)
                    acc.append(time.perf_counter() - t0)
            a, b = statistics.median(tn), statistics.median(td)
            print(f"{name:<22}{n:>9}{a * 1e6:>11.1f}{b * 1e6:>11.1f}{a / b:>14.2f}")
    print(f"\nload average at end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
