"""`if E < x: x = E` -- the running minimum of dynamic programming (edit
distance's `if D[i, j - 1] + 1 < best: best = D[i, j - 1] + 1`) -- reuses
the condition's value of E as a select, which the C compiler makes a
conditional move (issue 17, "at least as fast as numba"). Python evaluates E
twice: where the first evaluation warned (a NumPy scalar overflow), the
second runs as written and warns again. The oracle is plain Python/NumPy:
values, dtypes, arguments afterwards, exceptions, and the warnings' count."""
import re
import warnings

import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), dtype=a.dtype)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = D[i - 1, j] + 1
            if D[i, j - 1] + 1 < best:
                best = D[i, j - 1] + 1
            if best > D[i - 1, j - 1] + cost:      # E on the right
                best = D[i - 1, j - 1] + cost
            D[i, j] = best
    return D[n, m], D


def pair_min(x, start):
    # best: a Python value at first, then x's scalar type (several types)
    best = start
    for i in range(x.shape[0] - 1):
        if x[i] * 2 - x[i + 1] <= best:
            best = x[i] * 2 - x[i + 1]
    return best


def test_edit_distance(monkeypatch, capfd):
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    a = arr("int64", 9, seed=1, lo=0, hi=3)
    b = arr("int64", 11, seed=2, lo=0, hi=3)
    check_calls(edit_distance, (a, b), (b[:4], a[:7]), (a[:0], b))
    err = capfd.readouterr().err
    assert re.search(r"v\d+_\d+ = c\d+ \? t\d+ : v\d+_\d+;", err), err[-3000:]


@pytest.mark.parametrize("dtype,start", [("float64", np.inf), ("int8", 100)])
def test_operand_of_several_types_and_nan(dtype, start):
    x = arr(dtype, 12, seed=5)
    if dtype.startswith("float"):
        x[3] = np.nan
    check_calls(pair_min, (x, start))


def overflowing(a):
    best = a[0]
    for i in range(a.shape[0]):
        if a[i] + 1 < best:          # a[i] + 1 wraps (and warns) at int64's top
            best = a[i] + 1
    return best


def warned(fn, args, action):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        try:
            r = fn(*args)
        except RuntimeWarning as e:
            return "raised " + str(e), 0
    return r, len(w)


@pytest.mark.parametrize("action", ["always", "error"])
def test_second_evaluation_warns_again(action):
    a = np.array([5, 2**63 - 1, 3, 2**63 - 1, 1], dtype=np.int64)
    f = numdyn.compile(overflowing)
    for _ in range(2):
        want, got = warned(overflowing, (a.copy(),), action), warned(f, (a.copy(),), action)
        assert got == want
    # i = 1: the wrapped value is the smallest, taken: warned twice; i = 3: once
    assert action == "error" or want[1] == 3
