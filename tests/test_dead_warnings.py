"""Values computed and never used still warn, as NumPy ran them.

The graph runs only what the return value and the caller's arrays need;
NumPy runs every operation. So `r = np.log(a)` then rebound warned under
NumPy and not under numdyn. The return flush now computes such dead
ufunc/cast/reduction values too (dropping them); a flush that raised
(inside the user's try/except) leaves the values before it alone."""
import warnings

import numpy as np
import pytest

import numdyn


def unused_log(x):
    r = np.log(x)
    return x * 2


def statement_only(x):
    np.sqrt(x - 1)
    return None


def rebound(x):
    y = x / 0
    y = x + 1
    return y


def ignored_by_errstate(x):
    with np.errstate(divide="ignore"):
        r = np.log(x)
    return x.sum()


def unused_part(x):
    a, b = np.divmod(x, 0.0)
    return a


def with_write(x):
    x[0] = 1
    np.log(x - 1)


def in_loop(x):
    for i in range(3):
        t = np.log(x - i)
    return 1.0


def caught(x):
    with np.errstate(divide="raise"):
        try:
            y = x / 0
        except FloatingPointError:
            y = x
    return y


@pytest.mark.parametrize("fn", [unused_log, statement_only, rebound, ignored_by_errstate, unused_part,
                                with_write, in_loop, caught], ids=lambda f: f.__name__)
def test_unused_values_warn_as_numpy(fn):
    cf = numdyn.compile(fn)
    for _ in range(3):  # the later calls replay where the capture allows
        a = np.array([0.0, 1.0, 2.0])
        b = a.copy()
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            r1 = fn(a)
        with warnings.catch_warnings(record=True) as w2:
            warnings.simplefilter("always")
            r2 = cf(b)
        assert sorted(str(w.message) for w in w1) == sorted(str(w.message) for w in w2)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.asarray(r1, dtype=float) if r1 is not None else 0,
                                      np.asarray(r2, dtype=float) if r2 is not None else 0)
