"""Variance and standard deviation over short rows in one pass (issue 19).

x.var(-1) / x.std(-1) of narrow rows (2..16 elements a row) run as ONE
pointwise kernel over the rows: the row mean is an unrolled short
reduction computed once per row, the sum of squared deviations from it a
second unrolled reduction over the same row in registers/L1 (NumPy's own
two-pass algorithm, so no cancellation: shown against exact rational
arithmetic on ill-conditioned rows, where a one-pass sum of squares loses
every digit). Before, a row kernel wrote (x - mean) ** 2 and a second
kernel summed it: two kernels and three passes over memory.

NumPy is the oracle over dtypes, layouts (C, F, strided, reversed), row
lengths, ddof, keepdims, reduced axes other than the last, NaN/inf rows
and constant rows; forms where the mean is also needed over the whole
domain, or the result is broadcast into a bigger domain, keep their
earlier schedules and NumPy's values. The counters pin one kernel and one
pass over x.
"""
from fractions import Fraction

import numpy as np
import pytest

import numdyn
from fusion_counts import data, layouts, passes
from oracle import check


def row_std(x):
    return x.std(axis=-1)


def row_var(x):
    return x.var(axis=-1)


def row_std_ddof(x):
    return np.std(x, axis=-1, ddof=1)


def row_var_keep(x):
    return x.var(axis=-1, keepdims=True)


def mean_and_std(x):
    return x.mean(-1), x.std(-1)


def zscore_rows(x):
    # the mean is also used over the whole domain: not a frame there
    m = x.mean(-1, keepdims=True)
    return (x - m) / x.std(-1, keepdims=True)


def centered_and_std(x):
    m = x.mean(-1, keepdims=True)
    return x - m, np.sqrt(((x - m) ** 2).mean(-1))


FNS = [row_std, row_var, row_std_ddof, row_var_keep, mean_and_std, zscore_rows, centered_and_std]


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("dt", ["float64", "float32", "int32"])
@pytest.mark.parametrize("width", [2, 3, 8, 16, 17])
def test_narrow_rows_oracle(backend, fn, dt, width):
    # float32 x - mean cancels near zero: ~1 ulp of the row's scale
    atol = 1e-6 if dt == "float32" else None
    for i, x in enumerate(layouts((301, width), dt)):
        # int32 takes the float64 kernels' layout handling (its values are
        # cast on load): C order and reversed rows check its loads, the
        # float dtypes every layout
        if dt == "int32" and i in (1, 2):
            continue
        check(fn, x, backend=backend, atol=atol)


@pytest.mark.parametrize("fn", [row_std, row_var, row_std_ddof])
def test_narrow_rows_special_values(backend, fn):
    x = data((64, 8), "float64")
    x[3, 7] = np.nan
    x[5, :] = 2.5           # variance 0
    x[9, 0] = np.inf
    x[11, 5] = -np.inf
    x[12, :] = np.nan
    x[13, 2] = 1e300        # squares overflow to inf, as NumPy's
    check(fn, x, backend=backend)


def test_other_axes_and_ranks(backend):
    x = data((8, 500), "float64")
    check(lambda a: a.std(0), x, backend=backend)
    check(lambda a: a.var(axis=0, ddof=1), x, backend=backend)
    y = data((40, 5, 4), "float64")
    check(lambda a: a.std(axis=(1, 2)), y, backend=backend)
    check(lambda a: a.std(axis=1), y, backend=backend)
    check(lambda a: a.var(-1), y, backend=backend)
    check(lambda a: a.std(-1), data((3, 7, 1, 6), "float64"), backend=backend)


def test_broadcast_into_bigger_domain(backend):
    # the std's value broadcast over a domain of higher rank than its own:
    # the frame's outside values are read only in a domain of its rank
    x = data((50, 8), "float64")
    Y = data((6, 50), "float64")
    check(lambda a, b: a.std(-1) + b, x, Y, backend=backend)
    check(lambda a, b: b * a.var(-1) - 1.0, x, Y, backend=backend)
    check(lambda a: a.std(-1).sum(), x, backend=backend)
    check(lambda a: a.std(-1).argmax(), x, backend=backend)


def test_one_kernel_one_pass():
    for w in (3, 8, 16):
        x = data((50000, w), "float64")
        assert passes(row_std, x) == (1, 1.0), w
        assert passes(row_var, x) == (1, 1.0), w
        assert passes(row_std_ddof, x) == (1, 1.0), w
    assert passes(row_std, data((50000, 8), "float32")) == (1, 1.0)
    assert passes(lambda a: a.std(0), data((8, 50000), "float64")) == (1, 1.0)


def _exact_var(row):
    xs = [Fraction(float(v)) for v in row]
    m = sum(xs) / len(xs)
    return float(sum((v - m) ** 2 for v in xs) / len(xs))


@pytest.mark.parametrize("width", [3, 8, 16])
@pytest.mark.parametrize("offset", [1e4, 1e8, -1e9])
def test_ill_conditioned_rows(width, offset):
    """rows of a huge offset plus a tiny spread: x.var(-1) within 1e-5 of
    the exact variance (rational arithmetic), as NumPy's two-pass, and no
    further from it than NumPy (a sum of squares minus the
    squared sum, the naive one-pass form, is wrong in every digit here)"""
    rng = np.random.default_rng(7)
    x = offset + rng.standard_normal((200, width)) * 1e-2
    exact = np.array([_exact_var(r) for r in x])
    f = numdyn.compile(row_var)
    got = f(x)
    assert passes(row_var, x)[0] == 1   # computed by the one-kernel form
    ref = x.var(-1)
    np.testing.assert_allclose(ref, exact, rtol=1e-5)
    np.testing.assert_allclose(got, exact, rtol=1e-5)
    err_nd = np.max(np.abs(got - exact) / exact)
    err_np = np.max(np.abs(ref - exact) / exact)
    assert err_nd <= 4 * err_np + 1e-12, (err_nd, err_np)
    # C rows: the mean's sum and the squares' sum in NumPy's pairwise order,
    # so the same bits as NumPy's (its x.var(-1) of contiguous rows)
    np.testing.assert_array_equal(got, ref)
    naive = (x * x).mean(-1) - x.mean(-1) ** 2
    assert np.max(np.abs(naive - exact) / exact) > 1e-3   # the test can tell
