"""np.outer(u, v) of 1-D arrays inside captured loops (issue 17, issue 13's
LU by rank-1 updates: `A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])`,
which ran with two flushes a column). The operands are computed into buffers
first, as NumPy's temporary holds them, so a store into memory they read sees
the old values; the element type is NumPy's multiply's. The oracle is plain
Python/NumPy: values, dtypes, arguments afterwards, exceptions, warnings."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def lu_outer(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def rank1(C, x, y, alpha):
    # C[i:, :i+1] += alpha * outer(x_i, y_i) with x, y of other dtypes
    for i in range(C.shape[0]):
        C[i:, :i + 1] += alpha * np.outer(x[i:], y[:i + 1])
    return C


def overlap(A):
    # the operands read rows the store writes: NumPy's temporary first
    for k in range(1, A.shape[0]):
        A[k - 1:, :] = np.outer(A[k - 1:, 0] + 1, A[k - 1, :]) - A[k - 1:, :]
    return A


def outer_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sum(np.outer(x[i:], x[:i + 1] * 2))
    return s


def outer_extremes(x, y):
    # np.max/np.min of a 2-D value: reduced in vector lanes, by rows
    s = 0.0
    for i in range(1, x.shape[0]):
        s += np.max(np.outer(x[:i], y)) - np.min(np.outer(y[i:], x[:i]) * 2.0)
    return s


def mismatch(A, u, v):
    for k in range(2):
        A[:, :] += np.outer(u[k:], v)     # the second row's shape differs: ValueError
    return A


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_lu_outer(dtype, n):
    A = arr(dtype, (n, n), seed=n) + np.eye(n, dtype=dtype) * n
    check_calls(lu_outer, (A,), rtol=0, atol=0)
    cf = numdyn.compile(lu_outer)
    cf(A)
    ran_as_c(cf)


@pytest.mark.parametrize("ct,xt,yt,alpha", [
    ("float64", "float64", "float32", 0.5), ("float32", "float32", "float32", 2.0),
    ("int64", "int32", "int16", 3), ("int8", "int8", "int8", 100), ("float64", "bool", "int8", 1.5),
    ("int32", "uint8", "uint8", np.int32(7))])
def test_rank1_dtypes(ct, xt, yt, alpha):
    C = arr(ct, (6, 6), seed=1)
    x, y = arr(xt, 6, seed=2), arr(yt, 6, seed=3)
    check_calls(rank1, (C, x, y, alpha), (C[:3, :3], x[:3], y[:4], alpha))
    cf = numdyn.compile(rank1)
    cf(C.copy(), x, y, alpha)
    ran_as_c(cf)


def test_overlap_and_strided():
    A = arr("float64", (6, 5), seed=4)
    check_calls(overlap, (A,), (A[::-1, ::2],), (np.asfortranarray(A),))
    cf = numdyn.compile(overlap)
    cf(A.copy())
    ran_as_c(cf)


def test_outer_in_reduction():
    check_calls(outer_sum, (arr("float64", 9, seed=5),), (arr("int16", 7, seed=6),))
    cf = numdyn.compile(outer_sum)
    cf(arr("float64", 9, seed=5))
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_outer_max_min(dtype):
    x, y = arr(dtype, 7, seed=8), arr(dtype, 9, seed=9)
    y[2] = 0
    check_calls(outer_extremes, (x, y))
    cf = numdyn.compile(outer_extremes)
    cf(x, y)
    ran_as_c(cf)


def test_shape_mismatch_raises_as_numpy():
    A = arr("float64", (4, 3), seed=7)
    check_calls(mismatch, (A, arr("float64", 4), arr("float64", 3)))


def test_overflow_warns_as_numpy():
    A = np.full((3, 3), 1e200)
    check_calls(lu_outer, (A,))
