"""A store whose value is `x if c else y` (or max/min) of two types.

`cp[i] = c[i] / m if i < n - 1 else 0.0` is an np.float64 or a Python
float: the typing refused the loop ("a conditional expression with
branches of different types") and the Thomas algorithm ran in Python, at
NumPy's speed. Assignments to names already split such a value (each
branch takes its own type); a store now does the same, each value written
with its own type's cast -- a Python int NumPy refuses for an int8 element
raises OverflowError at that iteration, an np.int64 wraps.
"""
import numpy as np
import pytest

import numdyn
from oracle import check
from test_loop_capture import captured


def thomas(a, b, c, d):
    n = len(d)
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m if i < n - 1 else 0.0
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def clip_store(x, lo, out):
    for i in range(x.shape[0]):
        out[i] = x[i] if x[i] > lo else lo
    return out


def max_store(x, out):
    for i in range(x.shape[0]):
        out[i] = max(x[i], 0.5)
        out[i] = min(out[i], 3) if i % 2 else out[i]
    return out


def int_store(x, big, out):
    for i in range(x.shape[0]):
        out[i] = x[i] if i % 3 else big
    return out


def two_d(A, t):
    B = np.zeros_like(A)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] * 2 if A[i, j] > t else -1.0
    return B


RNG = np.random.default_rng(3)


def ran_as_c(fn, *args):
    """the warm call ran every loop of fn as C (no loop fell back to Python)"""
    cf = numdyn.compile(fn)
    copies = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]  # noqa: E731
    cf(*copies())
    numdyn.utils.wait_compiles()
    cf(*copies())
    info = cf._loop_info()
    assert info and all(i["captured"] and not i.get("last_fallback") for i in info), info


@pytest.mark.parametrize("n", [1, 2, 3, 50])
def test_thomas_exact_and_captured(n):
    a, b, c, d = RNG.random(n), RNG.random(n) + 4, RNG.random(n), RNG.random(n)
    exp = thomas(a, b, c, d)
    cf = numdyn.compile(thomas)
    got = cf(a, b, c, d)
    assert got.dtype == exp.dtype and np.array_equal(got, exp)
    if n > 2:
        captured(cf, 2)
        ran_as_c(thomas, a, b, c, d)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("lo", [0.25, 1, np.float64(0.25), np.float32(0.25)])
def test_clip_store(dtype, lo):
    x = np.linspace(-2, 2, 17)
    check(clip_store, x, lo, np.zeros(17, dtype), warnings=True)
    if dtype in (np.float64, np.float32) and type(lo) is not type(x[0]):
        ran_as_c(clip_store, x, lo, np.zeros(17, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_max_min_store(dtype):
    x = np.array([-1.0, 0.2, 0.7, 5.0, np.nan, 2.5, -0.0])
    check(max_store, x, np.zeros(7, dtype), warnings=True)
    if dtype != np.int32:
        ran_as_c(max_store, x[np.isfinite(x)], np.zeros(6, dtype))


@pytest.mark.parametrize("big", [300, 100, np.int64(300), -129, 2**70])
def test_int_store_overflow_as_numpy(big):
    x = np.arange(7, dtype=np.int64)
    check(int_store, x, big, np.zeros(7, np.int8), warnings=True)


def test_two_d():
    A = RNG.standard_normal((9, 7))
    check(two_d, A, 0.1, warnings=True)
    check(two_d, A.astype(np.float32), 0.1, warnings=True)
    ran_as_c(two_d, A, 0.1)
