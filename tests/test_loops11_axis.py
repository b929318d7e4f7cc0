"""New axes and reductions along an axis inside captured loops (issue 17,
Viterbi of bench_programs: `scores = delta[:, None] + log_A`,
`psi[t] = np.argmax(scores, axis=0)`, `delta = np.max(scores, axis=0) + ...`).
`x[:, None]` / `x[None, :]` of a 1-D array broadcast along the new axis in 2-D
expressions; `np.max/min/argmax/argmin(M, axis=k)` (and the methods) of a 2-D
value are 1-D values with NumPy's rules: the first of equal extremes, NaN
wins (the first NaN's index for argmax/argmin), an empty reduced axis is
NumPy's ValueError. The oracle is plain Python/NumPy."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls
from programs_real import viterbi  # bench/programs_real.py, the benchmark itself


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("S,T", [(4, 30), (32, 200), (1, 5)])
def test_viterbi(dtype, S, T):
    rng = np.random.default_rng(S)
    logA = np.log(rng.random((S, S))).astype(dtype)
    logB = np.log(rng.random((S, 5))).astype(dtype)
    logpi = np.log(rng.random(S)).astype(dtype)
    obs = rng.integers(0, 5, T)
    check_calls(viterbi, (logA, logB, logpi, obs), rtol=0, atol=0)
    cf = numdyn.compile(viterbi)
    cf(logA, logB, logpi, obs)
    ran_as_c(cf)


def along(M, out, n):
    # every axis spelling, the functions and the methods
    for i in range(n):
        a = np.max(M, axis=0) + i
        b = M.min(axis=1)
        out[0, :M.shape[1]] = np.argmax(M, axis=0)
        out[1, :M.shape[0]] = M.argmin(axis=-1)
        c = np.argmin(M, axis=-2)
        d = M.max(axis=-1)
    return a, b, c, d, out


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "int8", "uint8", "uint16", "bool"])
def test_reductions_along_axes(dtype):
    # small values: many ties (the first of equal extremes)
    M = arr(dtype, (4, 6), seed=1, lo=0, hi=3) if dtype != "bool" else arr(dtype, (4, 6), seed=1)
    check_calls(along, (M, np.zeros((2, 6), dtype=np.int64), 2), (M[:1], np.zeros((2, 6), dtype=np.int64), 1))
    cf = numdyn.compile(along)
    cf(M, np.zeros((2, 6), dtype=np.int64), 2)
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nan_rules(dtype):
    M = arr(dtype, (5, 4), seed=2)
    M[2, 1] = np.nan
    M[4, 1] = np.nan
    M[0, 3] = np.nan
    M[3, 0] = np.inf
    M[1, 2] = -np.inf
    check_calls(along, (M, np.zeros((2, 5), dtype=np.int64), 2))
    cf = numdyn.compile(along)
    cf(M, np.zeros((2, 5), dtype=np.int64), 2)
    ran_as_c(cf)


def test_empty_axes():
    # a reduced axis of length 0: NumPy's ValueError; a kept one: empty results
    check_calls(along, (np.zeros((0, 3)), np.zeros((2, 3), dtype=np.int64), 1))
    check_calls(along, (np.zeros((3, 0)), np.zeros((2, 0), dtype=np.int64), 1))


def new_axes(d, e, M, n):
    t = 0.0
    for i in range(n):
        C = d[:, None] + M          # (n,) as a column of (n, m)
        R = M * e[None, :] - i      # (m,) as a row
        O = d[:, None] - e[None, :]  # both: (n, m)
        K = d[:, None] * 2.0        # alone: (n, 1)
        M[:, :] = M * 0.5 + d[:, None]
        t += np.sum(C) + R[-1, 0] + O[0, -1] + K[-1, 0]
    return t, C, R, O, K, M


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16"])
def test_new_axes(dtype):
    d, e, M = arr(dtype, 3, seed=3), arr(dtype, 4, seed=4), arr("float64", (3, 4), seed=5)
    check_calls(new_axes, (d, e, M, 3), (d[:2], e[:1], M[:2, :1], 2))
    cf = numdyn.compile(new_axes)
    cf(d, e, M.copy(), 3)
    ran_as_c(cf)


def test_new_axis_lengths_numpy_broadcasts_or_refuses():
    M = arr("float64", (3, 4), seed=6)
    # d of length 1 broadcasts in NumPy; length 2 is NumPy's ValueError
    check_calls(new_axes, (arr("float64", 1), arr("float64", 4), M, 2))
    check_calls(new_axes, (arr("float64", 2), arr("float64", 4), M, 2))


def two_d_new_axis(M, n):
    for i in range(n):
        C = M[:, None] + 1.0      # 3-D in NumPy: Python runs the loop
    return C


def test_new_axis_of_2d_runs_in_python():
    M = arr("float64", (2, 3), seed=7)
    check_calls(two_d_new_axis, (M, 2))
    cf = numdyn.compile(two_d_new_axis)
    cf(M, 2)
    info = cf._loop_info()
    assert info and (info[0].get("last_fallback") or info[0].get("reason")), info


def row_overlap(A, n):
    # r views A's row 1; the store into A reads it broadcast: NumPy reads
    # the row as it was before the store (its overlap copy)
    for i in range(n):
        r = A[1]
        A[:, :] += r[None, :]
        c = A[:, 0]
        A[:, :] -= c[:, None] * 0.5
    return A


def test_broadcast_operand_overlapping_the_store():
    A = arr("float64", (4, 3), seed=8)
    check_calls(row_overlap, (A, 3))
    cf = numdyn.compile(row_overlap)
    cf(A.copy(), 3)
    ran_as_c(cf)
