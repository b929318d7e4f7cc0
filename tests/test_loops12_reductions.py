"""np.var / np.std / np.prod of 1-D slices and float("inf") constants in
captured loops (issue 17).

Each was a refusal that ran its loop in Python: `a call of np.var()`,
`a call of np.prod()`, `a constant that is not a number` (the str of
float("inf")). NumPy's own algorithms, bit for bit where NumPy's are:
np.var is _var's -- the pairwise sum over the count (a float64 division cast
to the dtype), then the pairwise sum of (x - mean)**2 in the dtype over the
count; np.std its sqrt in the dtype; np.prod multiply.reduce in order
(integers wrap in NumPy's result type: int64 for small ints, uint64 for
small unsigned, int64 for bool); an empty var/std warns in NumPy (Python
runs it), an empty prod is 1; float() of a str is Python's parse of it, and
a str float() rejects raises ValueError at the same iteration (Python runs
the loop).
"""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check
from test_loop_capture import run_both, same, captured


# ---------------------------------------------------------- programs
def rolling_stats(x, w):
    """z-scores over a trailing window (a typical feature pipeline)"""
    n = x.shape[0]
    z = np.zeros(n)
    for i in range(w, n):
        win = x[i - w:i]
        s = np.std(win)
        if s > 0:
            z[i] = (x[i] - np.mean(win)) / s
    return z


def window_var(x, w):
    out = np.zeros(x.shape[0] - w + 1, dtype=x.dtype)
    for i in range(out.shape[0]):
        out[i] = np.var(x[i:i + w])
    return out


def method_stats(X):
    """per-row variance / std / product through the methods"""
    r = np.zeros((X.shape[0], 3))
    for i in range(X.shape[0]):
        r[i, 0] = X[i].var()
        r[i, 1] = X[i, ::2].std()
        r[i, 2] = X[i].prod()
    return r


def growth_factors(g, k):
    """compounded growth over k-step windows"""
    out = np.zeros(g.shape[0] - k + 1, dtype=np.float64)
    for i in range(out.shape[0]):
        out[i] = np.prod(g[i:i + k])
    return out


def int_products(a, k):
    s = 0
    for i in range(a.shape[0] - k + 1):
        s += np.prod(a[i:i + k])
    return s


def prod_empty_windows(a):
    acc = 0.0
    for i in range(a.shape[0] + 1):
        acc += np.prod(a[:i]) + np.prod(a[i:i])
    return acc


def var_from_start(x):
    t = 0.0
    for i in range(x.shape[0]):
        t += np.var(x[:i])   # i == 0: NumPy warns and gives nan
    return t


def nearest(pts, q):
    """the closest point: best starts at float("inf")"""
    best = float("inf")
    arg = -1
    for i in range(pts.shape[0]):
        d = (pts[i, 0] - q[0]) ** 2 + (pts[i, 1] - q[1]) ** 2
        if d < best:
            best = d
            arg = i
    return arg, best


def running_range(x):
    hi = float("-inf")
    lo = float(" +Infinity ")
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        hi = max(hi, x[i])
        lo = min(lo, x[i])
        out[i] = hi - lo if hi > float("-inf") else float("nan")
    return out, hi, lo


def float_of_text(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * float("1e-3")
    return s


def float_bad_text(x):
    s = 0.0
    for i in range(x.shape[0]):
        if i == 2:
            s += float("one")
        s += x[i]
    return s


RNG = np.random.default_rng(1712)
X64 = RNG.standard_normal(40)
X32 = X64.astype(np.float32)
M = RNG.standard_normal((6, 9))


@pytest.mark.parametrize("fn,args", [
    (rolling_stats, (X64, 5)),
    (rolling_stats, (X32, 7)),
    (rolling_stats, (np.repeat(X64[:8], 5), 5)),        # constant windows: s == 0
    (window_var, (X64, 6)),
    (window_var, (X32, 9)),
    (window_var, (X64 * 1e8 + 3.0, 4)),                  # cancellation: NumPy's two passes
    (method_stats, (M,)),
    (method_stats, (M.astype(np.float32),)),
    (growth_factors, (1.0 + RNG.standard_normal(30) * 0.01, 6)),
    (growth_factors, ((1.0 + RNG.standard_normal(30) * 0.01).astype(np.float32), 6)),
    (growth_factors, (np.array([1e200, 1e200, 1.0, 2.0]), 2)),   # overflow: NumPy's warning
    (int_products, (np.arange(1, 30, dtype=np.int64), 5)),
    (int_products, (np.arange(1, 60, dtype=np.int64), 20)),      # wraps in int64
    (int_products, (np.arange(1, 30, dtype=np.int8), 4)),        # int8 -> int64
    (int_products, (np.arange(1, 30, dtype=np.uint16), 4)),      # uint16 -> uint64
    (int_products, (np.array([True, False, True, True]), 2)),    # bool -> int64
    (prod_empty_windows, (np.array([1.5, -2.0, 3.0]),)),
    (prod_empty_windows, (np.array([1.5, np.nan, 3.0]),)),
    (var_from_start, (X64[:5],)),
    (nearest, (RNG.random((50, 2)), np.array([0.5, 0.5]))),
    (running_range, (X64,)),
    (running_range, (np.array([np.nan, 1.0, -1.0]),)),
    (float_of_text, (X64,)),
    (float_bad_text, (X64,)),
])
def test_values(fn, args):
    check(fn, *args, warnings=True)


@pytest.mark.parametrize("fn,args", [
    (rolling_stats, (X64, 5)),
    (rolling_stats, (X32, 7)),
    (window_var, (X64, 6)),
    (method_stats, (M,)),
    (growth_factors, (1.0 + RNG.standard_normal(30) * 0.01, 6)),
    (int_products, (np.arange(1, 30, dtype=np.int64), 5)),
    (int_products, (np.arange(1, 30, dtype=np.int8), 4)),
    (prod_empty_windows, (np.array([1.5, -2.0, 3.0]),)),
    (nearest, (RNG.random((50, 2)), np.array([0.5, 0.5]))),
    (float_of_text, (X64,)),
])
def test_is_captured(fn, args):
    exp, got, _, _, cf = run_both(fn, *args)
    if isinstance(exp, np.ndarray) and exp.dtype.kind == "f":
        np.testing.assert_allclose(got, exp, rtol=1e-5 if exp.dtype == np.float32 else 1e-12)
    info = captured(cf)
    assert "last_fallback" not in info[0], info   # its C ran


def test_var_bits_match_numpy():
    """the two-pass algorithm's rounding is NumPy's, not a one-pass formula's"""
    for x in (X64 * 1e8 + 3.0, X32 * 1000 + 7, RNG.random(300)):
        exp, got, _, _, cf = run_both(window_var, x, 33)
        assert got.dtype == exp.dtype
        np.testing.assert_array_equal(got, exp)
        captured(cf)


def test_prod_bits_match_numpy():
    g = 1.0 + RNG.standard_normal(400) * 0.3
    for x in (g, g.astype(np.float32)):
        exp, got, _, _, cf = run_both(growth_factors, x, 50)
        np.testing.assert_array_equal(got, exp)
        captured(cf)


def test_bad_float_text_raises_where_python_does():
    cf = numdyn.compile(float_bad_text)
    with pytest.raises(ValueError, match="could not convert string to float: 'one'"):
        cf(X64)
    info = cf._loop_info()
    assert not info[0]["captured"] and "float() of a string" in info[0]["reason"], info


def test_shadowed_float_is_not_the_builtin():
    def f(x):
        float = lambda s: 2.0   # noqa: E731
        s = 0.0
        for i in range(x.shape[0]):
            s += float("inf") * x[i]
        return s
    check(f, X64[:4])


def test_empty_var_warns_like_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp, got, _, _, cf = run_both(var_from_start, X64[:5])
    same(exp, got)
