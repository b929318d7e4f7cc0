"""numdyn.Tensor: NumPy's semantics on Tensors (NumPy on the held arrays is
the oracle: values, dtypes, shapes, errors and messages), DLPack both ways
(memory shared, checked by addresses), and the errors of bad input."""
import ctypes
import gc
import operator
import sys

import numpy as np
import pytest

import numdyn
from numdyn import Tensor


def addr(x):
    a = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    return a.__array_interface__["data"][0]


def same(t, expected):
    """t (a Tensor) holds exactly NumPy's answer."""
    if isinstance(expected, (np.ndarray, np.generic)):
        assert isinstance(t, Tensor), type(t)
        a = t.numpy()
        e = np.asarray(expected)
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
        np.testing.assert_array_equal(a, e)
    elif isinstance(expected, (tuple, list)):
        assert type(t) is type(expected) and len(t) == len(expected)
        for x, y in zip(t, expected):
            same(x, y)
    else:
        assert type(t) is type(expected) and t == expected


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 -- the error itself is compared
        return "err", e


def check_like_numpy(fn, *args):
    """fn on Tensors (in place of the ndarrays among args) gives NumPy's result."""
    kind, want = outcome(fn, *args)
    targs = [numdyn.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    got_kind, got = outcome(fn, *targs)
    if kind == "err":
        assert got_kind == "err", f"NumPy raised {want!r}, numdyn gave {got!r}"
        assert type(got) is type(want) and str(got) == str(want)
        return
    assert got_kind == "ok", f"numdyn raised {got!r}, NumPy gave {want!r}"
    same(got, want)


DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.complex128]
BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq,
          operator.ne, operator.gt, operator.ge, divmod]
SHAPES = [((3, 4), (4,)), ((2, 1, 3), (4, 3)), ((5,), (5,)), ((), (3,)), ((2, 3), (4,))]


def sample(shape, dtype, seed):
    return np.asarray(_sample(shape, dtype, seed))


def _sample(shape, dtype, seed):
    r = np.random.default_rng(seed)
    if dtype == np.bool_:
        return r.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return r.integers(1, 5, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)
    return (r.standard_normal(shape) + 2).astype(dtype)


@pytest.mark.parametrize("op", BINOPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_operators(op, dtype):
    with np.errstate(all="ignore"):
        for i, (sa, sb) in enumerate(SHAPES):
            a, b = sample(sa, dtype, i), sample(sb, dtype, i + 7)
            check_like_numpy(op, a, b)                      # Tensor op Tensor
            check_like_numpy(lambda x: op(x, b), a)          # Tensor op ndarray
            check_like_numpy(lambda y: op(a, y), b)          # ndarray op Tensor
            check_like_numpy(lambda x: op(x, 3), a)          # Python scalars (NEP 50)
            check_like_numpy(lambda x: op(2.5, x), a)
            check_like_numpy(lambda x: op(x, np.float32(2)), a)


@pytest.mark.parametrize("op", [operator.neg, operator.pos, abs, operator.invert],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_operators(op, dtype):
    check_like_numpy(op, sample((3, 2), dtype, 1))


def test_matmul():
    a, b, v = sample((3, 4), np.float64, 0), sample((4, 2), np.float64, 1), sample((4,), np.float64, 2)
    check_like_numpy(operator.matmul, a, b)
    check_like_numpy(operator.matmul, a, v)
    check_like_numpy(operator.matmul, v, v)      # a NumPy scalar -> a 0-d Tensor
    check_like_numpy(operator.matmul, a, a)      # NumPy's shape error
    check_like_numpy(lambda x: x @ 2, a)


def test_numpy_scalar_results_are_0d_tensors():
    t = numdyn.tensor([1.0, 2.0, 3.0])
    for r in (t.sum(), np.sum(t), t[1], t @ t, np.max(t), t.mean()):
        assert isinstance(r, Tensor) and r.ndim == 0 and r.dtype == np.float64
    assert float(t.sum()) == 6.0 and t.sum().item() == 6.0 and isinstance(t.sum().item(), float)
    assert isinstance(np.argmax(t), Tensor) and np.argmax(t).dtype == np.intp


UFUNCS = [np.exp, np.log1p, np.sqrt, np.sin, np.tanh, np.abs, np.negative, np.isnan,
          np.floor, np.sign, np.logical_not]


@pytest.mark.parametrize("uf", UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_ufuncs(uf, dtype):
    with np.errstate(all="ignore"):
        check_like_numpy(uf, sample((4, 3), dtype, 3))
        check_like_numpy(lambda x: uf(x, dtype=np.float64), sample((4, 3), dtype, 3))


def test_ufunc_methods_and_out():
    a, b = sample((3, 4), np.float64, 0), sample((3, 4), np.float64, 1)
    check_like_numpy(lambda x: np.add.reduce(x, axis=0), a)
    check_like_numpy(lambda x: np.maximum.accumulate(x, axis=1), a)
    check_like_numpy(lambda x, y: np.multiply.outer(x, y), a[0], b[0])
    check_like_numpy(lambda x: np.add.reduce(x, axis=5), a)
    out = numdyn.tensor(np.zeros((3, 4)))
    r = np.add(numdyn.tensor(a), b, out=out)
    assert r is out
    np.testing.assert_array_equal(out.numpy(), a + b)
    r = np.divmod(numdyn.tensor(a), 2.0, out=(out, None))
    assert r[0] is out and isinstance(r[1], Tensor)


FUNCS = [
    lambda x, y: np.concatenate([x, y]),
    lambda x, y: np.stack([x, y], axis=1),
    lambda x, y: np.where(x > 2, x, y),
    lambda x, y: np.split(x, 3),
    lambda x, y: np.linalg.solve(x @ x.T + 3 * np.eye(3), y[:, 0]),
    lambda x, y: np.einsum("ij,ij->i", x, y),
    lambda x, y: np.clip(x, 1.5, 2.5),
    lambda x, y: np.cumsum(x, axis=1),
    lambda x, y: np.sort(y, axis=0),
    lambda x, y: np.mean(x, axis=(0, 1)),
    lambda x, y: np.concatenate([x, y[:2]], axis=2),    # NumPy's AxisError
    lambda x, y: np.dot(x, y),                          # NumPy's shape error
]


@pytest.mark.parametrize("i", range(len(FUNCS)))
def test_numpy_functions(i):
    check_like_numpy(FUNCS[i], sample((3, 4), np.float64, 0), sample((3, 4), np.float64, 1))


METHODS = [
    lambda x: x.sum(axis=0), lambda x: x.reshape(4, 3), lambda x: x.T, lambda x: x.astype(np.int32),
    lambda x: x.mean(), lambda x: x.copy(), lambda x: x.ravel(), lambda x: x.argmax(axis=1),
    lambda x: x.std(ddof=1), lambda x: x.transpose(1, 0), lambda x: x.real, lambda x: x.max(),
    lambda x: x.reshape(5, 5), lambda x: x.sum(axis=3), lambda x: x.tolist(),
    lambda x: x.cumprod(), lambda x: x.clip(2, 3), lambda x: x.nonzero(),
]


@pytest.mark.parametrize("i", range(len(METHODS)))
def test_methods_and_properties(i):
    check_like_numpy(METHODS[i], sample((3, 4), np.float64, 2))


def test_attributes():
    a = sample((3, 4), np.float32, 0)
    t = numdyn.tensor(a)
    assert t.shape == (3, 4) and t.ndim == 2 and t.size == 12 and t.dtype == np.float32
    assert t.device == "cpu" and t.requires_grad is False and t.grad is None and t.is_leaf
    assert t.strides == a.strides and t.itemsize == 4 and t.nbytes == 48
    with pytest.raises(AttributeError, match="numdyn.Tensor"):
        t.no_such_attribute
    assert len(t) == 3 and bool(numdyn.tensor([1])) and not bool(numdyn.tensor(0.0))
    assert int(numdyn.tensor(3)) == 3 and float(numdyn.tensor(2.5)) == 2.5
    assert list(range(10))[numdyn.tensor(2)] == 2         # __index__
    assert f"{numdyn.tensor(2.5):.2f}" == "2.50"
    assert 2.0 in numdyn.tensor([1.0, 2.0]) and 5.0 not in numdyn.tensor([1.0, 2.0])
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, Tensor) for r in rows)
    np.testing.assert_array_equal(rows[1].numpy(), a[1])
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(numdyn.tensor(1.0))
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)


def test_construction():
    data = [[1, 2], [3, 4]]
    t = numdyn.tensor(data)
    assert t.dtype == np.array(data).dtype
    a = np.arange(4.0)
    t = numdyn.tensor(a)
    assert addr(t) != addr(a)               # tensor() copies, as np.array does
    t2 = numdyn.Tensor(a, dtype=np.float32)
    assert t2.dtype == np.float32
    t3 = numdyn.tensor(t)                   # a Tensor's data is copied too
    assert addr(t3) != addr(t)
    with pytest.warns(PendingDeprecationWarning):
        m = np.matrix([[1.0]])
    assert numdyn.tensor(m).numpy().__class__ is np.ndarray
    with pytest.raises(RuntimeError, match="floating point and complex"):
        numdyn.tensor([1, 2], requires_grad=True)
    assert numdyn.tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="not available"):
        numdyn.tensor([1.0], device="cuda")
    with pytest.raises(ValueError, match="not available"):
        numdyn.tensor([1.0], device="tpu")
    assert numdyn.tensor([1.0], device="cpu").device == "cpu"
    with pytest.raises(TypeError):
        numdyn.tensor()


def test_numpy_and_detach_share_memory():
    t = numdyn.tensor(np.arange(6.0).reshape(2, 3))
    a = t.numpy()
    assert a is t.numpy() and np.asarray(t) is a
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    d = t.detach()
    assert addr(d) == addr(t) and not d.requires_grad
    assert np.array(t, dtype=np.float32).dtype == np.float32
    assert addr(np.array(t, copy=True)) != addr(t)


def test_indexing():
    a = sample((4, 5), np.float64, 0)
    for key in [1, (1, 2), slice(1, 3), (Ellipsis, 2), np.array([0, 2]), a[:, 0] > 2,
                (slice(None), None, 1), 10, (0, 0, 0)]:
        check_like_numpy(lambda x: x[key], a)
    t = numdyn.tensor(a)
    np.testing.assert_array_equal(t[numdyn.tensor(np.array([3, 1]))].numpy(), a[[3, 1]])
    np.testing.assert_array_equal(t[t > 2].numpy(), a[a > 2])
    v = t[1:3]
    assert addr(v) == addr(t) + a.strides[0]          # a view, as in NumPy
    t[0] = 7.0
    assert (t.numpy()[0] == 7).all()
    t[numdyn.tensor(np.array([1]))] = numdyn.tensor(np.ones(5))
    assert (t.numpy()[1] == 1).all()
    with pytest.raises(ValueError) as e:
        del t[0]
    with pytest.raises(ValueError) as f:
        del a[0]
    assert str(e.value) == str(f.value)
    check_like_numpy(lambda x: x.__setitem__(0, "text"), a.copy())


def test_inplace_operators_write_the_same_memory():
    a = np.arange(4.0)
    t = numdyn.tensor(a)
    p = addr(t)
    t0 = t
    t += 1
    t *= numdyn.tensor(np.full(4, 2.0))
    t **= 2
    assert t is t0 and addr(t) == p
    np.testing.assert_array_equal(t.numpy(), ((a + 1) * 2) ** 2)

    def iadd(x):
        x += 1.5        # an int array: NumPy's casting error
        return x
    check_like_numpy(iadd, np.arange(4))
    with pytest.raises(RuntimeError, match="in place"):
        g = numdyn.tensor([1.0], requires_grad=True)
        g += 1
    with pytest.raises(RuntimeError, match="in place"):
        g = numdyn.tensor([1.0, 2.0], requires_grad=True)
        g[0] = 3
    with pytest.raises(RuntimeError, match="in place"):
        g = numdyn.tensor([1.0, 2.0], requires_grad=True)
        np.exp(np.ones(2), out=g)
    with pytest.raises(RuntimeError, match="in place"):
        g = numdyn.tensor([1.0, 2.0], requires_grad=True)
        g.fill(0)


def test_pickle_and_copy():
    import copy
    import pickle
    t = numdyn.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert isinstance(u, Tensor) and u.requires_grad and u.is_leaf
        np.testing.assert_array_equal(u.numpy(), t.numpy())
        assert addr(u) != addr(t)
    i = pickle.loads(pickle.dumps(numdyn.tensor(np.arange(3, dtype=np.int16))))
    assert i.dtype == np.int16 and not i.requires_grad


def test_repr():
    assert repr(numdyn.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(numdyn.tensor([1, 2], dtype=np.int32)) == "tensor([1, 2], dtype=int32)"
    assert repr(numdyn.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    r = repr(numdyn.tensor(np.zeros((2, 2))))
    assert r == "tensor([[0., 0.],\n        [0., 0.]])"
    assert str(numdyn.tensor(1.5)) == "tensor(1.5)"


def test_tensors_inside_compiled_functions():
    @numdyn.compile
    def f(x, y):
        return np.tanh(x) * y + 1

    a, b = sample((3, 4), np.float64, 0), sample((3, 4), np.float64, 1)
    # a Tensor passed to a compiled function is an array-like argument
    np.testing.assert_allclose(np.asarray(f(numdyn.tensor(a), b)), np.tanh(a) * b + 1)


# ---------------------------------------------------------------- DLPack

DL_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
             np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_dlpack_round_trips_share_memory(dtype):
    base = sample((4, 6), dtype, 0)
    for a in (base, base[:, ::2], base.T, base[1:3, 2:5], base[0, 0, ...], base[:0]):
        t = numdyn.from_dlpack(a)                    # NumPy -> numdyn
        assert isinstance(t, Tensor) and t.dtype == a.dtype and t.shape == a.shape
        np.testing.assert_array_equal(t.numpy(), a)
        if a.size:
            assert addr(t) == addr(a) and t.strides == a.strides
        b = np.from_dlpack(t)                        # numdyn -> NumPy
        np.testing.assert_array_equal(b, a)
        if a.size:
            assert addr(b) == addr(a)
        u = numdyn.from_dlpack(t)                    # numdyn -> numdyn
        assert addr(u) == addr(t)


def test_dlpack_writes_are_seen_both_ways():
    a = np.zeros(5)
    t = numdyn.from_dlpack(a)
    t[1] = 3.0
    assert a[1] == 3.0
    b = np.from_dlpack(t)
    b[2] = 4.0
    assert t[2].item() == 4.0 and a[2] == 4.0


def test_dlpack_capsules():
    t = numdyn.tensor(np.arange(3.0))
    assert t.__dlpack_device__() == (1, 0)
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    assert "dltensor\"" in repr(t.__dlpack__(max_version=(0, 8)))
    # np.from_dlpack asks for the versioned one
    assert addr(np.from_dlpack(t)) == addr(t)
    c = np.from_dlpack(t, copy=True)
    assert addr(c) != addr(t)
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    del cap
    with pytest.raises(BufferError, match="unsupported device"):
        t.__dlpack__(dl_device=(2, 0))
    assert "dltensor" in repr(t.__dlpack__(dl_device=(1, 0)))
    with pytest.raises(RuntimeError, match="stream=None"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError):
        t.__dlpack__(1)
    with pytest.raises(TypeError, match="max_version"):
        t.__dlpack__(max_version=1)


def test_dlpack_read_only():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = numdyn.from_dlpack(a)                 # NumPy exports read-only (versioned)
    assert not t.numpy().flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        t[0] = 1
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()                        # the legacy format cannot say so
    b = np.from_dlpack(t)                     # versioned: read-only flag set
    assert not b.flags.writeable and addr(b) == addr(a)


def test_dlpack_refused_dtypes():
    for bad in (np.array(["x"]), np.array([1.0], dtype=np.longdouble), np.array([object()]),
                np.arange(3.0).astype(">f8")):
        t = numdyn.tensor(bad)
        with pytest.raises(BufferError):
            t.__dlpack__()
    with pytest.raises(TypeError, match="does not support DLPack"):
        numdyn.from_dlpack([1, 2, 3])


class LegacyProducer:
    """A pre-1.0 producer: __dlpack__ takes no keywords."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


class DeviceProducer(LegacyProducer):
    def __dlpack_device__(self):
        return (2, 0)


def test_dlpack_legacy_producer_and_devices():
    a = np.arange(5.0)
    t = numdyn.from_dlpack(LegacyProducer(a))
    assert addr(t) == addr(a)
    # a legacy capsule cannot say read-only: read-only, as np.from_dlpack's
    # (it was writable: writes reached a JAX array, which is immutable)
    assert not np.from_dlpack(LegacyProducer(a)).flags.writeable
    assert not t.numpy().flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        t[0] = 1.0
    assert a[0] == 0.0
    c = numdyn.from_dlpack(LegacyProducer(a), copy=True)
    assert addr(c) != addr(a)
    np.testing.assert_array_equal(c.numpy(), a)
    with pytest.raises(BufferError, match="not readable by the CPU"):
        numdyn.from_dlpack(DeviceProducer(a))
    with pytest.raises(ValueError, match="not available"):
        numdyn.from_dlpack(a, device="cuda")
    with pytest.raises(TypeError, match="copy"):
        numdyn.from_dlpack(a, copy=1)


def test_dlpack_lifetimes():
    """The producer's memory lives as long as a consumer's array; an
    unconsumed capsule releases what it holds."""
    a = np.arange(1000.0)
    before = sys.getrefcount(a)
    t = numdyn.from_dlpack(a)                 # holds a through NumPy's deleter
    assert sys.getrefcount(a) > before
    del t
    gc.collect()
    assert sys.getrefcount(a) == before
    t = numdyn.tensor(np.arange(1000.0))
    arr = t.numpy()
    n0 = sys.getrefcount(arr)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    assert sys.getrefcount(arr) == n0 + 2
    del caps
    assert sys.getrefcount(arr) == n0
    b = np.from_dlpack(t)
    del t
    gc.collect()
    ptr = ctypes.cast(b.ctypes.data, ctypes.POINTER(ctypes.c_double))
    assert ptr[999] == 999.0 and b[999] == 999.0
