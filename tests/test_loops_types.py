"""Loop capture, issue 17: locals whose type changes (a Python float at
first, a float64 once an element is added: `s = 0.0; s += a[i]`). The
compiled loop keeps one C local per C type and shares the code of the type
combinations that compute alike; these programs check that the rare paths
of such shared code (overflow, NaN from finite values, errors under
np.errstate, stores of either type) are still Python's and NumPy's. Plain
Python/NumPy is the oracle (values, types, warnings, exceptions).
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def captured(fn, *args):
    cf = numdyn.compile(fn)
    with np.errstate(all="ignore"):
        cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    info = cf._loop_info()
    assert info and all(i["captured"] for i in info), info


def float_then_f8(a, s0):
    s = s0
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


@pytest.mark.parametrize("errs", ["warn", "raise", "ignore"])
def test_overflow_in_shared_arm_with_python_float_operand(errs):
    # the first addition has a Python float operand, the later ones a float64
    big = np.array([1e308, 1e308, -np.inf, 2.0])
    with np.errstate(all=errs):
        check_calls(float_then_f8, (big, 1e308), (big, 0.0), (np.array([1.0, 2.0]), 0.5))
    captured(float_then_f8, big, 0.0)


def biquad(x, b0, b1, b2, a1, a2):
    n = x.shape[0]
    y = np.zeros(n)
    x1 = x2 = y1 = y2 = 0.0
    for i in range(n):
        yi = b0 * x[i] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        y[i] = yi
        x2 = x1
        x1 = x[i]
        y2 = y1
        y1 = yi
    return y, x1, x2, y1, y2


@pytest.mark.parametrize("case", ["plain", "overflow", "nan", "short"])
def test_four_locals_changing_type(case):
    x = np.random.default_rng(3).standard_normal(40)
    if case == "overflow":
        x[5] = 1e308
    elif case == "nan":
        x[7] = np.nan
        x[9] = np.inf
    elif case == "short":
        x = x[:1]
    check_calls(biquad, (x, 0.2, 0.4, 0.2, -0.3, 0.19), (x, 1e308, 2.0, 1.0, 0.5, 0.5))
    captured(biquad, x, 0.2, 0.4, 0.2, -0.3, 0.19)


def store_either(out, a, flags):
    acc = 0.0
    k = 0
    b = False
    for i in range(a.shape[0]):
        out[i] = acc          # a Python float first, a float64 later
        flags[i] = b          # a Python bool first, a NumPy bool later
        acc = acc + a[i]
        k = k + a[i] if i % 2 else k
        b = a[i] > 1.0
    return acc, k, b


def test_stores_of_a_local_of_either_type():
    a = np.array([0.5, 1.5, 2.5, -1.0, 3.0])
    for fdt in ("float64", "float32"):
        for bdt in ("bool", "uint8", "int64"):
            out, flags = np.zeros(5, dtype=fdt), np.zeros(5, dtype=bdt)
            check_calls(store_either, (out, a, flags))
    captured(store_either, np.zeros(5), a, np.zeros(5, dtype=bool))


def int_then_i8(a, s0):
    s = s0
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


@pytest.mark.parametrize("errs", ["warn", "raise"])
def test_int64_overflow_after_python_int(errs):
    a = np.array([2**62, 2**62, 5], dtype=np.int64)
    with np.errstate(all=errs):
        check_calls(int_then_i8, (a, 0), (a, 2**62), (a[:1], 1))
    captured(int_then_i8, a, 0)
