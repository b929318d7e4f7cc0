"""Reductions across the rows (x.sum(0), x.var(0), argmax(0), log-softmax
over axis 0; bench_fusion's column rows): a block wider than one register
tile walks each row's block in order with its accumulators in memory, a
block one tile wide walks the rows in registers (codegen_loops.c,
across_tiled). Both fold each output element's values in the same order:
NumPy is the oracle at the widths around the tile (8 float64 / 16 float32
lanes), over layouts, with NaN, +-inf and signed zeros in the columns."""
import numpy as np
import pytest

from fusion_counts import data, layouts
from oracle import check
from bench_fusion import colsum, colvar, log_softmax0, masked_softmax  # noqa: E402


def colmax2(x):
    return (x * 2).max(axis=0), (x * 2).argmax(axis=0)


def colmin_sum(x):
    return x.min(axis=0), np.abs(x).sum(axis=0), x.argmin(axis=0)


WIDTHS = [1, 7, 8, 9, 16, 17, 33, 600]


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("width", WIDTHS)
def test_column_reductions(dt, width):
    # float32 sums of 67 values of ~1 cancel near 0; over an F-ordered x
    # NumPy sums the contiguous columns pairwise, numdyn in row order:
    # within float32's error of the summands, not of the small result
    atol = 2e-5 if dt == "float32" else None
    for x in layouts((67, width), dt):
        for fn in (colsum, colmax2, colmin_sum):
            check(fn, x, atol=atol)
        check(colvar, x, rtol=1e-5 if dt == "float32" else 1e-10)


@pytest.mark.parametrize("width", [9, 40])
def test_columns_with_specials(width):
    x = data((50, width), "float64")
    x[3, :: 3] = np.nan
    x[5, 1:: 4] = np.inf
    x[7, 2:: 5] = -np.inf
    z = np.zeros((20, width))
    z[:, ::2] = -0.0
    for fn in (colsum, colmax2, colmin_sum):
        check(fn, x)
        check(fn, z, signed_zeros=True)


def test_log_softmax_over_rows_and_masked_softmax():
    x = data((300, 200), "float64")
    check(log_softmax0, x)
    m = np.random.default_rng(3).random(x.shape) < 0.5
    m[:, 0] = True
    check(masked_softmax, x, m)
