"""Chained assignments in captured loops.

`cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (n - 1)` (the
symmetric fill of every covariance and correlation loop) was refused ("a
chained assignment") and the loop ran in Python. Python evaluates the value
once, then assigns the targets left to right, each target's subscript when
its turn comes; the loop is captured with that order (the value through a
name of the region's own). Two names among the targets would be bound to
one object, so such a statement still runs in Python.
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured_close, run_both


def cov_fill(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


def value_once(a):
    # the value is computed before either store: a[i + 1] gets the old a[i]'s sum
    for i in range(1, a.shape[0] - 1):
        a[i] = a[i + 1] = a[i] + a[i - 1]
    return a


def target_order(a, p):
    # targets left to right: the second store's index reads what the first wrote
    for i in range(a.shape[0]):
        p[0] = a[p[0]] = i
    return a, p


def name_and_element(a):
    s = 0.0
    for i in range(a.shape[0]):
        t = a[i] = a[i] * 2 + s
        s += t
    return a, s


def three_targets(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] = a[-1 - i] = i * 0.5
    return a, b


def two_names(a):
    for i in range(a.shape[0]):
        x = y = a[i]
        a[i] = x + y
    return a


def out_of_range(a):
    for i in range(a.shape[0]):
        a[i] = a[i + 2] = 1.0
    return a


RNG = np.random.default_rng(5)


@pytest.mark.parametrize("fn,args", [
    (cov_fill, (12, 20.0, RNG.random((20, 12)))),
    (cov_fill, (12, 20.0, RNG.random((20, 12)).astype(np.float32))),
    (value_once, (RNG.random(40),)),
    (value_once, (np.arange(40, dtype=np.int8),)),      # wraps as NumPy's int8
    (target_order, (np.zeros(6, dtype=np.int64), np.array([2]))),
    (name_and_element, (RNG.random(15),)),
    (name_and_element, (np.arange(6, dtype=np.int32),)),
    (three_targets, (np.zeros(7), np.zeros(7, dtype=np.float32))),
    (two_names, (RNG.random(5),)),
    (out_of_range, (np.zeros(6),)),                     # IndexError at i = 4, a[4] stored
])
def test_chain_store_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (cov_fill, (12, 20.0, RNG.random((20, 12)))),
    (value_once, (RNG.random(40),)),
    (target_order, (np.zeros(6, dtype=np.int64), np.array([2]))),
    (name_and_element, (RNG.random(15),)),
    (three_targets, (np.zeros(7), np.zeros(7))),
])
def test_chain_store_is_captured(fn, args):
    captured_close(fn, *args, rtol=1e-6)


def test_two_names_run_in_python():
    _, _, _, _, cf = run_both(two_names, RNG.random(5))
    info = cf._loop_info()
    assert len(info) == 1 and not info[0]["captured"], info
    assert "chained assignment" in info[0]["reason"], info
