"""The C of captured loops against numba's (issue 17), session 24. Each test
pins one property of the generated C (NUMDYN_LOOP_DEBUG) and checks the loop
against plain Python/NumPy where that property could go wrong: values, the
arrays after the call, the exception and the iteration it stops at. Few
distinct loops (each is a compiler run): one signature, several argument
sets."""
import re

import numpy as np

from loop_gen import arr, check_calls


def loop_c(fn, arg_sets, monkeypatch, capfd):
    """the C of fn's loops (NUMDYN_LOOP_DEBUG), after checked calls"""
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    check_calls(fn, *arg_sets, repeat=False)
    out = capfd.readouterr().err
    assert "nd_loop_main" in out, out[-2000:]
    return out[out.index("int nd_loop_main"):]


def window_minmax(x, w, rows, mx, mn):
    # a running max/min: an inner loop of w - 1 iterations per row whose
    # range checks are proved before the row loop
    for i in range(rows):
        lo = x[i]
        hi = lo
        for k in range(1, w):
            v = x[i + k]
            if v < lo:
                lo = v
            elif v > hi:
                hi = v
        mn[i] = lo
        mx[i] = hi
    return mx, mn


def test_outer_copy_with_proved_inner_loops(monkeypatch, capfd):
    # the row loop's first copy runs when every proof made before it held;
    # there the inner loop is its unchecked copy alone (no test at each
    # entry). Where a proof fails -- rows past the data (IndexError at the
    # first window reaching past it), rows past the outputs, an inner loop
    # of more than 2^16 iterations, an empty inner range -- the general copy
    # runs, with NumPy's values, exception and partly written outputs
    x = arr(np.float64, (40,), seed=3, lo=-2.0, hi=2.0)
    big = arr(np.float64, (65545,), seed=4, lo=-2.0, hi=2.0)
    out = lambda n: (np.zeros(n), np.zeros(n))  # noqa: E731
    sets = [
        (x, 5, 36, *out(36)),       # every proof holds
        (x, 5, 38, *out(38)),       # row 36 reads x[40]: IndexError there
        (x, 5, 36, *out(30)),       # mx[30]: IndexError after 30 rows
        (x, 1, 36, *out(36)),       # an empty inner loop
        (big, 65540, 3, *out(3)),   # 65539 iterations a row: the general copy
        (x, -3, 4, *out(4)),        # a negative range: empty
    ]
    c = loop_c(window_minmax, sets, monkeypatch, capfd)
    assert re.search(r"if \(__builtin_expect\(!!\(1 && hz\d+ && pf\d+\), 1\)\) \{", c), c
    # the unchecked inner loop twice (the first copy's, then the general
    # copy's), its entry test once (the general copy's)
    assert len(re.findall(r"nd_tick2 \+= \(uint32_t\)n\d+", c)) == 2, c
    assert len(re.findall(r"n\d+ <= 65536u, 1\)\) \{", c)) == 1, c


def carried_rows(a, f):
    # each row from the one before it: the loop reads what it stores, and a
    # float64 overflow (a NumPy float event) makes Python rerun the loop
    # from its start on the arrays as they were (the runner's copy of them)
    for i in range(1, a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i - 1, j] * f + a[i, j]
    return a


def test_float_event_rerun_restores_raw_copies():
    # the copies are raw bytes in a buffer the region keeps between calls:
    # a larger array after a smaller one (a new buffer), a smaller after a
    # larger (the kept one), Fortran order (one piece too), no event (the
    # C result stands); each rerun gives NumPy's values and warnings
    c = lambda r, k: np.arange(1.0, r * k + 1.0).reshape(r, k)  # noqa: E731
    check_calls(carried_rows, (c(3, 4), 2.0), (c(40, 3), 1e200), (c(2, 2), 1e308),
                (c(60, 5), 1e300), (c(4, 2), 3.0))
    check_calls(carried_rows, (np.asfortranarray(c(6, 5)), 1e300), (np.asfortranarray(c(3, 3)), 1e200),
                repeat=False)
