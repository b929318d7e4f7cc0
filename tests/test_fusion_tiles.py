"""Register tiles (issue 19: min-max scaling and nearest neighbour behind
torch.compile). A reduction whose vector loop runs across the kept dim
(column reductions x.min(0) of a tall array; argmin over a short or
computed axis) keeps its accumulators in vector registers: the output
elements go in tiles of a constant width (8, or 16 for 4-byte types),
each tile walking the reduced dims once, then the rest as one block. An
arg reduction over the last axis goes across the kept dim whenever that
has 1024 elements or more (nearest neighbour: argmin over 64 reference
points of the squared distances, one kernel, the query rows in tiles).

NumPy is the oracle over dtypes, layouts (C, F, strided, reversed), widths
around the tile widths (tails), NaN (first NaN wins an arg reduction, NaN
propagates through min/max) and ties (the first index wins); the counters
pin one kernel for nearest neighbour and two kernels / two passes for
min-max scaling.
"""
import numpy as np
import pytest

import numdyn
from fusion_counts import kernel_runs, passes
from oracle import check

FLOATS = ["float64", "float32"]
DTYPES = ["float64", "float32", "int64", "int32", "int16"]
WIDTHS = [1, 3, 7, 8, 9, 15, 16, 17, 24, 33]


def data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    return rng.integers(-50, 50, size=shape).astype(dt)


def layouts(shape, dt, seed=0):
    """one logical shape as C, F, a strided view and a reversed view"""
    a = data(shape, dt, seed)
    yield "C", a
    yield "F", np.asfortranarray(a)
    yield "strided", data((shape[0] * 2,) + tuple(shape[1:]), dt, seed + 1)[::2]
    yield "reversed", a[::-1, ::-1]


def nearest(q, p):
    return np.argmin(((q[:, None, :] - p[None, :, :]) ** 2).sum(axis=2), axis=1)


def farthest(q, p):
    return np.argmax(((q[:, None, :] - p[None, :, :]) ** 2).sum(axis=2), axis=1)


def minmax_scale(x):
    lo = x.min(0)
    return (x - lo) / (x.max(0) - lo)


def col_reductions(x):
    return x.min(0), x.max(0), x.argmin(0), x.argmax(0)


def col_sums(x):
    return x.sum(0), (x * 2).sum(0)


# --------------------------------------------------------- nearest neighbour
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("nq", [1023, 1024, 1031, 3000])
@pytest.mark.parametrize("npts", [17, 64, 100])
def test_nearest(backend, dt, nq, npts):
    q = data((nq, 3), dt)
    p = data((npts, 3), dt, seed=1)
    check(nearest, q, p, backend=backend)
    check(farthest, q, p, backend=backend)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_nearest_layouts(backend, k):
    p = data((40, k), "float64", seed=1)
    for _, q in layouts((2100, k), "float64"):
        check(nearest, q, p, backend=backend)
        check(nearest, q, np.asfortranarray(p), backend=backend)


def test_nearest_ties_and_nan(backend):
    q = data((2048, 3), "float64")
    p = data((50, 3), "float64", seed=1)
    p[30] = p[10]            # equal points: the first index wins
    p[40] = p[2]
    q[:20] = p[10]           # exact hits, distance 0 to two points
    q[100, 1] = np.nan       # every distance NaN: index 0
    p2 = p.copy()
    p2[7, 2] = np.nan        # one point NaN: the first NaN wins for every query
    check(nearest, q, p, backend=backend)
    check(farthest, q, p, backend=backend)
    check(nearest, q, p2, backend=backend)
    check(farthest, q, p2, backend=backend)


@pytest.mark.parametrize("dt", ["int64", "int32"])
def test_nearest_ints(backend, dt):
    q = data((1500, 3), dt)
    p = data((33, 3), dt, seed=1)  # many ties among integer distances
    check(nearest, q, p, backend=backend)
    check(farthest, q, p, backend=backend)


def test_nearest_one_kernel():
    q = data((4000, 3), "float64")
    p = data((64, 3), "float64", seed=1)
    assert kernel_runs(nearest, q, p) == 1


# ------------------------------------------------- arg reductions, last axis
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n1", [5, 17, 40])
def test_argminmax_last_axis(backend, dt, n1):
    for _, x in layouts((1100, n1), dt):
        check(lambda x: np.argmin(x, axis=1), x, backend=backend)
        check(lambda x: np.argmax(x * 2, axis=-1), x, backend=backend)
        check(lambda x: np.argmin(np.abs(x), axis=1, keepdims=True), x, backend=backend)


def test_argminmax_last_axis_nan(backend):
    x = data((1500, 30), "float64")
    x[3, 7] = np.nan
    x[3, 9] = np.nan
    x[10, 0] = np.nan
    x[20, 29] = np.nan
    x[30] = np.nan
    x[40] = 1.0              # all equal: index 0
    for f in (lambda x: np.argmin(x, axis=1), lambda x: np.argmax(x + 1, axis=1)):
        check(f, x, backend=backend)
        check(f, np.asfortranarray(x), backend=backend)


def test_argmin_3d_last_axis(backend):
    x = data((3, 700, 20), "float32")
    check(lambda x: np.argmin(x * x, axis=2), x, backend=backend)
    check(lambda x: np.argmax(x, axis=-1), x[:, ::-1], backend=backend)


# ------------------------------------------------------- column reductions
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("w", WIDTHS)
def test_columns_tall(backend, dt, w):
    # 5000 rows: the chunked parallel path (4096 rows and more), tiles of
    # the row plus the tail
    for _, x in layouts((5000, w), dt):
        check(col_reductions, x, backend=backend)
        if dt != "float32":
            check(col_sums, x, backend=backend)


@pytest.mark.parametrize("w", [3, 8, 16, 17])
def test_columns_tall_float32_sums_against_exact(w):
    # NumPy's float32 column sums of 5000 rows drift (sequential adds);
    # numdyn's chunked ones stay within float32 rounding of the exact value
    for _, x in layouts((5000, w), "float32"):
        x = x + np.float32(3)
        got = numdyn.compile(col_sums)(x)
        for g, e in zip(got, col_sums(x.astype(np.float64))):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


def col_moments(x):
    return x.min(0), x.max(0), x.mean(0), x.std(0), x.var(0, ddof=1)


@pytest.mark.parametrize("w", [3, 8, 19])
def test_columns_short_and_moments(backend, w):
    for rows in (100, 5000):
        check(col_moments, data((rows, w), "float64"), backend=backend)


@pytest.mark.parametrize("w", [3, 16, 19])
def test_columns_moments_float32_against_exact(w):
    for rows in (100, 5000):
        x = data((rows, w), "float32") + np.float32(3)
        got = numdyn.compile(col_moments)(x)
        for g, e in zip(got, col_moments(x.astype(np.float64))):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("w", [8, 9, 20])
def test_columns_nan(backend, w):
    x = data((6000, w), "float64")
    x[17, 0] = np.nan
    x[5999, w - 1] = np.nan
    x[4000:, 2] = np.inf
    x[:, 5] = -np.inf
    check(col_reductions, x, backend=backend)
    check(col_sums, x, backend=backend)
    check(minmax_scale, x, backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("w", [2, 8, 13])
def test_minmax_scale(backend, dt, w):
    for _, x in layouts((4500, w), dt):
        check(minmax_scale, x, backend=backend)


def test_minmax_scale_passes():
    x = data((100000, 8), "float64")
    assert passes(minmax_scale, x) == (2, 2.0)
