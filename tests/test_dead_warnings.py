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
from oracle import check


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


# ---- an exception leaving the function: NumPy had run every operation
# before it, so pending values are computed (their warnings come first) and
# an earlier operation's own error (an out-of-bounds index) is the one raised
def raises_after_pending(a, idx, k):
    a += 1
    b = np.log(a - 2)           # divide-by-zero and invalid warnings, value unused
    if k == 0:
        raise KeyError("late")
    if k == 1:
        return np.zeros(3) + np.zeros(4)
    if k == 2:
        c = a[idx + 1]          # out of bounds, never used: NumPy raised here
        return a.sum()
    if k == 3:
        a[1:3] = a[idx + 1]     # the gather fails before the store's shape check
    return b


_raises = numdyn.compile(raises_after_pending)


@pytest.mark.parametrize("k", range(4))
def test_exception_after_pending_work(k):
    idx = np.array([[1, 3], [0, 2]])
    check(raises_after_pending, np.arange(4.0), idx, k, compiled=_raises, warnings=True)


def python_warning_after_pending(a):
    b = np.sqrt(a - 2)                  # pending: 'invalid value encountered in sqrt'
    s = np.float64(a[0]) / 0.0          # NumPy scalar math warns at once
    out = np.empty_like(a)
    for i in range(a.shape[0] - 1):     # a captured loop taking the array path
        out[i:i + 2] = a[i:i + 2] ** 0.5   # (np.sqrt in NumPy: not captured)
    return b, s, out


def test_array_power_half_in_a_loop_is_sqrt():
    # the warnings' order is a known gap (README): traced work's warnings
    # come after those NumPy scalar math gives at once
    with np.errstate(all="ignore"):
        check(python_warning_after_pending, np.array([-np.inf, -0.0, 4.0, 0.0]),
              signed_zeros=True)
