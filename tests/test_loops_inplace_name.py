"""`x op= y` in a captured loop, x a name holding an array.

NumPy updates the array x holds in place (x keeps its identity; a caller's
array passed as x is written). The loop typing took `x -= lr * g` for a
new array given to x and refused the loop ("'x' holds an array and is
given both new arrays and in-place updates"), so gradient descent on a
small parameter vector ran in Python with a graph a step. It is now a
store over the whole array, as `x[...] -= lr * g`: the right side computed
whole first (an overlap with x reads x's old values), NumPy's same_kind
cast (UFuncTypeError for an int array and a float value, at the same
iteration), a read-only array's ValueError.
"""
import numpy as np
import pytest

import numdyn
from oracle import check
from test_loops_split_store import ran_as_c


def rosenbrock_gd(x0, lr, steps):
    x = np.array(x0, dtype=float)
    for _ in range(steps):
        g = np.empty_like(x)
        g[0] = -2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2)
        g[1] = 200 * (x[1] - x[0] ** 2)
        x -= lr * g
    return x


def update_arg(x, y, n):
    """writes the caller's array (and records its first element: an
    element store keeps the loop from the tracer, which fuses whole-array
    updates alone into one kernel)"""
    hist = np.zeros(n)
    for k in range(n):
        x *= 0.5
        x += y * k
        hist[k] = x[0]
    return x, hist


def fused_only(x, y, n):
    """whole-array updates alone: the tracer's (one kernel), not captured"""
    for k in range(n):
        x *= 0.5
        x += y * k
    return x


def overlap(x, n):
    hist = np.zeros(n)
    for k in range(n):
        x -= x[::-1]
        x += 1.0
        hist[k] = x[-1]
    return x, hist


def int_then_float(x, n):
    for k in range(n):
        x += 1
        if k == 2:
            x += 0.5
    return x


def rows(A, r, n):
    hist = np.zeros(n)
    for k in range(n):
        A -= r
        A *= 1.5
        hist[k] = A[0, 0]
    return A, hist


def mixed(x32, g, n):
    hist = np.zeros(n, dtype=np.float32)
    for k in range(n):
        x32 -= 0.1 * g
        hist[k] = x32[1]
    return x32, hist


RNG = np.random.default_rng(5)


def test_rosenbrock():
    check(rosenbrock_gd, [-1.2, 1.0], 1e-3, 200)
    ran_as_c(rosenbrock_gd, [-1.2, 1.0], 1e-3, 200)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_update_arg(dtype):
    x = np.arange(6).astype(dtype)
    y = np.ones(6, dtype)
    if dtype == np.int64:
        check(update_arg, x, y, 4)   # x *= 0.5 on ints: UFuncTypeError at the first iteration
    else:
        check(update_arg, x, y, 4)
        ran_as_c(update_arg, x, y, 4)


def test_whole_array_updates_alone_stay_the_tracers():
    x, y = np.arange(6.0), np.ones(6)
    check(fused_only, x, y, 4)
    cf = numdyn.compile(fused_only)
    cf(x.copy(), y, 4)
    info = cf._loop_info()
    assert "tracer fuses" in (info[0].get("last_fallback") or ""), info


def test_overlap_reads_old_values():
    check(overlap, np.arange(7.0), 3)
    ran_as_c(overlap, np.arange(7.0), 3)


def test_int_array_given_a_float_raises_at_that_iteration():
    check(int_then_float, np.arange(5), 5)


def test_read_only_array():
    x = np.arange(4.0)
    x.flags.writeable = False
    check(update_arg, x, np.ones(4), 2)


def test_two_d():
    A = RNG.standard_normal((5, 4))
    check(rows, A, RNG.standard_normal(4), 3)        # a 1-D row: Python runs it (a store's limit)
    check(rows, A, RNG.standard_normal((5, 4)), 3)
    ran_as_c(rows, A, RNG.standard_normal((5, 4)), 3)


def test_float32_with_float64_value():
    check(mixed, np.linspace(0, 1, 9, dtype=np.float32), np.linspace(1, 2, 9), 5)
    ran_as_c(mixed, np.linspace(0, 1, 9, dtype=np.float32), np.linspace(1, 2, 9), 5)


def row_views(A, s):
    """views a loop makes (rows, parts), updated in place: writes through"""
    for i in range(A.shape[0]):
        row = A[i]
        row *= s
        row += A[i - 1, 0]
        w = A[i, 1:]
        w -= 1.0
    return A


def reversed_self(A):
    for i in range(A.shape[0]):
        row = A[i, ::-1]
        row -= A[i]      # the right side overlaps the view, reversed
    return A


@pytest.mark.parametrize("dtype,s", [(np.float64, 2.0), (np.int64, 2), (np.int64, 2.5)])
def test_views_updated_in_place(dtype, s):
    A = np.arange(20).reshape(4, 5).astype(dtype)
    check(row_views, A, s)
    if dtype == np.float64:
        ran_as_c(row_views, A, s)


def test_view_overlapping_its_value():
    A = np.arange(20.0).reshape(4, 5)
    check(reversed_self, A)
    ran_as_c(reversed_self, A)
