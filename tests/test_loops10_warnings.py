"""The warnings check the tracer and loop capture ask on every operation
that may warn (nd__warnings_may_raise, src/trace/loop_run.c) compares an
interned filter action by identity with the interned 'error'; an action
string that is not interned (built at run time) must still be read by its
text. Each case here puts such an 'error' action in warnings.filters: the
RuntimeWarning NumPy turns into an exception is caught by the function's
own handler, under numdyn as under NumPy."""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check


def _error_action():
    s = "".join(["er", "ror"])   # equal to 'error', not the interned object
    assert s == "error"
    return s


def log_in_try(a):
    with warnings.catch_warnings():
        warnings.simplefilter(_error_action())
        try:
            b = np.log(a)
        except RuntimeWarning as e:
            b = str(e)
    return b


def loop_in_try(x):
    # a captured loop of NumPy scalar arithmetic whose float event warns
    with warnings.catch_warnings():
        warnings.filters.insert(0, (_error_action(), None, RuntimeWarning, None, 0))
        s = np.float64(1.0)
        try:
            for i in range(x.shape[0]):
                s = s / x[i]
        except RuntimeWarning as e:
            s = str(e)
    return s


@pytest.mark.parametrize("backend", [None, "eager"])
@pytest.mark.parametrize("a", [np.array([1.0, 0.0, 2.0]), np.array([1.0, 2.0])])
def test_error_filter_not_interned_traced(backend, a):
    cf = numdyn.compile(log_in_try, **({"backend": backend} if backend else {}))
    for _ in range(3):   # first and warm calls
        check(log_in_try, a, compiled=cf)


@pytest.mark.parametrize("x", [np.array([2.0, 0.0, 4.0]), np.array([2.0, 4.0])])
def test_error_filter_not_interned_loop(x):
    cf = numdyn.compile(loop_in_try)
    for _ in range(3):
        check(loop_in_try, x, compiled=cf)
