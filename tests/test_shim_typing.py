"""NEP 50 typing of the shim: every dtype pair and weak Python scalar, for
the ufuncs numdyn traces, against NumPy 2 (values, dtypes, exceptions).

Runs with the eager backend (the shim's own reference interpreter); the
native backend is covered by the fuzz and semantics suites.
"""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.float16, np.float32, np.float64,
          np.complex64, np.complex128]

BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide,
          np.power, np.greater, np.less_equal, np.equal, np.not_equal,
          np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.maximum, np.minimum,
          np.remainder, np.arctan2, np.left_shift]

WEAK = [True, False, 3, -1, 300, -129, 2**40, 2**64, 2.5, -0.0, 1e300, 1j]


def arr(dt, n=4):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([True, False, True, True][:n])
    return np.arange(1, n + 1).astype(dt)


def run(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, *args, backend="eager")


@pytest.mark.parametrize("uf", BINARY, ids=lambda u: u.__name__)
def test_dtype_pairs(uf):
    f = numdyn.compile(lambda a, b: uf(a, b), backend="eager")
    for d1 in DTYPES:
        for d2 in DTYPES:
            a, b = arr(d1), arr(d2)
            try:
                with np.errstate(all="ignore"):
                    exp = uf(a, b)
            except Exception as e:
                with pytest.raises(type(e)):
                    with np.errstate(all="ignore"):
                        f(a, b)
                continue
            with np.errstate(all="ignore"):
                got = f(a, b)
            assert got.dtype == exp.dtype, (uf.__name__, d1, d2, got.dtype, exp.dtype)
            np.testing.assert_allclose(got.astype(complex), exp.astype(complex),
                                       rtol=2e-3, equal_nan=True)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("uf", [np.add, np.multiply, np.true_divide, np.power,
                                np.less, np.equal, np.maximum, np.bitwise_or],
                         ids=lambda u: u.__name__)
def test_weak_scalars(uf, dt):
    a = arr(dt)
    for s in WEAK:
        run(lambda x: uf(x, s), a)
        run(lambda x: uf(s, x), a)


def test_overflow_error_message():
    f = numdyn.compile(lambda x: x + 300, backend="eager")
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        f(np.arange(3, dtype=np.int8))
    g = numdyn.compile(lambda x: x - (-1), backend="eager")
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint8"):
        g(np.arange(3, dtype=np.uint8))


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("v", [300, -1, 2**64, -2**64])
def test_comparison_out_of_range_int(op, v):
    fn = eval(f"lambda x: (x {op} v, v {op} x)", {"v": v})
    run(fn, np.arange(5, dtype=np.uint8))
    run(fn, np.arange(5, dtype=np.int64))


def test_numpy_scalars_are_strong():
    a = np.arange(4, dtype=np.float16)
    run(lambda x: x * np.float32(3), a)
    run(lambda x: x + np.int64(2), np.arange(3, dtype=np.int8))
    run(lambda x: np.float64(2.0) * x, np.arange(3, dtype=np.float32))
    # np.float64 subclasses float but is not weak
    run(lambda x: x + x[0, 0], np.ones((2, 2), np.float32))


def test_ufunc_type_errors():
    run(lambda x: np.left_shift(x, 1), np.ones(3))
    run(lambda x: x - x, np.ones(3, bool))
    run(lambda x: np.bitwise_and(x, 1.5), np.ones(3, np.int32))


def test_dtype_and_casting_kwargs():
    a = np.arange(4, dtype=np.int8)
    run(lambda x: np.add(x, x, dtype=np.float64), a)
    run(lambda x: np.add(x, 1, dtype=np.int16, casting="safe"), a)
    run(lambda x: np.add(x, np.ones(4), casting="no"), a)
    run(lambda x: np.add(x, 1, casting="bogus"), a)


def test_out_casting_error_message():
    def f(x):
        x += 1.5
        return x
    run(f, np.arange(3))

    def g(x, o):
        np.add(x, 1.5, out=o)
        return o
    run(g, np.arange(3.0), np.zeros(3, np.int64))
    run(lambda x: np.divmod(x, 2, out=(np.zeros(3, np.int64), np.zeros(3))), np.arange(3.0))


def test_broadcast_error_message():
    f = numdyn.compile(lambda a, b: a + b, backend="eager")
    with pytest.raises(ValueError) as e:
        f(np.ones((2, 3)), np.ones(4))
    assert str(e.value) == "operands could not be broadcast together with shapes (2,3) (4,) "
    run(lambda a, b: a * b, np.ones(3), np.ones(4))


def test_result_type_and_can_cast():
    a = np.ones(3, np.float32)
    run(lambda x: (np.result_type(x, 1.0), np.result_type(x, np.float64)), a)
    run(lambda x: (np.can_cast(x, np.float64), np.can_cast(x, np.int8)), a)
