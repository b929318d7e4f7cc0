"""The native backend's generated kernels against NumPy: transcendentals,
float16, complex, every dtype, reductions (accuracy, NaN rules, argmax first
occurrence), scans, fused row kernels (softmax, logsumexp),
views/stencils/setitem, and the fusion decisions that must not change
results. Per-dtype integer and float edge semantics (division, overflow,
shifts, power, bitwise, NaN, signed zeros, casts) are in
test_semantics_ufuncs.py, on both backends."""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
ALL = [np.bool_] + INTS + FLOATS + [np.complex64, np.complex128]


def native(fn):
    return numdyn.compile(fn, backend="native")


def ints_with_edges(dt, n=64, seed=0):
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    a[:6] = [info.min, info.max, 0, 1, info.max // 2, info.min // 2 if info.min else 3]
    return a


# ------------------------------------------------------------ integer edges
@pytest.mark.parametrize("dt", [np.int8, np.int64, np.uint16])
def test_int_divide_by_zero_warns_like_numpy(dt):
    a = np.array([5, 7, 9], dt)
    b = np.array([1, 0, 2], dt)
    check(lambda x, y: x // y, a, b, backend="native", warnings=True)
    check(lambda x, y: x % y, a, b, backend="native", warnings=True)


# -------------------------------------------------------------- float edges
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_transcendentals_vector_math(dt):
    x = np.linspace(-3, 3, 1001).astype(dt)
    p = np.linspace(0.01, 5, 1001).astype(dt)
    u = np.linspace(-0.99, 0.99, 1001).astype(dt)
    check(lambda x, p, u: (np.exp(x), np.expm1(x), np.exp2(x), np.log(p), np.log2(p),
                           np.log10(p), np.log1p(p), np.sin(x), np.cos(x), np.tan(u),
                           np.arcsin(u), np.arccos(u), np.arctan(x), np.sinh(x), np.cosh(x),
                           np.tanh(x), np.arcsinh(x), np.arccosh(p + 1), np.arctanh(u),
                           np.sqrt(p), np.cbrt(x), p ** x, np.hypot(x, p), np.arctan2(x, p),
                           np.logaddexp(x, p), np.logaddexp2(x, p)),
          x, p, u, backend="native")


def test_float16_rounds_after_each_op():
    a = np.array([2048, 1000.5, 0.1, 65504, 3.0], np.float16)
    b = np.array([1, 0.25, 0.2, 1, 7], np.float16)
    check(lambda x, y: ((x + y) + y, x * y - y, (x / y) * y, np.exp(y) + x, x + y + y + y),
          a, b, backend="native")
    check(lambda x: np.cumsum(x), np.array([2048, 1, 1, 1, 1], np.float16), backend="native")
    check(lambda x: np.cumsum(x), np.full(40, 0.1, np.float16), backend="native")


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_arithmetic(dt):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dt)
    b = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dt)
    b[0] = 0
    with np.errstate(all="ignore"):
        check(lambda x, y: (x + y, x - y, x * y, x / y, abs(x), np.conj(x), x * x, -x,
                            np.exp(x), np.log(x), np.sqrt(x), x == y, np.sign(x), x ** 2),
              a, b, backend="native")


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_transcendentals_accuracy(dt):
    """The vectorized complex exp/log/sqrt/trig/hyperbolic forms against
    NumPy (glibc) at the dtype's per-part tolerance: magnitudes from 1e-6
    to 300, near the unit circle (log's real part ~ 0), real parts past
    the overflow of e^x, near the poles of tan/tanh."""
    rng = np.random.default_rng(11)
    n = 3000
    mag = lambda: rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 2.5, n)
    z = np.concatenate([
        mag() + 1j * mag(),
        np.exp(1j * rng.uniform(-np.pi, np.pi, n)) * (1 + rng.standard_normal(n) * 10.0 ** rng.uniform(-15, -2, n)),
        rng.uniform(-1500, 1500, n) + 1j * rng.uniform(-10, 10, n),
        rng.standard_normal(n) * 1e-6 + 1j * (np.pi / 2 * rng.integers(-5, 5, n) + rng.standard_normal(n) * 1e-7),
    ]).astype(dt)
    with np.errstate(all="ignore"):
        check(lambda x: (np.exp(x), np.log(x), np.log2(x), np.log10(x), np.sqrt(x), np.sin(x),
                         np.cos(x), np.tan(x), np.sinh(x), np.cosh(x), np.tanh(x)),
              z, backend="native")


def test_every_dtype_add_compare_where():
    """Every dtype in one call (one compiler run): {dtype name: results}."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(40) * 10, rng.standard_normal(40) * 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = [v.astype(dt) for dt in ALL for v in (a, b)]

    def f(*args):
        return {x.dtype.name: (x + y, x == y, np.where(x != y, x, y), x.astype(np.float64))
                for x, y in zip(args[::2], args[1::2])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(f, *args, backend="native")


# --------------------------------------------------------------- reductions
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sum_accuracy_at_least_numpy(dt):
    rng = np.random.default_rng(6)
    x = (rng.random(1_000_003) + 1e-3).astype(dt)
    exact = float(np.sum(x.astype(np.float64).astype(np.longdouble)))
    err_np = abs(float(np.sum(x)) - exact)
    err_nd = abs(float(native(lambda v: v.sum())(x)) - exact)
    eps = np.finfo(dt).eps
    assert err_nd <= max(2 * err_np, 4 * eps * exact), (err_nd, err_np)
    # a row-wise sum too (inner reduced dim)
    y = x[:1_000_000].reshape(100, 10000)
    ex = y.astype(np.float64).sum(axis=1)
    e_np = np.abs(y.sum(axis=1) - ex).max()
    e_nd = np.abs(native(lambda v: v.sum(axis=1))(y) - ex).max()
    assert e_nd <= max(2 * e_np, 8 * eps * ex.max())


# every pattern of a 3-D reduction: full, outer, middle, inner, outer+inner,
# the two inner dims (axis -1 is 2 again: the same kernel)
REDUCE_AXES = [None, 0, 1, 2, (0, 2), (1, 2)]


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
def test_reductions_axes(dt):
    """All axis patterns in one call (one compiler run), {axis: results}."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((5, 6, 7)) * 5).astype(dt)
    check(lambda v: {str(axis): (v.sum(axis=axis), v.max(axis=axis),
                                 v.min(axis=axis, keepdims=True), v.prod(axis=axis),
                                 v.any(axis=axis), v.all(axis=axis))
                     for axis in REDUCE_AXES},
          x, backend="native")


# (float16/float32 argmax with NaN and ties: test_semantics_reductions.py,
# both backends; here 2-D ties for an integer and the NaN rules of float64)
@pytest.mark.parametrize("dt", [np.float64, np.int16])
def test_argmax_first_occurrence_and_nan(dt):
    x = np.array([[1, 5, 5, 2], [3, 3, 3, 3], [0, 9, 1, 9]], dt)
    check(lambda v: (v.argmax(axis=1), v.argmin(axis=1), v.argmax(axis=0), v.argmax(), v.argmin()),
          x, backend="native")
    if np.dtype(dt).kind == "f":
        y = np.array([[1, np.nan, 7, np.nan], [2, 8, 8, 1], [np.nan, 1, 2, 3]], dt)
        check(lambda v: (v.argmax(axis=1), v.argmin(axis=1), v.argmax(), v.max(axis=1), v.min(axis=0)),
              y, backend="native")


def test_nan_in_full_max_and_parallel_chunks():
    x = np.random.default_rng(8).standard_normal(3_000_000)
    x[2_500_000] = np.nan
    check(lambda v: (v.max(), v.min(), np.argmax(v), v.sum()), x, backend="native")


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dt", [np.float64, np.int32, np.float32, np.complex128])
def test_scans(axis, dt):
    x = (np.random.default_rng(9).standard_normal((7, 9)) * 3).astype(dt)
    check(lambda v: (np.cumsum(v, axis=axis), np.cumprod(v[:, :4], axis=axis)), x, backend="native")


def test_reduction_with_initial_and_empty():
    x = np.arange(12.0).reshape(3, 4)
    check(lambda v: (np.sum(v, axis=1, initial=5.0), np.max(v, axis=0, initial=7.0)), x,
          backend="native")
    e = np.zeros((0, 4))
    check(lambda v: (v.sum(axis=0), v.sum(), v.prod(axis=1)), e, backend="native")


# ------------------------------------------------------------- row kernels
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]


def layernorm(x):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("shape", [(4, 8), (3, 5, 200), (2, 1, 3, 17), (1, 1), (6, 1)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_layernorm(shape, dt):
    x = (np.random.default_rng(10).standard_normal(shape) * 4).astype(dt)
    check(softmax, x, backend="native")
    # x - mean cancels: another (equally accurate) summation order moves the
    # difference by a few ulp of |x|, so the tolerance is absolute in |x|
    check(layernorm, x, backend="native", atol=1e-5 if dt == np.float32 else 1e-12)


def test_softmax_with_nan_and_inf_rows():
    x = np.array([[1, 2, np.nan], [np.inf, 1, 2], [-np.inf, -np.inf, 0], [3, 3, 3]])
    with np.errstate(all="ignore"):
        check(softmax, x, backend="native")


@pytest.mark.parametrize("shape", [(50, 300), (7, 3), (2000, 2)])
def test_logsumexp_and_norms(shape):
    x = np.random.default_rng(11).standard_normal(shape)
    check(logsumexp, x, backend="native")
    check(lambda v: np.sqrt((v * v).sum(axis=1)), x, backend="native")
    check(lambda v: (v - v.mean(axis=1, keepdims=True)) / v.std(axis=1, keepdims=True), x,
          backend="native")


def test_pairwise_distances_short_rows():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((100, 3)), rng.standard_normal((80, 3))
    check(lambda a, b: np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1)), a, b,
          backend="native")


# ----------------------------------------------------- views and mutation
def test_stencil_setitem_one_kernel_and_values():
    A = np.random.default_rng(13).standard_normal((40, 30))

    def jacobi(A):
        B = A.copy()
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[:-2, 1:-1] + A[2:, 1:-1])
        return B
    check(jacobi, A, backend="native")


def test_overlapping_inplace_update():
    def f(A):
        A[1:] = A[:-1] + 1
        return A
    check(f, np.arange(10.0), backend="native")

    def g(A):
        A[::2] *= 3
        A[:, 1] = A[:, 0] - 1
        return A.T + 0
    check(g, np.arange(24.0).reshape(6, 4), backend="native")


def test_views_of_noncontiguous_inputs():
    base = np.arange(60.0).reshape(6, 10)
    check(lambda x: x[::2, 1:] * 2 + x[::2, :-1], make_args=lambda: (base.T.copy().T,),
          backend="native")
    check(lambda x: (x.T + 1, x[:, ::-1] - x), np.asfortranarray(base), backend="native")
    check(lambda x: x[1::3] + 1, base[:, 2], backend="native")


def test_broadcast_expensive_operand():
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((300, 1)), rng.standard_normal((1, 200))
    check(lambda a, b: np.exp(np.sin(a)) * b + np.tanh(b), a, b, backend="native")


def test_multi_output_shared_work():
    rng = np.random.default_rng(15)
    S, X = rng.uniform(5, 30, 1000), rng.uniform(1, 100, 1000)

    def f(S, X):
        d1 = np.log(S / X) * 0.5
        d2 = d1 - 0.3
        return S * d1 - X * d2, X * (1 - d2) - S * (1 - d1)
    check(f, S, X, backend="native")


def test_index_iota_arange_eye():
    check(lambda n: (np.arange(10) * 2.5, np.eye(4) * 3, np.arange(3, 15, 2) ** 2), 0,
          backend="native")


def test_scalar_and_zero_d_results():
    x = np.arange(10.0)
    check(lambda v: (v.sum(), v.mean() * 2, v[3] + 1, (v * 2).max()), x, backend="native")
