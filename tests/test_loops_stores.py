"""Scalar stores into array elements inside a captured loop (issue 17.2,
"never wrong"), with NumPy's own `a[i] = x` as the oracle.

NumPy's rules for storing one scalar into an element depend on both types
and on whether the scalar is a Python or a NumPy one: a float NaN into an
integer array raises ValueError "cannot convert float NaN to integer" (a
NumPy float into an unsigned array casts instead: 0 with "invalid value
encountered in cast"), infinity OverflowError, a float out of the target's
range OverflowError for signed targets and a wrapping cast for unsigned ones,
floats truncate toward zero, a Python int out of range OverflowError, a
NumPy int out of range OverflowError into signed and a wrap into unsigned
targets, a NumPy complex ComplexWarning, anything into bool its truth. Each
case stores good values at iterations 0-1, the case's value at iteration 2
and more after: the compiled loop must give the plain function's outcome
(exception type and message, or values), keep the earlier writes and make
none after, and warn as NumPy does. tests/loop_gen.py: check_calls.
"""
import math

import numpy as np
import pytest

import numdyn
from loop_gen import check_calls, make_function

TARGETS = ["int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "bool",
           "float32", "float64"]

VALUES = [
    float("nan"), float("inf"), -float("inf"), 3.7, -3.7, -0.5, 127.9, 300.0, -129.0, 1e30,
    np.float64("nan"), np.float64("inf"), np.float64(300.0), np.float64(-3.7), np.float64(1e19),
    np.float32("nan"), np.float32(1e10), np.float32(-1.5),
    300, -129, 255, 2 ** 62, 2 ** 63 - 1, -2 ** 63,
    np.int64(300), np.int64(-1), np.uint8(200), np.uint64(2 ** 63 + 5), np.int8(-5),
    True, np.bool_(True),
]
COMPLEX = [np.complex128(1 + 2j), np.complex64(-3 + 0j), 1 + 2j]


def _ids(v):
    return f"{type(v).__name__}({v!r})"


def _captured(fn, args):
    cf = numdyn.compile(fn)
    import copy
    try:
        cf(*copy.deepcopy(args))
    except Exception:  # the outcome itself is compared by check_calls
        pass
    return [i["captured"] for i in cf._loop_info()]


STORE_ARG = make_function("""
def f(A, x):
    for i in range(len(A)):
        if i == 2:
            A[i] = x
        else:
            A[i] = i + 1
    return A
""")

STORE_ARG_2D = make_function("""
def f(T, x):
    for i in range(T.shape[0]):
        for j in range(T.shape[1]):
            if i == 1 and j == 1:
                T[i][j] = x
            else:
                T[i, j] = i + j
    return T
""")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x", VALUES, ids=_ids)
def test_store_of_a_scalar_argument(target, x):
    args = (np.zeros(5, target), x)
    check_calls(STORE_ARG, args)
    assert _captured(STORE_ARG, args) == [True]


@pytest.mark.parametrize("target", ["int8", "uint8", "int64", "uint64", "bool", "float32"])
@pytest.mark.parametrize("x", [float("nan"), np.float64("inf"), 300.0, np.int64(300),
                               2 ** 63 - 1, np.float32("nan"), -3.7], ids=_ids)
def test_chained_2d_store(target, x):
    args = (np.zeros((3, 3), target), x)
    check_calls(STORE_ARG_2D, args)
    assert _captured(STORE_ARG_2D, args) == [True]


@pytest.mark.parametrize("target", ["int8", "uint8", "int64", "bool", "float64"])
@pytest.mark.parametrize("x", COMPLEX, ids=_ids)
def test_store_of_a_complex_scalar(target, x):
    """Loops do not compute in complex: the loop is left to the tracer,
    which must still store (or refuse) as NumPy does."""
    check_calls(STORE_ARG, (np.zeros(5, target), x))


# values computed in the loop: NaN/inf from float arithmetic of the elements

COMPUTED = {
    "div0": """
def f(A, B):
    for i in range(len(A)):
        A[i] = B[i] / (B[i] - B[2])
    return A
""",
    "mod0_aug": """
def f(A, B):
    for i in range(len(A)):
        A[i] %= B[i] - B[2]
    return A
""",
    "floordiv0_aug": """
def f(A, B):
    for i in range(len(A)):
        A[i] //= B[i] * 0.0
    return A
""",
    "mul_aug_big": """
def f(A, B):
    for i in range(len(A)):
        A[i] *= B[i] * 1e300
    return A
""",
    "python_float": """
def f(A, B):
    for i in range(len(A)):
        x = float(B[i])
        A[i] = x * x * 1e200
    return A
""",
    "sqrt_neg": """
def f(A, B):
    for i in range(len(A)):
        A[i] = np.sqrt(B[i] - 2.5)
    return A
""",
}


@pytest.mark.parametrize("target", ["int8", "uint8", "int32", "int64", "uint64", "bool"])
@pytest.mark.parametrize("src", sorted(COMPUTED))
@pytest.mark.parametrize("src_dtype", ["float64", "float32"])
def test_store_of_a_computed_nan_or_inf(target, src, src_dtype):
    fn = make_function(COMPUTED[src])
    A = np.arange(1, 6).astype(target)
    B = np.array([1.0, 2.0, 3.0, 4.0, 5.0], src_dtype)
    check_calls(fn, (A, B))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64"])
def test_while_true_for_else_mod_by_zero(dtype):
    """The fuzz seed of session 12: T[i][j] %= 0.0 inside while True and a
    for-else (NaN into int8: ValueError; into uint8: 0 and a warning)."""
    fn = make_function("""
def f(T, n):
    k = 0
    while True:
        for i in range(T.shape[0]):
            for j in range(T.shape[1]):
                if i + j == n:
                    T[i][j] %= 0.0
                else:
                    T[i][j] += 1
        else:
            k += 1
        if k > 2:
            break
    return T, k
""")
    for n in (0, 2, 9):
        args = (np.arange(6, dtype=dtype).reshape(2, 3), n)
        check_calls(fn, args)
        assert _captured(fn, args) == [True]


def test_nan_store_raises_at_its_iteration_with_earlier_writes_kept():
    A = np.zeros(5, np.int8)
    cf = numdyn.compile(STORE_ARG)
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        cf(A, math.nan)
    assert A.tolist() == [1, 2, 0, 0, 0]
    A = np.zeros(5, np.int16)
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        cf(A, -math.inf)
    assert A.tolist() == [1, 2, 0, 0, 0]


# a NumPy float scalar as an index (a loop left to the tracer: typing refuses
# a float index): NumPy's message for a scalar, not the one for a 0-d array

FLOAT_INDEX = make_function("""
def f(A, n):
    s0 = 0
    s1 = 1
    T = np.ones(A.shape, np.bool)
    for e2 in A:
        s0, s1 = s1, (s0 + T[e2 % len(T)])
    return (s0, s1, T,)
""")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_float_scalar_index_message(dtype):
    A = np.array([2.0, 2.0, 7.0, 0.3], dtype)
    outs = check_calls(FLOAT_INDEX, (A, 4), (A[:2], 2))
    assert type(outs[0].exc) is IndexError and "only integers" in str(outs[0].exc)


# a Python float past float32's range as a float32 operand: NumPy casts it
# (RuntimeWarning "overflow encountered in cast") -- a constant, an argument,
# in arithmetic, a remainder and a comparison

F32_OPERAND = {
    "mul_arg": """
def f(A, B, x):
    for i in range(len(A)):
        A[i] = B[i] * x
    return A
""",
    "mod_const": """
def f(A, B, x):
    for i in range(len(A)):
        A[i] = B[i] % 1e300
    return A
""",
    "cmp_arg": """
def f(A, B, x):
    c = 0
    for i in range(len(A)):
        if B[i] < x:
            c += 1
        A[i] = c
    return A, c
""",
}


@pytest.mark.parametrize("name", sorted(F32_OPERAND))
@pytest.mark.parametrize("x", [1e300, -1e300, 2.5, float("inf")], ids=_ids)
def test_python_float_past_float32_range_as_operand(name, x):
    fn = make_function(F32_OPERAND[name])
    args = (np.zeros(4, np.float32), np.array([1.0, -2.0, 3.0, 0.0], np.float32), x)
    check_calls(fn, args)
    assert _captured(fn, args) == [True]
