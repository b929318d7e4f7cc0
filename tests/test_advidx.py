"""Advanced indexing, take/put, ufunc.at (numpy_shim/shim_advidx.c) vs NumPy.

Reads with integer arrays are in-graph GATHERs, writes are functional
scatters, `a[mask] = scalar` is a WHERE; `a[lazy_mask]` reads break (data-
dependent shape). Values, dtypes, exceptions and the caller's arrays after
the call must match NumPy.
"""
import numpy as np
import pytest

import numdyn
from oracle import check
from test_join import arr, LAYOUTS

IDX_G = np.array([2, 0, -1, 2])     # a global index array (concrete at trace time)
MASK_G = np.array([True, False, True, True])


def captured(fn, *args):
    out = numdyn.explain(fn)(*args)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]


def broke(fn, *args, reason):
    out = numdyn.explain(fn)(*args)
    assert any(reason in r.reason for r in out.break_reasons), [r.reason for r in out.break_reasons]


# ------------------------------------------------------------------ reads

READS = [
    lambda a, i: a[i],
    lambda a, i: a[i, 1],
    lambda a, i: a[1:, i],
    lambda a, i: a[:, i, None],
    lambda a, i: a[i, ::-1],
    lambda a, i: a[i][:, i],
    lambda a, i: a[i, i],
    lambda a, i: a[[0, 2], i[:2]],
    lambda a, i: a[..., i],
    lambda a, i: a[None, i],
    lambda a, i: a[i.reshape(2, 2)],
    lambda a, i: a[[1, -1]],
    lambda a, i: a[[]],
    lambda a, i: a[IDX_G] * 2,
    lambda a, i: a[:, IDX_G[:3]],
]


@pytest.mark.parametrize("k", range(len(READS)))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gather_reads(backend, k, layout):
    f = READS[k]
    a = arr((4, 4), np.float32, layout)
    i = np.array([3, 0, -2, 1])
    check(f, a, i, backend=backend)
    captured(f, a, i)


def test_gather_3d_nonadjacent(backend):
    a = arr((3, 4, 5))
    i = np.array([1, 0, 2])
    check(lambda a, i: a[0, :, i], a, i, backend=backend)        # advanced dims first
    check(lambda a, i: a[i, :, i], a, i, backend=backend)
    check(lambda a, i: a[:, 1, i], a, i, backend=backend)        # adjacent: in place
    check(lambda a, i: a[i, 1:3, [[0], [4]]], a, i, backend=backend)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint64, np.float16, np.complex128])
def test_gather_dtypes(backend, dtype):
    check(lambda a, i: a[i] + a[i[::-1]], arr((5,), dtype), np.array([4, 1, 1, 0]),
          backend=backend)


def test_lazy_index_from_argsort_and_argmax(backend):
    def f(a):
        return a[np.argsort(a)], a[np.argmax(a)], a[a.argmin()] * 2
    check(f, arr((7,)), backend=backend)
    captured(f, arr((7,)))

    def g(a):
        rows = np.argmax(a, axis=1)
        return a[np.arange(a.shape[0]), rows]
    check(g, arr((4, 5)), backend=backend)


def test_index_errors(backend):
    a = arr((3, 5))
    check(lambda a: a[[0, 7]], a, backend=backend)
    check(lambda a: a[:, [-6]], a, backend=backend)
    check(lambda a: a[[0, 1], [0, 1, 2]], a, backend=backend)
    check(lambda a: a[np.array([1.0])], a, backend=backend)
    check(lambda a: a[[0], [0], [0]], a, backend=backend)
    check(lambda a: a[np.array([True, False])], a, backend=backend)


def test_lazy_index_out_of_bounds_raises(backend):
    # the index values only exist when the graph runs: same IndexError then
    def f(a, i):
        return a[i * 3]
    check(f, arr((5,)), np.array([0, 1, 4]), backend=backend)


# ------------------------------------------------------------- bool masks

def test_mask_reads(backend):
    a = arr((4, 3))
    check(lambda a: a[MASK_G], a, backend=backend)               # concrete: in-graph
    captured(lambda a: a[MASK_G], a)
    check(lambda a: a[a > 0], a, backend=backend)                # lazy: a break
    broke(lambda a: a[a > 0] + 1, a, reason="data-dependent")
    check(lambda a: a[a[:, 0] > 0, 1:], a, backend=backend)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mask_assign_where(backend, layout):
    def f(a):
        a[a > 0] = 0.5
        a[a < -1] = a.sum()
        return a
    check(f, arr((4, 3), layout=layout), backend=backend)
    captured(f, arr((4, 3), layout=layout))

    def f2(a):
        a[a < -1] *= 2          # reads a[mask] first: a (correct) break
        return a
    check(f2, arr((4, 3), layout=layout), backend=backend)

    def g(a, m):
        a[m] = np.array([1.0, 2.0, 3.0])       # value over the trailing dim
        return a
    check(g, arr((4, 3), layout=layout), MASK_G, backend=backend)
    captured(g, arr((4, 3)), MASK_G)


def test_mask_assign_compressed_values(backend):
    def f(a):
        a[a > 0] = np.arange(100.0)[: int((a > 0).sum())]
        return a
    check(f, arr((6,)), backend=backend)

    def g(a):
        a[a > 0] = [1.0, 2.0]               # wrong count: NumPy's ValueError
        return a
    check(g, arr((6,)), backend=backend)


def test_mask_assign_overflow(backend):
    def f(a):
        a[a > 5] = 300
        return a
    check(f, arr((6,), np.int8), backend=backend)


# ----------------------------------------------------------------- scatter

WRITES = [
    ("a[i] = 7", lambda a, i: a.__setitem__(i, 7)),
    ("a[i] = v", lambda a, i: a.__setitem__(i, np.arange(4.0))),
    ("a[i, 1:3] = v", lambda a, i: a.__setitem__((i, slice(1, 3)), -1.0)),
    ("a[:, i] = col", lambda a, i: a.__setitem__((slice(None), i), np.arange(4.0)[:, None])),
    ("a[[1,1,1]] = rows", lambda a, i: a.__setitem__([1, 1, 1], np.arange(12.0).reshape(3, 4))),
    ("a[i, i] += 1", None),
]


@pytest.mark.parametrize("k", range(len(WRITES)))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatter_writes(backend, k, layout):
    name, w = WRITES[k]

    def f(a, i):
        b = a[::-1]          # a view: the write must be seen through both
        if w is None:
            a[i, i] += 1
        else:
            w(a, i)
        return a * 1, b * 1
    check(f, arr((4, 4), layout=layout), np.array([3, 0, -2, 0]), backend=backend)
    captured(f, arr((4, 4), layout=layout), np.array([3, 0, -2, 0]))


def test_scatter_errors(backend):
    def f(a):
        a[[0, 1]] = [1.0, 2.0, 3.0]
        return a
    check(f, arr((4,)), backend=backend)

    def g(a):
        a[[9]] = 1.0
        return a
    check(g, arr((4,)), backend=backend)

    def h(a):
        a[[0]] = 300
        return a
    check(h, arr((4,), np.int8), backend=backend)


def test_scatter_dtype_casts(backend):
    def f(a, v):
        a[[0, 2]] = v
        return a
    check(f, arr((4,), np.int32), np.array([1.7, -2.2]), backend=backend)
    check(f, arr((4,), np.float32), np.array([1, 2], np.int64), backend=backend)


# ------------------------------------------------------ take / put / ufunc.at

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_take(backend, axis, mode):
    idx = np.array([[0, 3], [-1, 2]]) if mode == "raise" else np.array([[0, 7], [-9, 2]])
    f = lambda a: np.take(a, idx, axis=axis, mode=mode)
    check(f, arr((4, 5)), backend=backend)
    captured(f, arr((4, 5)))
    check(lambda a: a.take(idx, axis=axis, mode=mode), arr((4, 5)), backend=backend)


def test_take_scalar_and_errors(backend):
    check(lambda a: np.take(a, 3), arr((4, 5)), backend=backend)
    check(lambda a: np.take(a, [30]), arr((4, 5)), backend=backend)
    check(lambda a: np.take(a, [1], axis=2), arr((4, 5)), backend=backend)


def test_take_along_axis(backend):
    check(lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1), arr((3, 4)),
          backend=backend)
    check(lambda a: np.take_along_axis(a, np.argmax(a, axis=0, keepdims=True), axis=0),
          arr((3, 4)), backend=backend)
    check(lambda a: np.take_along_axis(a, np.array([[0], [2], [1]]), 1), arr((3, 4)),
          backend=backend)
    check(lambda a: np.take_along_axis(a, np.array([3, 0]), axis=None), arr((3, 4)),
          backend=backend)


def test_put(backend):
    def f(a):
        np.put(a, [0, -1, 2], [10.0, 20.0, 30.0])
        a.put([1], 5.0)
        return a
    check(f, arr((3, 4)), backend=backend)
    captured(f, arr((3, 4)))

    def g(a):
        np.put(a, [0, 9], 1.0, mode="clip")
        np.put(a, [15], 2.0, mode="wrap")
        return a
    check(g, arr((3, 4)), backend=backend)

    def h(a):
        np.put(a, [50], 1.0)
        return a
    check(h, arr((3, 4)), backend=backend)


@pytest.mark.parametrize("uf", [np.add, np.multiply, np.maximum, np.subtract])
def test_ufunc_at(backend, uf):
    def f(a, i, b):
        uf.at(a, i, b)
        return a
    check(f, arr((6,)), np.array([0, 1, 1, 5, 1]), arr((5,), seed=3), backend=backend)
    captured(f, arr((6,)), np.array([0, 1, 1, 5, 1]), arr((5,), seed=3))

    def g(a):
        uf.at(a, ([0, 0, 2], [1, 1, 3]), 2.0)
        return a
    check(g, arr((3, 4)), backend=backend)


def test_ufunc_at_unary_and_errors(backend):
    def f(a):
        np.negative.at(a, [0, 2])
        return a
    check(f, arr((4,)), backend=backend)

    def g(a):
        np.add.at(a, [7], 1.0)
        return a
    check(g, arr((4,)), backend=backend)

    def h(a):
        np.add.at(a, [0, 0, 1], 1.5)     # int array, float value: NumPy casts
        return a
    check(h, arr((4,), np.int64), backend=backend)


def test_lazy_index_negative_wrap_and_message(backend):
    # computed indices: negatives wrapped, and the first one out of range
    # named as given (below -n too: the vectorized check wraps it first)
    def f(a, i):
        return a[i - 3]
    check(f, arr((6,)), np.array([3, 0, 8, 1, 2]), backend=backend)    # -3..5 in range
    check(f, arr((6,)), np.array([3, 0, -4, 9, 1]), backend=backend)   # -7: IndexError
    check(f, arr((6,)), np.array([3, 0, 2, 9, 1]), backend=backend)    # 6: IndexError


def test_scatter_add_calls_no_python(backend):
    # np.add.at of values shaped like the index (a COO mat-vec): the scatter
    # hands the values to at() as they are -- no np.broadcast_to (a Python
    # function, most of a small scatter's cost) on any call, replays included
    import sys

    def coo(rows, cols, data, x, n):
        y = np.zeros(n)
        np.add.at(y, rows, data * x[cols])
        return y

    rows, cols = np.array([0, 2, 2, 1, 0]), np.array([1, 1, 0, 2, 2])
    data, x = arr((5,), seed=1), arr((3,), seed=2)
    check(coo, rows, cols, data, x, 3, backend=backend)
    check(lambda a, i: (np.add.at(a, i, 2.5), a)[1], arr((4,)), np.array([0, 3, 3]), backend=backend)
    check(lambda a, i, v: (np.add.at(a, i, v), a)[1], arr((3, 4)), np.array([0, 2, 0]), arr((4,)),
          backend=backend)   # a row of values for each indexed row: broadcast
    f = numdyn.compile(coo, backend=backend)
    called = []

    def prof(frame, event, arg):
        if event == "call":
            called.append(frame.f_code.co_name)
    for _ in range(3):
        sys.setprofile(prof)
        try:
            y = f(rows, cols, data, x, 3)
        finally:
            sys.setprofile(None)
        np.testing.assert_allclose(y, coo(rows, cols, data, x, 3))
    assert "broadcast_to" not in called, called


# ------------------------------------------------- randomized key combinations

def _random_key(rng, shape):
    """A random index mixing ints, slices, None, Ellipsis, integer arrays
    (lists and ndarrays, some out of range) and boolean masks."""
    items, dim, used_ell = [], 0, False
    nitems = rng.integers(1, len(shape) + 2)
    for _ in range(nitems):
        kind = rng.choice(["int", "slice", "none", "ell", "list", "arr", "mask"],
                          p=[.15, .2, .1, .05, .2, .2, .1])
        n = shape[dim] if dim < len(shape) else 3
        if kind == "int":
            items.append(int(rng.integers(-n - 1, n + 1)) if n else 0); dim += 1
        elif kind == "slice":
            items.append(slice(int(rng.integers(-n, n + 1)), None, int(rng.choice([1, 2, -1]))))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ell" and not used_ell:
            items.append(Ellipsis); used_ell = True
        elif kind == "list":
            items.append([int(v) for v in rng.integers(-n, n, size=rng.integers(0, 4))] if n else [])
            dim += 1
        elif kind == "arr":
            items.append(rng.integers(-n, max(n, 1), size=tuple(rng.integers(1, 3, size=rng.integers(1, 3)))))
            dim += 1
        elif kind == "mask" and dim < len(shape):
            items.append(rng.integers(0, 2, size=shape[dim]).astype(bool)); dim += 1
    return tuple(items)


@pytest.mark.parametrize("seed", range(60))
def test_random_keys(backend, seed):
    rng = np.random.default_rng(1000 + seed)
    shape = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 4)))
    a = arr(shape, np.float64, layout=["C", "F", "neg"][seed % 3], seed=seed)
    for _ in range(5):
        key = _random_key(rng, shape)

        def read(a):
            return a[key] * 1

        def write(a):
            a[key] = -7.5
            return a

        check(read, a, backend=backend)
        check(write, a, backend=backend)


@pytest.mark.parametrize("seed", range(30))
def test_random_keys_lazy_indices(backend, seed):
    """The same keys with their index arrays passed in as arguments: lazy
    indices, normalized and bounds-checked by the index_check extern."""
    rng = np.random.default_rng(5000 + seed)
    shape = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 4)))
    a = arr(shape, np.float32, layout=["C", "F", "neg"][seed % 3], seed=seed)
    for _ in range(4):
        key = _random_key(rng, shape)
        arrays = [k for k in key if isinstance(k, np.ndarray) and k.dtype != bool]
        if not arrays:
            continue
        pos = [i for i, k in enumerate(key) if isinstance(k, np.ndarray) and k.dtype != bool]

        def build(idx):
            k = list(key)
            for p, v in zip(pos, idx):
                k[p] = v
            return tuple(k)

        def read(a, *idx):
            return a[build(idx)] + 0

        def write(a, *idx):
            a[build(idx)] = np.float32(3)
            return a

        check(read, a, *arrays, backend=backend)
        check(write, a, *arrays, backend=backend)


def test_fallback_assignment_records_one_break():
    """An advanced-index assignment the shim does not model runs NumPy on
    the materialized array: one recorded break, not two."""
    import warnings

    def f(a, v):
        b = a + 1
        b[[0, 2]] = v
        return b
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ComplexWarning on both sides
        check(f, np.zeros(4), np.array([1 + 2j, 3j]), backend="eager")
        out = numdyn.explain(f)(np.zeros(4), np.array([1 + 2j, 3j]))
    assert out.graph_break_count == 1, [r.reason for r in out.break_reasons]
    assert "advanced index assignment" in out.break_reasons[0].reason
