"""Per-dtype edge semantics of compiled ufuncs, numdyn vs NumPy, both backends.

What generated code gets wrong first: floor_divide/remainder sign rules,
integer division by zero (0, not a trap), INT_MIN // -1, integer overflow
wrap-around, shifts by >= the bit width or by negative counts, NaN through
maximum/minimum (propagates) vs fmax/fmin (ignored), comparisons with NaN,
signed zeros, float16 rounding after every op, integer power, casts.
Values are exact for integers and compared with the sign of zero for
floats where it matters.
"""
import numpy as np
import pytest

from oracle import check

SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


def _int_grid(dt):
    """Every pair of interesting values of dt (as two flat arrays)."""
    info = np.iinfo(dt)
    vals = [0, 1, 2, 3, 7, info.max, info.max - 1]
    if info.min < 0:
        vals += [-1, -2, -3, -7, info.min, info.min + 1]
    v = np.array(vals, dtype=dt)
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel().copy(), b.ravel().copy()


def _float_grid(dt):
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, -7.0, 1e-3,
            np.inf, -np.inf, np.nan, 5.75, -0.1]
    v = np.array(vals, dtype=dt)
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel().copy(), b.ravel().copy()


# ---- division, remainder ------------------------------------------------------

def _divmods(a, b):
    return a // b, a % b, np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b)


def _divmod_tuple(a, b):
    q, r = np.divmod(a, b)
    return q, r


@pytest.mark.parametrize("dt", INTS)
def test_int_floor_divide_remainder(backend, dt):
    """Signs round toward -inf; x // 0 == 0 and x % 0 == 0; INT_MIN // -1
    wraps to INT_MIN."""
    a, b = _int_grid(dt)
    check(_divmods, a, b, backend=backend)
    check(_divmod_tuple, a, b, backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_float_floor_divide_remainder(backend, dt):
    """NumPy's float floor_divide/remainder: sign of the divisor, -0.0,
    inf and NaN cases."""
    a, b = _float_grid(dt)
    check(_divmods, a, b, backend=backend, signed_zeros=True)
    check(_divmod_tuple, a, b, backend=backend, signed_zeros=True)


@pytest.mark.parametrize("dt", INTS + FLOATS)
def test_true_divide_by_zero(backend, dt):
    a = np.array([0, 1, 3, 5], dtype=dt)
    b = np.array([0, 0, 0, 2], dtype=dt)
    check(lambda x, y: (x / y, np.true_divide(y, x)), a, b, backend=backend, signed_zeros=True)


# ---- integer overflow, negation, abs -----------------------------------------

def _wrap(a, b):
    return a + b, a - b, a * b, -a, abs(a), np.square(a), a + 1, a * 3


@pytest.mark.parametrize("dt", INTS)
def test_int_overflow_wraps(backend, dt):
    a, b = _int_grid(dt)
    check(_wrap, a, b, backend=backend)


@pytest.mark.parametrize("dt", SIGNED)
def test_int_power(backend, dt):
    """Integer power wraps on overflow; 0 ** 0 == 1; a negative base."""
    a = np.array([0, 1, -1, 2, -2, 3, 7, -7, 0], dtype=dt)
    b = np.array([0, 0, 5, 7, 3, 40, 2, 3, 5], dtype=dt)
    check(lambda x, y: (x ** y, np.power(y, 2), x ** 3), a, b, backend=backend)


@pytest.mark.parametrize("dt", SIGNED)
def test_int_power_negative_exponent_raises(backend, dt):
    a = np.array([1, 2, 3], dtype=dt)
    b = np.array([1, -1, 2], dtype=dt)
    check(lambda x, y: x ** y, a, b, backend=backend)


# ---- shifts ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", INTS)
def test_shifts(backend, dt):
    """Shift counts >= the bit width give 0 (or -1 for a negative value
    shifted right); negative counts behave like huge ones."""
    bits = np.iinfo(dt).bits
    info = np.iinfo(dt)
    vals = [1, 3, 5, info.max] + ([-1, -8, info.min] if info.min < 0 else [])
    counts = [0, 1, 2, bits - 1, bits, bits + 1, 2 * bits] + ([-1, -bits] if info.min < 0 else [])
    a, b = np.meshgrid(np.array(vals, dtype=dt), np.array(counts, dtype=dt), indexing="ij")
    a, b = a.ravel().copy(), b.ravel().copy()
    check(lambda x, y: (x << y, x >> y, np.left_shift(x, y), np.right_shift(x, y)),
          a, b, backend=backend)


@pytest.mark.parametrize("dt", INTS + ["bool"])
def test_bitwise(backend, dt):
    a = np.array([0, 1, 5, 7, 1, 0], dtype=dt)
    b = np.array([3, 1, 6, 0, 0, 0], dtype=dt)
    check(lambda x, y: (x & y, x | y, x ^ y, ~x, np.invert(y), np.bitwise_count(x) if x.dtype != bool else x),
          a, b, backend=backend)


# ---- NaN: min/max vs fmin/fmax, comparisons, reductions ------------------------

def _minmax(a, b):
    return (np.maximum(a, b), np.minimum(a, b), np.fmax(a, b), np.fmin(a, b))


def _cmp(a, b):
    return (a < b, a <= b, a > b, a >= b, a == b, a != b, np.isnan(a), np.isinf(b),
            np.isfinite(a), np.signbit(a))


@pytest.mark.parametrize("dt", FLOATS)
def test_nan_min_max(backend, dt):
    a, b = _float_grid(dt)
    check(_minmax, a, b, backend=backend)


@pytest.mark.parametrize("dt", FLOATS + COMPLEX)
def test_nan_comparisons(backend, dt):
    a, b = _float_grid("float64")
    a, b = a.astype(dt), b.astype(dt)
    if dt in COMPLEX:
        with np.errstate(invalid="ignore"):
            b = b + 1j * a[::-1]
        check(lambda x, y: (x == y, x != y, np.isnan(x), np.isinf(y), np.isfinite(x)),
              a, b, backend=backend)
    else:
        check(_cmp, a, b, backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_nan_reductions(backend, dt):
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0], [np.nan, np.nan, 0.0]], dtype=dt)
    check(lambda a: (a.max(), a.min(axis=0), a.max(axis=1), np.argmax(a, axis=1),
                     np.argmin(a), np.fmax.reduce(a, axis=0), np.nanmax(a, axis=1)),
          x, backend=backend)


# ---- signed zero -----------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS)
def test_signed_zero(backend, dt):
    z = np.array([0.0, -0.0, 0.0, -0.0, -0.5, 0.4], dtype=dt)
    w = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, -1.0], dtype=dt)
    check(lambda a, b: (a + b, a - b, a * b, -a, abs(a), np.copysign(1.0, a).astype(a.dtype),
                        np.floor(a), np.ceil(a), np.trunc(a), np.rint(a), np.sign(a),
                        a * -1, np.sqrt(a), np.positive(a), b - b),
          z, w, backend=backend, signed_zeros=True)


# ---- float16: rounding after every op -------------------------------------------

def _f16_chain(a, b):
    c = a + b
    d = c * b
    e = d - a / b
    return c, d, e, np.sqrt(a * a + b * b), (a * 3) * 0.1, a.sum(), np.mean(b), np.cumsum(a)


def test_float16_rounds_each_op(backend):
    rng = np.random.default_rng(0)
    a = (rng.uniform(-50, 50, 64)).astype(np.float16)
    b = (rng.uniform(0.5, 40, 64)).astype(np.float16)
    check(_f16_chain, a, b, backend=backend)


def test_float16_overflow_to_inf(backend):
    a = np.array([65504.0, 60000.0, -65504.0, 1.0], dtype=np.float16)
    check(lambda x: (x + x, x * 2, x + np.float16(32), x - 70000.0, (x * 2) / 2), a, backend=backend)


# ---- rounding, casts -------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS)
def test_rint_half_even_and_round(backend, dt):
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.7, -3.7, 1e4 + 0.5], dtype=dt)
    check(lambda x: (np.rint(x), np.round(x), np.floor(x), np.ceil(x), np.trunc(x)),
          a, backend=backend, signed_zeros=True)


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", INTS + ["bool"])
def test_float_to_int_casts_truncate(backend, src, dst):
    """In-range float -> int casts truncate toward zero (out of range is
    platform garbage in NumPy too, so not tested)."""
    vals = [0.0, -0.0, 0.9, 1.5, 2.99, 7.0, 100.7, 127.0]
    if dst in SIGNED:
        vals += [-0.9, -1.5, -2.99, -100.7, -128.0]
    a = np.array(vals, dtype=src)
    check(lambda x: (x.astype(dst), (x * 1).astype(dst)), a, backend=backend)


@pytest.mark.parametrize("src", INTS)
@pytest.mark.parametrize("dst", INTS + FLOATS + ["bool"])
def test_int_casts_wrap(backend, src, dst):
    info = np.iinfo(src)
    a = np.array([0, 1, info.max, info.min, 200 % (info.max + 1), info.max // 3], dtype=src)
    check(lambda x: x.astype(dst) + x.astype(dst), a, backend=backend)


# ---- weak scalars (NEP 50) --------------------------------------------------------

@pytest.mark.parametrize("dt", INTS)
def test_weak_python_int_keeps_dtype(backend, dt):
    a = np.array([1, 2, 3], dtype=dt)
    check(lambda x: (x + 1, x * 2, 3 - x, x // 2, x % 3, x ** 2, x > 1, x + True), a, backend=backend)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16"])
def test_weak_python_int_out_of_range_raises(backend, dt):
    a = np.array([1, 2, 3], dtype=dt)
    check(lambda x: x + 70000, a, backend=backend)
    check(lambda x: x * -1 if x.dtype.kind == "u" else x * 1000000, a, backend=backend)


@pytest.mark.parametrize("dt", FLOATS + COMPLEX)
def test_weak_python_float_keeps_dtype(backend, dt):
    a = np.array([1.5, -2.0, 0.25], dtype=dt)
    check(lambda x: (x + 1.5, x * 0.1, 2.0 / x, x ** 2.0, x + 1, x * (1 + 2j)), a, backend=backend)


def test_numpy_scalar_is_strong(backend):
    a = np.array([1, 2, 3], dtype=np.int8)
    check(lambda x: (x + np.int16(1), x * np.float32(0.5), x + np.float64(2), x + np.uint8(200)),
          a, backend=backend)


# ---- complex ----------------------------------------------------------------------

@pytest.mark.parametrize("dt", COMPLEX)
def test_complex_edge(backend, dt):
    a = np.array([1 + 2j, -3 + 0.5j, 0j, complex(np.inf, 1), complex(np.nan, 0), 1e30 + 1e30j], dtype=dt)
    b = np.array([0j, 2 - 1j, 1 + 0j, 1j, 1 + 1j, 1e-30 + 1e30j], dtype=dt)
    check(lambda x, y: (x + y, x - y, x * y, x / y, abs(x), np.sign(x), np.conj(y), x == y,
                        np.square(x), np.isnan(x), np.isinf(x)),
          a, b, backend=backend)
