"""Tuple assignments with element targets in captured loops.

`a[j], a[j + 1] = a[j + 1], a[j]` (the swap of every sorting and permuting
loop) was refused ("an assignment target that is not a name") and the loop
ran in Python: bubble sort of 300 elements as slow as plain Python. Python
evaluates the values left to right, then assigns the targets left to right,
each target's subscript when its turn comes; the loop is captured with that
order (each value through a name of the region's own).
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured, run_both


def bubble(a):
    n = len(a)
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return a


def permute(a, p):
    for i in range(len(p)):
        a[i], a[p[i]] = a[p[i]], a[i]
    return a


def name_then_element(a):
    i = 0
    for k in range(len(a) - 1):
        i, a[i] = k + 1, a[k] * 2     # a[i] takes the i just assigned
    return a, i


def two_arrays(a, b):
    for i in range(len(a)):
        a[i], b[i] = b[i], a[i]
    return a, b


def past_the_end(a):
    for i in range(len(a)):
        a[i], a[i + 1] = a[i + 1], a[i]
    return a


def row_views(A):
    # rows are views: A[i] = A[i + 1] copies row i + 1 into row i before
    # the second store reads it (NumPy's result: both rows equal)
    for i in range(A.shape[0] - 1):
        A[i], A[i + 1] = A[i + 1], A[i]
    return A


def element_and_name(a, x):
    for i in range(len(a)):
        a[i], x = x * 1.5, a[i]
    return a, x


def columns(a):
    for i in range(len(a)):
        a[i, 0], a[i, 1] = a[i, 1], a[i, 0]
    return a


def list_form(a):
    for i in range(len(a)):
        [a[i], a[0]] = [a[0], a[i]]
    return a


RNG = np.random.default_rng(3)


@pytest.mark.parametrize("fn,args", [
    (bubble, (RNG.random(30),)),
    (bubble, (RNG.integers(-100, 100, 30).astype(np.int8),)),
    (permute, (np.arange(6.0), np.array([5, 3, 0, 1, 4, 2]))),
    (permute, (np.arange(6.0), np.array([5, 3, 9, 1, 4, 2]))),   # IndexError at i = 2
    (name_then_element, (np.arange(6.0),)),
    (two_arrays, (np.arange(5.0), np.arange(5, dtype=np.int32))),
    (past_the_end, (np.arange(5.0),)),
    (row_views, (np.arange(12.0).reshape(4, 3),)),
    (element_and_name, (np.arange(4.0), 2.0)),
    (element_and_name, (np.arange(4), 3)),
    (columns, (np.arange(12).reshape(6, 2),)),
    (list_form, (np.arange(5.0),)),
])
def test_tuple_store_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (bubble, (np.array([3.0, 1.0, 2.0, 0.5]),)),
    (permute, (np.arange(6.0), np.array([5, 3, 0, 1, 4, 2]))),
    (columns, (np.arange(12).reshape(6, 2),)),
    (two_arrays, (np.arange(5.0), np.arange(5.0))),
])
def test_tuple_store_is_captured(fn, args):
    exp, got, _, _, cf = run_both(fn, *args)
    np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, tuple) else got),
                                  np.asarray(exp[0] if isinstance(exp, tuple) else exp))
    captured(cf)
