"""Fusion quality (issue 19): NumPy vs numdyn (and torch.compile on the same
source when torch is installed), interleaved in one process, warm median
seconds per call and the ratio numpy/numdyn.

    python bench/bench_fusion.py [--quick] [--only NAME]

The programs are torch.compile's own showcase -- one k-means step,
argmin(norm(X - means[:, None], axis=2), axis=0) -- and the other small
data-science kernels it is shown on: standardization, min-max scaling,
nearest neighbour by pairwise distances, a covariance (X - mu).T @ (X - mu),
the same search through the Gram matrix (|q|^2 - 2 q.p + |p|^2: BLAS and a
fused epilogue), a histogram of the k-means labels, two reductions sharing one pass
(column means and standard deviations), a pointwise output next to a column
sum and one that the column sum reads itself (one pass each), and the
row-wise kernels of
models: softmax and layer normalization over the last axis, and row
standard deviations of wide and of narrow (8-element) rows. torch.compile compiles the very
same NumPy source (TorchDynamo traces NumPy calls through torch._numpy);
where it cannot, the row says so. Each numdyn (and torch) result is checked
against NumPy before it is timed. The load average at the start and end of
the run is printed: the figures are medians of interleaved samples, and a
loaded machine slows every contender alike only roughly.
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


def covariance(X):
    Xc = X - X.mean(0)
    return Xc.T @ Xc / (X.shape[0] - 1)


def nearest_gram(Q, P):
    # the same search written through the Gram matrix: BLAS for the
    # product, then one kernel for the argmin over it with the norms added
    d = (Q ** 2).sum(1)[:, None] - 2 * Q @ P.T + (P ** 2).sum(1)
    return np.argmin(d, axis=1)


def label_histogram(X, means):
    labels = np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)
    return np.bincount(labels, minlength=means.shape[0])


def mean_and_std(X):
    return X.mean(0), X.std(0)


def scaled_and_colsum(X):
    # a pointwise output next to an independent column reduction: the
    # reduction kernel stores X * 2 from its one walk over X
    return X * 2, X.sum(0)


def scaled_own_colsum(X):
    # a returned pointwise value that the reduction reads itself: stored by
    # the reduction kernel from the walk that computes it for the sum
    Y = X * 2
    return Y, Y.sum(0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def row_std(x):
    return x.std(axis=-1)


def colsum(X):
    return X.sum(axis=0)


def rowsum(x):
    return x.sum(axis=1)


def colsum_t(x):
    return x.T.sum(axis=0)


def colvar(X):
    return X.var(axis=0)


def col_argmin(X):
    return np.argmin(X, axis=0)


def col_minmax(X):
    return X.min(axis=0), X.max(axis=0)


def log_softmax0(x):
    # over axis 0: reductions across the rows of a wide array
    y = x - x.max(axis=0)
    return y - np.log(np.exp(y).sum(axis=0))


def masked_softmax(x, mask):
    # scores masked with -inf (attention): exp of -inf in half the lanes
    s = np.where(mask, x, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


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
    refs = ref if isinstance(ref, tuple) else (ref,)
    note = ""
    for k, f in list(fns.items()):
        if k == "numpy":
            continue
        try:
            got = f(*args)
        except Exception as e:  # noqa: BLE001 -- torch may not support it
            if k == "numdyn":
                raise
            print("%s: %s failed: %s" % (name, k, str(e).splitlines()[0][:200]), file=sys.stderr)
            del fns[k]
            note = "torch.compile failed on this source"
            continue
        gots = got if isinstance(got, tuple) else (got,)
        try:
            for g, r in zip(gots, refs):
                g = np.asarray(g)
                if k == "numdyn" and (g.dtype != np.asarray(r).dtype or g.shape != np.shape(r)):
                    raise AssertionError("%s: numdyn gives %s%s, NumPy %s%s" % (
                        name, g.dtype, g.shape, np.asarray(r).dtype, np.shape(r)))
                if exact:
                    np.testing.assert_array_equal(g, r)
                else:
                    np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol)
        except AssertionError:
            if k == "numdyn":
                raise
            # another contender's different answer is reported, not timed
            print("%s: %s differs from NumPy" % (name, k), file=sys.stderr)
            del fns[k]
            note = "%s differs from NumPy (not timed)" % k
    t = timeit_interleaved(fns, args, repeat=repeat, warmup=3)
    row = {"benchmark": name, **t}
    if note:
        row["note"] = note
    return row


def run(quick=False, only=None):
    rng = np.random.default_rng(0)
    scale = 10 if quick else 1
    rep = 5 if quick else 15
    n = 2_000_000 // scale
    X = rng.standard_normal((n, 2))
    means = rng.standard_normal((2, 2))
    means8 = rng.standard_normal((8, 2))
    Xw = rng.standard_normal((n // 4, 8))
    Q = rng.standard_normal((20_000 // scale, 3))
    A = rng.standard_normal((4096 // scale, 1024))
    A32 = A.astype(np.float32)
    P = rng.standard_normal((64, 3))
    Q32 = rng.standard_normal((20_000 // scale, 32))
    P32 = rng.standard_normal((256, 32))
    W = rng.standard_normal((1000, 1000 // scale))
    WF = np.asfortranarray(W)
    WF32 = WF.astype(np.float32, order="F")
    Q3 = rng.standard_normal((n // 10, 3))
    Q5 = rng.standard_normal((n // 10, 5)).astype(np.float32)
    M = rng.random(W.shape) < 0.5
    M[:, 0] = True
    todo = [
        ("k-means step f64 X=(%d,2), 2 means" % n, kmeans_step, (X, means), 0, True),
        ("standardize f64 (%d,8)" % (n // 4), standardize, (Xw,), 1e-9, False),
        ("min-max scale f64 (%d,8)" % (n // 4), minmax, (Xw,), 1e-12, False),
        ("nearest neighbour f64 Q=(%d,3) P=(64,3)" % Q.shape[0], nearest, (Q, P), 0, True),
        ("nearest neighbour, Gram form f64 Q=(%d,32) P=(256,32)" % Q32.shape[0], nearest_gram, (Q32, P32), 0, True),
        ("covariance (X-mu).T@(X-mu) f64 (%d,8)" % (n // 4), covariance, (Xw,), 1e-9, False),
        ("histogram of argmins f64 X=(%d,2), 8 means" % n, label_histogram, (X, means8), 0, True),
        ("mean and std over axis 0 f64 (%d,8)" % (n // 4), mean_and_std, (Xw,), 1e-9, False),
        ("X * 2 and X.sum(0) f64 (%d,8)" % (n // 4), scaled_and_colsum, (Xw,), 1e-9, False),
        ("Y = X * 2; Y and Y.sum(0) f64 (%d,8)" % (n // 4), scaled_own_colsum, (Xw,), 1e-9, False),
        ("softmax last axis f32 (%d,1024)" % A.shape[0], softmax, (A32,), 1e-5, False),
        ("softmax last axis f64 (%d,1024)" % A.shape[0], softmax, (A,), 1e-12, False),
        ("layer norm last axis f32 (%d,1024)" % A.shape[0], layer_norm, (A32,), 1e-4, False),
        ("row std f64 (%d,1024)" % A.shape[0], row_std, (A,), 1e-12, False),
        ("row std f64 (%d,8)" % (n // 4), row_std, (Xw,), 1e-12, False),
        ("column sums X.sum(0) f64 (%d,%d)" % W.shape, colsum, (W,), 1e-12, False),
        ("column variances X.var(0) f64 (%d,%d)" % W.shape, colvar, (W,), 1e-9, False),
        ("Fortran-ordered X.sum(0) f64 (%d,%d)" % W.shape, colsum, (WF,), 1e-12, False),
        ("Fortran-ordered X.sum(1) f64 (%d,%d)" % W.shape, rowsum, (WF,), 1e-12, False),
        ("Fortran-ordered X.sum(0) f32 (%d,%d)" % W.shape, colsum, (WF32,), 1e-5, False),
        ("X.T.sum(0) of C-ordered f64 (%d,%d)" % W.shape, colsum_t, (W,), 1e-12, False),
        # a tall array's narrow kept dim: the rows as one flat run of lanes
        ("argmin(axis=0) f64 (%d,2)" % (n // 10), col_argmin, (X[:n // 10],), 0, True),
        ("argmin(axis=0) f64 (%d,3)" % (n // 10), col_argmin, (Q3,), 0, True),
        ("min(0), max(0) f32 (%d,5)" % (n // 10), col_minmax, (Q5,), 0, True),
        ("log-softmax over axis 0 f64 (%d,%d)" % W.shape, log_softmax0, (W,), 1e-12, False),
        ("softmax masked with -inf f64 (%d,%d)" % W.shape, masked_softmax, (W, M), 1e-12, False),
    ]
    rows = []
    for name, fn, args, rtol, exact in todo:
        if only and only not in name:
            continue
        rows.append(_row(name, fn, args, rtol, rep, exact))
    if torch is None:
        for r in rows:
            r["note"] = "torch not installed"
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs, fewer rounds")
    ap.add_argument("--only", help="run the benchmarks whose name contains this")
    a = ap.parse_args(argv)
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    rows = run(a.quick, a.only)
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
    report(rows, title="fusion (issue 19)")


if __name__ == "__main__":
    main()
