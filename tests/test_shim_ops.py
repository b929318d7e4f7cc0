"""The shim's functions and methods against NumPy 2: reductions (dtypes for
every dtype, scalars vs arrays, errors), ufunc methods, creation, basic
indexing and views, assignment, elementwise helpers -- and that they stay
in-graph (no graph break) where the shim claims to cover them."""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.float16, np.float32, np.float64,
          np.complex64, np.complex128]


def run(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, *args, backend="eager", **kw)


def breaks(fn, *args):
    """Number of graph breaks while running fn compiled (eager backend)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return numdyn.explain(fn)(*args).graph_break_count


def sample(dt, shape=(3, 4)):
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    v = (np.arange(n) % 7 + 1).astype(dt)
    return v.reshape(shape)


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reduction_dtypes_every_dtype(dt):
    a = sample(dt)
    run(lambda x: (np.sum(x), np.prod(x, axis=0), np.max(x, axis=1), np.min(x),
                   np.any(x), np.all(x, axis=0), np.mean(x), np.mean(x, axis=1),
                   np.argmax(x), np.argmin(x, axis=0), np.cumsum(x), np.cumprod(x, axis=1)), a)
    if np.dtype(dt).kind != "b":
        run(lambda x: (np.var(x), np.std(x, axis=0), np.var(x, ddof=1, axis=1),
                       np.ptp(x, axis=0)), a)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.float16, np.float32, np.complex64])
def test_reduction_dtype_argument(dt):
    a = sample(dt)
    run(lambda x: (np.sum(x, dtype=np.int16), np.sum(x, dtype=np.float64),
                   np.mean(x, dtype=np.float32), np.prod(x, axis=1, dtype=np.int64),
                   np.cumsum(x, dtype=np.float32)), a)


def test_full_reductions_return_numpy_scalars():
    a = sample(np.float32)
    c = numdyn.compile(lambda x: (x.sum(), np.max(x), x.mean(), np.argmax(x),
                                  np.sum(x, keepdims=True), np.sum(x, axis=(0, 1))),
                       backend="eager")
    s, m, mean, am, kd, both = c(a)
    assert type(s) is np.float32 and type(m) is np.float32 and type(mean) is np.float32
    assert type(am) is np.int64
    assert isinstance(kd, np.ndarray) and kd.shape == (1, 1)
    assert type(both) is np.float32


def test_reduction_options():
    a = np.arange(12.0).reshape(3, 4)
    run(lambda x: (np.sum(x, axis=-1, keepdims=True), np.sum(x, axis=(0, 1)),
                   np.sum(x, initial=10.0), np.sum(x, where=x > 3),
                   np.max(x, where=x < 5, initial=-1.0), np.prod(x, axis=0, where=x > 0),
                   x.sum(1), x.max(axis=0, keepdims=True), x.var(axis=0, ddof=2),
                   np.count_nonzero(x), np.count_nonzero(x > 4, axis=1),
                   np.nansum(x), np.nanmax(x, axis=0), np.nanmean(x, axis=1)), a)
    nan = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])
    run(lambda x: (np.nansum(x), np.nansum(x, axis=0), np.nanprod(x, axis=1),
                   np.nanmax(x), np.nanmin(x, axis=1), np.nanmean(x, axis=0),
                   np.max(x), np.sum(x)), nan)


def test_reduction_out():
    def f(x, o):
        np.sum(x, axis=0, out=o)
        return o
    run(f, np.arange(6.0).reshape(2, 3), np.zeros(3, np.int64))

    def g(x):
        o = np.zeros(3)
        r = np.max(x, axis=0, out=o)
        return o, r
    run(g, np.arange(6.0).reshape(2, 3))


def test_reduction_errors():
    a = np.ones((2, 3))
    run(lambda x: np.sum(x, axis=2), a)
    run(lambda x: np.sum(x, axis=-3), a)
    run(lambda x: np.sum(x, axis=(0, 0)), a)
    run(lambda x: np.sum(x, axis=1.0), a)
    run(lambda x: np.max(x[:, :0], axis=1), a)
    run(lambda x: np.max(x[:0, :], axis=1), a)
    run(lambda x: np.argmax(x[:, :0]), a)
    run(lambda x: np.max(x, where=x > 0), a)
    run(lambda x: np.var(x, ddof=1, correction=1), a)
    f = numdyn.compile(lambda x: np.sum(x, axis=2), backend="eager")
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        f(a)


def test_empty_mean_is_nan():
    run(lambda x: np.mean(x[:0]), np.ones(3))


def test_ufunc_methods():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    run(lambda x: (np.add.reduce(x), np.add.reduce(x, axis=1), np.add.reduce(x, axis=None),
                   np.multiply.reduce(x, axis=0, keepdims=True), np.maximum.reduce(x, axis=1),
                   np.add.accumulate(x), np.multiply.accumulate(x, axis=1),
                   np.subtract.outer(x[0], x[1]), np.add.outer(x, x[0])), a)
    run(lambda x: np.logical_and.reduce(x > 2, axis=0), a)


def test_reductions_stay_in_graph():
    a = np.arange(12.0).reshape(3, 4)
    assert breaks(lambda x: (np.sum(x, axis=0), x.mean(), np.var(x), np.std(x, axis=1),
                             np.argmax(x, axis=1), np.cumsum(x), np.any(x > 2), x.max(),
                             np.add.reduce(x), np.nansum(x), np.ptp(x)), a) == 0


# ---------------------------------------------------------------- creation

def test_creation():
    a = np.ones(3)
    run(lambda x: (np.zeros(4), np.zeros((2, 3), np.int8), np.ones(3, dtype=bool),
                   np.empty((2, 2)).shape, np.full(3, 7), np.full((2, 2), 2.5, np.float32),
                   np.full(3, np.float32(1.5)), np.full(3, x), np.zeros_like(x, dtype=int),
                   np.ones_like(x), np.full_like(x, 4), np.empty_like(x).shape,
                   np.identity(3), np.identity(2, dtype=int)), a)
    run(lambda x: (np.arange(5), np.arange(2, 10, 3), np.arange(0, 1, 0.1), np.arange(5.0, 1),
                   np.arange(3, dtype=np.float32), np.arange(1, 2, 0.3, dtype=int),
                   np.arange(-3), np.arange(10, 0, -2), np.arange(3, dtype=np.float16),
                   np.arange(np.int8(3))), a)
    run(lambda x: (np.linspace(0, 1, 5), np.linspace(0, 1, 5, endpoint=False),
                   np.linspace(2, 3, 4, retstep=True), np.linspace(0, 10, 4, dtype=int),
                   np.linspace(1, 1, 3), np.linspace(0, 1, 1), np.linspace(0, 1, 0)), a)
    run(lambda x: (np.eye(3), np.eye(3, 4, k=1, dtype=int), np.eye(4, 3, k=-2), np.eye(2, dtype=bool)), a)


def test_creation_errors():
    a = np.ones(3)
    run(lambda x: np.zeros(-1), a)
    run(lambda x: np.zeros((2, -1)), a)
    run(lambda x: np.zeros(2.0), a)
    run(lambda x: np.full(3, 300, dtype=np.int8), a)
    run(lambda x: np.arange(0, 10, 0), a)
    run(lambda x: np.linspace(0, 1, -1), a)
    run(lambda x: np.full(3, [1, 2]), a)


def test_creation_is_lazy():
    def f(x):
        y = np.zeros(5)
        y[1:] = x[:4] * 2 + np.arange(4)
        return y + np.linspace(0, 1, 5) + np.eye(5)[0]
    run(f, np.arange(6.0))
    assert breaks(f, np.arange(6.0)) == 0


# ---------------------------------------------------------------- indexing

def test_basic_indexing_views():
    a = np.arange(24.0).reshape(2, 3, 4)
    run(lambda x: (x[1], x[:, 1], x[..., 2], x[0, ::-1, 1:3], x[None, 1, :, None],
                   x[:, ::2, ::-3], x[..., None], x[-1, -1], x[1:1], x[5:], x[:, -10:10],
                   x[np.int64(1)], x[0][1][2:]), a)
    assert breaks(lambda x: x[0, ::-1, 1:3] + x[1, :, :2], a) == 0


def test_element_read_is_numpy_scalar():
    a = np.arange(6.0).reshape(2, 3)
    c = numdyn.compile(lambda x: (x[1, 2], x[0][1], (x * 2)[1, 1]), backend="eager")
    r = c(a)
    assert [type(v) for v in r] == [np.float64] * 3 and r == (5.0, 1.0, 8.0)
    assert breaks(lambda x: x[1, 2] + x[0, 0], a) == 0


def test_indexing_errors():
    a = np.arange(6.0).reshape(2, 3)
    run(lambda x: x[2], a)
    run(lambda x: x[0, -4], a)
    run(lambda x: x[0, 0, 0], a)
    run(lambda x: x[..., ...], a)
    c = numdyn.compile(lambda x: x[5], backend="eager")
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        c(a)


def test_setitem():
    def f(x):
        x[0, 1:] = 5
        x[1] += 1
        x[:, 0] = x[:, 1] * 2
        x[-1, ::-1] = np.arange(3)
        return x
    run(f, np.arange(6.0).reshape(2, 3))

    def g(x):
        x[1:] = x[:-1] + 1   # overlapping read and write, like NumPy
        return x
    run(g, np.arange(5))

    def h(x):
        x[0] = 300
        return x
    run(h, np.zeros(3, np.int8))

    def k(x):
        x[:] = [[1.5, 2.5, 3.5]]   # leading 1-dims of the value are dropped
        x[0, 0] = 7.9               # float into int: truncation
        return x
    run(k, np.zeros((2, 3), np.int64))

    def bad(x):
        x[:2] = np.ones(3)
        return x
    run(bad, np.zeros(4))


def test_views_share_storage():
    def f(x):
        v = x[1:, ::2]
        v *= 10
        t = x.T
        t[0, 0] = -1
        r = x.reshape(-1)
        r[3] = 99
        return x, v, t, r
    run(f, np.arange(12.0).reshape(3, 4))


def test_view_functions():
    a = np.arange(24.0).reshape(2, 3, 4)
    run(lambda x: (np.transpose(x), np.transpose(x, (1, 0, 2)), x.transpose(2, 0, 1),
                   x.transpose((2, 0, 1)), x.T, np.swapaxes(x, 0, 2), np.moveaxis(x, 0, -1),
                   np.moveaxis(x, [0, 1], [-1, -2]), x.reshape(6, 4), x.reshape((4, -1)),
                   np.reshape(x, (3, 8)), x.ravel(), np.ravel(x), x.flatten(),
                   np.squeeze(x[:, :1]), x[:, :1].squeeze(axis=1), np.expand_dims(x, 1),
                   np.expand_dims(x, (0, -1)), np.broadcast_to(x[0, 0], (5, 4)),
                   np.flip(x), np.flip(x, 1), np.flipud(x), np.fliplr(x),
                   np.diagonal(x[0]), x[0].diagonal(1), np.diagonal(x, -1, 1, 2),
                   np.atleast_2d(x[0, 0]), np.atleast_3d(x[0]), np.copy(x), x.copy()), a)
    run(lambda x: x.transpose(1, 2, 2), a)
    run(lambda x: x.reshape(5, 5), a)
    run(lambda x: x.reshape(-1, -1), a)
    run(lambda x: np.squeeze(x, axis=0), a)
    run(lambda x: np.broadcast_to(x, (3, 3)), a)
    assert breaks(lambda x: np.swapaxes(x, 0, 2).reshape(-1) + x.T.ravel() + np.flip(x).ravel(), a) == 0


def test_transpose_reshape_copy_semantics():
    def f(x):
        y = x.T.reshape(-1)   # NumPy copies here: a write must not reach x
        y[0] = 100
        return x, y
    run(f, np.arange(6.0).reshape(2, 3))


# ---------------------------------------------------------------- elementwise

def test_where_clip_round():
    a = np.linspace(-2, 2, 9).reshape(3, 3)
    i8 = np.arange(-4, 5, dtype=np.int8)
    run(lambda x: (np.where(x > 0, x, 0), np.where(x > 0, 1, 2.5), np.where(x, x, -x),
                   np.clip(x, -1, 1), np.clip(x, None, 0.5), np.clip(x, min=-0.5),
                   x.clip(0, 1), np.round(x, 1), np.around(x * 3.33, 2), x.round(),
                   np.round(x, -1)), a)
    run(lambda x: (np.clip(x, 0, 300), np.clip(x, -1.5, 2), np.where(x > 0, x, 300),
                   np.round(x)), i8)
    run(lambda x: np.where(x), a)


def test_isclose_nan_to_num_astype():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9])
    run(lambda x: (np.isclose(x, 1.0), np.isclose(x, x, equal_nan=True), np.isclose(x[0], 1.0),
                   np.allclose(x[:1], 1.0), np.nan_to_num(x), np.nan_to_num(x, nan=-1, posinf=5),
                   x.astype(np.float32), x.astype(int), np.astype(x, np.float16)), a)
    run(lambda x: x.astype(np.int64, casting="safe"), a)
    z = np.array([1 + 2j, 3 - 4j])
    run(lambda x: (x.real, x.imag, np.real(x), np.imag(x), x.conj(), np.conjugate(x) * 2), z)
    run(lambda x: (x.real * 2, x.imag), np.arange(3.0))


def test_methods():
    def f(x):
        y = x.copy()
        y.fill(3)
        return y, x.item(1), x[1:].item(0), x.sum(), x.astype(np.int8)
    run(f, np.arange(4.0))

    def g(x):
        x.sort()   # not in-graph: runs on a copy, then becomes x's value
        return x
    run(g, np.array([3.0, 1.0, 2.0]))


def test_out_of_trace_calls_are_numpy():
    shim = numdyn._C.shim
    a = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(shim.sum(a, axis=0), np.sum(a, axis=0))
    assert shim.pi == np.pi and shim.float32 is np.float32
    assert shim.sum.__name__ == "sum" and shim.sum.__wrapped__ is np.sum
    assert type(shim.zeros(3)) is np.ndarray


# ------------------------------------------------- shim2: fixes and fast paths

@pytest.mark.parametrize("ax", [0, -1, (0,), 1, ()])
@pytest.mark.parametrize("name", ["mean", "var", "std", "nanmean", "sum", "prod", "max",
                                  "any", "ptp", "nansum", "count_nonzero"])
def test_zero_d_reduction_axis_rules(name, ax):
    # ufunc reductions take an int axis 0/-1 on 0-d values, tuples and
    # mean/var/std raise AxisError against dimension 0
    run(lambda a: getattr(np, name)(a, axis=ax), np.array(3.0))


@pytest.mark.parametrize("a", [np.array(13, np.uint32), np.array(1.25), np.array(1.5 + 2.5j),
                               np.array([1.25 + 3.35j, -0.5 - 1.5j]), np.ones(3, bool),
                               np.array([15, 25, -35], np.int16)])
def test_round_clip_nan_to_num_scalars_and_complex(a):
    run(lambda x: np.round(x), a)
    run(lambda x: np.round(x, 1), a)
    run(lambda x: x.round(-1), a)
    run(lambda x: np.clip(x, -1, 0.5), a)
    run(lambda x: x.clip(None, 2), a)
    run(lambda x: np.nan_to_num(x), a)


def test_complex_nan_to_num_in_graph():
    z = np.array([np.nan + 1j * np.inf, 1 - 1j * np.inf, np.nan + 0j])
    run(lambda x: np.nan_to_num(x), z)
    run(lambda x: np.nan_to_num(x, nan=5.0, posinf=1.0, neginf=-2.0), z)
    assert breaks(lambda x: np.nan_to_num(x) + 1, z) == 0
    assert breaks(lambda x: np.round(x, 2) + 1, z) == 0


def test_read_only_views():
    def bto(a):
        v = np.broadcast_to(a, (2, 3))
        v[0, 0] = 1
        return v

    def diag(a):
        v = a.diagonal()
        v += 1
        return v

    def diag_out(a):
        v = a.diagonal()
        np.multiply(2, v | v, out=v)

    run(bto, np.ones(3))
    run(diag, np.eye(3))
    run(diag_out, np.array([[True]]))
    run(lambda x: np.broadcast_to(x, (3, 3)), np.ones((2, 3, 4)))
    run(lambda x: np.broadcast_to(x, (2, 4)), np.ones((3,)))


def test_real_imag_writes_reach_the_array():
    def f(a):
        a.imag[:] = 0
        a.real[1] = 5
        return a

    def g(a):
        r = np.real(a)
        r[0] = 7
        i = np.imag(a)
        i += 1
        return a, r, i

    run(f, np.array([1 + 2j, 3 - 4j]))
    run(g, np.array([1 + 2j, 3 - 4j]))


def test_asarray_of_scalar_valued_proxy_is_an_array():
    run(lambda a: np.asarray(a.sum()), np.array([10], np.uint32))
    run(lambda a: np.asarray(a.any(axis=-1), dtype=np.bool_), np.array([10], np.uint32))


def test_where_weak_int_beyond_int64_takes_complex():
    run(lambda a: np.where(a == 0, 2**64, a), np.array([1.5, -2.0], np.complex64))
    run(lambda a: np.where(a == 0, 300, a), np.array([1, 0], np.int8))


def test_reshape_error_message():
    run(lambda x: x.reshape(5, 5), np.ones(24))
    run(lambda x: x.reshape(5, -1), np.ones(24))


def test_shim_ufunc_objects():
    # np.<ufunc> inside compiled code records directly but behaves as NumPy's
    a, b = np.arange(4.0), np.ones(4)
    run(lambda x, y: (np.exp(x) + np.add(x, y), np.add.reduce(x), np.maximum(x, 2),
                      np.add(x, y, dtype=np.float32), np.negative(x, out=np.empty(4)),
                      np.divmod(x, 3), np.add.outer(x, y), np.abs(-x), np.pow(x, 2)), a, b)
    run(lambda x: np.exp(2.0) * x, a)
    run(lambda x: np.add(x), a)       # NumPy's own TypeError
    assert breaks(lambda x, y: np.sqrt(np.add(x, y)) * np.pi, a, b) == 0
    from numdyn._C import shim
    assert shim.exp == np.exp and hash(shim.exp) == hash(np.exp)
    assert shim.add.nin == 2 and shim.add.reduce is not None
