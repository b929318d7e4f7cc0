"""A statement that reads a local of several possible types is emitted once
per combination of them under a test of the tags; where every combination
gives the same C (a Python float, then a float64, in one C double) and the
local is certainly bound there, the test has one outcome and is not emitted
(Horner's `acc = 0.0` then `acc = acc * x + c[k]` in an inner loop; issue
17). The oracle is plain Python/NumPy, the unbound cases included."""
import re

import numpy as np
import pytest

from loop_gen import arr, check_calls


def horner(coefs, x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        xi = x[i]
        acc = 0.0
        for k in range(coefs.shape[0]):
            acc = acc * xi + coefs[k]
        y[i] = acc
    return y


def maybe_bound(x, flag):
    if flag:
        acc = 0.0
    for i in range(x.shape[0]):
        acc = acc * 0.5 + x[i]
    return acc


def bound_in_a_branch(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        s = s + t * 2
    return s


def test_horner(monkeypatch, capfd):
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    d = "float64"
    check_calls(horner, (arr(d, 5, seed=1), arr(d, 7, seed=2)), (arr(d, 0, seed=1), arr(d, 3, seed=2)))
    err = capfd.readouterr().err
    # the inner loop's statement, without a test of acc's tag
    inner = err[err.index("#pragma GCC unroll 4"):]
    inner = inner[:inner.index("} else {")]
    assert "_t == 13" not in inner and re.search(r"v\d+_2 = t\d+; v\d+_t = 13;", inner), inner


@pytest.mark.parametrize("flag", [True, False])
def test_local_unbound_at_entry(flag):
    check_calls(maybe_bound, (arr("float64", 6, seed=3), flag))


def test_local_bound_in_a_branch():
    x = arr("float64", 8, seed=4)
    x[0] = -1.0
    check_calls(bound_in_a_branch, (x,), (np.abs(x) + 1,))
