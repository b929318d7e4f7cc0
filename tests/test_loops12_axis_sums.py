"""np.sum / np.mean along an axis of a 2-D value in a captured loop
(issue 17: "sums along an axis of a 2-D local").

`M.sum(axis=0)`, `np.mean(M, axis=1)` were refused ("a call with keyword
arguments") and the loop ran in Python. NumPy's summation order is kept bit
for bit: along axis 1 of contiguous rows each row pairwise, along axis 0 row
after row into the first row; other layouts of float operands (a transposed
view, a single column summed along axis 0 -- a strided pairwise sum in
NumPy) hand the loop to Python, which gives NumPy's bits. Integers wrap in
NumPy's result type (int8 -> int64, uint16 -> uint64; bool is left to Python) in any
order; mean is of float32/float64 (a float64 division by the count, cast to
the dtype); an empty axis is NumPy's business (zeros for sum, a warning and
NaN for mean).
"""
import numpy as np
import pytest

import numdyn
from oracle import check
from test_loop_capture import captured


def scaled_moments(X, k):
    """column and row statistics of a matrix scaled step by step"""
    col = np.zeros((k, X.shape[1]), dtype=X.dtype)
    row = np.zeros((k, X.shape[0]), dtype=X.dtype)
    for s in range(k):
        M = X * (s + 1.0)
        col[s] = M.sum(axis=0) + np.mean(M, axis=0)
        row[s] = np.sum(M, axis=1) - M.mean(axis=-1)
    return col, row


def centroid_update(P, C):
    """centres moved by the points' mean, then re-centred (column means)"""
    for it in range(3):
        D = C * 0.5 + np.mean(P, axis=0)
        C = D - np.mean(D, axis=0)
    return C


def column_totals(X, k):
    """integer column and row totals of an argument (any layout)"""
    t = np.zeros((k, X.shape[1]), dtype=np.int64)
    r = np.zeros((k, X.shape[0]), dtype=np.int64)
    for s in range(k):
        t[s] = np.sum(X, axis=0) * s
        r[s] = -X.sum(axis=1)
    return t, r


def arg_sums(X, k):
    """sums of a float argument as it is (contiguous or not)"""
    out = np.zeros((k, X.shape[1]), dtype=X.dtype)
    o2 = np.zeros((k, X.shape[0]), dtype=X.dtype)
    for s in range(k):
        out[s] = X.sum(axis=0)
        o2[s] = np.mean(X, axis=1) * s
    return out, o2


RNG = np.random.default_rng(1713)
G = RNG.standard_normal((30, 40))


@pytest.mark.parametrize("fn,args", [
    (scaled_moments, (RNG.standard_normal((5, 7)), 3)),
    (scaled_moments, (RNG.standard_normal((40, 3)), 2)),
    (scaled_moments, (RNG.standard_normal((1, 9)), 2)),
    (scaled_moments, (RNG.standard_normal((140, 33)), 2)),     # pairwise blocks
    (scaled_moments, (RNG.standard_normal((9, 300)), 2)),      # pairwise past 128
    (scaled_moments, (RNG.standard_normal((9, 130)).astype(np.float32), 2)),
    (scaled_moments, (np.array([[-0.0, 1.0], [-0.0, 2.0]]), 1)),   # NumPy's sum from +0.0
    (column_totals, (RNG.integers(-100, 100, (6, 5)).astype(np.int8), 3)),
    (column_totals, (np.full((3, 2), 2 ** 62, dtype=np.int64), 2)),   # wraps in int64
    (arg_sums, (G, 2)),
    (arg_sums, (G[3:20, 5:31], 2)),                           # contiguous rows, strided rows
    (arg_sums, (G.astype(np.float32)[::3], 2)),
])
def test_c_is_numpy_bit_for_bit(fn, args):
    """the loop's C ran (no fallback) and gave NumPy's bits"""
    check(fn, *args, rtol=0, atol=0, signed_zeros=True, warnings=True)
    cf = numdyn.compile(fn)
    cf(*args)
    info = captured(cf)
    assert "last_fallback" not in info[0], info


@pytest.mark.parametrize("fn,args", [
    (scaled_moments, (RNG.standard_normal((12, 1)), 2)),      # one column along axis 0: Python
    (scaled_moments, (np.array([[-0.0, 1e308], [-0.0, 1e308]]), 1)),   # overflow warns: Python
    (scaled_moments, (np.array([[np.nan, np.inf], [1.0, -np.inf]]), 1)),
    (centroid_update, (RNG.standard_normal((25, 4)), RNG.standard_normal((3, 4)))),
    (column_totals, (RNG.integers(0, 2, (6, 5)).astype(bool), 3)),   # bool: Python
    (column_totals, (RNG.integers(0, 60000, (7, 4)).astype(np.uint16)[:, ::-1], 2)),   # uint64 * int: Python
    (arg_sums, (G.T, 2)),                                     # columns contiguous: Python
    (arg_sums, (G[:, ::2], 2)),                               # no contiguous axis: Python
    (arg_sums, (np.zeros((0, 3)), 1)),                        # empty axis: NumPy's warning
])
def test_values(fn, args):
    check(fn, *args, warnings=True)

