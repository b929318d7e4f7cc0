"""Row-wise kernels of models over the last axis (issue 19, bench_fusion's
softmax / layer norm / row std rows next to torch.compile): softmax, layer
normalization and row standard deviation each run as one row kernel and
one pass over memory (each row walked again in cache), counted by the
kernel_runs / bytes_read counters; narrow rows (at most 16 elements, the
short-axis path) one kernel and one pass as well (test_fusion_rowstats.py).

NumPy is the oracle over float32/float64, C, Fortran, strided and reversed
layouts, rows holding NaN and infinities, and a row of one repeated value
(variance 0).
"""
import numpy as np
import pytest

from fusion_counts import data, layouts, passes
from oracle import check


# bench_fusion's rows themselves, not copies of them
from bench_fusion import layer_norm, row_std, softmax  # noqa: E402

FNS = [softmax, layer_norm, row_std]


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(300, 1024), (97, 33), (40, 8)])
def test_rows(backend, fn, dt, shape):
    # float32 x - mean cancels near zero: the row mean summed in another
    # order moves such a value by ~1 ulp of the row's scale, not of itself
    atol = 1e-6 if dt == "float32" else None
    for x in layouts(shape, dt):
        check(fn, x, backend=backend, atol=atol)


@pytest.mark.parametrize("fn", FNS)
def test_rows_special_values(backend, fn):
    x = data((64, 100), "float64")
    x[3, 7] = np.nan
    x[5, :] = 2.5
    x[9, 0] = np.inf
    x[11, 50] = -np.inf
    check(fn, x, backend=backend)


@pytest.mark.parametrize("fn", FNS)
def test_rows_one_pass(fn):
    assert passes(fn, data((2048, 1024), "float64")) == (1, 1.0)
    assert passes(fn, data((2048, 1024), "float32")) == (1, 1.0)


def test_narrow_rows_one_pass():
    assert passes(row_std, data((50000, 8), "float64")) == (1, 1.0)
