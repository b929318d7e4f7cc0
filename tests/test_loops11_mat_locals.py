"""Names given computed 2-D arrays inside captured loops (issue 17: Kalman's
`P = F @ P @ F.T + Q`, Viterbi's `scores = delta[:, None] + log_A` need a
2-D value a name holds). Elementwise work on whole 2-D arrays and 2-D parts
given to a name is computed into a C-ordered buffer the name owns (NumPy's
layout of a new array), read back by element, part or whole, and handed
back as a new ndarray. The oracle is plain Python/NumPy: values, dtypes,
shapes, arguments afterwards, exceptions, warnings."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def scaled(A, B, n):
    out = np.zeros(n)
    for i in range(n):
        S = A * (i + 1) - B
        S = S + A[:, :]
        out[i] = np.sum(S) + S[-1, -1] * 2 - S[0, 0]
    return out, S


def int_wrap(A, B, n):
    acc = 0
    for i in range(n):
        S = A * A + B * i      # wraps in int8/int16 as NumPy's arrays
        acc += int(S[0, 1]) + int(np.max(S))
    return acc, S


def self_ref(A, n):
    # the old value is read while the new one is made (and reversed rows)
    S = A.copy()
    t = 0.0
    for i in range(n):
        S = S * 0.5 + S[::-1, :] + A
        t += S[0, 0]
    return S, t


def parts(A, B, k):
    # a 2-D part of a computed 2-D local in a store and in an expression
    for i in range(k):
        S = A[1:, :-1] - B[:-1, 1:] * 2.0
        B[1:, 1:] = S + S[:, ::-1]
        B[0, 0] = np.min(S)
    return B


def mixed_rank(A, n):
    for i in range(n):
        S = A * 2.0
        if i > 0:
            S = A[0] * 3.0      # a 1-D value to the same name: not captured
    return S


def broadcast(A, C, n):
    # C of shape (m, 1): NumPy broadcasts, the C loop hands over to Python
    for i in range(n):
        S = A + C
        A[0, 0] = S[-1, -1]
    return S


def overflow(A, n):
    s = 0.0
    for i in range(n):
        S = A * 1e300 * (i + 1)       # float overflow: NumPy's warning
        s += S[0, 0]
    return s


FLOATS = ["float64", "float32"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int32"])
@pytest.mark.parametrize("shape", [(2, 3), (5, 4), (1, 7)])
def test_scaled(dtype, shape):
    A, B = arr(dtype, shape, seed=1), arr(dtype, shape, seed=2)
    check_calls(scaled, (A, B, 4), (A, B, 1))
    cf = numdyn.compile(scaled)
    cf(A, B, 3)
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", INTS)
def test_int_wrap(dtype):
    A, B = arr(dtype, (3, 4), seed=3, lo=0, hi=90), arr(dtype, (3, 4), seed=4, lo=0, hi=90)
    check_calls(int_wrap, (A, B, 5))
    cf = numdyn.compile(int_wrap)
    cf(A, B, 5)
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", FLOATS)
def test_self_ref(dtype):
    A = arr(dtype, (4, 3), seed=5)
    check_calls(self_ref, (A, 6), (A[:1], 2), (A.T, 3))
    cf = numdyn.compile(self_ref)
    cf(A, 6)
    ran_as_c(cf)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_parts(dtype):
    A, B = arr(dtype, (5, 5), seed=6), arr("float64", (5, 5), seed=7)
    check_calls(parts, (A, B, 3))
    cf = numdyn.compile(parts)
    cf(A, B.copy(), 3)
    ran_as_c(cf)


def test_zero_iterations_unbound():
    A, B = arr("float64", (2, 2)), arr("float64", (2, 2), seed=1)
    check_calls(scaled, (A, B, 0))   # UnboundLocalError on both sides


def test_rank_change_not_captured():
    A = arr("float64", (3, 3))
    check_calls(mixed_rank, (A, 3))
    info = numdyn.compile(mixed_rank)._loop_info
    cf = numdyn.compile(mixed_rank)
    cf(A, 3)
    info = cf._loop_info()
    assert info and "rank" in str(info[0].get("last_fallback") or info[0].get("reason")), info


def test_broadcast_deopt():
    A, C = arr("float64", (3, 4), seed=8), arr("float64", (3, 1), seed=9)
    check_calls(broadcast, (A, C, 3))


def test_overflow_warns():
    A = arr("float64", (2, 2), seed=10)
    with np.errstate(over="warn"):
        check_calls(overflow, (A, 3))
    with np.errstate(over="raise"):
        check_calls(overflow, (A, 3))
