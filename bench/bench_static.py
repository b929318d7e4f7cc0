"""Static sizes (numdyn.mark_static / compile(dynamic=False)) compile
constant-size kernels: NumPy vs numdyn's shape-generic program vs the same
function compiled with dynamic=False, interleaved in one process, median
seconds per call. Each static kernel is checked to hold its extents as C
constants (`const int64_t n0 = 32;`), the generic one to read them from its
arguments.

    python bench/bench_static.py [--quick]
"""
import argparse
import io
import logging
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def centre_rows(x):
    return (x - x.mean(axis=1, keepdims=True)) * 2.0


def _cases():
    rng = np.random.default_rng(0)
    # constant extents go where the run time cannot merge a kernel's dims:
    # one-dimensional kernels, rows (reduced next to kept dims)
    return [("gelu f64 (96,)", gelu, (rng.standard_normal(96),)),
            ("gelu f64 (1000,)", gelu, (rng.standard_normal(1000),)),
            ("centre rows f64 (16,24)", centre_rows, (rng.standard_normal((16, 24)),)),
            ("centre rows f32 (64,100)", centre_rows, (rng.standard_normal((64, 100)).astype(np.float32),))]


def _code(fn, args):
    """the C of the kernels a fresh compile of fn generates"""
    buf = io.StringIO()
    numdyn.set_logs(output_code=True)
    log = logging.getLogger("numdyn")
    saved, log.handlers = log.handlers, [logging.StreamHandler(buf)]
    try:
        fn(*args)
        numdyn.utils.wait_compiles()
    finally:
        log.handlers = saved
        numdyn.set_logs(output_code=False)
    return buf.getvalue()


def run(quick=False):
    numdyn.config.compile_budget = float("inf")
    rows = []
    for name, fn, args in _cases():
        generic = numdyn.compile(fn)
        static = numdyn.compile(fn, dynamic=False)
        ref = fn(*args)
        gcode, scode = _code(generic, args), _code(static, args)
        if gcode and scode:  # shown when the kernels were scheduled in this process
            assert re.search(r"const int64_t n\d = \d+;", scode), "static kernel without constant extents"
            assert not re.search(r"const int64_t n\d = \d+;", gcode)
        for got in (generic(*args), static(*args)):
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
        t = timeit_interleaved({"numpy": fn, "numdyn": generic, "static": static}, args,
                               repeat=5 if quick else 15)
        rows.append({"benchmark": name, **t,
                     "note": "generic %.2fx, static %.2fx NumPy's speed; static/generic %.2fx"
                             % (t["numpy"] / t["numdyn"], t["numpy"] / t["static"], t["numdyn"] / t["static"])})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    report(run(quick=ap.parse_args().quick))
