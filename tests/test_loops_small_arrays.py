"""Small arrays updated whole inside captured loops (issue 17, session 25's
loops8): a name holding a 1-D array before the loop and given computed
arrays in it (`y = y0.copy()` then `y = y + h * k1` per step: RK4 and
Euler steps on small state vectors) is a computed array local whose first
value is that array (loop_types.c), so the loop runs as C instead of one
graph flush per iteration. Values, dtypes, identity and the arguments after
the call are NumPy's (loop_gen.check_calls); the counters show the C ran.
"""
import os
import sys

import numpy as np
import pytest

import numdyn
from numdyn import utils

from loop_gen import arr, check_calls


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from programs_loops import rk4_linear_system as rk4_linear  # noqa: E402  (y' = A y on a 4-vector)


def euler_lorenz(y0, h, steps, out):
    y = y0.copy()
    for i in range(steps):
        d = np.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]])
        y = y + h * d
        out[i] = y
    return y, out


def bump(y, n):
    # the argument itself until the first assignment: a store before it
    # writes the caller's array; zero iterations hand back that object
    for i in range(n):
        y[0] = y[0] + 1
        y = y * 2 + 1
    return y


def widen(y, n):
    # float64 values given to an int32 name: not this dtype, Python runs it
    for i in range(n):
        y = y * 2.5
    return y


def _runs():
    return utils.counters["loop_runs"], utils.counters["loop_fallbacks"]


def test_rk4_on_a_small_state_vector_runs_as_c():
    f = numdyn.compile(rk4_linear, options={"floor": False})
    A = arr(np.float64, (4, 4), lo=-0.1, hi=0.1)
    r0, f0 = _runs()
    check_calls(rk4_linear, (np.ones(4), A, 0.01, 50), (arr(np.float64, 4, seed=2), A, 0.1, 0),
                compiled=f)
    r1, f1 = _runs()
    assert r1 - r0 >= 3 and f1 == f0


def test_euler_steps_with_a_vector_built_from_elements():
    f = numdyn.compile(euler_lorenz, options={"floor": False})
    r0, f0 = _runs()
    check_calls(euler_lorenz, (np.ones(3), 0.001, 40, np.zeros((40, 3))),
                (np.array([1.0, -2.0, 20.0]), 0.002, 10, np.zeros((12, 3))), compiled=f)
    assert _runs()[0] - r0 >= 3 and _runs()[1] == f0


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_first_value_is_the_argument(dtype):
    f = numdyn.compile(bump, options={"floor": False})
    y = arr(dtype, 5)
    r0, _ = _runs()
    check_calls(bump, (y, 3), (y[::2].copy(), 1), compiled=f, warn=False)
    assert _runs()[0] - r0 >= 3
    a = arr(dtype, 4)
    assert f(a, 0) is a
    got, want = a.copy(), a.copy()
    r = f(got, 2)
    assert np.array_equal(r, bump(want, 2)) and r.dtype == want.dtype
    assert np.array_equal(got, want)    # the store before the first assignment
    assert r is not got
    s = arr(dtype, 9)
    check_calls(bump, (s[::3], 2), compiled=f, warn=False, repeat=False)   # a strided first value


def test_read_only_first_value_raises_as_numpy():
    f = numdyn.compile(bump, options={"floor": False})
    y = arr(np.float64, 4)
    y.flags.writeable = False
    with pytest.raises(ValueError) as want:
        bump(y, 2)
    with pytest.raises(ValueError) as got:
        f(y, 2)
    assert str(got.value) == str(want.value)


def test_another_dtype_leaves_the_loop_to_python():
    f = numdyn.compile(widen, options={"floor": False})
    y = arr(np.int32, 4)
    check_calls(widen, (y, 3), compiled=f)


def deriv(y, A):
    return A @ y


def rk4_by_helper(y0, A, h, steps):
    # the derivative a helper returning a 1-D array; its argument an array
    # expression computed once (Python's temporary) before the helper's body
    y = y0.copy()
    for i in range(steps):
        k1 = deriv(y, A)
        k2 = deriv(y + h / 2 * k1, A)
        k3 = deriv(y + h / 2 * k2, A)
        k4 = deriv(y + h * k3, A)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def norm2(v):
    s = np.dot(v, v)
    return np.sqrt(s)


def row_norms(x, scale, out):
    t = 0.0
    for i in range(x.shape[0]):
        out[i] = norm2(x[i] * scale)
        t += out[i]
    return t, out


def test_helpers_with_array_arguments_and_values():
    f = numdyn.compile(rk4_by_helper, options={"floor": False})
    A = arr(np.float64, (4, 4), lo=-0.1, hi=0.1)
    r0, f0 = _runs()
    check_calls(rk4_by_helper, (np.ones(4), A, 0.01, 30), (arr(np.float64, 4, seed=5), A, 0.05, 2), compiled=f)
    assert _runs()[0] - r0 >= 3 and _runs()[1] == f0
    g = numdyn.compile(row_norms, options={"floor": False})
    x = arr(np.float64, (6, 3))
    r0, f0 = _runs()
    check_calls(row_norms, (x, 2.0, np.zeros(6)), (x[:, ::2], -1.5, np.zeros(6)), compiled=g)
    assert _runs()[0] - r0 >= 3 and _runs()[1] == f0
