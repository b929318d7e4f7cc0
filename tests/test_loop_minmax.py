"""Loop capture of the builtins min() and max() with three or more
arguments (the dynamic-programming step `min(D[i-1, j], D[i, j-1],
D[i-1, j-1])`): Python compares left to right and keeps the first of
equal or unordered (NaN) values, which the fold min(min(a, b), c) does."""
import math

import numpy as np
import pytest

import numdyn
from test_loop_capture import captured, run_both, same


def dtw(a, b):
    n, m = len(a), len(b)
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = abs(a[i - 1] - b[j - 1])
            D[i, j] = c + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m], D


def mixed(a, k):
    s = 0
    best = 0
    for i in range(len(a) - 3):
        x = max(a[i], a[i + 1], a[i + 2], a[i + 3])      # NumPy scalars
        y = min(i, k, 7, i - 3)                           # Python ints: an int
        z = max(1.5, a[i], i)                             # mixed: the first largest
        best = max(best, x, y)
        s += y
    return best, s, z, type(z).__name__, type(x).__name__


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_dtw_min3(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(30) * 10).astype(dtype)
    b = (rng.standard_normal(27) * 10).astype(dtype)
    exp, got, _, _, cf = run_both(dtw, a, b)
    same(exp, got)
    captured(cf)


@pytest.mark.parametrize("vals", [
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 3.0, 3.0, 3.0, 3.0, 3.0], [1.0, np.nan, 0.0, 2.0, np.nan, 5.0],
    [np.nan, np.nan, 1.0, -1.0, 0.0, 9.0], [-0.0, 0.0, -0.0, 0.0, 1.0, 1.0]])
@pytest.mark.parametrize("k", [0, 4, -2])
def test_min_max_many_args(vals, k):
    a = np.array(vals)
    exp, got, _, _, cf = run_both(mixed, a, k)
    same(exp, got)
    # -0.0 vs 0.0: the first of equals is kept, so the sign is Python's
    assert math.copysign(1, exp[2]) == math.copysign(1, got[2])
    captured(cf)
