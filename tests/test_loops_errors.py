"""Element loops that raise, overflow or wrap (issue 17.2, "never wrong"),
with plain Python/NumPy as the oracle (tests/loop_gen.py: check_calls).

- IndexError at iteration k, with NumPy's message, and every array left as
  NumPy leaves it (the stores of iterations 0..k-1 done, none after);
- ZeroDivisionError and other exceptions of Python scalars in the body, at
  the same iteration;
- Python ints past int64 are exact big ints, never wrapped (a captured loop
  must hand its state back to the interpreter, or not be captured);
- NumPy integer scalars wrap, with NumPy's RuntimeWarning;
- stores NumPy refuses (NaN or inf into an int array, a Python int out of
  the array's range) raise NumPy's exception at that store;
- math domain errors; exceptions caught by try/except inside the loop.

Wrong answers numdyn is known to give are pinned as strict xfails (marks
TRACER_* in loops left to the tracer, CAPTURE_* in captured loops, reasons
from loop_gen.KNOWN_BUGS); each will XPASS, and so fail, once fixed: then
drop its mark. None today.
"""
import math

import numpy as np
import pytest

from loop_gen import arr, check_calls, run


def _opaque(x):
    """A user Python function: a loop calling it is left to the tracer."""
    return x


# ---------------------------------------------------------------------------
# IndexError at iteration k

def read_past_end(A, B, n):
    for i in range(n):
        B[i] = A[i] * 2
    return B


def write_past_end(A, n):
    for i in range(n):
        A[i] = i
    return A


def read_ahead(A, B):
    for i in range(len(A)):
        B[i] = A[i + 1] - A[i]
    return B


def axis1_2d(M, m):
    s = 0
    for i in range(M.shape[0]):
        for j in range(m):
            s += M[i, j]
            M[i, j] = s
    return s, M


def chained_2d(M, m):
    for i in range(M.shape[0]):
        for j in range(m):
            M[i][j] = M[i][j] + 1
    return M


def negative_past_start(A):
    s = 0
    for i in range(len(A) + 2):
        s += A[-1 - i]
        A[-1 - i] = s
    return s, A


def while_past_end(A):
    i = 0
    while A[i] < 100:
        A[i] += 1
        i += 1
    return i


def created_array(A):
    T = np.zeros(len(A) - 1, dtype=A.dtype)
    for i in range(len(A)):
        A[i] = A[i] + 1
        T[i] = A[i]
    return T


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
def test_index_error_at_iteration_k(dtype):
    A = arr(dtype, 10, lo=0, hi=9)
    outs = check_calls(read_past_end, (A, np.zeros(10, dtype), 12), (A, np.zeros(12, dtype), 11))
    assert type(outs[0].exc) is IndexError
    assert str(outs[0].exc) == "index 10 is out of bounds for axis 0 with size 10"
    outs = check_calls(write_past_end, (A, 12), (A[:3].copy(), 4), (A, 10))
    assert str(outs[0].exc) == "index 10 is out of bounds for axis 0 with size 10"
    assert outs[2].exc is None


@pytest.mark.parametrize("fn,make,message,dtype", [
    (read_ahead, lambda d: (arr(d, 6), np.zeros(6, d)),
     "index 6 is out of bounds for axis 0 with size 6", "float64"),
    (read_ahead, lambda d: (arr(d, 6), np.zeros(6, d)),
     "index 6 is out of bounds for axis 0 with size 6", "uint32"),
    (axis1_2d, lambda d: (arr(d, (3, 4), lo=0, hi=3), 5),
     "index 4 is out of bounds for axis 1 with size 4", "int8"),
    (axis1_2d, lambda d: (arr(d, (3, 4), lo=0, hi=3), 5),
     "index 4 is out of bounds for axis 1 with size 4", "float32"),
    (chained_2d, lambda d: (arr(d, (3, 4), lo=0, hi=3), 5),
     "index 4 is out of bounds for axis 0 with size 4", "int64"),
    (negative_past_start, lambda d: (arr(d, 5, lo=0, hi=3),),
     "index -6 is out of bounds for axis 0 with size 5", "float64"),
    (while_past_end, lambda d: (arr(d, 7, lo=0, hi=9),),
     "index 7 is out of bounds for axis 0 with size 7", "uint8"),
    (created_array, lambda d: (arr(d, 5, lo=0, hi=9),),
     "index 4 is out of bounds for axis 0 with size 4", "int32"),
], ids=["read_ahead", "read_ahead_u32", "axis1", "axis1_f32", "chained", "negative", "while",
        "created"])
def test_index_error_messages_and_state(fn, make, message, dtype):
    outs = check_calls(fn, make(dtype))
    assert type(outs[0].exc) is IndexError and str(outs[0].exc) == message


def float_index(A):
    for i in range(len(A)):
        A[i / 2] = 1
    return A


def huge_python_int_index(A):
    h = 1
    for i in range(len(A)):
        h = h * 2 ** 40
        A[h % len(A)] += 1
        A[h] = 0
    return A


def numpy_int_index(A, I):
    s = 0
    for k in range(len(I)):
        s += A[I[k]]
        A[I[k]] = k
    return s, A


def float_index_load(A):
    s = 0
    for i in range(len(A)):
        s += A[i / 2]
    return s


def test_float_index_store():
    outs = check_calls(float_index, (arr("float64", 6),))
    assert type(outs[0].exc) is IndexError and "only integers" in str(outs[0].exc)


def test_index_types():
    A = arr("float64", 6)
    outs = check_calls(float_index_load, (A,))
    assert type(outs[0].exc) is IndexError and "only integers" in str(outs[0].exc)
    outs = check_calls(huge_python_int_index, (A,))
    assert type(outs[0].exc) is IndexError
    I8 = np.array([5, -1, 0, 2, -6, 3], dtype=np.int8)
    outs = check_calls(numpy_int_index, (A, I8), (A, I8.astype(np.uint8) % 6),
                       (A, np.array([1, 6], np.int64)))
    assert outs[0].exc is None and type(outs[2].exc) is IndexError


# ---------------------------------------------------------------------------
# exceptions of Python scalars in the body, at iteration k

def float_division(A, B):
    s = 0.0
    for i in range(len(A)):
        B[i] = A[i]
        s += 1.0 / (float(A[i]) - 3.0)
    return s, B


def int_division(A, B):
    s = 0
    for i in range(len(A)):
        B[i] = i
        s += 100 // (int(A[i]) - 3)
    return s


def int_modulo(A):
    s = 0
    for i in range(len(A)):
        A[i] = A[i] * 2
        s += 7 % (len(A) - 1 - i)
    return s


def float_floordiv_mod(A):
    s = 0.0
    for i in range(len(A)):
        s += 10.0 // (i - 2.0) + 10.0 % (3.0 - i)
        A[i] = s
    return s


def true_division_of_ints(n):
    s = 0
    for i in range(n):
        s += 6 / (i - n + 2)
    return s


@pytest.mark.parametrize("fn,make", [
    (float_division, lambda d: (np.array([1, 2, 4, 3, 5], d), np.zeros(5, d))),
    (int_division, lambda d: (np.array([1, 2, 4, 3, 5], d), np.zeros(5, d))),
    (int_modulo, lambda d: (np.array([1, 2, 4, 3, 5], d),)),
    (float_floordiv_mod, lambda d: (np.zeros(5, d),)),
    (true_division_of_ints, lambda d: (5,)),
], ids=["float_div", "int_floordiv", "int_mod", "float_floordiv_mod", "int_truediv"])
def test_zero_division_at_iteration_k(fn, make):
    dtype = {float_division: "float32", int_division: "int64", int_modulo: "uint8",
             float_floordiv_mod: "float64", true_division_of_ints: None}[fn]
    outs = check_calls(fn, make(dtype))
    assert type(outs[0].exc) is ZeroDivisionError, outs[0]


def numpy_scalar_division_by_zero(A, B):
    out = np.zeros(len(A))
    for i in range(len(A)):
        out[i] = A[i] / B[i] + A[i] // B[i] + A[i] % B[i]
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint32"])
def test_numpy_scalar_division_by_zero_warns_not_raises(dtype):
    A = np.array([1, 0, 3, 4], dtype)
    B = np.array([2, 0, 0, 1], dtype)
    outs = check_calls(numpy_scalar_division_by_zero, (A, B))
    assert outs[0].exc is None and "RuntimeWarning" in outs[0].categories


def math_domain(A):
    s = 0.0
    for i in range(len(A)):
        A[i] = A[i] + 1
        s += math.sqrt(A[i] - 3.0)
    return s


def math_log_zero(A):
    s = 0.0
    for i in range(len(A)):
        s += math.log(A[i])
        A[i] = s
    return s, A


def math_range(A):
    s = 0.0
    for i in range(len(A)):
        s += math.exp(A[i] * 300.0)
    return s


def float_pow_overflow(A):
    x = 10.0
    for i in range(len(A)):
        x = x ** A[i]
    return x


def python_float_pow_overflow(n):
    x = 10.0
    for i in range(n):
        x = x ** 2.0
    return x


def int_of_nan(A):
    s = 0
    for i in range(len(A)):
        s += int(A[i])
    return s


def negative_power(A):
    s = 0
    for i in range(len(A)):
        s += A[i] ** (2 - i)
    return s


def bool_subtract(A, B):
    s = 0
    for i in range(len(A)):
        s += A[i] - B[i]
    return s


def uint8_plus_300(A):
    for i in range(len(A)):
        A[i] = A[i] + 300 * (i // 2)
    return A


def sqrt_negative_numpy(A):
    s = 0.0
    for i in range(len(A)):
        s += np.sqrt(A[i] - 2.0)
    return s


@pytest.mark.parametrize("fn,args,exc", [
    (math_domain, (np.array([5.0, 3.0, 1.0, 4.0]),), ValueError),
    (math_domain, (np.array([5, 3, 1, 4], np.int32),), ValueError),
    (math_log_zero, (np.array([2.0, 1.0, 0.5, 0.0, 3.0]),), ValueError),
    (math_range, (np.array([0.5, 1.0, 3.0, 0.1]),), OverflowError),
    (float_pow_overflow, (np.array([2.0, 3.0, 5.0, 10.0, 2.0]),), None),
    (python_float_pow_overflow, (12,), OverflowError),
    (int_of_nan, (np.array([1.5, 2.5, np.nan, 1.0]),), ValueError),
    (int_of_nan, (np.array([1.5, -np.inf, 1.0], np.float32),), OverflowError),
    (negative_power, (np.array([3, 2, 5, 1], np.int64),), ValueError),
    (negative_power, (np.array([3.0, 2.0, 5.0]),), None),
    (bool_subtract, (np.array([True, False]), np.array([False, True])), TypeError),
    (uint8_plus_300, (np.array([1, 2, 3, 4], np.uint8),), OverflowError),
    (sqrt_negative_numpy, (np.array([3.0, 1.0, 4.0]),), None),
], ids=["math_sqrt", "math_sqrt_int", "math_log", "math_exp", "float_pow_inf",
        "python_float_pow", "int_nan", "int_inf", "negative_int_power", "float_power",
        "bool_subtract", "uint8_plus_300", "np_sqrt_negative"])
def test_exceptions_in_the_body(fn, args, exc):
    outs = check_calls(fn, args)
    if exc is None:
        assert outs[0].exc is None, outs[0]
    else:
        assert type(outs[0].exc) is exc, outs[0]


# ---------------------------------------------------------------------------
# Python ints past int64: exact, never wrapped

def string_hash(A):
    h = 7
    for i in range(len(A)):
        h = h * 31 + int(A[i])
    return h


def modular_hash(A):
    h = 0
    for i in range(len(A)):
        h = (h * 1000003 + int(A[i])) % (2 ** 61 - 1)   # h * 1000003 leaves int64
    return h


def crossing_int64(A, h):
    out = np.zeros(len(A), dtype=np.int64)
    for i in range(len(A)):
        h += int(A[i])
        out[i] = h % 1000
    return h, out


def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def powers_and_shifts(A):
    p = 1
    q = 1
    r = -1
    for i in range(len(A)):
        p = p * 3
        q = q << int(A[i])
        r = r * 2 ** 20 - i
    return p, q, r, p // 7, -p // 7, r % 1000, p > 2 ** 63, float(p)


def big_int_meets_elements(A, U):
    h = 2 ** 62
    for i in range(len(U)):
        h = h * 2
        U[i] = h % 2 ** 64   # fits uint64
    return h, U, h + A[0]


def big_int_into_int64(A):
    h = 2 ** 60
    for i in range(len(A)):
        h = h * 4
        A[i] = h
    return A


def big_int_true_division(n):
    h = 1
    for i in range(n):
        h = h * 10 ** 50
    return h / 3


def uint64_to_python_int(U):
    s = 0
    for i in range(len(U)):
        s += int(U[i])
    return s, int(U[0]) + 1


def test_python_ints_past_int64_are_exact():
    A = arr("int64", 40, lo=0, hi=100)
    outs = check_calls(string_hash, (A,), (A[:5].copy(),))
    assert outs[0].value > 2 ** 63 and type(outs[0].value) is int
    assert outs[1].value < 2 ** 63
    outs = check_calls(modular_hash, (A,), (A.astype(np.uint8),))
    assert outs[0].value == modular_hash(A)
    outs = check_calls(crossing_int64, (A, 2 ** 63 - 1000), (A, -(2 ** 63) - 5), (A, 0))
    assert outs[0].value[0] > 2 ** 63
    outs = check_calls(fibonacci, (100,), (10,), (93,), (92,))
    assert outs[0].value == 354224848179261915075
    outs = check_calls(powers_and_shifts, (np.array([1, 5, 20, 30, 3], np.int8),),
                       (np.array([62, 1, 1], np.int64),))
    assert outs[0].value[6] is False and outs[1].value[1] == 2 ** 64


def test_big_ints_meeting_numpy():
    A = np.array([1, 2], np.int64)
    outs = check_calls(big_int_meets_elements, (A, np.zeros(3, np.uint64)))
    assert type(outs[0].exc) is OverflowError  # h + np.int64: out of range
    outs = check_calls(big_int_meets_elements, (A.astype(np.float64), np.zeros(3, np.uint64)))
    assert outs[0].exc is None and type(outs[0].value[2]) is np.float64
    outs = check_calls(big_int_into_int64, (np.zeros(3, np.int64),))
    assert type(outs[0].exc) is OverflowError
    outs = check_calls(big_int_true_division, (8,), (2,))
    assert type(outs[0].exc) is OverflowError and outs[1].exc is None
    U = np.array([2 ** 64 - 1, 2 ** 63, 7], np.uint64)
    outs = check_calls(uint64_to_python_int, (U,))
    assert outs[0].value[0] == 2 ** 64 - 1 + 2 ** 63 + 7


# ---------------------------------------------------------------------------
# NumPy integer scalars wrap as NumPy does (values; warnings below)

def int_wrap(A):
    s = A[0]
    t = A[0]
    for i in range(len(A)):
        s = s * 3 + A[i]
        t += A[i]
        A[i] = A[i] * A[i]
    return s, t, A


def shifts_past_width(A):
    out = np.zeros(len(A), dtype=A.dtype)
    for i in range(len(A)):
        out[i] = (A[i] << (i * 3)) | (A[i] >> (i * 2))
    return out


def min_divided_by_minus_one(A):
    for i in range(len(A)):
        A[i] = A[i] // -1
    return A


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64"])
def test_numpy_integers_wrap_values(dtype):
    info = np.iinfo(dtype)
    A = np.array([info.max, 3, info.max // 2, 7, info.min + 1], dtype=dtype)
    outs = check_calls(int_wrap, (A,), warn=False)
    assert outs[0].exc is None
    check_calls(shifts_past_width, (arr(dtype, 6, lo=1, hi=9),), warn=False)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_signed_min_floordiv_minus_one(dtype):
    A = np.array([np.iinfo(dtype).min, -5, 7], dtype=dtype)
    check_calls(min_divided_by_minus_one, (A,), warn=False)


def accumulate_small(A):
    s = 0
    for i in range(len(A)):
        s += A[i]          # s becomes A's dtype after the first iteration
    return s


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_python_int_local_becomes_a_wrapping_numpy_int(dtype):
    A = np.full(10, 100, dtype=dtype)
    outs = check_calls(accumulate_small, (A,), (A[:1].copy(),), warn=False)
    assert type(outs[0].value) is np.dtype(dtype).type
    assert outs[0].value == np.array([1000]).astype(dtype)[0]


@pytest.mark.parametrize("dtype", ["int8", "uint32"])
def test_numpy_integers_wrap_warnings(dtype):
    """The same wrapping loops, with warnings compared (category only)."""
    info = np.iinfo(dtype)
    A = np.array([info.max, 3, info.max // 2, 7, info.min + 1], dtype=dtype)
    outs = check_calls(int_wrap, (A,))
    assert outs[0].categories == ("RuntimeWarning",)


def test_wrapping_accumulator_warns():
    outs = check_calls(accumulate_small, (np.full(10, 100, dtype=np.int8),))
    assert outs[0].categories == ("RuntimeWarning",)


def wrap_in_tracer(A):
    s = A[0]
    for i in range(len(A)):
        s = _opaque(s * 3 + A[i])
    return s


def test_wrapping_warns_in_a_loop_left_to_the_tracer():
    outs = check_calls(wrap_in_tracer, (np.array([100, 3, 7], np.int8),))
    assert outs[0].categories == ("RuntimeWarning",)


NEVER_RUNS = """
import warnings, numpy as np, numdyn

def body_never_runs(A, n):
    for i in range(n):
        A[i] = -A[i] / 0.5
    return A

for f in (body_never_runs, numdyn.compile(body_never_runs)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(np.arange(3, dtype=np.uint64), 0)
    print(sorted({w.category.__name__ for w in caught}))
"""


def test_no_warning_from_a_body_that_never_runs(tmp_path):
    """In a fresh process: what loop typing caches in a process would hide it."""
    import subprocess
    import sys
    script = tmp_path / "never_runs.py"
    script.write_text(NEVER_RUNS)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    plain, compiled = out.stdout.split("\n")[:2]
    assert plain == "[]"
    assert compiled == plain, (plain, compiled)


def float_overflow_to_inf(A):
    s = A[0]
    for i in range(len(A)):
        s = s * A[i]
    return s


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_float_overflow_and_nan(dtype):
    big = 1e30 if dtype == "float32" else 1e200
    A = np.array([big, big, big, big, 0.0], dtype=dtype)
    outs = check_calls(float_overflow_to_inf, (A,))
    assert np.isnan(outs[0].value) and "RuntimeWarning" in outs[0].categories


# ---------------------------------------------------------------------------
# stores NumPy refuses

def store_python_value(A, v):
    for i in range(len(A)):
        A[i] = v * i
    return A


def store_nan_literal(A):
    for i in range(len(A)):
        if i == 2:
            A[i] = math.nan
        else:
            A[i] = i
    return A


def store_from_array(A, B):
    for i in range(len(A)):
        A[i] = B[i]
    return A


def store_computed(A):
    for i in range(len(A)):
        A[i] = A[i] / (A[i] - A[i])
    return A


def store_computed_aug(C):
    for i in range(len(C)):
        C[i] //= 0.0
    return C


@pytest.mark.parametrize("dtype,v,exc", [
    ("int8", 50, OverflowError),     # 150 at i=3
    ("uint8", -1, OverflowError),
    ("int64", 2 ** 62, OverflowError),
    ("uint64", 2 ** 63, OverflowError),
    ("int32", 2.5, None),            # floats truncate
    ("bool", 3, None),
    ("float32", 2 ** 200, None),     # inf, with a RuntimeWarning
], ids=lambda x: str(x)[:12])
def test_store_python_int_out_of_range(dtype, v, exc):
    outs = check_calls(store_python_value, (np.zeros(5, dtype), v))
    if exc is None:
        assert outs[0].exc is None, outs[0]
    else:
        assert type(outs[0].exc) is exc, outs[0]


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint32"])
def test_store_nan_literal(dtype):
    outs = check_calls(store_nan_literal, (np.zeros(5, dtype),))
    assert type(outs[0].exc) is ValueError
    assert str(outs[0].exc) == "cannot convert float NaN to integer"


@pytest.mark.parametrize("target,source", [
    ("uint8", np.array([1.0, -1.0, 2.0], np.float32)),     # NumPy wraps: 255
    ("int64", np.array([1, 2, 3], np.uint8)),
    ("float32", np.array([1, 2 ** 40, 3], np.int64)),
], ids=["f32->u8", "u8->i64", "i64->f32"])
def test_store_from_array_that_numpy_accepts(target, source):
    outs = check_calls(store_from_array, (np.zeros(3, target), source))
    assert outs[0].exc is None


@pytest.mark.parametrize("target,source", [
    ("int64", np.array([1.0, np.nan, 2.0])),
    ("int8", np.array([1, 300, 2])),
    ("int32", np.array([1.0, 1e10, 2.0])),
], ids=["nan->i64", "300->i8", "1e10->i32"])
def test_store_from_array_that_numpy_refuses(target, source):
    outs = check_calls(store_from_array, (np.zeros(3, target), source))
    assert type(outs[0].exc) in (ValueError, OverflowError)


@pytest.mark.parametrize("fn,dtype", [(store_computed, "int32"), (store_computed, "int8"),
                                      (store_computed_aug, "int64")],
                         ids=["x/0->i32", "x/0->i8", "x//=0.0->i64"])
def test_store_computed_nan_or_inf_into_int(fn, dtype):
    outs = check_calls(fn, (np.array([3, 4, 5], dtype),))
    assert type(outs[0].exc) in (ValueError, OverflowError)


@pytest.mark.parametrize("dtype,v", [("uint64", -1.25), ("int8", 300.0)])
def test_store_python_float_argument_out_of_range(dtype, v):
    outs = check_calls(store_python_value, (np.ones(3, dtype), v))
    assert type(outs[0].exc) is OverflowError


def store_in_tracer(A, B):
    for i in range(len(A)):
        A[i] = _opaque(B[i])
    return A


def store_arg_in_tracer(A, x):
    for i in range(len(A)):
        A[i] = _opaque(x)
    return A


@pytest.mark.parametrize("target,source", [
    ("int64", np.array([1.0, np.nan, 2.0])),
    ("int8", np.array([1, 300, 2])),
], ids=["nan->i64", "300->i8"])
def test_refused_store_in_a_loop_left_to_the_tracer(target, source):
    outs = check_calls(store_in_tracer, (np.zeros(3, target), source))
    assert type(outs[0].exc) in (ValueError, OverflowError)


@pytest.mark.parametrize("dtype,v", [("uint64", -1.25), ("int8", np.float64(300.0))])
def test_refused_float_argument_store_in_a_loop_left_to_the_tracer(dtype, v):
    outs = check_calls(store_arg_in_tracer, (np.ones(3, dtype), v))
    assert type(outs[0].exc) is OverflowError


def raise_then_continue(T, C):
    for i in range(len(T)):
        T[i] += 1.0 / (T[i] - T[i])
        C[i] -= 1
    return T, C


def test_arrays_at_the_moment_of_a_failing_store():
    """The store at i=0 raises: C is untouched."""
    outs = check_calls(raise_then_continue, (np.array([3, 4], np.int32), np.array([7, 8])))
    assert type(outs[0].exc) is OverflowError


def test_bool_element_power():
    def bool_pow(A):
        x = y = 0
        for i in range(len(A)):
            x = A[i] ** 2
            y = A[i] ** 3
        return x, y
    outs = check_calls(bool_pow, (np.array([True, False, True]),))
    assert type(outs[0].value[0]) is np.int64


def test_bool_element_power_in_a_loop_left_to_the_tracer():
    def bool_pow(A):
        x = 0
        for i in range(len(A)):
            x = _opaque(A[i] ** 2)
        return x
    outs = check_calls(bool_pow, (np.array([True, False, True]),))
    assert type(outs[0].value) is np.int64


# ---------------------------------------------------------------------------
# try/except inside loops; the loop variable after an empty loop

def catch_index_error(A):
    s = 0
    misses = 0
    for i in range(len(A) + 3):
        try:
            s += A[i]
            A[i] = s
        except IndexError:
            misses += 1
            continue
    return s, misses, A


def catch_zero_division(A):
    out = []
    for i in range(len(A)):
        try:
            out.append(1.0 / float(A[i]))
        except ZeroDivisionError:
            out.append(None)
            A[i] = -1
    return out, A


def catch_around_loop(A):
    k = -1
    try:
        for k in range(len(A) + 1):
            A[k] = A[k] * 2
    except IndexError as e:
        return k, str(e), A
    return k, None, A


def finally_in_loop(A):
    done = 0
    for i in range(len(A)):
        try:
            if A[i] > 5:
                break
            A[i] += 1
        finally:
            done += 1
    return done, A


def raise_inside(A):
    s = 0
    for i in range(len(A)):
        try:
            if A[i] == 0:
                raise ValueError("zero at %d" % i)
            s += A[i]
        except ValueError as e:
            s -= 100
            last = str(e)
    return s, last


def unbound_after_empty_loop(A):
    for i in range(len(A)):
        A[i] = 0
    return i


def test_try_except_inside_loops():
    A = arr("int64", 6, lo=0, hi=9)
    outs = check_calls(catch_index_error, (A,), (A[:0].copy(),))
    assert outs[0].value[1] == 3
    check_calls(catch_zero_division, (np.array([1.0, 0.0, 2.0, 0.0]),))
    outs = check_calls(catch_around_loop, (arr("float32", 4),))
    assert outs[0].value[:2] == (4, "index 4 is out of bounds for axis 0 with size 4")
    check_calls(finally_in_loop, (np.array([1, 2, 9, 3]),), (np.array([1, 2]),))
    outs = check_calls(raise_inside, (np.array([1, 0, 3, 0, 5], np.int64),))
    assert outs[0].value == (-191, "zero at 3")


@pytest.mark.parametrize("dtype", ["float64", "uint8"])
def test_loop_variable_unbound_after_an_empty_loop(dtype):
    outs = check_calls(unbound_after_empty_loop, (arr(dtype, 3),), (arr(dtype, 0),))
    assert outs[0].value == 2
    assert type(outs[1].exc) is UnboundLocalError


def test_oracle_sees_the_iteration_of_an_index_error():
    """Sanity of the harness: the plain side really stopped at iteration 10
    with the first 10 stores done."""
    A = np.arange(10.0)
    B = np.zeros(12)
    o = run(read_past_end, (A, B, 12))
    assert type(o.exc) is IndexError
    assert (B[:10] == 2 * A).all() and (B[10:] == 0).all()
