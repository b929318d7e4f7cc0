"""Frozen mode (numdyn.run): NumPy vs numdyn vs the same compiled function
called inside ``numdyn.run()``, interleaved in one process, median seconds
per call. Frozen mode must run seen inputs at compiled speed: it uses the
programs compiled already (replay, program cache, kernel caches) and never
compiles.

    python bench/bench_frozen.py [--quick]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402
from programs_loops import biquad  # noqa: E402

import numdyn  # noqa: E402


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def rms_norm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def _cases(quick):
    rng = np.random.default_rng(0)
    n = 256 if quick else 1024
    x = rng.standard_normal((n, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    sig = rng.standard_normal(20000 if quick else 200000)
    return [("gelu f32 (%d,1024)" % n, gelu, (x,)),
            ("rms_norm f32 (%d,1024)" % n, rms_norm, (x, w)),
            # a captured element loop: frozen mode runs its C for a seen signature
            ("biquad loop (%d,)" % sig.size, biquad, (sig, 0.2, 0.3, 0.2, -0.5, 0.1)),
            # call overhead: frozen mode's own cost per call shows here
            ("gelu f64 (8,): call overhead", gelu, (rng.standard_normal(8),))]


def run(quick=False):
    rows = []
    for name, fn, args in _cases(quick):
        compiled = numdyn.compile(fn)
        frozen = numdyn.run(compiled)
        frozen_plain = numdyn.run(fn)  # the plain function: uses `compiled`'s programs
        ref = fn(*args)
        for got in (compiled(*args), frozen(*args), frozen_plain(*args)):  # compiles once, then seen
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
        numdyn.utils.wait_compiles()
        # checked around the whole timing, not per call: a wrapper would add
        # its own cost to frozen mode's (the compiled calls compile nothing
        # either: their inputs are seen)
        c = numdyn.utils.counters
        k, lf = c["kernels_compiled"], c["loop_fallbacks"]
        t = timeit_interleaved({"numpy": fn, "numdyn": compiled, "frozen": frozen,
                                "run(plain fn)": frozen_plain}, args,
                               repeat=5 if quick else 15)
        assert c["kernels_compiled"] == k and c["loop_fallbacks"] == lf, \
            "frozen mode compiled, or ran a seen loop in Python"
        rows.append({"benchmark": name, **t,
                     "note": "numdyn %.2fx, frozen %.2fx, run(plain fn) %.2fx NumPy's speed"
                             % (t["numpy"] / t["numdyn"], t["numpy"] / t["frozen"],
                                t["numpy"] / t["run(plain fn)"])})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    report(run(quick=ap.parse_args().quick))
