"""A name given `max(a, b)`, `min(a, b)` or `x if c else y` whose operands
have different types takes the operand Python hands back, with its own type
(issue 17): seam carving's backtrack `lo = max(j - 1, 0)` of an int64 `j` is
an int64 where `j >= 1` and the Python int 0 where `j == 0`. Such a loop had
no type for the name and ran in Python, one flush per row. The oracle is
plain Python/NumPy: values, result types (a Python int vs np.int64 decides
later arithmetic: NEP 50), arguments afterwards, exceptions."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def backtrack(M, j0):
    n, w = M.shape
    seam = np.zeros(n, dtype=np.int64)
    seam[n - 1] = j0
    for i in range(n - 2, -1, -1):
        j = seam[i + 1]
        lo = max(j - 1, 0)
        seam[i] = lo + np.argmin(M[i, lo:j + 2])
    return seam, lo, type(lo).__name__


def backtrack_min(M, j0):
    seam = np.zeros(M.shape[0], dtype=j0.dtype)
    seam[-1] = j0
    i = M.shape[0] - 1
    while i > 0:                     # a while loop, the seam read twice
        i -= 1
        hi = min(seam[i + 1] + 2, M.shape[1])   # a Python int where j + 2 > w
        lo = max(0, seam[i + 1] - 1)             # the Python int first
        seam[i] = lo + np.argmin(M[i, lo:hi])
    return seam, hi, lo


def clipped(x, lo, hi):
    s = 0
    t = 0.0
    for i in range(x.shape[0]):
        v = min(max(x[i], lo), hi)   # nested: each level keeps its operand
        s = s + v                     # a Python int plus int64 or int
        u = x[i] if x[i] > 0 else 0.5
        t = t + u
    return s, type(s).__name__, v, type(v).__name__, t, type(t).__name__


def three(x):
    acc = 0
    for i in range(x.shape[0]):
        z = max(1, x[i], i - 3)      # a Python int, the element, a Python int
        acc += z
    return acc, z, type(z).__name__


@pytest.mark.parametrize("dtype", ["float64", "int32"])
@pytest.mark.parametrize("j0", [0, 1, 5, 9])
def test_seam_backtrack(dtype, j0):
    M = arr(dtype, (14, 10), seed=3)
    outs = check_calls(backtrack, (M, j0), (M[:, :3], min(j0, 2)))
    assert outs[0].value[2] in ("int", "int64")
    cf = numdyn.compile(backtrack)
    cf(M.copy(), j0)
    ran_as_c(cf)


def test_seam_backtrack_both_types_seen():
    # the seam walks into column 0 (lo a Python int) and away from it
    M = np.ones((12, 6))
    M[:6, 0] = 0.0
    M[6:, 3] = 0.0
    M2 = np.ones((12, 6))
    M2[:, 3] = 0.0
    outs = check_calls(backtrack, (M, 3), (M2, 3))
    assert outs[0].value[2] == "int" and outs[1].value[2] == "int64"
    cf = numdyn.compile(backtrack)
    cf(M, 0)
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", ["int64", "int16", "uint8"])
def test_seam_backtrack_min_max(dtype):
    M = arr("float64", (9, 5), seed=7)
    for j0 in (0, 2, 4):
        check_calls(backtrack_min, (M, np.dtype(dtype).type(j0)))
    cf = numdyn.compile(backtrack_min)
    cf(M, np.dtype(dtype).type(4))
    ran_as_c(cf)


def test_seam_backtrack_index_error():
    # j0 past the row: the slice is empty and np.argmin raises ValueError at
    # the first row, seam's last element already written
    M = arr("float64", (6, 4), seed=1)
    check_calls(backtrack, (M, 7), (M, -9))


@pytest.mark.parametrize("dtype", ["int64", "int8", "float64", "float32"])
@pytest.mark.parametrize("lo,hi", [(0, 5), (-3, 2), (0.5, 3.5), (2, np.int64(4))])
def test_clipped_nested(dtype, lo, hi):
    x = arr(dtype, 17, seed=11)
    check_calls(clipped, (x, lo, hi))
    cf = numdyn.compile(clipped)
    cf(x, lo, hi)
    ran_as_c(cf)


def test_clipped_nan():
    x = np.array([1.0, np.nan, -2.0, 7.0, np.nan])
    check_calls(clipped, (x, 0, 5), (x, 0.0, np.nan))


@pytest.mark.parametrize("dtype", ["int64", "float64", "uint16"])
def test_three_args(dtype):
    x = arr(dtype, 11, seed=2)
    check_calls(three, (x,))
    cf = numdyn.compile(three)
    cf(x)
    ran_as_c(cf)


def too_many(x):
    z = 0
    for i in range(x.shape[0]):
        z = max(0, x[i], 1, x[i], 2, x[i], 3)   # six splits: runs in Python
    return z, type(z).__name__


def test_too_many_splits_runs_in_python():
    x = arr("int64", 5, seed=4)
    check_calls(too_many, (x,))
