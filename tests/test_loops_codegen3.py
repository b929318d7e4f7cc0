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
