"""The memory order of values a graph computes (src/trace/trace_layout.c).

NumPy lays out a new array in order 'K' from its operands: a ufunc of
Fortran arrays is Fortran, a reduction keeps its input's order over the
kept dims, np.copy keeps it, ndarray.copy() is C. That order decides
whether `t.ravel()` is a view (writes reach t) or a copy, and it is what
the caller gets back. These tests compare both with NumPy: values through
the oracle, and the returned arrays' strides exactly."""
import numpy as np
import pytest

import numdyn
from oracle import check


def _base(layout, shape=(3, 4, 5)):
    a = np.arange(float(np.prod(shape))).reshape(shape) * 0.25 + 1.0
    if layout == "C":
        return a
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "perm":  # memory order (1, 0, 2)
        return a.transpose(1, 0, 2).copy().transpose(1, 0, 2)
    if layout == "rev":   # a reversed view: NumPy orders it by |stride|
        big = np.empty(shape[::-1]).T
        big[...] = a
        return big[::-1]
    raise ValueError(layout)


LAYOUTS = ["C", "F", "perm", "rev"]
BACKENDS = ["eager", "native"]


def _strides_of(x):
    """strides over the dims that carry layout (length > 1)"""
    return tuple(s for s, n in zip(x.strides, x.shape) if n > 1)


def _results(r):
    return r if isinstance(r, tuple) else (r,)


OPS = {
    "ufunc2": lambda a, b: a * 2.0 + b,
    "ufunc1": lambda a, b: np.sqrt(a),
    "T_op": lambda a, b: a.T * 3.0,
    "mixed": lambda a, b: a + b.T.T,
    "bcast": lambda a, b: a + np.ones(5),
    "bcast_row": lambda a, b: a[:, :1, :] - a,
    "where": lambda a, b: np.where(a > 3, a, b),
    "clip": lambda a, b: np.clip(a, 2, 5),
    "round": lambda a, b: np.round(a, 1),
    "isclose": lambda a, b: np.isclose(a, b),
    "nan_to_num": lambda a, b: np.nan_to_num(a),
    "astype": lambda a, b: a.astype(np.float32),
    "astype_C": lambda a, b: a.astype(np.float32, order="C"),
    "astype_F": lambda a, b: a.astype(np.float32, order="F"),
    "np_copy": lambda a, b: np.copy(a * 1.0),
    "method_copy": lambda a, b: (a * 1.0).copy(),
    "copy_K": lambda a, b: (a + 0).copy(order="K"),
    "copy_A": lambda a, b: (a + 0).copy(order="A"),
    "array": lambda a, b: np.array(a),
    "asarray_F": lambda a, b: np.asarray(a + 1, order="F"),
    "ascontig": lambda a, b: np.ascontiguousarray(a + 1),
    "zeros_like": lambda a, b: np.zeros_like(a),
    "full_like": lambda a, b: np.full_like(a, 2.0),
    "sum1": lambda a, b: a.sum(axis=1),
    "sum0_keep": lambda a, b: np.sum(a, axis=0, keepdims=True),
    "max2": lambda a, b: a.max(axis=2),
    "mean1": lambda a, b: a.mean(axis=1),
    "var1": lambda a, b: a.var(axis=1),
    "argmax": lambda a, b: a.argmax(axis=1),
    "cumsum": lambda a, b: np.cumsum(a, axis=1),
    "concat0": lambda a, b: np.concatenate([a, b], axis=0),
    "concat1": lambda a, b: np.concatenate([a, a * 2], axis=1),
    "stack": lambda a, b: np.stack([a, b]),
    "vstack": lambda a, b: np.vstack([a, b]),
    "divmod": lambda a, b: np.divmod(a, 3.0),
    "roll": lambda a, b: np.roll(a, 1, axis=0),
    "pad": lambda a, b: np.pad(a, 1),
    "pad_edge": lambda a, b: np.pad(a, ((0, 1), (1, 0), (2, 2)), mode="edge"),
    "diff": lambda a, b: np.diff(a, axis=1),
    "diff2": lambda a, b: np.diff(a, n=2),
    "triu": lambda a, b: np.triu(a),
    "tril": lambda a, b: np.tril(a, 1),
    "outer": lambda a, b: np.multiply.outer(a[0], b[1]),
    "fancy_mid": lambda a, b: a[:, [0, 2]],
    "fancy_first": lambda a, b: a[[2, 0]],
    "fancy_last": lambda a, b: a[..., [1, 3, 0]],
    "fancy_split": lambda a, b: a[[0, 1], :, [2, 3]],
    "fancy_2d": lambda a, b: a[:, [[0, 1], [2, 3]]],
    "mask_index": lambda a, b: a[:, a[0, :, 0] > 1.5],
    # no sliced dims: the result takes the index arrays' order
    "gather_by_lazy_index": lambda a, b: np.arange(60.0)[(a * 4).astype(np.intp) % 60],
    "gather_two_indices": lambda a, b: np.arange(3600.0).reshape(60, 60)[
        (a * 4).astype(np.intp) % 60, (b * 4).astype(np.intp) % 60],
    "einsum_sum": lambda a, b: np.einsum("ijk->ij", a),
    "einsum_t": lambda a, b: np.einsum("ijk,ijk->kj", a, b),
    "nansum": lambda a, b: np.nansum(a, axis=2),
    "ptp": lambda a, b: np.ptp(a, axis=0),
    "sort": lambda a, b: np.sort(a, axis=1),
    "argsort": lambda a, b: np.argsort(a),
    "partition": lambda a, b: np.partition(a, 1),
    # of a strided view: NumPy sorts the view's K copy (Fortran-like for a
    # Fortran a), whatever copy of the view the extern is handed
    "sort_step_view": lambda a, b: np.sort(a[::2], axis=0),
    "sort_col_view": lambda a, b: np.sort(a[:, 1:, ::2], axis=2),
    "sort_T_view": lambda a, b: np.sort(a.T[1:], axis=1),
    "sort_computed": lambda a, b: np.sort(a[::2] * 2.0, axis=-1),
    "partition_view": lambda a, b: np.partition(a[1:, ::2], 1, axis=0),
    "argsort_view": lambda a, b: np.argsort(a[::2], axis=1),
    "fft": lambda a, b: np.fft.fft(a, axis=1),
    "rfft": lambda a, b: np.fft.rfft(a),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(OPS))
def test_result_layout_is_numpys(name, layout, backend):
    fn = OPS[name]
    a, b = _base(layout), _base("F" if layout == "C" else "C")
    check(fn, a, b, backend=backend)
    want = _results(fn(a.copy(order="K"), b.copy(order="K")))
    got = _results(numdyn.compile(fn, backend=backend)(a.copy(order="K"), b.copy(order="K")))
    assert [_strides_of(x) for x in got] == [_strides_of(x) for x in want]


def _gather(table, i):
    return table[i]


@pytest.mark.parametrize("layout", ["C", "F", "perm", "rev"])
def test_gather_result_follows_index_argument_order(layout):
    idx = (_base(layout) * 4).astype(np.intp) % 60
    table = np.arange(60.0)
    want, got = _gather(table, idx), numdyn.compile(_gather)(table, idx)
    np.testing.assert_array_equal(got, want)
    assert _strides_of(got) == _strides_of(want)


def ravel_write(a):
    t = a * 2.0
    v = t.ravel()          # a copy when t is not C-ordered
    v[0] = 100.0
    return t, v


def reshape_write(a):
    t = np.exp(a * 0.1)
    v = t.reshape(-1)
    v[:3] = -1.0
    return t, v


def transposed_view_write(a):
    t = a - 1.0
    v = t.T.reshape(-1)    # a view of t's memory when t is Fortran
    v[1] = 42.0
    w = t.transpose(2, 1, 0).ravel()
    w[2] = -7.0
    return t, v, w


def reduced_ravel_write(a):
    s = a.sum(axis=1)
    v = s.ravel()
    v[0] = -3.0
    return s, v


def copy_ravel_write(a):
    c = np.copy(a)
    v = c.ravel()
    v[-1] = 9.0
    d = a.copy()
    w = d.ravel()
    w[-1] = 8.0
    return c, d, v, w


def cat_ravel_write(a):
    c = np.concatenate([a, a], axis=2)
    v = c.ravel()
    v[0] = 5.0
    return c, v


def chain_then_view(a):
    t = np.sqrt(a) + 1.0
    u = t * t
    v = u.T.ravel()
    v[0] = 0.5
    return u.sum(), v, u


WRITES = [ravel_write, reshape_write, transposed_view_write, reduced_ravel_write,
          copy_ravel_write, cat_ravel_write, chain_then_view]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", WRITES, ids=lambda f: f.__name__)
def test_view_or_copy_of_computed_values(fn, layout, backend):
    check(fn, _base(layout), backend=backend)
    want = _results(fn(_base(layout)))
    got = _results(numdyn.compile(fn, backend=backend)(_base(layout)))
    assert [_strides_of(x) for x in got if isinstance(x, np.ndarray)] == \
        [_strides_of(x) for x in want if isinstance(x, np.ndarray)]


def test_fallback_sees_numpys_layout():
    """A value handed to code outside the graph has NumPy's layout there:
    ravel() in a numdyn.disable'd function copies exactly when NumPy does."""
    @numdyn.disable
    def outside(t):
        t.ravel()[0] = -1.0
        return t.flags.f_contiguous

    def f(a):
        t = a + 1.0
        fc = outside(t)
        return t * 2.0, fc

    for layout in ("C", "F"):
        check(f, _base(layout), backend="native")


def test_layout_in_a_loop_is_stable():
    """Replays of a recorded capture keep the order of their outputs."""
    def f(a):
        return np.tanh(a) * 0.5

    g = numdyn.compile(f, backend="native")
    a = _base("F")
    for _ in range(4):
        r = g(a)
        assert r.strides == f(a).strides
        np.testing.assert_allclose(r, f(a), rtol=1e-12)


def mask_and_count(a):
    m = a > 2.0
    return m, int(m.sum()), m.sum(axis=0)


def softmax_rows(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def outputs_feed_views(a):
    t = a * 2.0
    u = t + 1.0
    return t, u[1:], u.T + t.T, (t[:, 1:] * u[:, :-1]).sum(axis=1)


def chain_with_copy(a):
    t = np.sin(a)
    c = np.ascontiguousarray(t)
    f = np.asfortranarray(c * 2.0)
    return t, c, f, c + f


def update_then_return(a):
    t = a * 3.0
    t[0] = -1.0          # a write into a Fortran-ordered value
    t[:, 1] += 2.0
    return t, t.sum(axis=2)


def sorted_ravel_write(a):
    s = np.sort(a, axis=0)     # NumPy computes it; Fortran when a is
    v = s.ravel()              # so this copies, and s keeps its values
    v[0] = -9.0
    return s, v


MIXED = [mask_and_count, softmax_rows, outputs_feed_views, chain_with_copy, update_then_return,
         sorted_ravel_write]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", MIXED, ids=lambda f: f.__name__)
def test_ordered_outputs_read_by_other_kernels(fn, layout, backend):
    """A value laid out in Fortran order that later kernels of the same
    program read (reductions, row kernels, views, copies) reads right."""
    check(fn, _base(layout), backend=backend)
    want = _results(fn(_base(layout)))
    got = _results(numdyn.compile(fn, backend=backend)(_base(layout)))
    assert [_strides_of(x) for x in got if isinstance(x, np.ndarray)] == \
        [_strides_of(x) for x in want if isinstance(x, np.ndarray)]
