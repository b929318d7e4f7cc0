"""User helper functions called inside captured loops (issue 17, session 25's
loops8): `def f(x): return x*x + 1` called per element is inlined into the
loop's C (loop_parse.c, LK_LET/LK_LETVAR) instead of leaving the loop to the
tracer. Each test checks values, types, arrays and exceptions against plain
Python/NumPy (loop_gen.check_calls) and that the loop ran compiled
(numdyn.utils.counters, explain). Few distinct loops: each is a compiler run.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

from loop_gen import arr, check_calls


def sq1(x):
    return x * x + 1


def clamp(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


def poly(x, c=3.0):
    """a docstring, a local rebound, a default argument"""
    t = x * x
    t += c
    return t * x


def around(a, i):
    # an array argument indexed in the helper, a helper calling a helper
    return a[i] * 2 + sq1(a[i - 1])


def first(x, y):
    # y is evaluated (and may raise) although the helper never reads it
    return x


def halve(n):
    # a Python int local of the helper: NumPy's rules per element
    k = n // 2
    if n % 2:
        k = 3 * n + 1
    return k


def rec(x):
    return rec(x - 1) if x > 0 else 0


def looping(x):
    s = 0
    for k in range(3):
        s += x
    return s


def maybe_unbound(x):
    if x > 0:
        y = x
    return y


def mixed(a, lo, hi):
    s = 0.0
    for i in range(a.shape[0]):
        s += sq1(a[i]) + clamp(a[i] - 0.5, lo, hi) + poly(a[i]) + around(a, i)
    return s


def _runs():
    return utils.counters["loop_runs"], utils.counters["loop_fallbacks"]


def _captured(f, *args):
    text = str(numdyn.explain(f, *args))
    return "captured (compiled to a C loop)" in text and "last run by Python" not in text, text


def test_helpers_inlined_values_and_counters():
    f = numdyn.compile(mixed, options={"floor": False})
    a = arr(np.float64, 40, lo=-1.0, hi=2.0)
    b = arr(np.float64, 7, seed=3, lo=-1.0, hi=2.0)
    lo, hi = np.float64(0.0), np.float64(1.0)
    r0, f0 = _runs()
    check_calls(mixed, (a, lo, hi), (b, np.float64(-0.5), np.float64(0.25)), compiled=f)
    r1, f1 = _runs()
    assert r1 - r0 >= 3 and f1 == f0    # the C loop ran every call
    ok, text = _captured(f, a, lo, hi)
    assert ok, text


def collatz_steps(x, out):
    # a while loop whose test and body call a helper, one in the second
    # operand of `and` (evaluated only when the first is true)
    for i in range(x.shape[0]):
        n = x[i]
        c = 0
        while n != 1 and halve(n) >= 1:
            n = halve(n)
            c += 1
        out[i] = c
    return out


def test_helper_in_while_test_and_short_circuit():
    f = numdyn.compile(collatz_steps, options={"floor": False})
    x = np.array([1, 2, 3, 7, 27, 97], dtype=np.int64)
    x32 = np.array([5, 6, 9], dtype=np.int32)
    r0, _ = _runs()
    check_calls(collatz_steps, (x, np.zeros(6, np.int64)), (x32, np.zeros(3, np.int32)), compiled=f)
    assert _runs()[0] - r0 >= 3


def pick_first(a, idx):
    s = 0.0
    for i in range(idx.shape[0]):
        s += first(a[i], a[idx[i]])
    return s


def test_helper_arguments_evaluated_in_order_and_raise():
    # the unused argument is still evaluated: its IndexError is NumPy's,
    # at the same iteration, with s as it was
    f = numdyn.compile(pick_first, options={"floor": False})
    a = arr(np.float64, 6)
    good = np.array([0, 5, -6, 2], dtype=np.int64)
    bad = np.array([0, 1, 6, 2], dtype=np.int64)
    r0, _ = _runs()
    check_calls(pick_first, (a, good), (a, bad), compiled=f)
    assert _runs()[0] - r0 >= 2
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        f(a, bad)


def py_div(x, d):
    return x / d


def div_loop(n, d):
    s = 0.0
    for i in range(n):
        s += py_div(float(i), d - i)
    return s


def test_helper_python_float_division_by_zero():
    f = numdyn.compile(div_loop, options={"floor": False})
    check_calls(div_loop, (5, 9), (5, 3), compiled=f)
    with pytest.raises(ZeroDivisionError):
        f(5, 3)


def square(x):
    return x * x


def pow_loop(n):
    # a Python int past int64: the loop deoptimizes, Python finishes it
    x = 3
    for i in range(n):
        x = square(x)
    return x


def test_helper_python_int_leaving_int64_is_exact():
    f = numdyn.compile(pow_loop, options={"floor": False})
    check_calls(pow_loop, (2,), (7,), compiled=f)
    assert f(7) == 3 ** 128


def wrap_i8(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = sq1(a[i])
    return out


def test_helper_numpy_integer_wraps():
    f = numdyn.compile(wrap_i8, options={"floor": False})
    a = np.array([1, 11, 12, 100, -128], dtype=np.int8)
    check_calls(wrap_i8, (a,), (a.astype(np.int16),), compiled=f, warn=False)


def calls_rec(x):
    s = 0
    for i in range(x.shape[0]):
        s += rec(x[i])
    return s


def calls_looping(x):
    s = 0
    for i in range(x.shape[0]):
        s += looping(x[i])
    return s


def calls_maybe_unbound(x):
    s = 0
    for i in range(x.shape[0]):
        s += maybe_unbound(x[i])
    return s


@pytest.mark.parametrize("fn,helper", [(calls_rec, "rec"), (calls_looping, "looping"),
                                       (calls_maybe_unbound, "maybe_unbound")],
                         ids=["recursive", "loop", "unbound"])
def test_helpers_not_inlined_leave_the_loop_to_python(fn, helper):
    # refused helpers name themselves and the call's line; the answers
    # are Python's
    g = numdyn.compile(fn, options={"floor": False})
    x = np.array([1, 2, 3], dtype=np.int64)
    check_calls(fn, (x,), compiled=g)
    text = str(numdyn.explain(g, x))
    assert "captured (compiled" not in text.split("Guards")[0], text
    assert "a call of " + helper + "() at line" in text, text


def rebinding(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += sq1(a[i])
    return s


def test_helper_rebound_runs_the_new_function():
    global sq1
    f = numdyn.compile(rebinding, options={"floor": False})
    a = arr(np.float64, 5)
    check_calls(rebinding, (a,), compiled=f)
    old = sq1
    try:
        sq1 = lambda x: x - 1   # noqa: E731
        r0 = _runs()[0]
        check_calls(rebinding, (a,), compiled=f)
        assert _runs()[0] == r0     # Python ran the loop: not the inlined body
        sq1 = old
        r0 = _runs()[0]
        check_calls(rebinding, (a,), compiled=f)
        assert _runs()[0] > r0
    finally:
        sq1 = old
