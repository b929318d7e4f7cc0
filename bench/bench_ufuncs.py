"""NumPy's float ufuncs one at a time: `np.<ufunc>(x)` alone in a compiled
function, float32 and float64, contiguous arrays (default 1e6 elements),
NumPy and numdyn interleaved in one process, median seconds per call.

    python bench/bench_ufuncs.py [--quick] [--n N] [--only NAME[,NAME]] [--dtype f4|f8]

Operands lie in each function's domain (no floating-point warning); each
numdyn result is checked against NumPy before it is timed. The target: no
row below 1.00x -- a user whose code is `np.arcsinh(x)` must not wait longer
under numdyn than under NumPy.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

# name -> (low, high) of a uniform operand; "wide" ranges are log-uniform
UNARY = {
    "exp": (-50, 50), "exp2": (-70, 70), "expm1": (-3, 3), "log": ("wide",), "log2": ("wide",),
    "log10": ("wide",), "log1p": (-0.9, 1e3), "sqrt": ("wide",), "cbrt": (-1e6, 1e6),
    "sin": (-10, 10), "cos": (-10, 10), "tan": (-1.5, 1.5), "arcsin": (-1, 1), "arccos": (-1, 1),
    "arctan": (-20, 20), "sinh": (-20, 20), "cosh": (-20, 20), "tanh": (-5, 5),
    "arcsinh": (-1e3, 1e3), "arccosh": (1, 1e3), "arctanh": (-0.99, 0.99),
    "deg2rad": (-360, 360), "rad2deg": (-7, 7), "square": (-1e3, 1e3), "reciprocal": (0.5, 1e3),
    "absolute": (-1, 1), "negative": (-1, 1), "rint": (-1e3, 1e3), "floor": (-1e3, 1e3),
    "ceil": (-1e3, 1e3), "trunc": (-1e3, 1e3), "sign": (-1, 1),
}
BINARY = {
    "power": ((0.1, 10), (-5, 5)), "arctan2": ((-1, 1), (-1, 1)), "hypot": ((-1e3, 1e3), (-1e3, 1e3)),
    "logaddexp": ((-50, 50), (-50, 50)), "logaddexp2": ((-50, 50), (-50, 50)),
    "divide": ((-1, 1), (0.5, 2)), "maximum": ((-1, 1), (-1, 1)), "fmod": ((-1e3, 1e3), (0.5, 7)),
    "floor_divide": ((-1e3, 1e3), (0.5, 7)), "remainder": ((-1e3, 1e3), (0.5, 7)),
    "copysign": ((-1, 1), (-1, 1)),
}


def _operand(rng, spec, n, dt):
    if spec[0] == "wide":
        return (10.0 ** rng.uniform(-30, 30, n)).astype(dt)
    lo, hi = spec
    return rng.uniform(lo, hi, n).astype(dt)


def _fn(name, nargs):
    uf = getattr(np, name)
    if nargs == 1:
        def f(x):
            return uf(x)
    else:
        def f(x, y):
            return uf(x, y)
    f.__name__ = "u_" + name
    return f


def run(quick=False, n=None, only=None, dtypes=("f4", "f8")):
    n = n or (200_000 if quick else 1_000_000)
    repeat = 5 if quick else 11
    rng = np.random.default_rng(0)
    rows = []
    table = [(k, 1, (v,)) for k, v in UNARY.items()] + [(k, 2, v) for k, v in BINARY.items()]
    for name, nargs, specs in table:
        if only and name not in only:
            continue
        for dt in dtypes:
            args = tuple(_operand(rng, s, n, np.dtype(dt)) for s in specs)
            f = _fn(name, nargs)
            cf = numdyn.compile(f)
            with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
                ref = f(*args)
            got = cf(*args)
            assert got.dtype == ref.dtype, (name, dt)
            rtol = 1e-5 if dt == "f4" else 1e-12
            # atol: a result near 0 from cancelling operands (logaddexp of
            # x ~ -y) differs from NumPy's by an ULP of the operands
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * 0.1, err_msg=name)
            t = timeit_interleaved({"numpy": f, "numdyn": cf}, args, repeat=repeat, warmup=2)
            rows.append({"benchmark": "%s %s (%d,)" % (name, np.dtype(dt).name, n), **t})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int)
    ap.add_argument("--only")
    ap.add_argument("--dtype", choices=["f4", "f8"])
    a = ap.parse_args()
    load0 = os.getloadavg()[0]
    rows = run(a.quick, a.n, set(a.only.split(",")) if a.only else None, (a.dtype,) if a.dtype else ("f4", "f8"))
    report(rows)
    print("load average %.1f at the start, %.1f at the end; OMP_NUM_THREADS=%s"
          % (load0, os.getloadavg()[0], os.environ.get("OMP_NUM_THREADS", "unset")))
