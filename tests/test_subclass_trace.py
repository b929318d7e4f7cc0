"""Plain ndarray subclasses are traced with NumPy's result types (issue 15,
point 1): every returned object's type, attributes, values and the
__array_finalize__ calls (how many, in which order, with which `obj`) are
checked against NumPy run on the same inputs. Classes that override what
NumPy dispatches on (np.matrix, masked arrays, __array_ufunc__ ...) and the
operations whose result type is not reproduced run with NumPy as recorded
graph breaks."""
import numpy as np
import pytest

import numdyn

LOG = []


class A(np.ndarray):
    """Finalizer copying an attribute and recording each call: `obj`'s
    class and its creation tag, so order and identity are compared."""

    def __array_finalize__(self, obj):
        LOG.append((obj.__class__.__name__, getattr(obj, "tag", None)))
        self.tag = len(LOG)
        self.info = getattr(obj, "info", None)

    def double(self):
        return self * 2

    @property
    def twice_info(self):
        return (self.info, self.info)


class B(np.ndarray):
    """No finalizer: attributes are not carried over (NumPy's default)."""


class Hi(A):
    __array_priority__ = 10.0


class Neg(A):
    __array_priority__ = -1.0


class Wrapped(np.ndarray):
    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr


def _mk(cls, info="hi", shape=(3, 4)):
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape).view(cls)
    x.info = info
    x.tag = "arg"
    return x


def _leaves(r):
    return [y for q in r for y in _leaves(q)] if isinstance(r, tuple) else [r]


def _compare(f, make_args, backend="eager"):
    """f's results, argument state and finalizer log: numdyn vs NumPy."""
    ref_args = make_args()
    LOG.clear()
    want = f(*ref_args)
    want_log = list(LOG)
    args = make_args()
    LOG.clear()
    out = numdyn.explain(numdyn.compile(f, backend=backend))(*args)
    got, got_log = out.result, list(LOG)
    assert got_log == want_log
    for i, (g, w) in enumerate(zip(_leaves(got), _leaves(want))):
        assert type(g) is type(w), (i, type(g), type(w))
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape, i
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=str(i))
            assert getattr(g, "__dict__", {}) == getattr(w, "__dict__", {}), (i, g.__dict__, w.__dict__)
        else:
            assert g == w, i
    return out, args


def _many(x, y):
    return (
        x + 1, 1 + x, -x, np.add(x, y), np.sin(x), divmod(x, 2.0), x > 3, x ** 2, abs(x),
        y + x, y * x, np.sqrt(x), np.float64(2.0) * x,
        x.sum(), x.sum(0), np.sum(x), np.sum(x, axis=1), x.mean(), x.mean(axis=0), np.mean(x, 1),
        x.max(), x.min(1), x.prod(), x.any(), (x > 0).all(), np.amax(x), x.cumsum(0),
        np.add.reduce(x), np.add.accumulate(x), x.clip(1, 5), np.clip(x, 1, 5), x.round(),
        x.copy(), x.astype(np.float32), x.T, x.transpose(), np.transpose(x), x.mT, x.swapaxes(0, 1),
        x.reshape(4, 3), x.T.reshape(12), x.ravel(), np.ravel(x), x.flatten(), x[None].squeeze(),
        np.expand_dims(x, 0), np.flip(x), x.diagonal(), np.sort(x), x.view(),
        x[1], x[1, 2], x[1:, ::2], x[[0, 2]], x[x > 3], x[...], x[1, 2, ...],
        x.dot(x.T), np.dot(x, x.T), y.T.dot(x), x @ x.T, np.zeros_like(x), np.ones_like(x),
        np.where(x > 3, x, 0), np.concatenate([x, x]), np.outer(x, x), np.copy(x), np.asarray(x),
        np.array(x), x.real, x.double(), x.info, x.twice_info,
        # argument-dependent paths: a plain array (round to decimals), the
        # operand itself (nothing to squeeze), a NumPy scalar (1-d dot)
        np.round(x, 2), x.round(1), x.squeeze(), np.squeeze(x), np.dot(x[0], x[0]),
        x[1].dot(x[1]), x[0] @ x[0],
    )


def test_result_types_attributes_and_finalize_calls_are_numpys():
    out, _ = _compare(_many, lambda: (_mk(A), np.ones((3, 4))))
    # x[x > 3] runs with NumPy (recorded): the rest is traced, x.view() too
    reasons = [b.reason for b in out.break_reasons]
    assert len(reasons) == 1 and "mask" in reasons[0], reasons


def test_native_backend_and_in_function_attribute_writes():
    def f(x):
        x.seen = True                      # lands on the caller's object
        y = np.exp(x) * 2.0
        y.note = "made"                    # on the result's own dict
        x[0, 0] = 5.0
        return y, y.note, x, x.sum(1)

    out, args = _compare(f, lambda: (_mk(A),), backend="native")
    assert out.graph_break_count == 0, out.break_reasons
    assert out.result[2] is args[0]        # `return x` is the caller's object
    assert args[0].seen is True and args[0][0, 0] == 5.0


def test_no_finalizer_priorities_and_mixed_classes():
    def f(x, h, n, p):
        return x + h, h + x, x + n, n * x, p + 1, p.sum(), x + p, p + x, n + np.ones(4)

    _compare(f, lambda: (_mk(A), _mk(Hi, "h"), _mk(Neg, "n"), _mk(B, "b")))


def test_finalizer_reading_values_is_traced():
    class M(np.ndarray):
        def __array_finalize__(self, obj):
            # an array read in the finalizer (np.asarray: obj.max() would recurse under NumPy)
            self.peak = None if obj is None else np.asarray(obj).max()

    def f(x):
        y = x * 2.0
        return y, y.peak, y[1:].peak

    x0 = np.arange(6.0).view(M)
    want = f(x0)
    got = numdyn.compile(f, backend="eager")(np.arange(6.0).view(M))
    assert type(got[0]) is M and got[0].peak == want[0].peak == 5.0
    assert got[1] == want[1] and got[2] == want[2]
    assert type(got[0].peak) is type(want[0].peak)


def test_unchecked_operations_break_with_numpys_results():
    def f(x):
        return (x.std(), x.argmax(), np.stack([x, x]), x.take([0, 1]), x.cumsum(), list(x)[0] + 1,
                x.mean(dtype=np.float32), x.astype(int).round(2),
                x[:, :2].dot(np.ones((2, 2))), np.ones((2, 3)).dot(x[::-1, 1:]))  # NumPy copies first

    out, _ = _compare(f, lambda: (_mk(A),))
    assert out.graph_break_count >= 5
    assert any("A.std" in r for r in map(str, out.break_reasons))
    with pytest.raises(numdyn.GraphBreakError if hasattr(numdyn, "GraphBreakError") else Exception):
        numdyn.compile(f, fullgraph=True, backend="eager")(_mk(A))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
@pytest.mark.parametrize("make", [
    lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
    lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
    lambda: np.arange(3.0).view(Wrapped),
], ids=["matrix", "masked", "array_wrap"])
def test_classes_numpy_dispatches_on_are_reported_breaks(make):
    def f(x):
        return x * 2 + 1, (x * x).sum()

    want = f(make())
    out = numdyn.explain(numdyn.compile(f, backend="eager"))(make())
    reasons = " ".join(map(str, out.break_reasons))
    assert "ndarray subclass" in reasons and "NumPy runs" in reasons
    for g, w in zip(out.result, want):
        assert type(g) is type(w)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    if isinstance(want[0], np.ma.MaskedArray):
        np.testing.assert_array_equal(out.result[0].mask, want[0].mask)


def test_threads_tracing_subclass_arguments_at_once():
    import threading

    class T(np.ndarray):
        def __array_finalize__(self, obj):
            self.info = getattr(obj, "info", None)

    def f(x):
        y = np.sqrt(x + 1.0)
        return y.sum(0), y.T, np.where(y > 2, y, 0)  # ops whose nested steps must stay plain

    cf = numdyn.compile(f, backend="eager")
    errors = []

    def work(k):
        try:
            for _ in range(20):
                x = np.arange(12.0).reshape(3, 4).view(T)
                x.info = k
                got, want = cf(x), f(x)
                for g, w in zip(got, want):
                    assert type(g) is type(w) and getattr(g, "info", None) == getattr(w, "info", None)
                    np.testing.assert_allclose(g, w)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_in_place_out_and_concrete_reads():
    def f(x):
        # assignments through a view of x's class finalize it (x[0], x[:, 1],
        # x[..., 0]); full integer, fancy and mask ones do not
        x[0] = 1.0
        x[:, 1] += 2.0
        x[..., 0] = 4.0
        x[1, 2] = 7.0
        x[[0], 0] = 3.0
        x[x > 6] = 6.0
        y = x * 2.0
        y += 1.0                                       # in place: no new object, no finalize
        x *= 3.0                                       # into the caller's object
        z = np.add(x, 1.0, out=np.empty_like(x))       # out= is returned as given
        x.sort(axis=1)
        s = x.sum()
        return y, x, z, np.asarray(x), s, float(s), x.item(0)

    out, args = _compare(f, lambda: (_mk(A),))
    assert out.result[1] is args[0]
    assert [b.reason for b in out.break_reasons] == ["float() of an array value"]


class K(np.ndarray):
    """Class code that asks type(): the finalizer about obj, a method and a
    property about self (they run on lazy values inside the function)."""
    __array_priority__ = 5.0

    def __new__(cls, a, unit="m"):
        o = np.asarray(a).view(cls)
        o.unit = unit
        return o

    def __array_finalize__(self, obj):
        LOG.append((type(obj).__name__, getattr(obj, "tag", None)))
        self.tag = len(LOG)
        self.unit = getattr(obj, "unit", None)

    def doubled(self):
        return type(self)(self * 2, unit=self.unit + "2")

    @property
    def kind(self):
        return type(self).__name__

    @staticmethod
    def kind_of(a):
        return type(a).__name__

    @classmethod
    def made(cls, a):
        return cls(a, unit=type(a).__name__)


def test_type_of_values_class_code_and_concatenate_priority():
    def f(x, p):
        y = x * 2.0
        return (type(x) is K, type(y).__name__, type(x[0]) is K, type(x.sum()).__name__,
                type(x[0, 0]).__name__, type(p.T) is A, isinstance(y, K), y.kind, x.kind, y.unit,
                x.doubled(), type(x)(np.ones(2), unit="s"), x.kind_of(y), x.made(y),
                # PyArray_GetSubType: the highest priority above 0 wins, finalized with None
                np.concatenate([x, x]), np.concatenate([p, x]), np.concatenate((p, p), axis=None),
                np.concatenate([p, p]), np.concatenate([np.ones((1, 4)), x], dtype=np.float32))

    def args():
        x = K(np.arange(12.0).reshape(3, 4), "kg")
        x.tag = "arg"  # not the log's length at construction
        return x, _mk(A)

    _compare(f, args)
