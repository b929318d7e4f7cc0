"""Column reductions in row blocks and two halves (issue 19: min-max
scaling level with torch.compile). A reduction across the kept dim in
register tiles (x.min(0), x.argmin(0) of a tall or wide array) walks its
rows in blocks of ~16k elements of the row (all tiles per block, the block
in cache) and, for folds exact in any grouping (min/max, argmin/argmax,
integer and boolean folds; not float sums, products or moments), the rows
of each block in two halves at once, each into accumulators of its own,
the second folded into the first at the end: a tile no longer waits on one
accumulator every row.

NumPy is the oracle; the cases are built to catch a wrong combination:
ties across the halves and across blocks (the first index wins), the first
NaN winning an arg reduction wherever it falls, odd and even row counts
(the second half's extra row), widths around the tile widths and past one
block, the chunked path (4096 rows and more) and the plain one, a reduced
middle dim of a 3-D array, integer and boolean dtypes, and strided and
Fortran layouts. Min-max scaling keeps its two kernels and two passes.
"""
import numpy as np
import pytest

from fusion_counts import passes
from oracle import check

SHAPES = [(4097, 3), (5001, 8), (6000, 37), (701, 200), (700, 9), (4500, 600), (129, 520)]


def data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(-50, 50, size=shape).astype(dt)


def col_folds(x):
    return x.min(0), x.max(0), x.argmin(0), x.argmax(0)


def col_int_folds(x):
    return x.min(0), x.argmax(0), x.sum(0), np.bitwise_or.reduce(x, axis=0)


def minmax_scale(x):
    lo = x.min(0)
    return (x - lo) / (x.max(0) - lo)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", ["float64", "float32", "int64", "int16"])
def test_column_folds(backend, shape, dt):
    check(col_folds, data(shape, dt), backend=backend)


@pytest.mark.parametrize("shape", [(5001, 8), (701, 200), (4500, 600)])
@pytest.mark.parametrize("dt", ["int64", "int32", "uint8"])
def test_column_integer_folds(backend, shape, dt):
    check(col_int_folds, data(shape, dt), backend=backend)


@pytest.mark.parametrize("shape", [(5001, 8), (701, 200)])
def test_column_bool_folds(backend, shape):
    x = data(shape, "bool")
    x[:, 1] = False
    x[:, 2] = True
    check(lambda a: (a.any(0), a.all(0), a.argmax(0)), x, backend=backend)


@pytest.mark.parametrize("shape", SHAPES)
def test_column_ties_first_index(backend, shape):
    # the minimum and maximum in both halves of every block and chunk:
    # integers in a tiny range, and columns of one value throughout
    n, w = shape
    x = data(shape, "int64") % 3
    x = x.astype(np.float64)
    x[:, 0] = 7.0
    if w > 2:
        x[:, 2] = 0.0
        x[n // 2, 2] = -1.0
        x[n - 1, 2] = -1.0
    check(col_folds, x, backend=backend)


@pytest.mark.parametrize("shape", SHAPES)
def test_column_nan_first(backend, shape):
    n, w = shape
    x = data(shape, "float64")
    x[n - 1, 0] = np.nan               # the second half's extra row when n is odd
    x[n // 2 + 1, 0] = np.nan
    if w > 1:
        x[n // 2 - 1, w - 1] = np.nan  # the end of the first half
        x[3 * n // 4, w - 1] = np.nan
    if w > 2:
        x[:, 1] = -np.inf
        x[n // 3:, 2] = np.inf
    check(col_folds, x, backend=backend)
    check(minmax_scale, x, backend=backend)


@pytest.mark.parametrize("shape", [(5001, 8), (701, 200)])
def test_column_layouts(backend, shape):
    x = data(shape, "float64", seed=3)
    check(col_folds, np.asfortranarray(x), backend=backend)
    check(col_folds, data((shape[0] * 2, shape[1]), "float64", seed=4)[::2], backend=backend)
    check(col_folds, x[::-1, ::-1], backend=backend)


@pytest.mark.parametrize("n1", [2, 3, 300])
def test_middle_dim(backend, n1):
    x = data((7, n1, 130), "float64", seed=5)
    x[2, n1 - 1, 5] = np.nan
    check(lambda a: (a.min(1), a.argmax(1), a.max(1)), x, backend=backend)


def test_float_sums_stay_in_row_order(backend):
    # float sums are not split in halves: a column sum of a wide array in
    # blocks adds its rows in order, as NumPy's does
    x = data((3000, 520), "float64", seed=6) * 1e8
    x[::7] *= -1e-8
    check(lambda a: a.sum(0), x, backend=backend, rtol=0, atol=0)


def test_minmax_scale_two_passes():
    assert passes(minmax_scale, data((200001, 8), "float64")) == (2, 2.0)
