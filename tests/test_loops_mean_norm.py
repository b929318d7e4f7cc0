"""np.mean and np.linalg.norm of 1-D float arrays in captured loops.

`out[i] = np.mean(A[i])`, `x.mean()` and Gram-Schmidt's `nrm =
np.linalg.norm(Q[:, k])` were refused (a call of np.mean(), a method call)
and their loops ran in Python. np.mean of a float array is NumPy's pairwise
sum divided by the count in float64 (NumPy divides by an intp count, so a
float32 sum is promoted, then cast back); an empty one warns "Mean of empty
slice" in NumPy and runs in Python. np.linalg.norm(v) of a 1-D float array
is NumPy's own sqrt(v . v). Integer arrays (NumPy's mean sums them in
float64 in buffered chunks) and 2-D ones run in Python.
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured_close


def row_means(A):
    out = np.empty(A.shape[0], dtype=A.dtype if A.dtype.kind == "f" else np.float64)
    for i in range(A.shape[0]):
        out[i] = np.mean(A[i])
    return out


def method_mean(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, ::2].mean()
    return s


def normalize_cols(A):
    Q = A.copy()
    for k in range(A.shape[1]):
        nrm = np.linalg.norm(Q[:, k])
        Q[:, k] /= nrm
    return Q


def path_length(P):
    s = 0.0
    for k in range(1, P.shape[0]):
        s += np.linalg.norm(P[k] - P[k - 1])
    return s


def mean_of_empty(A):
    s = 0.0
    for k in range(3):
        s += np.mean(A[k, :k])
    return s


def norm_2d(A, out):
    for i in range(out.shape[0]):
        out[i] = np.linalg.norm(A * i)
    return out


def norm_overflow(x):
    s = 0.0
    for k in range(1, x.shape[0] + 1):
        s += np.linalg.norm(x[:k])
    return s


RNG = np.random.default_rng(31)


@pytest.mark.parametrize("fn,args", [
    (row_means, (RNG.random((6, 37)),)),
    (row_means, (RNG.random((6, 37)).astype(np.float32),)),
    (row_means, (np.asfortranarray(RNG.random((6, 37))),)),
    (row_means, (np.arange(12).reshape(3, 4),)),                 # int: Python
    (row_means, (np.array([[np.nan, 1.0], [np.inf, -np.inf]]),)),
    (method_mean, (RNG.random((5, 11)),)),
    (normalize_cols, (RNG.random((30, 6)),)),
    (normalize_cols, (RNG.random((30, 6)).astype(np.float32),)),
    (normalize_cols, (np.zeros((4, 2)),)),                       # 0/0: NumPy's invalid warning
    (path_length, (RNG.random((20, 3)),)),
    (mean_of_empty, (np.ones((3, 4)),)),                          # "Mean of empty slice"
    (norm_2d, (np.arange(6.0).reshape(2, 3), np.zeros(3))),
    (norm_overflow, (np.array([1e200, 1e200, 3.0]),)),
])
def test_mean_norm_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (row_means, (RNG.random((6, 37)),)),
    (row_means, (RNG.random((6, 37)).astype(np.float32),)),
    (method_mean, (RNG.random((5, 11)),)),
    (normalize_cols, (RNG.random((30, 6)),)),
    (path_length, (RNG.random((20, 3)),)),
])
def test_mean_norm_are_captured(fn, args):
    captured_close(fn, *args, rtol=1e-6)


def test_mean_is_numpys_bits():
    # the pairwise sum and the float64 division: equal to NumPy's, not close
    A = RNG.random((4, 1000)) * 1e3
    check(row_means, A)
    from test_loop_capture import run_both
    exp, got, _, _, _ = run_both(row_means, A)
    np.testing.assert_array_equal(got, exp)
