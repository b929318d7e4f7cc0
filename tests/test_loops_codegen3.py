"""The C of captured loops against numba's on the same source (issue 17,
"at least as fast as numba @njit"): each test pins one property of the
generated C (NUMDYN_LOOP_DEBUG) that the speed depends on, and checks the
loop against plain Python/NumPy on the cases that property could get wrong
(values, arrays after the call, the exception and the iteration it stops at).
"""
import re

import numpy as np
import pytest

from loop_gen import arr, check_calls


def loop_c(fn, args, monkeypatch, capfd):
    """the C of fn's loops (NUMDYN_LOOP_DEBUG), after one checked call"""
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    check_calls(fn, args, repeat=False)
    out = capfd.readouterr().err
    assert "nd_loop_main" in out, out[-2000:]
    return out


# ------------------------------------------- a data-dependent index's check
def bin_counts(x, k0, counts):
    # counts[k] += 1 with k computed from the data: the index test cannot be
    # proved before the loop; negative k counts from the end as in NumPy
    for i in range(x.shape[0]):
        k = x[i] - k0
        counts[k] += 1
    return counts


def gather_rows(A, idx, out):
    # A[idx[i], j] and out[i, j]: a 2-D access whose first index is data
    for i in range(idx.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[idx[i], j] * 2
    return out


def test_data_index_one_unsigned_test_on_the_hot_path(monkeypatch, capfd):
    x = arr("int64", (40,), seed=1, lo=0, hi=7)
    c = loop_c(bin_counts, (x, 0, np.zeros(7, np.int64)), monkeypatch, capfd)
    # the wrap of a negative index is on the cold side of the one unsigned
    # compare, not a sign test (and a conditional move) before it
    assert not re.search(r"^\s*if \(i\d+ < 0\) i\d+ \+= a\d+_n\d+;", c, re.M), c[-3000:]
    assert re.search(r"if \(NDL_UNLIKELY\(\(uint64_t\)(i\d+) >= \(uint64_t\)(a\d+_n0)\)\) \{\n"
                     r"\s*if \(\1 < 0 && \1 >= -\2\) \1 \+= \2;", c), c[-3000:]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "uint16"])
def test_data_index_values_negative_wrap_and_errors(dtype):
    n = 7
    x = arr(dtype, (60,), seed=2, lo=0, hi=n).astype(dtype)
    check_calls(bin_counts, (x, 0, np.zeros(n, np.int64)))
    if np.dtype(dtype).kind == "i":
        # k from -n to n-1: every negative index wraps, none raises
        check_calls(bin_counts, (x, n, np.zeros(n, np.int64)), (x, 3, np.zeros(n, np.int64)))
    # IndexError at the same iteration, counts as far as NumPy got: k = n
    # (just past the end) and k = -n - 1 (just before the start)
    bad = x.copy()
    bad[17] = n
    check_calls(bin_counts, (bad, 0, np.zeros(n, np.int64)))
    if np.dtype(dtype).kind == "i":
        low = x.copy()
        low[23] = 0
        check_calls(bin_counts, (low, n + 1, np.zeros(n, np.int64)), (x, n, np.zeros(n, np.int64)))
    # int64 extremes as indices: no wrap of the sum
    if dtype == "int64":
        big = np.array([0, 1, 2**63 - 1], np.int64)
        check_calls(bin_counts, (big, 0, np.zeros(n, np.int64)))
        check_calls(bin_counts, (np.array([3, -(2**63)], np.int64), 0, np.zeros(n, np.int64)))


def test_data_row_index_2d_values_and_errors():
    A = arr("float64", (5, 4), seed=3)
    idx = np.array([0, 4, -1, -5, 2], np.int64)
    check_calls(gather_rows, (A, idx, np.zeros((5, 4))))
    for b in (5, -6):
        bad = idx.copy()
        bad[3] = b
        check_calls(gather_rows, (A, bad, np.zeros((5, 4))))


# ------------------------------------- v @ M summed down M's strided axis
def back_subst(U, B):
    # X[i, :] from the rows below it: U[i, i+1:] @ X[i+1:, :] sums down X's
    # columns (strided in a C-ordered X), one output per column
    n = U.shape[0]
    X = np.zeros_like(B)
    for i in range(n - 1, -1, -1):
        X[i, :] = (B[i, :] - U[i, i + 1:] @ X[i + 1:, :]) / U[i, i]
    return X


def every_other_column(v, M, out):
    # v @ M[:, ::2]: strided along the summed axis and the output axis
    for i in range(M.shape[0]):
        out[i, :] = v[i:] @ M[i:, ::2]
    return out


def rows_times_vector(M, v, out):
    # M @ v: summed along M's rows (contiguous in a C-ordered M)
    for i in range(M.shape[1]):
        out[i, :] = M[:, i:] @ v[i:]
    return out


def _upper(n, k, dtype, order="C"):
    U = np.triu(arr(dtype, (n, n), seed=5)) + n * np.eye(n, dtype=dtype)
    B = np.asarray(arr(dtype, (n, k), seed=6), order=order)
    return U, B


def test_vector_times_matrix_by_rows_in_the_c(monkeypatch, capfd):
    # the product is built a row of M at a time (a contiguous inner loop),
    # not an element at a time down a strided column
    c = loop_c(back_subst, _upper(40, 8, "float64"), monkeypatch, capfd)
    assert re.search(r"w\d+\[k(\d+)\] \+= \(\(const double \*\)r\1\)\[k\1\] \* v\1;", c), c[-3000:]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n,k", [(1, 1), (2, 1), (9, 1), (40, 8), (33, 17), (70, 3)])
def test_vector_times_matrix_values(dtype, n, k):
    check_calls(back_subst, _upper(n, k, dtype), _upper(n, k, dtype, order="F"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vector_times_strided_matrix_values(dtype):
    for n, k in ((5, 3), (30, 7), (20, 20)):
        v = arr(dtype, (n,), seed=7)
        M = arr(dtype, (n, 2 * k), seed=8)
        check_calls(every_other_column, (v, M, np.zeros((n, k), dtype)))
        M2 = arr(dtype, (n, n), seed=9)
        check_calls(rows_times_vector, (M2, arr(dtype, (n,), seed=10), np.zeros((n, n), dtype)),
                    (np.asfortranarray(M2), arr(dtype, (n,), seed=11), np.zeros((n, n), dtype)))


def test_vector_times_matrix_nonfinite_warnings():
    # inf * 0 in the product raises 'invalid' where NumPy's matmul does
    U, B = _upper(12, 4, "float64")
    B[11, 2] = np.inf
    U[3, 11] = 0.0
    check_calls(back_subst, (U, B))
