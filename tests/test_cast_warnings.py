"""Casts warn as NumPy's do. A float -> integer cast out of the target's
range (or of NaN/inf) warns "invalid value encountered in cast" exactly
where x86's conversions (NumPy's loops) raise the invalid flag: outside
int32's range for the types of 32 bits or fewer, (-2**31-1, 2**32) for
uint32, int64's range for int64, [-2**63, 2**64) for uint64. A complex ->
real cast warns ComplexWarning once, even when the graph is run again by
NumPy for its floating-point errors; mean/var of an empty float32 array
divide as NumPy's float32 scalar by an intp ("divide", not "scalar
divide")."""
import warnings

import numpy as np
import pytest

import numdyn

VALUES = [np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 1e19, -1.0, 300.0, 1e20,
          2.0**31, -2.0**31, 2.0**63, -2.0**63, 2.0**64, 4e9, -5e9, -2147483649.0,
          4294967295.5, -9.22337203685478e18, 1.8446744073709548e19, 0.5]
TARGETS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _messages(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn(*args)
    return r, [str(x.message) for x in w]


@pytest.mark.parametrize("src", [np.float64, np.float32])
@pytest.mark.parametrize("tgt", TARGETS, ids=lambda t: t.__name__)
def test_float_to_int_cast_warns_as_numpy(src, tgt):
    def f(a):
        return (a * 1.0).astype(tgt)
    cf = numdyn.compile(f)
    for v in VALUES:
        a = np.full(9, v, dtype=src)
        r1, m1 = _messages(f, a)
        r2, m2 = _messages(cf, a)
        assert m1 == m2, v
        np.testing.assert_array_equal(r1, r2)


def store_cast(x):
    i = np.zeros(len(x), np.int16)
    i[:] = x * 1e10
    return i


def raise_cast(x):
    with np.errstate(invalid="raise"):
        try:
            return (x * 1e10).astype(np.int32)
        except FloatingPointError as e:
            return str(e)


def complex_cast_with_fp_error(x):
    return (x.astype(np.complex128) * 1e30).astype(np.int32)


def complex_store(x):
    f = np.zeros(len(x))
    f[:] = x + 1j
    return f


def empty_stats(x):
    return x[:0].mean(), x[:0].var()


@pytest.mark.parametrize("fn", [store_cast, raise_cast, complex_cast_with_fp_error, complex_store])
def test_cast_warnings_and_errors(fn):
    x = np.linspace(-2, 2, 7)
    r1, m1 = _messages(fn, x)
    r2, m2 = _messages(numdyn.compile(fn), x)
    assert m1 == m2
    if isinstance(r1, str):
        assert r1 == r2
    else:
        np.testing.assert_array_equal(r1, r2)
        # a first call (kernels compiling) runs the graph eagerly: its cast
        # of a complex value is a new array, not a view of the real part
        assert (r1.flags.c_contiguous, r1.flags.owndata) == (r2.flags.c_contiguous, r2.flags.owndata)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex64])
def test_empty_mean_divide_message(dt):
    x = np.arange(3).astype(dt)
    r1, m1 = _messages(empty_stats, x)
    r2, m2 = _messages(numdyn.compile(empty_stats), x)
    assert sorted(m1) == sorted(m2)  # the order of trace-time warnings is a known gap (README)
    assert [type(v) for v in r1] == [type(v) for v in r2]
