"""Plain ndarray subclass arguments (class MyArr(np.ndarray) with an
__array_finalize__ copying an attribute): NumPy vs numdyn on the subclass
vs numdyn on the same data as a plain ndarray, interleaved in one process,
median seconds per call. A subclass argument is traced on every call (not
replayed: replay would skip __array_finalize__), so the gap to the plain
column is the tracing cost; results are checked to be NumPy's (type,
attribute, values) first.

    python bench/bench_subclass.py [--quick]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402


class Quantity(np.ndarray):
    def __array_finalize__(self, obj):
        self.unit = getattr(obj, "unit", None)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def standardize(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)  # std(axis): a NumPy-run step


def _cases(quick):
    rng = np.random.default_rng(0)
    n = 256 if quick else 1024
    big = rng.standard_normal((n, 1024)).astype(np.float32)
    small = rng.standard_normal(64)
    return [("gelu f32 (%d,1024)" % n, gelu, big),
            ("standardize f32 (%d,1024)" % n, standardize, big),
            ("gelu f64 (64,): per-call cost", gelu, small)]


def run(quick=False):
    rows = []
    for name, fn, data in _cases(quick):
        q = data.view(Quantity)
        q.unit = "m"
        compiled = numdyn.compile(fn)
        want = fn(q)
        got = compiled(q)
        assert type(got) is Quantity and got.unit == "m" and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        compiled(data)
        numdyn.utils.wait_compiles()
        t = timeit_interleaved({"numpy": lambda: fn(q), "numdyn": lambda: compiled(q),
                                "numdyn plain": lambda: compiled(data)}, (),
                               repeat=5 if quick else 15)
        rows.append({"benchmark": name, **t,
                     "note": "subclass %.2fx, plain ndarray %.2fx NumPy's speed"
                             % (t["numpy"] / t["numdyn"], t["numpy"] / t["numdyn plain"])})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    report(run(quick=ap.parse_args().quick))
