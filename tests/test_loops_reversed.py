"""`for i in reversed(range(...))` in captured loops.

Back substitution written `for i in reversed(range(n))` was refused (a for
loop over something other than range()) and ran in Python, while the same
loop written `range(n - 1, -1, -1)` was captured. reversed(range(lo, hi))
is range(hi - 1, lo - 1, -1), and reversed(range(lo, hi, -1)) is
range(hi + 1, lo + 1): the same values, empty ranges included; other steps
still run in Python.
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured_close, run_both


def back_subst(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in reversed(range(n)):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def order(lo, hi, out):
    k = 0
    for i in reversed(range(lo, hi)):
        out[k] = i
        k += 1
    return out, k


def order_down(lo, hi, out):
    k = 0
    for i in reversed(range(lo, hi, -1)):
        out[k] = i
        k += 1
    return out, k


def last_index(a, v):
    for i in reversed(range(len(a))):
        if a[i] == v:
            return i
    return -1


def suffix_max(a):
    out = np.empty_like(a)
    m = a[-1]
    for i in reversed(range(a.shape[0])):
        if a[i] > m:
            m = a[i]
        out[i] = m
    return out


def step_two(out):
    k = 0
    for i in reversed(range(0, 10, 2)):
        out[k] = i
        k += 1
    return out


def float_bound(out):
    for i in reversed(range(2.0)):
        out[0] = i
    return out


RNG = np.random.default_rng(21)
U = np.triu(RNG.random((12, 12))) + 12 * np.eye(12)


@pytest.mark.parametrize("fn,args", [
    (back_subst, (U, RNG.random(12))),
    (back_subst, (U.astype(np.float32), RNG.random(12).astype(np.float32))),
    (order, (2, 9, np.zeros(10, dtype=np.int64))),
    (order, (5, 5, np.zeros(3, dtype=np.int64))),        # empty
    (order, (7, 3, np.zeros(3, dtype=np.int64))),        # empty
    (order, (-3, 4, np.zeros(10, dtype=np.int64))),
    (order, (np.int64(1), np.int32(6), np.zeros(8, dtype=np.int64))),
    (order_down, (9, 2, np.zeros(10, dtype=np.int64))),
    (order_down, (2, 9, np.zeros(3, dtype=np.int64))),   # empty
    (order, (0, 12, np.zeros(5, dtype=np.int64))),       # IndexError at the 6th store
    (last_index, (np.array([1, 3, 3, 2]), 3)),
    (last_index, (np.array([1, 3, 3, 2]), 7)),
    (suffix_max, (RNG.random(20),)),
    (step_two, (np.zeros(5, dtype=np.int64),)),
    (float_bound, (np.zeros(1),)),                       # TypeError, as range(2.0)
])
def test_reversed_range_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (back_subst, (U, RNG.random(12))),
    (order, (2, 9, np.zeros(10, dtype=np.int64))),
    (order_down, (9, 2, np.zeros(10, dtype=np.int64))),
    (suffix_max, (RNG.random(20),)),
])
def test_reversed_range_is_captured(fn, args):
    captured_close(fn, *args)


def test_reversed_range_other_steps_run_in_python():
    _, _, _, _, cf = run_both(step_two, np.zeros(5, dtype=np.int64))
    info = cf._loop_info()
    assert len(info) == 1 and not info[0]["captured"], info
    assert "step other than 1 or -1" in info[0]["reason"], info
