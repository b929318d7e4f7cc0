"""Chained subscripts with slices and x.dtype.type() inside captured loops
(issue 17, point 1). `A[i][lo:hi]` is `A[i, lo:hi]` for an integer i (a
product of two such rows is a dot product, as banded matrix codes write
it); `A[1:3][0]` is row 1, never `A[1:3, 0]` (Python runs such a chain);
each level of a chain that is out of range raises NumPy's IndexError naming
axis 0, at the iteration NumPy raises it; `acc = A.dtype.type(0)` is a NumPy
scalar of A's dtype. Plain Python is the oracle; one compile per function."""
import numpy as np

import numdyn
from loop_gen import check_calls


def band_products(A, B, w, out, shift):
    for i in range(A.shape[0]):
        lo = max(0, i - w)
        for j in range(lo, min(A.shape[0], i + w + 1)):
            acc = A.dtype.type(0)
            n = min(A.shape[1], B.shape[1]) - abs(i - j)
            if n > 0:
                acc = A[i][0:n] @ B[j][abs(i - j):abs(i - j) + n]
            out[i][j - lo + shift] = acc
    return out, acc


def rows3(T, k, out):
    for i in range(out.shape[0]):
        out[i][0:2] = T[i][k][1:3] * 2
        out[i][2] = T[i][k][0:3].sum()
    return out


def slice_then_index(a):
    s = 0.0
    for i in range(a.shape[1]):
        s += a[1:3][0][i] + a[1:3][0].sum()
    return s


def _captured(cf):
    info = cf._loop_info()
    assert info[0]["captured"] and info[0].get("last_fallback") is None, info


def test_band_products_and_dtype_type():
    cf = numdyn.compile(band_products, options={"floor": False})
    rng = np.random.default_rng(5)
    for dt in (np.float64, np.int64):
        A = (rng.standard_normal((7, 5)) * 4).astype(dt)
        B = (rng.standard_normal((7, 6)) * 4).astype(dt)
        check_calls(band_products, (A, B, 2, np.zeros((7, 5), dt), 0), repeat=False, compiled=cf)
        _captured(cf)
    # out[i][j - lo + shift] past the row: IndexError naming axis 0, rows before it stored
    check_calls(band_products, (A, B, 2, np.zeros((7, 5), np.int64), 1), repeat=False, compiled=cf)
    _captured(cf)


def test_chained_errors_name_axis_0():
    cf = numdyn.compile(rows3, options={"floor": False})
    T = np.arange(60.0).reshape(3, 4, 5)
    for k in (1, -4, 4, -5):    # 4 and -5: out of range at the second level
        check_calls(rows3, (T, k, np.zeros((3, 3))), repeat=False, compiled=cf)
    _captured(cf)
    check_calls(rows3, (T, 0, np.zeros((4, 3))), repeat=False, compiled=cf)   # i = 3 past T


def test_a_subscript_of_a_slice_is_not_flattened():
    cf = numdyn.compile(slice_then_index, options={"floor": False})
    check_calls(slice_then_index, (np.arange(12.0).reshape(4, 3),), repeat=False, compiled=cf)
    assert "a subscript of a slice" in cf._loop_info()[0]["reason"]
