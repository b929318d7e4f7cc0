"""Range checks of a[k + u] proved once before the loop over k, u a local the
loop does not rebind (the outer index of a window, an offset argument):
the proof must hold exactly when every access is in range, and when it does
not the per-access checks raise IndexError at NumPy's iteration, with the
arrays as NumPy left them, and negative indices wrap as in Python."""
import numpy as np
import pytest

import numdyn
from numdyn import utils
from loop_gen import arr, check_calls


def window_max(x, w):
    n = x.shape[0]
    out = np.zeros(n - w + 1)
    for i in range(n - w + 1):
        hi = x[i]
        for k in range(1, w):
            v = x[i + k]
            if v > hi:
                hi = v
        out[i] = hi
    return out


def shifted_copy(x, y, off, n):
    # y[k] = x[k + off]: off a Python int (or NumPy integer) argument
    for k in range(n):
        y[k] = x[k + off] * 2
    return y


def shifted_back(x, y, off, n):
    for k in range(n):
        y[k] = x[k - off] + 1
    return y


def offset_first(x, y, off, n):
    for k in range(n):
        y[k] = x[off + k]
    return y


def rebinds_offset(x, y, off, n):
    # off changes inside the loop: no proof may be made from its entry value
    for k in range(n):
        y[k] = x[k + off]
        off = off + 1
    return y, off


def columns_2d(M, j0, n):
    s = 0.0
    for i in range(M.shape[0]):
        for j in range(n):
            s += M[i, j + j0]
            M[i, j0 + j] = s
    return s, M


@pytest.mark.parametrize("w", [1, 3, 9])
def test_window_inner_loop(w):
    check_calls(window_max, (arr("float64", 40, seed=1), w), (arr("float64", 7, seed=2), w))


@pytest.mark.parametrize("fn", [shifted_copy, shifted_back, offset_first])
@pytest.mark.parametrize("off,n", [(0, 10), (3, 7), (3, 8), (-3, 10), (-13, 5), (-10, 10), (12, 1),
                                   (2**62, 3), (-(2**62), 3), (np.int64(2), 8), (np.int32(-2), 6)])
def test_offset_argument(fn, off, n):
    # in range, one past the end (IndexError at the last iteration), negative
    # indices (Python's wrap, then IndexError), huge offsets
    check_calls(fn, (arr("int64", 10, seed=3), np.zeros(12, dtype=np.int64), off, n))


def test_offset_rebound_in_the_loop():
    check_calls(rebinds_offset, (arr("float64", 10), np.zeros(10), 0, 10),
                (arr("float64", 10), np.zeros(10), 2, 10), (arr("float64", 10), np.zeros(10), -4, 10))


@pytest.mark.parametrize("j0,n", [(0, 5), (2, 3), (2, 4), (-5, 5), (-6, 5)])
def test_second_axis_offsets(j0, n):
    check_calls(columns_2d, (arr("float64", (4, 5)), j0, n))


def test_the_window_loop_gets_its_proof(monkeypatch, capfd):
    # the generated C proves x[i + k] in range once per row (NUMDYN_LOOP_DEBUG
    # prints it), and runs as C
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    f = numdyn.compile(window_max, options={"floor": False})
    x = arr("float64", 50)
    runs = utils.counters["loop_runs"]
    np.testing.assert_array_equal(f(x, 5), window_max(x, 5))
    assert utils.counters["loop_runs"] == runs + 1
    err = capfd.readouterr().err
    assert "__builtin_add_overflow(mn_, v" in err, err[-3000:]
