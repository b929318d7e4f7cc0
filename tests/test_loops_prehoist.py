"""Range checks of an inner loop's a[u + k] (u the enclosing for loop's
variable) proved once before the enclosing loop, for every value u takes,
where the inner loop's range is the same in each of its iterations
(codegen_loop.c pre_prove). The proof must hold only when every access is in
range; where it does not (a row past the end, a window reaching before 0,
an inner range that changes with u), the per-entry proof and then the
per-access checks raise IndexError at NumPy's iteration with the arrays as
NumPy left them."""
import numpy as np
import pytest

import numdyn
from numdyn import utils
from loop_gen import arr, check_calls


def windows(x, w, rows, out):
    # rows may run past len(x) - w + 1: the last windows read past the end
    for i in range(rows):
        top = x[i]
        for k in range(1, w):
            top = max(top, x[i + k])
        out[i] = top
    return out


def windows_back(x, w, lo, hi, out):
    # x[k - i] (k - u: least at u's largest value), u over range(lo, hi)
    for i in range(lo, hi):
        s = 0.0
        for k in range(w, w + 3):
            s += x[k - i]
        out[i - lo] = s
    return out


def windows_reversed(x, w, top, out):
    # both loops with negative steps; top past len(x) - w: IndexError in the first row
    for i in range(top, -1, -1):
        acc = 0.0
        for k in range(w - 1, -1, -1):
            acc = acc * 0.5 + x[i + k]
        out[i] = acc
    return out


def windows_guarded(x, w, out):
    # the inner loop runs only for rows whose window fits: no proof for
    # every row holds, each entry's proof does
    n = x.shape[0]
    for i in range(n):
        if i + w <= n:
            s = 0
            for k in range(w):
                s += x[i + k]
            out[i] = s
    return out


def windows_offset(x, w, off, out):
    # u + k + an offset argument the loops do not rebind
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(w):
            s += x[k + off] * x[i + k]
        out[i] = s
    return out


def windows_rebinding(x, w, out):
    # the inner range's bound changes inside the outer loop: no proof before it
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(w):
            s += x[i + k]
        out[i] = s
        w = w - 1 if w > 1 else w
    return out, w


@pytest.mark.parametrize("w,rows", [(1, 10), (3, 8), (3, 9), (4, 10), (10, 1), (11, 1)])
def test_window_rows(w, rows):
    # rows past len(x) - w + 1: IndexError at the first window past the end
    check_calls(windows, (arr("float64", 10, seed=1), w, rows, np.zeros(10)),
                (arr("float64", 10, seed=1), np.int64(w), rows, np.zeros(10)))


@pytest.mark.parametrize("w,lo,hi", [(5, 0, 3), (5, 0, 6), (5, 2, 7), (8, 0, 3), (9, 0, 3), (0, 1, 3), (3, 4, 7)])
def test_window_subtracting_the_outer_index(w, lo, hi):
    # k - i below 0 wraps as in Python (then IndexError past -len)
    check_calls(windows_back, (arr("float64", 10, seed=2), w, lo, hi, np.zeros(10)))


@pytest.mark.parametrize("w,top", [(1, 9), (4, 6), (4, 7), (10, 0), (10, 1)])
def test_negative_steps(w, top):
    check_calls(windows_reversed, (arr("float64", 10, seed=3), w, top, np.zeros(10)))


@pytest.mark.parametrize("w", [1, 3, 10, 11])
def test_inner_loop_under_a_condition(w):
    check_calls(windows_guarded, (arr("int64", 10, seed=4), w, np.zeros(10, dtype=np.int64)))


@pytest.mark.parametrize("off", [0, 4, 5, -10, -11, 2**62, np.int32(3)])
def test_offset_argument_inside_the_window(off):
    check_calls(windows_offset, (arr("float64", 10, seed=5), 3, off, np.zeros(6)))


def test_inner_bound_rebound_by_the_outer_loop():
    check_calls(windows_rebinding, (arr("float64", 10, seed=6), 3, np.zeros(8)),
                (arr("float64", 10, seed=6), 5, np.zeros(8)))


def test_the_proof_is_made_before_the_outer_loop(monkeypatch, capfd):
    # the C proves x[i + k] for every i before the loop over i, and the
    # inner loop proves its own range only where that proof failed
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    f = numdyn.compile(windows, options={"floor": False})
    x = arr("float64", 50, seed=7)
    runs = utils.counters["loop_runs"]
    np.testing.assert_array_equal(f(x, 5, 46, np.zeros(50)), windows(x, 5, 46, np.zeros(50)))
    assert utils.counters["loop_runs"] == runs + 1
    err = capfd.readouterr().err
    assert "__builtin_add_overflow(mx_, omx_, &hi_)" in err, err[-3000:]
    assert "if (!pz" in err, err[-3000:]
