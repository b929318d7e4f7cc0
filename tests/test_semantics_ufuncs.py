"""Per-dtype edge semantics of compiled ufuncs, numdyn vs NumPy, both backends.

What generated code gets wrong first: floor_divide/remainder sign rules,
integer division by zero (0, not a trap), INT_MIN // -1, integer overflow
wrap-around, shifts by >= the bit width or by negative counts, NaN through
maximum/minimum (propagates) vs fmax/fmin (ignored), comparisons with NaN,
signed zeros, float16 rounding after every op, integer power, casts.
Values are exact for integers and compared with the sign of zero for
floats where it matters. Each case runs grids of the interesting values plus
random full-range values (the native backend's vector loops see both).
"""
import numpy as np
import pytest

from oracle import check

SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


def _random_ints(dt, n=64, seed=0):
    """n random values over dt's whole range, the extremes first."""
    info = np.iinfo(dt)
    a = np.random.default_rng(seed).integers(info.min, info.max, n, dtype=dt, endpoint=True)
    a[:6] = [info.min, info.max, 0, 1, info.max // 2, info.min // 2 if info.min else 3]
    return a


def _int_grid(dt, random=64):
    """Every pair of interesting values of dt (as two flat arrays), then
    `random` pairs of random full-range values."""
    info = np.iinfo(dt)
    vals = [0, 1, 2, 3, 7, info.max, info.max - 1]
    if info.min < 0:
        vals += [-1, -2, -3, -7, info.min, info.min + 1]
    v = np.array(vals, dtype=dt)
    a, b = np.meshgrid(v, v, indexing="ij")
    return (np.concatenate([a.ravel(), _random_ints(dt, random, 1)]),
            np.concatenate([b.ravel(), _random_ints(dt, random, 2)]))


def _float_grid(dt):
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, -7.0, 1e-3,
            np.inf, -np.inf, np.nan, 5.75, -0.1, 7.0, 2.5, 1e-300]
    v = np.array(vals, dtype=dt)
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel().copy(), b.ravel().copy()


# ---- division, remainder ------------------------------------------------------

def _divmods(a, b):
    return a // b, a % b, np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b)


def _divmod_tuple(a, b):
    q, r = np.divmod(a, b)
    return q, r, divmod(a, b)


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
    return a + b, a - b, a * b, -a, abs(a), np.square(a), a * a, a + 1, a * 3


@pytest.mark.parametrize("dt", INTS)
def test_int_overflow_wraps(backend, dt):
    a, b = _int_grid(dt)
    check(_wrap, a, b, backend=backend)


@pytest.mark.parametrize("dt", INTS)
def test_int_power(backend, dt):
    """Integer power (by squaring) wraps on overflow; 0 ** 0 == 1; a
    negative base."""
    a = [0, 1, 2, 3, 7, 0] + ([-1, -2, -7] if dt in SIGNED else [255, 254, 9])
    b = [0, 0, 7, 40, 2, 5, 5, 3, 3]
    a = np.concatenate([np.array(a, dtype=dt), _random_ints(dt, 16)])
    b = np.concatenate([np.array(b, dtype=dt), np.arange(16, dtype=dt) % 9])
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
    vals += [int(v) for v in _random_ints(dt, 12)[6:]]
    counts = [0, 1, 2, bits - 1, bits, bits + 1, 2 * bits] + ([-1, -bits] if info.min < 0 else [])
    a, b = np.meshgrid(np.array(vals, dtype=dt), np.array(counts, dtype=dt), indexing="ij")
    a, b = a.ravel().copy(), b.ravel().copy()
    check(lambda x, y: (x << y, x >> y, np.left_shift(x, y), np.right_shift(x, y)),
          a, b, backend=backend)


@pytest.mark.parametrize("dt", INTS + ["bool"])
def test_bitwise(backend, dt):
    a = np.array([0, 1, 5, 7, 1, 0], dtype=dt)
    b = np.array([3, 1, 6, 0, 0, 0], dtype=dt)
    if dt != "bool":
        a = np.concatenate([a, _random_ints(dt, 64, 3)])
        b = np.concatenate([b, _random_ints(dt, 64, 4)])
        check(lambda x, y: np.gcd(x, y), a, b, backend=backend)
    check(lambda x, y: (x & y, x | y, x ^ y, ~x, np.invert(y), np.bitwise_count(x)),
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
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.7, -3.7, 1e4 + 0.5,
                  0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -7.0], dtype=dt)
    check(lambda x: (np.rint(x), np.round(x), np.floor(x), np.ceil(x), np.trunc(x),
                     np.sign(x), -x, abs(x)),
          a, backend=backend, signed_zeros=True)


def _each(fn, keys):
    """A function of one argument per key returning {key: fn(key, arg)}:
    many small cases in one compiled call (one compiler run), each result
    named by its key in a failure message."""
    def f(*args):
        return {k: fn(k, a) for k, a in zip(keys, args)}
    return f


FLOAT_CAST_TARGETS = INTS + ["bool"] + FLOATS


@pytest.mark.parametrize("src", FLOATS)
def test_float_casts_truncate(backend, src):
    """In-range float -> int casts truncate toward zero (out of range is
    platform garbage in NumPy too, so not tested); float -> float rounds.
    Every target dtype in one call."""
    def values(dst):
        vals = [0.0, -0.0, 0.9, 1.5, 2.99, 7.0, 100.7, 127.0, 0.49, 7.99, 100.75]
        if dst in SIGNED or dst in FLOATS:
            vals += [-0.9, -1.5, -2.5, -2.99, -100.7, -128.0]
        return np.array(vals, dtype=src)
    check(_each(lambda dst, x: (x.astype(dst), (x * 1).astype(dst)), FLOAT_CAST_TARGETS),
          *[values(d) for d in FLOAT_CAST_TARGETS], backend=backend, signed_zeros=True)


INT_CAST_TARGETS = INTS + FLOATS + ["bool"]


@pytest.mark.parametrize("src", INTS)
def test_int_casts_wrap(backend, src):
    """Integer -> integer casts wrap, -> float round, -> bool is != 0; every
    target dtype in one call."""
    info = np.iinfo(src)
    a = np.array([0, 1, info.max, info.min, 200 % (info.max + 1), info.max // 3], dtype=src)
    check(lambda x: {dst: x.astype(dst) + x.astype(dst) for dst in INT_CAST_TARGETS},
          a, backend=backend)


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

# Complex exp/log/sqrt/trig/hyperbolic: C99 Annex G special values (inf, nan,
# signed zeros, branch cuts) as glibc gives them -- NumPy's npymath calls it.
# Parts of +-709..2200 exercise glibc's overflow-free scaling of e^x.
_CX_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-310, -1e-310, 30.0, 354.5, -355.0, 709.5,
             710.0, -745.0, 1500.0, -2200.0, 1e300, -1e300, np.pi / 2, np.inf, -np.inf, np.nan]
_CX_FUNCS = {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10,
             "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
             "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh}


def _complex_grid(dt):
    re, im = np.meshgrid(np.array(_CX_PARTS), np.array(_CX_PARTS), indexing="ij")
    z = np.empty(re.size, np.complex128)
    z.real, z.imag = re.ravel(), im.ravel()
    with np.errstate(over="ignore"):
        return z.astype(dt)


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("name", sorted(_CX_FUNCS))
def test_complex_transcendental_special_values(backend, dt, name):
    f = _CX_FUNCS[name]
    check(lambda z: f(z), _complex_grid(dt), backend=backend, signed_zeros=True)


@pytest.mark.parametrize("dt", COMPLEX)
def test_complex_power_integer_exponents(backend, dt):
    """NumPy multiplies out |n| < 100 (1, 2, 3 without a leading 1 * a, so
    an infinite part stays finite-free of 0 * inf), 0 ** p is 0 for
    Re p > 0, and other exponents go to C's cpow."""
    a = np.array([complex(np.inf, 0), complex(np.inf, 1), 1 + 2j, complex(np.nan, 0), 0j,
                  -3 + 0.5j, 1e30 + 1e30j, 0.5 - 0.25j], dtype=dt)
    for p in (1, 3, 4, 7, 99, 100, -1, -3, 0, 2.5, 1 + 2j, -1 + 2j):
        check(lambda x: np.power(x, p), a, backend=backend)


@pytest.mark.parametrize("dt", COMPLEX)
def test_complex_edge(backend, dt):
    a = np.array([1 + 2j, -3 + 0.5j, 0j, complex(np.inf, 1), complex(np.nan, 0), 1e30 + 1e30j], dtype=dt)
    b = np.array([0j, 2 - 1j, 1 + 0j, 1j, 1 + 1j, 1e-30 + 1e30j], dtype=dt)
    check(lambda x, y: (x + y, x - y, x * y, x / y, abs(x), np.sign(x), np.conj(y), x == y,
                        np.square(x), np.isnan(x), np.isinf(x)),
          a, b, backend=backend)
