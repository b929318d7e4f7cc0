"""NumPy's float power loop given one exponent for the whole loop.

NumPy's float32/float64 power loop, when its exponent operand does not move
(a Python or NumPy scalar, a 0-d array, a size-1 array broadcast to more
elements), computes the exponents 2, -1 and 0.5 as x * x, 1 / x and
sqrt(x). Those differ from pow's: in the last bit for about one value in
2,000 (glibc's pow is not correctly rounded), and for 0.5 at -0.0 (sqrt
keeps the sign) and -inf (sqrt is NaN with "invalid value encountered in
power", pow is inf). numdyn compiled `np.power(x, 0.5)` to pow and returned
inf where NumPy returns NaN and warns; `x ** 2` inside a captured loop's
vector statement was pow's value, not x * x. Every comparison here is bit
for bit, signs of zeros and warnings included.
"""
import warnings

import numpy as np
import pytest

import numdyn
from test_loop_capture import captured


def _bits(a):
    a = np.asarray(a)
    u = a.view(np.uint64 if a.itemsize == 8 else np.uint32 if a.itemsize == 4 else np.uint16)
    return np.where(np.isnan(a), 0, u)


def assert_bits(got, exp):
    assert type(got) is type(exp)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    assert np.array_equal(np.isnan(got), np.isnan(exp))
    bad = np.flatnonzero(_bits(got) != _bits(exp))
    assert bad.size == 0, (bad[:5], np.asarray(got).ravel()[bad[:5]], np.asarray(exp).ravel()[bad[:5]])


def run(fn, *args):
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        exp = fn(*args)
    cf = numdyn.compile(fn)
    cf(*args)
    numdyn.utils.wait_compiles()
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        got = cf(*args)
    assert sorted(str(m.message) for m in w2) == sorted(str(m.message) for m in w1)
    return got, exp, cf


def data(dtype, edges=True, nan=False):
    """values where pow(x, 2) != x * x and pow(x, -1) != 1 / x (squares
    neither overflow nor underflow: no flag makes NumPy run the graph
    again), the edges where sqrt and pow differ (-0.0, -inf); a NaN makes
    the kernel's invalid flag rerun the graph in NumPy, so it is optional"""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**63 - 1, 40000, dtype=np.int64).view(np.float64)
    lim = 1e150 if dtype == np.float64 else 1e18
    bits = bits[np.isfinite(bits) & (np.abs(bits) > 1 / lim) & (np.abs(bits) < lim)]
    parts = [bits[:6000], rng.random(2000) * 10, [1.0, -1.0, 4.0]]
    if edges:
        parts.append([-np.inf, -0.0, 0.0, np.inf])
    if nan:
        parts.append([np.nan])
    return np.concatenate(parts).astype(dtype)


DTYPES = [np.float64, np.float32]
EXPONENTS = [2.0, -1.0, 0.5, 3.0, 1.5, 0.0, 1.0]


def operands(dtype, kind):
    if kind == "nonneg":
        # no negative finite value: nothing raises "invalid" but sqrt(-inf)
        return np.concatenate([np.abs(data(dtype, edges=False)), np.array([-np.inf, -0.0, 0.0, np.inf], dtype)])
    return data(dtype, nan=kind == "nan")


@pytest.mark.parametrize("kind", ["nonneg", "mixed", "nan"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("e", EXPONENTS)
def test_scalar_exponent(dtype, e, kind):
    x = operands(dtype, kind)
    for fn in (lambda x: np.power(x, e), lambda x: x ** np.float64(e), lambda x: x ** e,
               lambda x: np.power(x, dtype(e))):
        got, exp, _ = run(fn, x)
        if e in (3.0, 1.5) and exp.dtype == np.float64:
            # pow proper: numdyn's vector pow is SLEEF's (1 ulp), not glibc's
            np.testing.assert_allclose(got, exp, rtol=4e-16)
            assert np.array_equal(np.isnan(got), np.isnan(exp))
        else:
            assert_bits(got, exp)


@pytest.mark.parametrize("dtype", DTYPES)
def test_integer_exponent_is_cast(dtype):
    x = data(dtype)
    for k in (2, -1, np.int64(2), np.int32(-1)):
        got, exp, _ = run(lambda x: np.power(x, k), x)
        assert_bits(got, exp)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("e", [2.0, -1.0, 0.5])
def test_zero_d_exponent_at_run_time(dtype, e):
    """a 0-d array argument: one compiled kernel, the class tested in it"""
    x = operands(dtype, "nonneg")
    f = lambda x, p: np.power(x, p) * 1.0  # noqa: E731
    for p in (np.array(e, dtype=dtype), np.array(e, dtype=dtype)[()] * np.ones((), dtype)):
        got, exp, _ = run(f, x, np.asarray(p))
        assert_bits(got, exp)
    # the same compiled program, the other exponents
    cf = numdyn.compile(f)
    for q in (2.0, -1.0, 0.5, 3.0):
        exp = f(x, np.array(q, dtype=dtype)) if q != 3.0 else None
        with np.errstate(all="ignore"):
            got = cf(x, np.array(q, dtype=dtype))
            if exp is None:
                np.testing.assert_allclose(got, f(x, np.array(q, dtype=dtype)), rtol=4e-7 if dtype == np.float32 else 4e-16)
            else:
                assert_bits(got, exp)


def test_size_one_exponents_follow_numpy():
    """(1,) broadcast to more elements: NumPy's fast path; (1,) with (1,):
    pow (-inf ** 0.5 is inf there)"""
    neg = np.array([-np.inf, -0.0, 4.0, 2.0])
    for base, ex in ((neg, np.array([0.5])), (neg[:1], np.array([0.5])), (np.array(-np.inf), np.array([0.5])),
                     (neg.reshape(4, 1), np.array([[0.5]])), (neg, np.array(0.5))):
        got, exp, _ = run(lambda b, e: np.power(b, e), base, ex)
        assert_bits(got, exp)


def test_float16_has_no_fast_path_but_square():
    x = np.array([-np.inf, -0.0, 0.0, 4.0, 3.3, 65000.0], dtype=np.float16)
    for e in (2.0, -1.0, 0.5, 3.0):
        got, exp, _ = run(lambda x: np.power(x, e), x)
        assert_bits(got, exp)


def test_float_power_uses_the_double_loop():
    x = data(np.float32)
    for e in (2.0, -1.0, 0.5):
        got, exp, _ = run(lambda x: np.float_power(x, e), x)
        assert_bits(got, exp)


def test_array_exponent_stays_pow():
    x = np.array([-np.inf, -0.0, 4.0])
    got, exp, _ = run(lambda b, e: np.power(b, e), x, np.full(3, 0.5))
    assert_bits(got, exp)
    assert got[0] == np.inf


# ---------------------------------------------------------- captured loops
def newton_sqrt_steps(c, n):
    """vector statements with a scalar exponent inside a captured loop"""
    x = np.ones_like(c)
    it = 0
    while it < n:
        r = x ** 2 - c
        d = 2 * x ** 1 * np.power(x, 2.0) ** -1
        x = x - r * d / (2 * x ** 2 + 1)
        it += 1
        if np.max(np.abs(r)) < 0:
            break
    return x, it


def scaled_powers(a, p, n):
    out = np.zeros_like(a)
    for k in range(n):
        out += a ** p + np.power(a, p)
        a = a * 1.0
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_loop_vector_statements(dtype):
    c = np.abs(data(dtype, edges=False)[:3000]) + dtype(1)
    with np.errstate(all="ignore"):
        exp = newton_sqrt_steps(c.copy(), 3)
    cf = numdyn.compile(newton_sqrt_steps)
    with np.errstate(all="ignore"):
        got = cf(c.copy(), 3)
    assert_bits(got[0], exp[0])
    assert got[1] == exp[1]
    captured(cf)


@pytest.mark.parametrize("p", [2.0, -1.0, 0.5, 2])
def test_loop_scalar_exponent_variable(p):
    a = np.abs(data(np.float64, edges=False)[:4000])
    exp = scaled_powers(a.copy(), p, 2)
    cf = numdyn.compile(scaled_powers)
    got = cf(a.copy(), p, 2)
    assert_bits(got, exp)
