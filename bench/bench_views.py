"""Views, in-place mutation, indexing, loops and linear algebra: NumPy vs
numdyn (native backend), interleaved in one process, median seconds per call.

    python bench/bench_views.py [--quick] [--only NAME]

Benchmarks: jacobi-2d 400x400 x 100 steps, heat-3d, a gemver-like mix of
np.outer, @ and +=, an MLP forward pass, attention via einsum, an n-body
step, a Levinson-Durbin loop (scalar reads and small vector updates,
where numdyn must stay within 1.2x of NumPy), and pointwise work on
Fortran-ordered arrays (the result Fortran-ordered, as NumPy lays it out). Every numdyn result is
checked against NumPy before it is timed; in-place kernels are checked on
copies and timed on arrays they keep updating (both sides do the same work).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import (attention, gemver, heat_3d, jacobi_2d,  # noqa: E402
                      levinson_durbin, mlp, nbody_step)
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402


def _check(ref, got, rtol):
    if isinstance(ref, (tuple, list)):
        for r, g in zip(ref, got):
            _check(r, g, rtol)
        return
    r, g = np.asarray(ref), np.asarray(got)
    if r.dtype != g.dtype or r.shape != g.shape:
        raise AssertionError("dtype/shape %s%s vs %s%s" % (r.dtype, r.shape, g.dtype, g.shape))
    np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol)


def _row(name, fn, make_args, rtol, repeat, note=None):
    """Check numdyn against NumPy on fresh arguments, then time both."""
    nd = numdyn.compile(fn, backend="native")
    _check(fn(*make_args()), nd(*make_args()), rtol)
    args = make_args()
    t = timeit_interleaved({"numpy": fn, "numdyn": nd}, args, repeat=repeat, warmup=2)
    row = {"benchmark": name, **t}
    if note:
        row["note"] = note
    return row


def fortran_pointwise(a, b):
    return np.sqrt(a * 2.0 + b) - a * b


def run(quick=False, only=None):
    rng = np.random.default_rng(0)
    rep = 5 if quick else 11
    rows = []

    def want(name):
        return only is None or only in name

    if want("jacobi"):
        n, steps = (200, 20) if quick else (400, 100)
        A0, B0 = rng.random((n, n)), rng.random((n, n))
        rows.append(_row(f"jacobi-2d {n}x{n} x{steps}", jacobi_2d,
                         lambda: (A0.copy(), B0.copy(), steps), 1e-10, rep))
    if want("heat"):
        n, steps = (40, 10) if quick else (120, 20)
        A0, B0 = rng.random((n, n, n)), rng.random((n, n, n))
        rows.append(_row(f"heat-3d {n}^3 x{steps}", heat_3d,
                         lambda: (A0.copy(), B0.copy(), steps), 1e-10, rep))
    if want("gemver"):
        n = 500 if quick else 2000
        vec = [rng.random(n) for _ in range(8)]
        A0 = rng.random((n, n))
        rows.append(_row(f"gemver {n}", gemver,
                         lambda: (A0.copy(), *[v.copy() for v in vec], 1.5, 1.2), 1e-9, rep))
    if want("mlp"):
        b = 64 if quick else 256
        ws = [rng.standard_normal(s) * 0.1 for s in [(b, 512), (512, 1024), (1024,), (1024, 1024),
                                                    (1024,), (1024, 10), (10,)]]
        rows.append(_row(f"MLP forward {b}x512-1024-1024-10", mlp, lambda: tuple(ws), 1e-9, rep))
    if want("attention"):
        shp = (2, 4, 64, 32) if quick else (4, 8, 256, 64)
        q, k, v = (rng.standard_normal(shp) for _ in range(3))
        rows.append(_row("attention einsum %s" % (shp,), attention, lambda: (q, k, v), 1e-9, rep))
    if want("nbody"):
        n = 256 if quick else 1024
        pos, vel, mass = rng.random((n, 3)), rng.random((n, 3)), rng.random(n)
        rows.append(_row(f"n-body step {n}", nbody_step, lambda: (pos, vel, mass, 0.01), 1e-9, rep))
    if want("levinson"):
        order = 40 if quick else 100
        r = np.array([1.0 / (1 + k) for k in range(order + 1)])
        rows.append(_row(f"Levinson-Durbin order {order}", levinson_durbin, lambda: (r, order),
                         1e-8, rep, note="target: numdyn <= 1.2x NumPy"))
    if want("fortran"):
        n = 500 if quick else 2000
        a, b = np.asfortranarray(rng.random((n, n))), np.asfortranarray(rng.random((n, n)))
        got = numdyn.compile(fortran_pointwise, backend="native")(a, b)
        if got.strides != fortran_pointwise(a, b).strides:
            raise AssertionError("Fortran result laid out %s, NumPy %s"
                                 % (got.strides, fortran_pointwise(a, b).strides))
        rows.append(_row(f"Fortran-order pointwise {n}x{n}", fortran_pointwise, lambda: (a, b),
                         1e-12, rep, note="result Fortran-ordered, as NumPy's"))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    opts = ap.parse_args()
    report(run(quick=opts.quick, only=opts.only))
