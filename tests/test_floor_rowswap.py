"""Row and element swaps by lists of indices in captured loops (issue 13).

LU with partial pivoting swaps rows with `A[[k, p], :] = A[[p, k], :]`
(and its permutation with `perm[[k, p]] = perm[[p, k]]`). Loop capture
refused the list index ("an expression of kind List"), so the whole
factorization was traced statement by statement (two flushes a column) and
the speed floor chose NumPy: 1.00x. A store `A[[i...], rest] = A[[j...],
rest]` whose i's are a permutation of its j's (one array, the same rest of
the subscript) is now captured as NumPy runs it: every j row copied, then
every i row stored, so no store happens where NumPy raises.
"""
import os
import sys

import numpy as np
import pytest

import numdyn
from oracle import check
from test_loop_capture import captured, run_both

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import programs_real as R  # noqa: E402


def swap_rows(A, idx):
    # in place on the argument (rows, or elements of a 1-D one); idx[i]
    # may equal i (a repeated index)
    for i in range(len(idx)):
        A[[i, idx[i]]] = A[[idx[i], i]]
    return A


def rotate3(A):
    for i in range(A.shape[0] - 2):
        A[[i, i + 1, i + 2], 1:] = A[[i + 1, i + 2, i], 1:]
    return A


def swap_cols_of_rows(A, j):
    # a list at axis 0, an index after it: element swaps
    for i in range(A.shape[0] - 1):
        A[[i, i + 1], j] = A[[i + 1, i], j]
    return A


def copy_swap(A, idx):
    # the other spelling of the pivot's swap: rows copied by .copy()
    for i in range(len(idx)):
        A[i], A[idx[i]] = A[idx[i]].copy(), A[i].copy()
    return A


def copy_parts(A):
    s = 0.0
    for i in range(A.shape[0] - 2):
        r = A[i + 1, 1:].copy()          # a name given a new 1-D array
        A[i, 1:] = r * 2.0
        A[i:i + 2, :2] = A[i + 1:i + 3, 1:3].copy()
        s += A[i, 0].copy()
    return A, s, r


def swap_3d(A):
    # rows of a 3-D array are 2-D: not a value a name can hold (Python runs it)
    for k in range(A.shape[0] - 1):
        A[[k, k + 1]] = A[[k + 1, k]]
    return A


def array_in_list(a, idx):
    # a list holding an index array: NumPy's own rules (Python runs it)
    for i in range(2):
        a[[i, idx]] = a[[idx, i]]
    return a


def one_row(A):
    for k in range(A.shape[0]):
        A[[k]] = A[[k]] * 1
    return A


def shifted(A, s):
    for k in range(A.shape[0] - 1):
        A[[k, k + s], 1:3] = A[[k + s, k], 1:3]
    return A


def not_a_permutation(A):
    for i in range(A.shape[0] - 1):
        A[[i, i + 1]] = A[[i + 1, i + 1]]
    return A


def two_arrays(A, B):
    for i in range(A.shape[0] - 1):
        A[[i, i + 1]] = B[[i + 1, i]]
    return A


def bool_list(A, t, f):
    for i in range(1):
        A[[t, f]] = A[[f, t]]
    return A


RNG = np.random.default_rng(13)


@pytest.mark.parametrize("fn,args", [
    (R.lu_partial_pivot, (RNG.random((12, 12)),)),
    (R.lu_partial_pivot, (RNG.standard_normal((7, 7)).astype(np.float32),)),
    (R.lu_partial_pivot, (np.zeros((4, 4)),)),       # 0/0: NumPy's warnings and NaNs
    (swap_rows, (np.arange(20.0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),
    (swap_rows, (np.arange(20).reshape(5, 4), np.array([-1, 1, -5, 0, 2]))),
    (swap_rows, (np.arange(20).reshape(5, 4), np.array([3, 1, 7, 0, 2]))),   # IndexError at i = 2
    (swap_rows, ((np.arange(20) % 3 == 0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),   # bool rows
    (swap_rows, (np.arange(20.0).reshape(5, 4) * (1 + 2j), np.array([2, 0, 1, 4, 3]))),
    (rotate3, (np.arange(24.0).reshape(6, 4),)),
    (swap_cols_of_rows, (np.arange(12).reshape(4, 3), 2)),
    (swap_cols_of_rows, (np.arange(12).reshape(4, 3), 3)),   # IndexError on the first swap
    (swap_rows, (np.arange(6.0), np.array([5, 3, 0, 1, 4, 2]))),
    (swap_rows, (np.arange(6, dtype=np.int8), np.array([5, 3, 0, 1, 4, 2]))),
    (swap_rows, (np.arange(6.0), np.array([5, 3, 9, 1, 4, 2]))),   # IndexError at i = 2
    (copy_swap, (np.arange(20.0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),
    (copy_swap, (np.arange(20, dtype=np.int16).reshape(5, 4), np.array([3, 1, 7, 0, 2]))),
    (copy_swap, ((np.arange(20) % 3 == 0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),
    (copy_swap, (np.arange(6.0), np.array([5, 3, 0, 1, 4, 2]))),
    (copy_parts, (np.arange(30.0).reshape(6, 5),)),
    (copy_parts, (np.arange(30, dtype=np.int32).reshape(6, 5),)),
    (swap_3d, (np.arange(24.0).reshape(4, 3, 2),)),
    (array_in_list, (np.arange(6.0), np.array([3, 4]))),
    (one_row, (np.arange(6.0).reshape(3, 2),)),
    (shifted, (np.arange(20.0).reshape(5, 4), 1)),
    (shifted, (np.arange(20.0).reshape(5, 4), -1)),     # A[[0, -1]]: NumPy's wrap
    (shifted, (np.arange(20.0).reshape(5, 4), 5)),      # IndexError, nothing stored
    (not_a_permutation, (np.arange(12.0).reshape(4, 3),)),
    (two_arrays, (np.arange(12.0).reshape(4, 3), np.arange(12.0, 24.0).reshape(4, 3))),
    (bool_list, (np.arange(6.0).reshape(2, 3), True, False)),     # a boolean mask, as NumPy
])
def test_rowswap_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (R.lu_partial_pivot, (RNG.random((9, 9)),)),
    (swap_rows, (np.arange(20.0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),
    (rotate3, (np.arange(24.0).reshape(6, 4),)),
    (swap_cols_of_rows, (np.arange(12).reshape(4, 3), 2)),
    (swap_rows, (np.arange(6.0), np.array([5, 3, 0, 1, 4, 2]))),
    (copy_swap, (np.arange(20.0).reshape(5, 4), np.array([3, 1, 4, 0, 2]))),
    (copy_parts, (np.arange(30.0).reshape(6, 5),)),
    (shifted, (np.arange(20.0).reshape(5, 4), -1)),
])
def test_rowswap_is_captured_and_runs_as_c(fn, args):
    c = numdyn.utils.counters
    runs0 = c["loop_runs"]
    exp, got, _, _, cf = run_both(fn, *args)
    assert c["loop_runs"] > runs0       # the loop ran as C, not in Python
    e = exp if isinstance(exp, tuple) else (exp,)
    g = got if isinstance(got, tuple) else (got,)
    for x, y in zip(e, g):
        np.testing.assert_array_equal(x, y)
    captured(cf)


@pytest.mark.parametrize("fn", [not_a_permutation, two_arrays])
def test_other_list_stores_still_refused(fn):
    args = (np.arange(12.0).reshape(4, 3),) if fn is not_a_permutation else (
        np.arange(12.0).reshape(4, 3), np.arange(12.0).reshape(4, 3))
    _, _, _, _, cf = run_both(fn, *args)
    captured(cf, 0)


def test_lu_partial_pivot_flushes_once_not_per_column():
    # traced, the factorization flushed at every column's `if p != k` (two
    # flushes a column); captured, the loop is one C call after one flush
    n = 16
    cf = numdyn.compile(R.lu_partial_pivot, options={"floor": False})
    rng = np.random.default_rng(5)
    A = rng.standard_normal((n, n))
    cf(A)
    c = numdyn.utils.counters
    B = rng.standard_normal((n, n))
    f0, r0 = c["flushes"], c["loop_runs"]
    perm, LU = cf(B)
    ep, eLU = R.lu_partial_pivot(B)
    np.testing.assert_array_equal(perm, ep)
    np.testing.assert_array_equal(LU, eLU)
    assert c["loop_runs"] - r0 == 1
    assert c["flushes"] - f0 <= 2, c["flushes"] - f0
