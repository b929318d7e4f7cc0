"""Short-axis reductions inline and arg-reductions fused with their producer
(issue 19), numdyn vs NumPy.

A reduction over an axis of small static extent (2..16 elements) is an
unrolled expression inside its consumer's loop: no kernel, no buffer of its
own. argmin/argmax read their pointwise / short-reduction producer in the
same kernel. Values, dtypes and shapes are NumPy's (tolerance by dtype;
first occurrence and first NaN for the arg-reductions), over dtypes,
layouts (C, F, strided views), extents 1..17 and keepdims; the kernel_runs
counter shows the fusion (the counts fail without it).
"""
import numpy as np
import pytest

import numdyn
from fusion_counts import kernel_runs
from oracle import check

FLOATS = ["float64", "float32"]
DTYPES = ["float64", "float32", "int64", "int32"]
EXTENTS = list(range(1, 18))


def data(shape, dt, seed=0, layout="C", pos=False):
    """random values; pos: floats in [0.5, 1.5) (sums without cancellation:
    numdyn may add in another order than NumPy, whose error is no worse)"""
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        a = (rng.uniform(0.5, 1.5, shape) if pos else rng.standard_normal(shape)).astype(dt)
    else:
        a = rng.integers(-50, 50, size=shape).astype(dt)
    if layout == "F":
        a = np.asfortranarray(a)
    return a


def layouts(shape, dt, seed=0, pos=False):
    """the same logical shape as C, F and a strided view"""
    yield "C", data(shape, dt, seed, pos=pos)
    yield "F", data(shape, dt, seed, "F", pos=pos)
    big = data((shape[0] * 2,) + tuple(shape[1:]), dt, seed + 1, pos=pos)
    yield "strided", big[::2]


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


# ------------------------------------------------------------ the showcase
@pytest.mark.parametrize("dt", FLOATS)
def test_kmeans_step_values(backend, dt):
    X = data((5000, 2), dt)
    means = data((2, 2), dt, seed=3)
    check(kmeans_step, X, means, backend=backend)
    for k in (1, 3, 5):
        check(kmeans_step, X, data((k, 2), dt, seed=k), backend=backend)


def test_kmeans_step_one_kernel():
    X = data((5000, 2), "float64")
    means = data((2, 2), "float64", seed=3)
    assert kernel_runs(kmeans_step, X, means) == 1


def test_kmeans_ties_and_nan(backend):
    X = data((1000, 2), "float64")
    X[5] = np.nan
    X[7, 1] = np.nan
    means = np.array([[0.5, 0.5], [0.5, 0.5], [-1.0, 2.0]])  # two equal means: ties
    check(kmeans_step, X, means, backend=backend)
    means = np.array([[np.nan, 0.0], [0.0, 0.0]])            # every distance to 0 is NaN
    check(kmeans_step, X, means, backend=backend)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_kmeans_layouts(backend, k):
    for _, X in layouts((3000, k), "float64"):
        means = data((4, k), "float64", seed=2)
        check(kmeans_step, X, means, backend=backend)


# ------------------------------------------------------------ short sums
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("e", EXTENTS)
def test_short_sum_last_axis(backend, dt, e):
    def f(x):
        return x.sum(axis=-1) * 2 + 1
    for _, x in layouts((200, e), dt, pos=True):
        check(f, x, backend=backend)


@pytest.mark.parametrize("e", [2, 3, 7, 16])
def test_short_sum_fuses(e):
    x = data((4000, e), "float64")
    y = data((4000,), "float64", seed=1)
    # (row fusion alone makes these two kernels: y is no row value)
    assert kernel_runs(lambda x, y: np.sqrt(np.abs(x.sum(axis=-1))) + y, x, y) == 1
    assert kernel_runs(lambda x, y: np.sqrt((x * x).sum(axis=1)) * y, x, y) == 1


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("e", [1, 2, 3, 5, 16, 17])
def test_short_sum_first_axis_keepdims(backend, dt, e):
    def f(x):
        return (x.sum(axis=0, keepdims=True) - 3) * x[:1]
    for _, x in layouts((e, 300), dt, pos=True):
        check(f, x, backend=backend)


@pytest.mark.parametrize("e", [2, 4, 8, 16, 17])
def test_short_norm_middle_axis(backend, e):
    def f(x, y):
        return np.linalg.norm(x - y, axis=1) / 3.0
    x = data((50, e, 40), "float64", pos=True)
    y = data((e, 1), "float64", seed=4, pos=True) * 3
    check(f, x, y, backend=backend)
    check(lambda x: np.linalg.norm(x, axis=1, keepdims=True) + x.mean(), x, backend=backend)


@pytest.mark.parametrize("shape", [(300, 2, 3), (300, 4, 4), (300, 3, 6)])
def test_short_two_axes(backend, shape):
    def f(x):
        return x.sum(axis=(1, 2)) - x.max(axis=(1, 2))
    check(f, data(shape, "float64", pos=True), backend=backend)
    check(f, data(shape, "int32"), backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_short_max_min_nan(backend, dt):
    x = data((100, 3), dt)
    x[4, 1] = np.nan
    x[9, :] = np.nan
    x[10] = [0.0, -0.0, 0.0]
    check(lambda x: (x.max(axis=1) + 1, x.min(axis=1) * 2, np.fmax.reduce(x, axis=1) + 0),
          x, backend=backend)


def test_short_integer_wrap_and_bool(backend):
    x = np.full((50, 4), 2**62, dtype=np.int64)
    check(lambda x: x.sum(axis=1) + 1, x, backend=backend)
    check(lambda x: x.prod(axis=1) - 1, np.full((50, 4), 3**20, dtype=np.int64), backend=backend)
    b = data((60, 3), "int64") > 0
    check(lambda b: b.any(axis=1) & b.all(axis=1) | b[:, 0], b, backend=backend)
    check(lambda b: b.sum(axis=1) * 2, b, backend=backend)
    check(lambda x: x.astype(np.int8).sum(axis=1) + np.int8(1), data((70, 5), "int64"), backend=backend)


def test_short_reduction_used_twice_and_as_output(backend):
    def f(x):
        s = x.sum(axis=1)
        return s, s * 2 + x[:, 0], (x * s[:, None]).sum(axis=1)
    check(f, data((500, 3), "float64", pos=True), backend=backend)


def test_broadcast_back_still_row_fused(backend):
    # x - x.sum(-1, keepdims=True) keeps row fusion (the sum once per row)
    x = data((400, 3), "float64", pos=True)
    check(lambda x: x - x.sum(axis=-1, keepdims=True), x, backend=backend)
    check(lambda x: x / np.linalg.norm(x, axis=1, keepdims=True), x, backend=backend)


def test_long_axes_share_kernels():
    """A long reduced extent is not part of the kernel key; a short one is."""
    f = numdyn.compile(lambda x: np.sqrt(x.sum(axis=1)) + 1)
    f(np.ones((100, 20)))
    c = numdyn.utils.counters["kernels_compiled"]
    f(np.ones((100, 30)))
    assert numdyn.utils.counters["kernels_compiled"] == c
    np.testing.assert_allclose(f(np.ones((100, 30))), np.sqrt(30.0) + 1)
    np.testing.assert_allclose(f(np.ones((100, 2))), np.sqrt(2.0) + 1)
    np.testing.assert_allclose(f(np.ones((100, 3))), np.sqrt(3.0) + 1)


# ------------------------------------------------------------ arg-reductions
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("e", [1, 2, 3, 8, 16, 17])
def test_short_argmax_argmin_consumed(backend, dt, e):
    def f(x):
        return (np.argmax(x, axis=1) + 1, np.argmin(x * 2, axis=1) * 3,
                np.argmax(x, axis=0, keepdims=True) - 1)
    for _, x in layouts((120, e), dt):
        check(f, x, backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_short_arg_ties_and_nan(backend, dt):
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [np.nan, 1, np.nan, 5], [4, np.nan, 9, 9],
                  [-1, -1, -5, -5], [0.0, -0.0, 0.0, -0.0]], dtype=dt)
    check(lambda x: (np.argmax(x, axis=1) + 0, np.argmin(x, axis=1) + 0,
                     np.argmax(x, axis=0) + 0, np.argmin(x, axis=0) + 0), x, backend=backend)


def test_short_argmin_fuses():
    x = data((4000, 3), "float64")
    assert kernel_runs(lambda x: np.argmin(x * x, axis=1) + 1, x) == 1


@pytest.mark.parametrize("dt", DTYPES)
def test_argmin_long_axis_of_short_norm(backend, dt):
    """argmin over a long axis consumes a short reduction in one kernel"""
    def f(x):
        return np.argmax(np.abs(x).sum(axis=2), axis=1)
    for x in (data((7, 600, 3), dt, pos=True), np.asfortranarray(data((7, 600, 3), dt, pos=True))):
        check(f, x, backend=backend)


def test_argmin_long_axis_fuses():
    x = data((7, 600, 3), "float64")
    assert kernel_runs(lambda x: np.argmax(np.abs(x).sum(axis=2), axis=1), x) == 1
    assert kernel_runs(lambda x: np.argmax(np.abs(x).sum(axis=2), axis=0), x) == 1


# ------------------------------------------ broadcast constants after a frame
# A broadcast view of a constant (np.zeros((n, 1)) is a view of the SCALAR
# 0.0) read next to a short-axis reduction inlined in the same kernel: the
# view is declared at kernel scope, never per element or per frame (a
# session saw 'v2 undeclared' from grad(sum(x.max(axis=1))) when the
# cotangent was such a view).
BROADCAST_CONSTS = [
    lambda x: np.sum(x.max(axis=1) * np.ones((x.shape[0], 1))[:, 0]),
    lambda x: (x == x.max(axis=1, keepdims=True)) * np.broadcast_to(1.0, (x.shape[0],))[:, None],
    lambda x: ((x == x.max(axis=1, keepdims=True)) * np.broadcast_to(2.0, (x.shape[0], 1))).sum(1),
    lambda x: (x * np.full((x.shape[0], 1), 2.0)).sum(axis=1) * np.full((x.shape[0],), 3.0),
    lambda x: np.argmax(x * np.full((1, x.shape[1]), 2.0), axis=1) + np.zeros((x.shape[0],), dtype=np.int64),
    lambda x: np.zeros((1, x.shape[0])).T * x.max(1, keepdims=True) + np.zeros(x.shape[1])[None],
]


@pytest.mark.parametrize("i", range(len(BROADCAST_CONSTS)))
@pytest.mark.parametrize("shape", [(2, 3), (5, 4), (300, 2), (70, 16)])
def test_broadcast_constant_next_to_frame(backend, i, shape):
    check(BROADCAST_CONSTS[i], data(shape, "float64"), backend=backend)


@pytest.mark.parametrize("shape", [(2, 3), (5, 4), (4, 2, 3)])
def test_grad_of_short_max(shape):
    x = data(shape, "float64")
    g = numdyn.grad(lambda x: np.sum(x.max(axis=-1)))(x)
    want = (x == x.max(axis=-1, keepdims=True)).astype(np.float64)
    np.testing.assert_array_equal(g, want)
