"""Ctrl-C stops a captured loop nest (issue 17; issue 12's Ctrl-C rule): the
C loop polls for signals every 2^16 iterations of its innermost loops -- one
at a time, or, in the copy of an innermost loop whose range checks were
proved, counted in bulk when it starts -- so a long nest of short innermost
loops raises KeyboardInterrupt within a fraction of a second."""
import signal
import time

import numpy as np
import pytest

import numdyn


def nest(x, outer, inner):
    s = 0.0
    for t in range(outer):
        for k in range(inner):
            s += x[k] * 0.5
    return s


def window(x, outer, w):
    acc = 0.0
    for t in range(outer):
        for k in range(w):
            acc += x[t % 7 + k]
    return acc


@pytest.mark.parametrize("fn,inner", [(nest, 16), (nest, 1000), (window, 5)])
def test_ctrl_c_stops_a_nest_of_short_innermost_loops(monkeypatch, fn, inner):
    monkeypatch.setattr(numdyn.config, "compile_budget", float("inf"))   # compiled on the first call
    f = numdyn.compile(fn, options={"floor": False})
    x = np.arange(1100.0)
    assert f(x, 3, inner) == fn(x, 3, inner)
    runs = numdyn.utils.counters["loop_runs"]
    outer = 10**10 // inner     # a minute of work or more if nothing stops it
    # SIGALRM from a timer, raising KeyboardInterrupt as Ctrl-C does: the
    # kernel delivers it while the C loop holds the GIL (a thread could not
    # run to send a signal until the call ended)
    old = signal.signal(signal.SIGALRM, signal.default_int_handler)
    try:
        t0 = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            f(x, outer, inner)
        took = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert numdyn.utils.counters["loop_runs"] == runs + 1   # the C loop ran (and was stopped)
    assert took < 2.3, took
