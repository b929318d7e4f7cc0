"""Element loops over 3-D (and higher) arrays (issue 17): loads and stores
A[i, j, k], A[i][j][k], negative indices, and names that hold whole arrays
of any rank swapped between time steps (A, B = B, A). Plain Python/NumPy is
the oracle (values, dtypes, arrays after the call, IndexError at the same
iteration with the arrays as NumPy left them).
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def captured(fn, *args):
    cf = numdyn.compile(fn, options={"floor": False})
    cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def heat3_swap(A, B, steps):
    n0, n1, n2 = A.shape
    for t in range(steps):
        for i in range(1, n0 - 1):
            for j in range(1, n1 - 1):
                for k in range(1, n2 - 1):
                    B[i, j, k] = A[i, j, k] + 0.1 * (A[i - 1, j, k] + A[i + 1, j, k] + A[i, j - 1, k]
                                                     + A[i, j + 1, k] + A[i, j, k - 1] + A[i, j, k + 1]
                                                     - 6.0 * A[i, j, k])
        A, B = B, A
    return A, B


def sum3_chained(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[2]):
                s += A[i][j][k]
    return s


def count_neg_index(A, t):
    c = 0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[-1 - i, j, -1] > t:
                c += 1
    return c


def overrun3(A, extra):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[2] + extra):
                A[i, j, k] = A[i, j, k] * 2 + 1
    return A


def swap4(A, B, steps):
    for t in range(steps):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                for k in range(A.shape[2]):
                    for m in range(A.shape[3]):
                        B[i, j, k, m] = A[i, j, k, m] + t
        A, B = B, A
    return A


def plane_view(A):
    s = 0.0
    for i in range(A.shape[0]):
        P = A[i]                      # a 2-D view given to a name: Python runs this loop
        s += P[0, 0]
    return s


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_heat3_with_swapped_names(dtype):
    rng = np.random.default_rng(3)
    A = rng.random((6, 7, 8)).astype(dtype)
    check_calls(heat3_swap, (A, A.copy(), 3), (rng.random((4, 5, 9)).astype(dtype), np.zeros((4, 5, 9), dtype), 2))
    captured(heat3_swap, A, A.copy(), 3)


def test_heat3_non_contiguous():
    rng = np.random.default_rng(4)
    big = rng.random((8, 9, 10))
    check_calls(heat3_swap, (big[::2, :, 1:], big[1::2, :, 1:].copy(), 2))


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
def test_sum3_chained_indexing(dtype):
    A = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    check_calls(sum3_chained, (A,), (A[:, ::-1, 1:],))
    captured(sum3_chained, A)


def test_negative_indices_3d():
    A = np.random.default_rng(5).random((4, 5, 6))
    check_calls(count_neg_index, (A, 0.5), (A[::-1], 0.2))
    captured(count_neg_index, A, 0.5)


@pytest.mark.parametrize("dtype", ["int64", "int8"])
def test_index_error_at_the_same_iteration_3d(dtype):
    A = np.arange(24).astype(dtype).reshape(2, 3, 4)
    outs = check_calls(overrun3, (A, 0), (A, 1))
    assert outs[0].exc is None and type(outs[1].exc) is IndexError


def test_four_dims_swapped():
    A = np.arange(2 * 3 * 2 * 4, dtype=np.int64).reshape(2, 3, 2, 4)
    check_calls(swap4, (A, np.zeros_like(A), 3))
    captured(swap4, A, np.zeros_like(A), 3)


def test_view_of_3d_given_to_a_name_still_right():
    A = np.random.default_rng(6).random((3, 4, 5))
    check_calls(plane_view, (A,))


def swap_inside(A, B):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j, 0]
            A, B = B, A               # rebound inside the loop whose checks could be hoisted
    return s


def swap_between(A, B, steps):
    n, m = A.shape
    s = 0.0
    for t in range(steps):
        for i in range(n):
            for j in range(m):
                s += A[i, j] * (t + 1)
        A, B = B, A                   # the next sweep runs over the other array's shape
    return s


def test_swapped_arrays_of_other_shapes_raise_where_numpy_does():
    A = np.arange(4 * 3 * 2, dtype=np.float64).reshape(4, 3, 2)
    B = np.ones((2, 3, 2))
    outs = check_calls(swap_inside, (A, B), (A, A.copy()))
    assert type(outs[0].exc) is IndexError and outs[1].exc is None


def test_swapped_2d_arrays_of_other_shapes():
    A = np.arange(12, dtype=np.float64).reshape(4, 3)
    outs = check_calls(swap_between, (A, np.ones((2, 5)), 3), (A, np.ones((5, 3)), 2), (A, A + 1, 4))
    assert type(outs[0].exc) is IndexError and outs[1].exc is None and outs[2].exc is None
    captured(swap_between, A, A + 1, 4)
