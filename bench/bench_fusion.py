"""Fusion quality (issue 19): NumPy vs numdyn (and torch.compile on the same
source when torch is installed), interleaved in one process, warm median
seconds per call and the ratio numpy/numdyn.

    python bench/bench_fusion.py [--quick] [--only NAME]

The programs are torch.compile's own showcase -- one k-means step,
argmin(norm(X - means[:, None], axis=2), axis=0) -- and the other small
data-science kernels it is shown on: standardization, min-max scaling,
nearest neighbour by pairwise distances. Each numdyn (and torch) result is
checked against NumPy before it is timed.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def standardize(X):
    return (X - X.mean(0)) / X.std(0)


def minmax(X):
    lo = X.min(0)
    return (X - lo) / (X.max(0) - lo)


def nearest(Q, P):
    # for each query point, the index of the nearest reference point
    return np.argmin(((Q[:, None, :] - P[None, :, :]) ** 2).sum(axis=2), axis=1)


def _torch_fn(fn):
    """torch.compile of the same NumPy source (torch traces NumPy code through
    torch._numpy), called on ndarrays"""
    if torch is None:
        return None
    try:
        return torch.compile(fn)
    except Exception:  # noqa: BLE001 -- a torch without a working compile
        return None


def _row(name, fn, args, rtol, repeat, exact=False):
    fns = {"numpy": fn, "numdyn": numdyn.compile(fn)}
    tc = _torch_fn(fn)
    if tc is not None:
        fns["torch.compile"] = tc
    ref = fn(*args)
    for k, f in list(fns.items()):
        if k == "numpy":
            continue
        try:
            got = np.asarray(f(*args))
        except Exception as e:  # noqa: BLE001 -- torch may not support it
            if k == "numdyn":
                raise
            print("%s: %s failed: %s" % (name, k, e), file=sys.stderr)
            del fns[k]
            continue
        if k == "numdyn" and (got.dtype != np.asarray(ref).dtype or got.shape != np.shape(ref)):
            raise AssertionError("%s: numdyn gives %s%s, NumPy %s%s" % (
                name, got.dtype, got.shape, np.asarray(ref).dtype, np.shape(ref)))
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)
    t = timeit_interleaved(fns, args, repeat=repeat, warmup=3)
    return {"benchmark": name, **t}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs, fewer rounds")
    ap.add_argument("--only", help="run the benchmarks whose name contains this")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    scale = 10 if a.quick else 1
    rep = 5 if a.quick else 15
    n = 2_000_000 // scale
    X = rng.standard_normal((n, 2))
    means = rng.standard_normal((2, 2))
    Xw = rng.standard_normal((n // 4, 8))
    Q = rng.standard_normal((20_000 // scale, 3))
    P = rng.standard_normal((64, 3))
    todo = [
        ("k-means step f64 X=(%d,2), 2 means" % n, kmeans_step, (X, means), 0, True),
        ("standardize f64 (%d,8)" % (n // 4), standardize, (Xw,), 1e-9, False),
        ("min-max scale f64 (%d,8)" % (n // 4), minmax, (Xw,), 1e-12, False),
        ("nearest neighbour f64 Q=(%d,3) P=(64,3)" % Q.shape[0], nearest, (Q, P), 0, True),
    ]
    rows = []
    for name, fn, args, rtol, exact in todo:
        if a.only and a.only not in name:
            continue
        rows.append(_row(name, fn, args, rtol, rep, exact))
    if torch is None:
        for r in rows:
            r["note"] = "torch not installed"
    report(rows, title="fusion (issue 19)")


if __name__ == "__main__":
    main()
