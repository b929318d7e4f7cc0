"""Column reductions of tall, narrow arrays (issue 19; issue 13's
argmin(axis=0) of (200000, 2) points, 0.3x NumPy). A tall array's column
reductions run as chunks of rows (4096 rows and more); a kept dim narrower
than a register tile (8 lanes, 16 for 4-byte types) went as a runtime-width
loop over accumulators in memory. Now:
- rows back to back in memory (every input's row stride is the width): a
  flat walk, m rows at a time as the lanes of one vector loop, each lane
  folding one column of every m-th row, the lanes of a column folded
  together at the end -- arg reductions by row index (first occurrence,
  first NaN; 4-byte types with int32 row offsets from the chunk's first
  row), min/max/integer folds in any grouping (exact);
- otherwise (a column slice of a wider array, F order, reversed rows):
  tiles of a smaller constant width (w/2 .. 2), the last one moved back to
  end at the width (a column two tiles share is folded twice, alike).

NumPy is the oracle over widths 1-15, dtypes, layouts, the rows left over
after the last whole step of m rows, chunk sizes below m, NaN (first NaN
wins an arg reduction, NaN propagates through min/max), +-inf and ties
(the first index wins; ties across lanes of one column).
"""
import numpy as np
import pytest

from oracle import check

DTYPES = ["float64", "float32", "int64", "int32", "uint8"]
NARROW = [1, 2, 3, 4, 5, 7]


def data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if np.dtype(dt).kind == "u":
        return rng.integers(0, 6, size=shape).astype(dt)
    return rng.integers(-5, 5, size=shape).astype(dt)   # many ties


def layouts(shape, dt, seed=0):
    a = data(shape, dt, seed)
    yield "C", a
    yield "F", np.asfortranarray(a)
    wide = data((shape[0], shape[1] + 5), dt, seed + 1)
    yield "column slice", wide[:, 2:2 + shape[1]]           # rows not back to back
    yield "strided rows", data((2 * shape[0], shape[1]), dt, seed + 2)[::2]
    yield "reversed", a[::-1]


def col_args(x):
    return np.argmin(x, axis=0), np.argmax(x, axis=0)


def col_folds(x):
    return x.min(0), x.max(0), np.argmin(x, axis=0), x.max(0, keepdims=True)


def int_sums(x):
    return x.sum(0), (x * 3).sum(axis=0)


def producer(x):
    # a pointwise producer in the same kernel as the arg reduction
    return np.argmin(np.abs(x - 0.25), axis=0), np.argmax(x * x, axis=0)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("w", NARROW)
def test_narrow_columns(backend, dt, w):
    # 5003 rows: chunks of ~312 rows, the last rows of a chunk after its
    # whole steps of m rows
    for _, x in layouts((5003, w), dt):
        check(col_folds, x, backend=backend)
        if np.dtype(dt).kind != "f":
            check(int_sums, x, backend=backend)


@pytest.mark.parametrize("w", [8, 9, 11, 15])
def test_narrow_float32_tiles(backend, w):
    # 4-byte types: tiles of 16, narrow widths in tiles of 8, 4, 2
    for _, x in layouts((4100, w), "float32"):
        check(col_folds, x, backend=backend)


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("w", [2, 3, 5])
def test_narrow_producer(backend, dt, w):
    for _, x in layouts((8192, w), dt):
        check(producer, x, backend=backend)


@pytest.mark.parametrize("w", [1, 2, 3, 6])
def test_narrow_ties_across_lanes(backend, w):
    # the minimum of each column at several rows of different phases (lanes):
    # the first row wins
    x = data((6000, w), "float64") + 10.0
    for j in range(w):
        for r in (4999, 17 + j, 4096, 5998):
            x[r, j] = -3.0
    x[5000:, 0] = 50.0
    check(col_args, x, backend=backend)
    check(col_args, x.astype(np.float32), backend=backend)
    for dt in (np.int64, np.int32):
        xi = np.zeros((6000, w), dt)
        xi[3001, :] = 1
        xi[2, :] = 1
        check(col_args, xi, backend=backend)     # all equal but two rows: row 0 / row 2
        check(col_args, -xi, backend=backend)


@pytest.mark.parametrize("w", [1, 2, 3, 4])
def test_narrow_nan_and_inf(backend, w):
    x = data((7000, w), "float64")
    x[5, 0] = np.nan              # phase of row 5
    x[4, 0] = np.nan              # an earlier NaN in another lane: it wins
    x[6999, w - 1] = np.nan       # the very last row (a leftover row)
    x[100:, w // 2] = np.inf
    x[3000, w // 2] = -np.inf
    x[:, -1][:10] = -np.inf
    check(col_folds, x, backend=backend)
    check(col_args, x, backend=backend)
    check(col_args, x.astype(np.float32), backend=backend)
    for _, y in layouts((7000, w), "float64", seed=3):
        y[1234, 0] = np.nan
        y[77, w - 1] = np.nan
        check(col_folds, y, backend=backend)


@pytest.mark.parametrize("rows", [4096, 4097, 4111, 4127, 65536 + 3])
def test_narrow_row_counts(backend, rows):
    # chunks of rows / 16 rows: fewer rows than one step of m (width 1:
    # m = 8), a step's worth, a leftover row
    for dt in ("float64", "float32", "int32"):
        for w in (1, 2, 3):
            x = data((rows, w), dt, seed=rows)
            check(col_folds, x, backend=backend)
            check(col_args, x[::-1], backend=backend)
            check(col_args, np.ascontiguousarray(x[::-1]), backend=backend)


def test_kmeans_assignment_transposed(backend):
    # the transposed form of the k-means assignment: distances of 200000
    # points to 2 means as (n, 2), argmin over axis 0 is the nearest point
    # to each mean; over axis 1 the nearest mean of each point
    rng = np.random.default_rng(5)
    X = rng.standard_normal((200000, 2))
    check(lambda X: np.argmin(X, axis=0), X, backend=backend)
    check(lambda X: (np.argmin(X, axis=0), X.min(0), X.max(axis=0)), X, backend=backend)
