"""`.T` of a subscript in captured loops (issue 17): A[i0:i1, :].T,
A[:, k:].T @ v, A[i, :, lo:hi].T of a 3-D array.

Before, `.T` was taken of a name only (X.T); of a subscript the loop ran in
Python ("an attribute at line N"). The part's two axes are swapped where it
lies (a view, as NumPy's). An element's or a chained subscript's .T stays
with Python and explain() names it.
"""
import numpy as np
import pytest

import numdyn
from test_loop_capture import run_both, captured


def trailing_projections(A, v):
    """w_k = A[:, k:].T @ v, the first entry of each (a QR-like sweep)"""
    out = np.zeros(A.shape[1], dtype=A.dtype)
    for k in range(A.shape[1]):
        w = A[:, k:].T @ v
        out[k] = w[0]
    return out


def block_trace(A):
    """sum of the 2x2 diagonal blocks' transposed diagonals"""
    s = 0.0
    for i in range(1, A.shape[0]):
        B = A[i - 1:i + 1, i - 1:i + 1].T
        s += B[0, 0] + B[1, 0] * 2.0 + B[0, 1] * 3.0
    return s


def gram_rows(X, G):
    """G[i, :] = (X[:i+1].T @ X[:i+1])[0] -- a running Gram matrix row"""
    for i in range(X.shape[0]):
        P = X[:i + 1].T @ X[:i + 1]
        G[i, :] = P[0, :]
    return G


def sliced_3d(U, out):
    for k in range(U.shape[2]):
        S = U[:, :, k].T * 2.0
        out[k] = S[0, 1] - S[1, 0]
    return out


def row_t(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.sum(A[i, 1:].T * A[i, :-1])
    return s


def bad_column(A, k):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.sum(A[:, k].T)
    return s


def chained_t(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.sum(A[i][1:].T)
    return s


def _same(exp, got, dt):
    tol = 1e-12 if np.dtype(dt) == np.float64 else 1e-5
    np.testing.assert_allclose(np.asarray(got), np.asarray(exp), rtol=tol, atol=tol)
    assert np.asarray(got).dtype == np.asarray(exp).dtype


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_trailing_projections(dt):
    rng = np.random.default_rng(1)
    A, v = rng.standard_normal((7, 5)).astype(dt), rng.standard_normal(7).astype(dt)
    exp, got, _, _, cf = run_both(trailing_projections, A, v)
    _same(exp, got, dt)
    captured(cf)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64])
def test_block_trace(dt):
    rng = np.random.default_rng(2)
    A = (rng.standard_normal((6, 6)) * 10).astype(dt)
    exp, got, _, _, cf = run_both(block_trace, A)
    _same(exp, got, np.float64)
    captured(cf)


def test_gram_rows_fortran_and_strided():
    rng = np.random.default_rng(3)
    for X in (rng.standard_normal((6, 3)), np.asfortranarray(rng.standard_normal((6, 3))),
              rng.standard_normal((12, 6))[::2, ::2]):
        exp, got, _, _, cf = run_both(gram_rows, X, np.zeros((6, 3)))
        _same(exp, got, np.float64)
        captured(cf)


def test_3d_part():
    rng = np.random.default_rng(4)
    U = rng.standard_normal((3, 4, 5))
    exp, got, _, _, cf = run_both(sliced_3d, U, np.zeros(5))
    _same(exp, got, np.float64)
    captured(cf)


def test_1d_part_t_is_the_part():
    A = np.arange(20.0).reshape(4, 5)
    exp, got, _, _, cf = run_both(row_t, A)
    _same(exp, got, np.float64)
    captured(cf)


def test_index_error_names_numpys_axis():
    A = np.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexError) as e1:
        bad_column(A, 7)
    cf = numdyn.compile(bad_column)
    with pytest.raises(IndexError) as e2:
        cf(A, 7)
    assert str(e2.value) == str(e1.value)   # "... for axis 1 with size 4"
    exp, got, _, _, cf = run_both(bad_column, A, -1)
    _same(exp, got, np.float64)
    captured(cf)


def test_chained_subscript_t_is_named():
    A = np.arange(12.0).reshape(3, 4)
    exp, got, _, _, cf = run_both(chained_t, A)
    _same(exp, got, np.float64)
    info = cf._loop_info()
    assert not info[0]["captured"]
    assert "chained subscript" in info[0]["reason"]
