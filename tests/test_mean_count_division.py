"""mean/var/std divide by NumPy's count exactly as numpy/_core/_methods.py
does: ``rcount`` is an ``np.intp`` (a strong NumPy scalar; ``max(rcount -
ddof, 0)`` a float64 when ddof is a float), so a float16/float32/complex64
sum is divided in float64/complex128 and rounded back to the sum's dtype.

numdyn divided as by a weak Python int, in the sum's own dtype: the count
itself was rounded to float16 past 2048 elements (``var`` of 2123 float16
values: 22.95 where NumPy gives 22.97) and to float32 past 2**24 (the mean
of 2**24 + 1 float32 ones was 1.0; NumPy's is 0.99999994). Compared exactly
(rtol=atol=0): the differences are one ulp.
"""
import numpy as np
import pytest

from oracle import check

EXACT = dict(rtol=0, atol=0)


def var_all(a):
    return a.var()


def std_all(a):
    return a.std()


def var_rows(a):
    return a.var(axis=1), a.std(axis=1, keepdims=True)


def std_float_ddof(a):
    return a.std(ddof=1.5), np.var(a, ddof=2)


def mean_all(a):
    return a.mean(), np.mean(a, keepdims=True)


def _f16(n, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 4.8 + 14.0).astype(np.float16)


@pytest.mark.parametrize("fn", [var_all, std_all, std_float_ddof])
def test_float16_count_past_2048(backend, fn):
    # 2123 is not a float16 value (it rounds to 2124)
    check(fn, _f16(2123, 3), backend=backend, **EXACT)
    check(fn, _f16(2123, 4), backend=backend, **EXACT)
    check(fn, _f16(4097, 5), backend=backend, **EXACT)


def test_float16_rows_past_2048(backend):
    rng = np.random.default_rng(7)
    m = (rng.standard_normal((3, 2123)) * 4.8 + 14.0).astype(np.float16)
    check(var_rows, m, backend=backend, **EXACT)


def test_float32_count_past_2_24(backend):
    # 2**24 + 1 is not a float32 value: the old division gave exactly 1.0
    a = np.ones(2**24 + 1, np.float32)
    res = check(mean_all, a, backend=backend, **EXACT)
    assert res[0] == np.float32(0.99999994)
    b = np.ones(2**24 + 1, np.float32)
    b[::2] = 3
    check(var_all, b, backend=backend, **EXACT)


def test_complex64_count_past_2_24(backend):
    a = np.full(2**24 + 1, 1 + 1j, np.complex64)
    check(mean_all, a, backend=backend, **EXACT)


def var_fractional_ddof(a):
    return a.var(ddof=0.3), a.std(ddof=0.25)


@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_fractional_ddof_small_count(backend, dt):
    # 1000 - 0.3 is neither a float16 value (it rounds to 999.5) nor a
    # float32 one: NumPy divides by the float64 999.7. Values with a mean
    # of exactly 0 make every sum exact, whatever the order of addition.
    rng = np.random.default_rng(11)
    half = rng.integers(1, 4, 500).astype(dt)
    a = rng.permutation(np.concatenate([half, -half]))
    check(var_fractional_ddof, a, backend=backend, **EXACT)


def masked_mean(a):
    return a[a > 0].mean()


def test_masked_mean_count_past_2_24(backend):
    # a[m].mean(): the count of the selection is _mean's np.intp too
    a = np.ones(2**24 + 2, np.float32)
    a[7] = -1.0
    res = check(masked_mean, a, backend=backend, **EXACT)
    assert res == np.float32(0.99999994)


# ------------------------------------------------------- complex64 means
# NumPy's complex division by (n + 0j) multiplies by a rounded reciprocal
# (Smith's form): only the complex128 quotient rounded back is NumPy's,
# whatever the count. Integer parts make every sum exact.

def mean_axis0(a):
    return a.mean(0), a.mean()


def test_complex64_mean_small_counts(backend):
    rng = np.random.default_rng(5)
    for n in (2100, 977, 1500, 6300):
        a = (rng.integers(0, 1000, n) + 1j * rng.integers(0, 1000, n)).astype(np.complex64)
        check(mean_axis0, a, backend=backend, **EXACT)
    m = (rng.integers(0, 100, (2100, 3)) + 1j).astype(np.complex64)
    check(mean_all, m, backend=backend, **EXACT)


# ------------------------------------------- float16 totals NumPy rounds
# A float16 total over axes NumPy adds step by step (dtype=np.float16, or
# nanvar of float16), or cast into float16 from another dtype (NumPy's
# buffers round the total at each one) runs in NumPy: numdyn's float32
# sum rounded once was up to 3% off.

def f16_dtype_outer(a):
    return (a.mean(0, dtype=np.float16), a.var(0, dtype=np.float16),
            a.std(0, dtype=np.float16), np.nanmean(a, 0, dtype=np.float16))


def nanvar_outer(a):
    return np.nanvar(a, 0), np.nanstd(a, 0, ddof=1)


def cast_into_f16_total(a):
    return a.mean(dtype=np.float16), (a * 3).astype(np.int8).sum(dtype=np.float16)


def test_float16_dtype_over_outer_axes(backend):
    rng = np.random.default_rng(2)
    m = (rng.standard_normal((2100, 3)) * 3 + 5).astype(np.float16)
    check(f16_dtype_outer, m, backend=backend, **EXACT)
    check(nanvar_outer, m, backend=backend, **EXACT)


def test_cast_into_float16_total(backend):
    rng = np.random.default_rng(2)
    for n in (3000, 9000, 20000, 70000):
        a = (rng.standard_normal(n) * 0.5 + 1).astype(np.float32)
        check(cast_into_f16_total, a, backend=backend, **EXACT)
