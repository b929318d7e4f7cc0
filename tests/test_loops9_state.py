"""Small state vectors rebound whole in captured loops, and the decision
between the C loop and the tracer (issue 17, session 26's loops9).

A name holding a 1-D array before the loop and given computed arrays in it
(`y = y + h * k`) is captured as C only where the tracer cannot fuse the
loop's passes into one kernel: an element read of the state, a product or
reduction, an array built of parts, a store, a truth value of an array.
`x = x * 1.5 + 0.25` and nothing else stays with the tracer, whose one
kernel makes one trip through memory where the C loop makes one a pass
(0.65x NumPy at 1e6 elements when it was captured). `x *= 2` writes the
caller's array (NumPy's in-place operation): never a new array. NumPy is
the oracle (values, dtypes, exceptions and the arguments after the call:
loop_gen.check_calls); the counters show which path ran.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

from loop_gen import arr, check_calls

NOFLOOR = {"floor": False}


def _c(name):
    return utils.counters[name]


def lorenz(y, h, steps, out):
    for i in range(steps):
        d = np.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 2.5 * y[2]])
        y = y + h * d
        out[i] = y
    return y


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_element_reads_of_the_state_run_as_c(dtype):
    f = numdyn.compile(lorenz, options=NOFLOOR)
    y0 = np.array([1.0, -2.0, 20.0], dtype=dtype)
    r0, f0 = _c("loop_runs"), _c("loop_fallbacks")
    check_calls(lorenz, (y0, 0.001, 30, np.zeros((30, 3), dtype=dtype)),
                (y0[::-1].copy(), 0.002, 0, np.zeros((2, 3), dtype=dtype)), compiled=f)
    assert _c("loop_runs") - r0 >= 3 and _c("loop_fallbacks") == f0


def test_index_error_at_numpys_iteration():
    # out has 7 rows: the 8th step's store raises, rows 0..6 stored and the
    # state as NumPy left it
    f = numdyn.compile(lorenz, options=NOFLOOR)
    r0 = _c("loop_runs")
    check_calls(lorenz, (np.ones(3), 0.001, 12, np.zeros((7, 3))), (np.ones(3), 0.001, 5, np.zeros((7, 3))),
                compiled=f)
    assert _c("loop_runs") - r0 >= 3


def pick(y, idx, n):
    for i in range(n):
        y = y * 3 - y[idx[i]]
    return y


def test_index_error_of_an_element_read_of_the_state():
    f = numdyn.compile(pick, options=NOFLOOR)
    idx = np.array([0, 3, -1, 2, 4, 1], dtype=np.int64)   # 4 is out of range at the 5th step
    r0 = _c("loop_runs")
    check_calls(pick, (arr(np.float64, 4), idx, 6), (arr(np.float64, 4, seed=3), idx, 4), compiled=f)
    assert _c("loop_runs") - r0 >= 3


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_state_wraps_as_numpy(dtype):
    # NumPy's integer arrays wrap; the element read is a NumPy scalar
    f = numdyn.compile(pick, options=NOFLOOR)
    info = np.iinfo(dtype)
    y = np.array([info.max - 3, 7, -5, info.min + 2], dtype=dtype)
    idx = np.array([1, 0, 3, 2, 1, 1, 0, 2], dtype=np.int64)
    r0 = _c("loop_runs")
    check_calls(pick, (y, idx, 8), (y[::-1].copy(), idx, 3), compiled=f, warn=False)
    assert _c("loop_runs") - r0 >= 3


def counted(y, n, c):
    # c a Python int that leaves int64 at the 40th step: the C loop hands its
    # state back to Python, which finishes the loop exactly
    for i in range(n):
        y = y + y[0] * 0.5
        c = c * 3 + 1
    return y, c


def test_python_int_overflow_deoptimizes():
    f = numdyn.compile(counted, options=NOFLOOR)
    d0, r0 = _c("loop_deopts"), _c("loop_runs")
    outs = check_calls(counted, (arr(np.float64, 3), 60, 1), (arr(np.float64, 3), 10, 1), compiled=f)
    assert outs[0].value[1] > 2 ** 63 and type(outs[0].value[1]) is int
    assert _c("loop_runs") - r0 >= 3 and _c("loop_deopts") - d0 >= 2


def poly(x, n):
    for _ in range(n):
        x = x * 1.5 + 0.25
    return x


def test_a_loop_the_tracer_fuses_stays_with_the_tracer():
    # one kernel for every pass: the tracer's (the region falls back, once
    # typed, before the tracer's lazy values are computed)
    f = numdyn.compile(poly, options=NOFLOOR)
    r0, f0 = _c("loop_runs"), _c("loop_fallbacks")
    check_calls(poly, (np.linspace(0, 1, 64), 10), (np.linspace(0, 1, 64)[::2], 3), compiled=f)
    assert _c("loop_runs") == r0 and _c("loop_fallbacks") - f0 >= 3
    info = f._loop_info()
    assert "the tracer fuses" in (info[0].get("last_fallback") or ""), info


def scaled(x, n, s):
    # a scalar from the state each pass (a reduction): the tracer makes a
    # kernel and a flush a pass, the C loop runs
    for _ in range(n):
        x = x / np.sqrt(np.dot(x, x)) * s + 0.5
    return x


def test_a_scalar_from_the_state_each_pass_runs_as_c():
    f = numdyn.compile(scaled, options=NOFLOOR)
    r0 = _c("loop_runs")
    check_calls(scaled, (arr(np.float64, 5), 20, 2.0), (arr(np.float64, 5), 0, 2.0), compiled=f)
    assert _c("loop_runs") - r0 >= 3


def grow(x, n):
    for i in range(n):
        x *= 1.5
        x = x + x[0]
    return x


def test_in_place_update_writes_the_callers_array():
    # x *= 1.5 is NumPy's in-place multiply of the array x holds (the
    # caller's, on the first pass): not captured as a new array
    f = numdyn.compile(grow, options=NOFLOOR)
    r0 = _c("loop_runs")
    check_calls(grow, (arr(np.float64, 4), 3), compiled=f)
    assert _c("loop_runs") == r0
    a = arr(np.float64, 4)
    b = a.copy()
    grow(b, 2)
    f(a, 2)
    assert np.array_equal(a, b) and not np.array_equal(a, arr(np.float64, 4))


def nbody(x, v, m, dt, steps):
    n = x.shape[0]
    for s in range(steps):
        a = np.zeros_like(m)
        for i in range(n):
            for j in range(n):
                if i != j:
                    d = x[j] - x[i]
                    a[i] += m[j] * d / (abs(d) ** 3 + 0.01)
        v = v + dt * a
        x = x + dt * v
    return x, v


def test_nbody_on_small_arrays():
    f = numdyn.compile(nbody, options=NOFLOOR)
    r0, f0 = _c("loop_runs"), _c("loop_fallbacks")
    check_calls(nbody, (arr(np.float64, 5, lo=-1, hi=1), arr(np.float64, 5, seed=1, lo=-1, hi=1),
                        arr(np.float64, 5, seed=2), 0.01, 25),
                (arr(np.float64, 3, lo=-1, hi=1), np.zeros(3), np.ones(3), 0.1, 2), compiled=f)
    assert _c("loop_runs") - r0 >= 3 and _c("loop_fallbacks") == f0
