"""Python loops over array elements (issue 17.1 and 17.5): every construct
loop capture compiles, over the dtypes, with plain Python/NumPy as the
oracle.

Each test calls numdyn.compile(fn) on copies of its arguments and plain fn
on other copies (tests/loop_gen.py: check_calls) and compares the result
(value within the dtype's tolerance, exact dtype, exact Python type: Python
int/float/bool vs NumPy scalar vs ndarray), the arguments' contents after
the call, the exception (type and message) and the warning categories.
Most tests call one compiled function with arguments of several sizes (a
loop is compiled once per type signature and reused for every size).

The tests assert nothing about capture (a loop left to the tracer must give
the same answers), except the one class at the end, TestCaptureReport,
which checks what CompiledFunction._loop_info() says about each loop; it is
skipped where that API does not exist or loop capture is off (NUMDYN_LOOPS=0).
With capture off, the loops run in the tracer, which today gets a few
answers wrong that captured loops get right: test_loops_errors.py pins them
(TRACER_* marks) and lists them.

Error cases (IndexError, ZeroDivisionError, Python ints past int64, NumPy
wrapping, bad stores, math domain errors, try/except) are in
tests/test_loops_errors.py; random loop programs in tests/test_loops_fuzz.py.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import numdyn
import programs_loops as PL  # bench/programs_loops.py
from loop_gen import DTYPES, arr, check_calls, grid_source, make_function, \
    outer_loop_lines

# Element loads and stores, augmented assignment and the operator grids run
# over every dtype; each other construct over one of five pairs of dtypes, in
# turn (every dtype meets several kinds of construct), so that the number of
# signatures compiled stays small.
GROUPS = [["float64", "int8"], ["float32", "uint64"], ["int64", "bool"], ["int32", "uint8"],
          ["uint32", "float64"]]


def sizes(dtype, *shapes, seed=0, **kw):
    """One argument tuple per shape (a single array each)."""
    return [(arr(dtype, s, seed=seed + k, **kw),) for k, s in enumerate(shapes)]


def pairs(dtype, *shape_pairs, hi=3):
    """One argument tuple per (shape of A, shape of B): two arrays of small
    non-negative values."""
    return [(arr(dtype, a, seed=2 * k, lo=0, hi=hi), arr(dtype, b, seed=2 * k + 1, lo=0, hi=hi))
            for k, (a, b) in enumerate(shape_pairs)]


# ---------------------------------------------------------------------------
# for over range: 1, 2 and 3 arguments, negative and non-unit steps

def range_forms(A, n):
    s1 = 0
    for i in range(n):
        s1 += A[i]
    s2 = 0
    for i in range(1, n):
        s2 = s2 + A[i]
    s3 = 0
    for i in range(0, n, 2):
        s3 += A[i]
    s4 = 0
    for i in range(n - 1, -1, -1):
        s4 = A[i] + s4
    s5 = 0
    for i in range(n - 1, 0, -3):
        s5 += A[i]
    s6 = 0
    for i in range(2, n, 3):
        s6 += A[i]
    return s1, s2, s3, s4, s5, s6, i


@pytest.mark.parametrize("dtype", GROUPS[0])
def test_range_forms(dtype):
    A = arr(dtype, 7)
    check_calls(range_forms, (A, 7), (A, 5), (A, 2))


def empty_ranges(A, n):
    i = -7
    for i in range(n, n):
        A[i] = A[i] + 1
    j = 5
    for j in range(3, 1):
        A[j] = 0
    k = 9
    for k in range(0, n, -1):
        A[k] = 0
    m = 2
    for m in range(n - 1, n, -2):
        A[m] = 0
    t = 0
    for t in range(n):
        pass
    for t in range(0):
        A[0] = 0
    return i, j, k, m, t, A


@pytest.mark.parametrize("dtype", GROUPS[1])
def test_empty_ranges_keep_the_loop_variable(dtype):
    A = arr(dtype, 6)
    outs = check_calls(empty_ranges, (A, 6), (A, 3), (A, 1))
    assert outs[0].value[:5] == (-7, 5, 9, 2, 5)


def loop_variable_after(A):
    total = 0
    for i in range(len(A)):
        total += A[i]
    last = i
    for j in range(len(A) - 1, -1, -2):
        total += A[j]
    return total, last, i, j


@pytest.mark.parametrize("dtype", GROUPS[2])
def test_loop_variable_after_the_loop(dtype):
    outs = check_calls(loop_variable_after, *sizes(dtype, 5, 1, 8))
    assert outs[0].value[1:] == (4, 4, 0)


def range_of_elements(A, B):
    s = 0
    for i in range(A[0]):
        s += B[i]
    for i in range(A[1], A[2]):
        s += B[i] * 2
    return s, i


@pytest.mark.parametrize("dtype", ["int8", "uint64"])
def test_range_bounds_from_integer_elements(dtype):
    A = np.array([3, 1, 5], dtype=dtype)
    check_calls(range_of_elements, (A, arr("float64", 6)), (A, arr("int32", 6)))


# ---------------------------------------------------------------------------
# element loads and stores: arguments, arrays made in the function

def loads_and_stores(A, B):
    n = len(A)
    for i in range(n):
        B[i] = A[i]
    for i in range(1, n):
        B[i] = B[i - 1] + A[i]
    A[0] = B[n - 1]
    return A[0], B[-1], B


@pytest.mark.parametrize("dtype", DTYPES)
def test_element_loads_and_stores(dtype):
    def args(n, seed):
        return arr(dtype, n, seed=seed), np.zeros(n, dtype=np.float64)
    check_calls(loads_and_stores, args(6, 0), args(3, 1), args(1, 2))


def same_dtype_copy(A):
    B = A.copy()
    C = np.zeros(len(A), dtype=A.dtype)
    D = np.ones((len(A), 2), dtype=A.dtype)
    E = np.empty(len(A), dtype=A.dtype)
    for i in range(len(A)):
        C[len(A) - 1 - i] = B[i]
        D[i, 1] = A[i]
        E[i] = D[i, 0]
        B[i] = C[i]
    return B, C, D, E, C[0], D[-1, 0], E[0]


@pytest.mark.parametrize("dtype", GROUPS[3])
def test_arrays_made_in_the_function(dtype):
    check_calls(same_dtype_copy, *sizes(dtype, 7, 1, 4))


def default_float_arrays(A):
    n = len(A)
    Z = np.zeros(n)
    O = np.ones((n, n))
    E = np.empty(n)
    for i in range(n):
        E[i] = 0.5 * i
        Z[i] = A[i] + E[i]
        for j in range(n):
            O[i, j] = O[i, j] * Z[i] - j
    return Z, O, E, Z[n - 1] + O[0, 0]


@pytest.mark.parametrize("dtype", GROUPS[4])
def test_np_zeros_ones_empty_default_dtype(dtype):
    check_calls(default_float_arrays, *sizes(dtype, 5, 1, 3))


def element_types(A):
    x = A[0]
    y = A[len(A) - 1]
    return x, y, x == y


@pytest.mark.parametrize("dtype", GROUPS[0])
def test_element_loads_are_numpy_scalars(dtype):
    outs = check_calls(element_types, *sizes(dtype, 4, 1))
    assert type(outs[0].value[0]) is np.dtype(dtype).type


# ---------------------------------------------------------------------------
# augmented assignment on locals and elements; A[i][j]; negative indices

def augmented(A, B):
    n, m = B.shape
    s = A[0]
    t = 1
    for i in range(n):
        for j in range(m):
            B[i][j] *= 2
            B[i, j] += A[j]
            B[i, j] -= A[j]
            s += B[i, j]
            t *= 1 + (j % 2)
        t //= 2
        t %= 1000
        t -= 1
    return s, t, B


@pytest.mark.parametrize("dtype", DTYPES)
def test_augmented_assignment(dtype):
    check_calls(augmented, *pairs(dtype, (4, (3, 4)), (1, (1, 1)), (2, (4, 2)), hi=4))


def chained_indexing(A):
    n, m = A.shape
    T = np.zeros((m, n), dtype=A.dtype)
    s = 0
    for i in range(n):
        row = A[i]
        for j in range(m):
            T[j][i] = A[i][j]
            s += row[j]
            A[i][j] = T[j][i]
    return T, s, A


@pytest.mark.parametrize("dtype", GROUPS[1])
def test_chained_indexing(dtype):
    check_calls(chained_indexing, *sizes(dtype, (3, 4), (1, 5), (2, 1)))


def negative_indices(A, B):
    n = len(A)
    for i in range(n):
        B[-1 - i] = A[i]
        B[i - n] = B[i - n] + A[-1]
    for i in range(1, n + 1):
        A[-i] = B[-i] + A[-n]
    return A, B, A[-1], B[-n]


@pytest.mark.parametrize("dtype", GROUPS[2])
def test_negative_indices(dtype):
    check_calls(negative_indices, *pairs(dtype, (5, 5), (1, 1), (2, 2)))


def negative_2d(A):
    n, m = A.shape
    s = 0
    for i in range(n):
        for j in range(m):
            s += A[-1 - i, j - m] * (i + 1)
            A[i - n, -1 - j] += A[-n, -m]
    return s, A


@pytest.mark.parametrize("dtype", GROUPS[3])
def test_negative_indices_2d(dtype):
    check_calls(negative_2d, *sizes(dtype, (3, 4), (1, 1), (2, 3), lo=0, hi=3))


# ---------------------------------------------------------------------------
# while, nested loops, break/continue/if/elif/else, else clauses

def while_loops(A, limit):
    i = 0
    s = 0
    while i < len(A) and s < limit:
        s += A[i]
        i += 1
    k = len(A) - 1
    while k >= 0:
        if A[k] > 2:
            break
        k -= 1
    j = 0
    while True:
        j += 1
        if j >= len(A):
            break
        if A[j] == A[j - 1]:
            continue
        s = s + A[j]
    return s, i, k, j


@pytest.mark.parametrize("dtype", GROUPS[4])
def test_while_loops(dtype):
    A = arr(dtype, 9, lo=0, hi=5)
    check_calls(while_loops, (A, 6), (A, 0), (A[:1].copy(), 100), (A[:0].copy(), 3))


def nested_three(A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            acc = 0
            for k in range(j + 1):
                acc += A[i, k] * B[k]
            A[i, j] = acc
    return A


@pytest.mark.parametrize("dtype", GROUPS[0])
def test_nested_loops(dtype):
    check_calls(nested_three, *pairs(dtype, ((3, 4), 4), ((1, 1), 1), ((2, 5), 5)))


def triangular(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = A[j, i] + A[i, i]
        for j in range(i + 1, n):
            A[i, j] = A[i, j - 1] * 1
    return A


@pytest.mark.parametrize("dtype", GROUPS[1])
def test_triangular_nests(dtype):
    check_calls(triangular, *sizes(dtype, (4, 4), (1, 1), (3, 3), lo=0, hi=3))


def branches(A, B):
    pos = neg = zero = 0
    s = 0.0
    for i in range(len(A)):
        if A[i] > B[i]:
            pos += 1
            s += A[i]
        elif A[i] < B[i]:
            neg += 1
            if A[i] == 0:
                continue
            s -= B[i]
        else:
            zero += 1
            if zero > 2:
                break
        s = s * 1
    return pos, neg, zero, s, i


@pytest.mark.parametrize("dtype", GROUPS[2])
def test_break_continue_if_elif_else(dtype):
    check_calls(branches, *pairs(dtype, (12, 12), (1, 1), (5, 5)))


def nested_break_continue(A):
    found = -1
    count = 0
    n, m = A.shape
    for i in range(n):
        if i == 1:
            continue
        for j in range(m):
            if A[i, j] == 0:
                continue
            if A[i, j] > 7:
                found = i * m + j
                break
            count += 1
        else:
            count += 100
            continue
        break
    return found, count, i


@pytest.mark.parametrize("dtype", GROUPS[3])
def test_nested_break_continue_and_for_else(dtype):
    A = arr(dtype, (4, 5), lo=0, hi=9)
    B = arr(dtype, (3, 3), lo=0, hi=5)
    check_calls(nested_break_continue, (A,), (B,), (A[:1].copy(),))


def while_else(A):
    i = 0
    while i < len(A):
        if A[i] < 0:
            break
        i += 1
    else:
        i = -1
    return i


@pytest.mark.parametrize("dtype", ["float64", "int8"])
def test_while_else(dtype):
    A = np.array([3, 2, -1, 4], dtype=dtype)
    outs = check_calls(while_else, (A,), (np.abs(A),))
    assert [o.value for o in outs] == [2, -1]


# ---------------------------------------------------------------------------
# arithmetic, comparisons, bitwise, functions: grids of operand pairs per
# dtype (element op element, element op Python int / float / NumPy scalar,
# and reflected), each iteration's value logged into an array of its own
# dtype and the last values returned (their exact type compared)

OPS = ["+", "-", "*", "/", "//", "%"]
ARITH = ([f"a {op} b" for op in OPS] + [f"a {op} 3" for op in OPS]
         + ["2.5 * a", "2.5 // a", "np.float32(1.5) - a", "a - np.int8(2)", "a // np.uint8(3)",
            "a + i", "a ** 2", "2 ** b", "a ** 0.5", "-a", "i / 2"])
BITWISE = ["a & b", "a | 3", "i ^ a", "a << 2", "np.uint8(6) >> a", "~a"]
COMPARE = [f"{x} {op} {y}" for op in ["<", "<=", ">", ">=", "==", "!="]
           for x, y in [("a", "b"), ("a", "2.5"), ("np.float32(1.5)", "a")]]
COMPARE += ["a < b < 3", "0 <= a < b", "a == b != 1", "a and b", "a or b", "not a",
            "a and 2.5", "0.0 or a", "(a > 1) or not (b < 2)", "a if a > b else b",
            "1.5 if a else i", "a < i"]
FUNCS = ["abs(a)", "np.abs(a)", "np.sqrt(abs(a))", "np.exp(a * 0.25)", "np.floor(b * 0.5)",
         "math.sqrt(abs(a))", "math.exp(a * 0.25)", "math.log(abs(a) + 1)", "math.floor(a)",
         "math.fabs(a)", "min(a, b)", "max(a, b)", "min(a, 3)", "max(2.5, a)", "min(a, b, 1)",
         "int(a)", "float(a)", "bool(a)", "np.sqrt(np.float32(b) + 1)", "max(int(b), a)"]
# two functions per dtype (bitwise operators on floats raise: left out)
GRIDS = {"arith": ARITH + BITWISE, "logic": COMPARE + FUNCS}


def _grid_data(dtype, n, seed):
    lo, hi = (0, 6) if dtype[0] in "ub" else (-4, 6)
    if np.dtype(dtype).kind == "f":
        lo, hi = -3.0, 4.0
    A = arr(dtype, n, seed=seed, lo=lo, hi=hi)
    B = arr(dtype, n, seed=seed + 1, lo=0 if dtype != "bool" else None, hi=4)
    return A, B


@pytest.mark.parametrize("group", list(GRIDS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_operator_grid(dtype, group):
    A, B = _grid_data(dtype, 8, 0)
    samples = [(A[i], B[i], i) for i in range(len(A))]
    src, kept = grid_source(GRIDS[group], samples)
    # most of the grid is valid for this dtype (what raises is left out here
    # and covered by test_loops_errors.py)
    assert len(kept) >= len(GRIDS[group]) // 2, (dtype, group, len(kept))
    f = make_function(src)
    A2, B2 = _grid_data(dtype, 3, 5)
    check_calls(f, (A, B), (A2, B2))


# ---------------------------------------------------------------------------
# NEP 50: Python scalars are weak, NumPy scalars strong

def nep50(U8, F32, I64, B):
    a = b = c = d = e = f = g = h = 0
    for i in range(len(U8)):
        a = U8[i] + 1            # uint8
        b = F32[i] * 1.5         # float32
        c = I64[i] / I64[-1]     # float64
        d = 0.5 + F32[i]         # float32
        e = B[i] + 1             # int64
        f = U8[i] + I64[i]       # int64
        g = F32[i] * I64[i]      # float64
        h = U8[i] * np.float32(0.5)  # float32
    return a, b, c, d, e, f, g, h


def test_nep50_result_types():
    def args(n, seed):
        return (arr("uint8", n, seed=seed, lo=0, hi=100), arr("float32", n, seed=seed),
                arr("int64", n, seed=seed, lo=1, hi=9), arr("bool", n, seed=seed))
    outs = check_calls(nep50, args(6, 0), args(1, 1))
    types = [type(v) for v in outs[0].value]
    assert types == [np.uint8, np.float32, np.float64, np.float32, np.int64, np.int64,
                     np.float64, np.float32]


def uint64_mixing(U, I):
    s = 0
    t = 0.0
    for i in range(len(U)):
        s = U[i] + I[i]          # float64 (uint64 with int64)
        t = t + U[i] // 2        # uint64 then float64
        u = U[i] - 1             # uint64
    return s, t, u, int(U[0]), float(U[0])


def test_uint64_elements():
    U = np.array([2 ** 64 - 1, 2 ** 63, 5, 1], dtype=np.uint64)
    I = np.array([-1, 2, -3, 4], dtype=np.int64)
    outs = check_calls(uint64_mixing, (U, I), (U[2:].copy(), I[2:].copy()))
    assert outs[0].value[3] == 2 ** 64 - 1


# ---------------------------------------------------------------------------
# locals whose type changes; locals used after the loop

def type_changes(A):
    s = 0
    for i in range(len(A)):
        s += A[i]
    acc = 0.0
    for i in range(len(A)):
        acc += A[i]
    k = 1
    for i in range(len(A)):
        k = k * 2
        if i == 2:
            k = k + 0.5
    flag = False
    for i in range(len(A)):
        flag = flag or A[i] > 1
    return s, acc, k, flag


@pytest.mark.parametrize("dtype", GROUPS[4])
def test_locals_whose_type_changes(dtype):
    outs = check_calls(type_changes, *sizes(dtype, 5, 1, 0, lo=0, hi=4))
    s, acc, k, flag = outs[0].value
    if dtype != "bool":
        assert type(s) is np.dtype(dtype).type
    assert type(k) is float and type(outs[1].value[2]) is int
    assert outs[2].value == (0, 0.0, 1, False)


def float32_accumulator(A):
    acc = 0.0
    for i in range(len(A)):
        acc += A[i]
    return acc, acc * 2.0, acc / 3


def test_python_float_plus_float32_element_is_float32():
    A = arr("float32", 50)
    outs = check_calls(float32_accumulator, (A,), (A[:1].copy(),))
    assert all(type(v) is np.float32 for v in outs[0].value)


def used_after(A):
    best = A[0]
    where = 0
    for i in range(1, len(A)):
        if A[i] > best:
            best = A[i]
            where = i
    scaled = best * 2
    return best, where, scaled, A[where] == best


@pytest.mark.parametrize("dtype", GROUPS[0])
def test_locals_used_after_the_loop(dtype):
    check_calls(used_after, *sizes(dtype, 9, 1, 4))


# ---------------------------------------------------------------------------
# tuple assignment, ternary, len and shape

def fib_pairs(A, n):
    a, b = 0, 1
    for i in range(n):
        a, b = b, a + b
    x, y = A[0], A[1]
    for i in range(len(A)):
        x, y = y, x + A[i] * 0
        A[i], A[-1] = A[-1], A[i]
    return a, b, x, y, A


@pytest.mark.parametrize("dtype", GROUPS[1])
def test_tuple_assignment(dtype):
    A = arr(dtype, 6, lo=0, hi=5)
    outs = check_calls(fib_pairs, (A, 10), (A, 0), (A, 92))
    assert outs[0].value[:2] == (55, 89)


def ternary(A, t):
    s = 0
    for i in range(len(A)):
        s += A[i] if A[i] > t else t
        A[i] = 1 if i % 2 else A[i]
        s = s if i < 3 else s - (2 if A[i] else 1)
    return s, A


@pytest.mark.parametrize("dtype", GROUPS[2])
def test_ternary(dtype):
    A = arr(dtype, 7, lo=0, hi=5)
    check_calls(ternary, (A, 2), (A, 2.5), (A[:2].copy(), 0))


def shapes(A, M):
    n, m = M.shape
    s = 0
    for i in range(len(A)):
        s += A[i] * (A.shape[0] - i)
    for i in range(n):
        for j in range(m):
            s += M[i, j] + len(M) * M.shape[1]
    return s, n, m, len(A), A.shape[0], M.shape


@pytest.mark.parametrize("dtype", GROUPS[3])
def test_len_and_shape(dtype):
    check_calls(shapes, *pairs(dtype, (4, (2, 3)), (1, (3, 1)), (0, (0, 2))))


# ---------------------------------------------------------------------------
# math.*, np scalar functions, abs/min/max/int/float/bool on elements

def math_funcs(A):
    s = 0.0
    for i in range(len(A)):
        x = A[i]
        a = math.sqrt(x)
        b = math.exp(x / 4)
        c = math.log(x + 1)
        d = math.floor(x * 3)
        e = math.fabs(x - 2)
        s += a + b + c + d + e
    return s, a, b, c, d, e


@pytest.mark.parametrize("dtype", GROUPS[4])
def test_math_functions(dtype):
    outs = check_calls(math_funcs, *sizes(dtype, 6, 1, lo=0, hi=8))
    assert type(outs[0].value[4]) is int and type(outs[0].value[1]) is float


def np_funcs(A, x):
    for i in range(len(A)):
        a = np.sqrt(A[i])
        b = np.exp(A[i] * 0.5)
        c = np.abs(A[i] - 2)
        d = np.floor(A[i] / 3)
        e = np.sqrt(x)
        f = np.abs(-x)
        g = np.floor(x + i)
        h = np.exp(np.float32(x))
    return a, b, c, d, e, f, g, h


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_numpy_scalar_functions(dtype):
    A = arr(dtype, 5, lo=0, hi=8)
    outs = check_calls(np_funcs, (A, 2.25), (A[:1].copy(), 0.5))
    if dtype in ("int8", "uint8", "bool"):
        assert type(outs[0].value[0]) is np.float16  # np.sqrt of a small int is float16


def builtins_on_elements(A, B):
    out = np.zeros((len(A), 3))
    for i in range(len(A)):
        lo = min(A[i], B[i])
        hi = max(A[i], B[i], 1)
        m3 = min(A[i], 3)
        mx = max(2.5, B[i])
        out[i, 0] = abs(A[i] - B[i] * 1.0)
        out[i, 1] = int(A[i]) + float(B[i])
        out[i, 2] = bool(A[i]) + bool(B[i] > 1)
    return lo, hi, m3, mx, out


@pytest.mark.parametrize("dtype", GROUPS[0])
def test_abs_min_max_int_float_bool(dtype):
    outs = check_calls(builtins_on_elements, *pairs(dtype, (7, 7), (1, 1), (3, 3), hi=6))
    # min/max return one of their operands, with its own type
    for o in outs:
        assert type(o.value[2]) in (int, np.dtype(dtype).type)


# ---------------------------------------------------------------------------
# enumerate and zip over arrays and ranges

def enum_zip(A, B):
    s = 0
    for i, x in enumerate(A):
        s += x * i
    for k, x in enumerate(B, 1):
        s += x + k
    for x, y in zip(A, B):
        s += x * y
    for i, (x, y) in enumerate(zip(A, B)):
        A[i] = y
        B[i] = x
    for i, x in zip(range(2, 100), A):
        s += i * x
    for x, j in zip(B, range(len(B) - 1, -1, -1)):
        s += x * 2 + A[j]
    return s, A, B


@pytest.mark.parametrize("dtype", GROUPS[1])
def test_enumerate_and_zip(dtype):
    check_calls(enum_zip, *pairs(dtype, (5, 5), (3, 6), (0, 2), hi=4))


def enumerate_rows(M):
    s = 0
    for i, row in enumerate(M):
        for j, x in enumerate(row):
            s += x * (i + j)
            row[j] = i
    return s, M


@pytest.mark.parametrize("dtype", GROUPS[2])
def test_enumerate_rows_of_a_2d_array(dtype):
    check_calls(enumerate_rows, *sizes(dtype, (3, 4), (1, 2), lo=0, hi=4))


# ---------------------------------------------------------------------------
# realistic element-loop programs (the kinds issue 17.4 benchmarks)

def crc32_bitwise(data):
    crc = np.uint32(0xFFFFFFFF)
    for i in range(len(data)):
        crc ^= np.uint32(data[i])
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ np.uint32(0xEDB88320)
            else:
                crc >>= 1
    return crc ^ np.uint32(0xFFFFFFFF)


def adler32(data):
    a, b = 1, 0
    for i in range(len(data)):
        a = (a + int(data[i])) % 65521
        b = (b + a) % 65521
    return (b << 16) | a


def prefix_scan_with_branch(A, cap):
    out = np.empty_like(A)
    run = 0
    for i in range(len(A)):
        if A[i] < 0:
            run = 0
        else:
            run += A[i]
            if run > cap:
                run = cap
        out[i] = run
    return out, run


def _spd(n, seed):
    M = np.random.default_rng(seed).random((n, n))
    return M @ M.T + n * np.eye(n)


def _csr(n, seed):
    rng = np.random.default_rng(seed)
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices, vals = [], []
    for i in range(n):
        nz = np.nonzero(dense[i])[0]
        indices += list(nz)
        vals += list(dense[i, nz])
        indptr[i + 1] = len(indices)
    return indptr, np.array(indices, dtype=np.int32), np.array(vals), rng.random(n)


# the benchmarks' own element-loop programs (bench/programs_loops.py), and a
# few more
REAL = [
    ("cholesky", PL.cholesky_loops, lambda s, n: (_spd(n, s),)),
    ("lu", PL.lu_loops, lambda s, n: (_spd(n, s),)),
    ("thomas", PL.thomas,
     lambda s, n: (arr("float64", n, seed=s), arr("float64", n, seed=s + 1, lo=5, hi=6),
                   arr("float64", n, seed=s + 2), arr("float64", n, seed=s + 3))),
    ("csr_matvec", PL.csr_matvec, lambda s, n: _csr(n, s)),
    ("gauss_seidel", PL.gauss_seidel_points,
     lambda s, n: (arr("float64", (n, n), seed=s), arr("float64", (n, n), seed=s + 1), 3)),
    ("nussinov", PL.nussinov, lambda s, n: (arr("int64", n + 2, seed=s, lo=0, hi=4),)),
    ("edit_distance", PL.edit_distance,
     lambda s, n: (arr("int8", n, seed=s, lo=0, hi=3), arr("int8", n + 2, seed=s + 1, lo=0, hi=3))),
    ("floyd_warshall_int32", PL.floyd_warshall_loops,
     lambda s, n: (arr("int32", (n, n), seed=s, lo=1, hi=9),)),
    ("crc32_table", PL.crc32, lambda s, n: (arr("uint8", 5 * n, seed=s, lo=0, hi=256),
                                            PL.crc32_table())),
    ("cusum", PL.cusum, lambda s, n: (arr("float64", 6 * n, seed=s, lo=-1, hi=3), 0.5, 0.25, 2.0)),
    ("histogram", PL.histogram_loop,
     lambda s, n: (arr("float64", 10 * n, seed=s, lo=-1, hi=11), 0.0, 10.0, 7)),
    ("sieve", PL.sieve, lambda s, n: (10 * n + s,)),
    ("insertion_sort_int8", PL.insertion_sort, lambda s, n: (arr("int8", 3 * n, seed=s),)),
    ("bubble_sort_float32", PL.bubble_sort, lambda s, n: (arr("float32", 3 * n, seed=s),)),
    ("cellular_automaton", PL.cellular_automaton,
     lambda s, n: (arr("uint8", 4 * n, seed=s, lo=0, hi=2),
                   np.array([0, 1, 1, 1, 1, 0, 0, 0], np.uint8), n)),
    ("mandelbrot", PL.mandelbrot_points,
     lambda s, n: (np.linspace(-2, 0.5, n + 1), np.linspace(-1, 1, n), 20)),
    ("crc32_bitwise", crc32_bitwise, lambda s, n: (arr("uint8", 3 * n, seed=s, lo=0, hi=256),)),
    ("adler32", adler32, lambda s, n: (arr("uint8", 7 * n, seed=s, lo=0, hi=256),)),
    ("prefix_scan_int32", prefix_scan_with_branch,
     lambda s, n: (arr("int32", 3 * n, seed=s), 12)),
    ("prefix_scan_float32", prefix_scan_with_branch,
     lambda s, n: (arr("float32", 3 * n, seed=s, lo=-1, hi=3), 5.5)),
]


@pytest.mark.parametrize("name,fn,make", REAL, ids=[r[0] for r in REAL])
def test_element_loop_programs(name, fn, make):
    outs = check_calls(fn, make(0, 6), make(1, 3), make(2, 1))
    assert outs[0].exc is None, outs[0]


def test_checksums_match_zlib():
    import zlib
    data = arr("uint8", 40, lo=0, hi=256)
    assert int(numdyn.compile(crc32_bitwise)(data.copy())) == zlib.crc32(data.tobytes())
    assert int(numdyn.compile(PL.crc32)(data.copy(), PL.crc32_table())) == \
        zlib.crc32(data.tobytes())
    assert numdyn.compile(adler32)(data.copy()) == zlib.adler32(data.tobytes())


@pytest.mark.parametrize("name,fn,make", [r for r in REAL if r[0] in ("cholesky", "crc32_bitwise")],
                         ids=["cholesky", "crc32_bitwise"])
def test_element_loop_programs_both_backends(backend, name, fn, make):
    check_calls(fn, make(3, 5), make(4, 2), backend=backend)


# ---------------------------------------------------------------------------
# loops that are not captured (issue 17.2) still give NumPy's answer

def _helper(x, y):
    # (a loop in a helper: loops inline only straight-line helpers,
    # test_loops_helpers.py)
    for k in range(2):
        y = y + x
    return y


def calls_user_function(A):
    s = 0
    for i in range(len(A)):
        s = _helper(A[i], s)
    return s


def list_append(A):
    out = []
    for i in range(len(A)):
        if A[i] > 1:
            out.append(A[i])
    return out, len(out)


def object_arithmetic(A):
    q = Fraction(1, 3)
    names = ()
    for i in range(len(A)):
        q = q + Fraction(int(A[i]), i + 1)
        names = names + (str(i),)
    return q, names, {"n": len(A)}


def slices_in_the_loop(A, x, y, alpha):
    n, m = A.shape
    for i in range(n):
        A[i, :] = A[i, :] * 0.5
        A[i, i + 1:] = 0
        x[:i] += alpha * y[:i]
    return A, x


def dot_on_row_slices(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j] - np.dot(L[i, :j], L[j, :j])
            L[i, j] = math.sqrt(s) if i == j else s / L[j, j]
    return L


def generators(A):
    s = sum(A[i] * 2 for i in range(len(A)))
    t = 0
    for x in (A[i] for i in range(0, len(A), 2)):
        t += x
    u = [A[i] + 1 for i in range(len(A))]
    return s, t, u


def gen_func(n):
    for i in range(n):
        yield i * i


def uses_generator_function(A):
    s = 0
    for k in gen_func(len(A)):
        s += A[k % len(A)] * k
    return s


def iterate_array_directly(A, M):
    s = 0
    for x in A:
        s += x
    for row in M:
        s += row[0]
        row[1] = s
    return s, M


NOT_CAPTURED = [
    ("user_function", calls_user_function, lambda d: (arr(d, 6, lo=0, hi=4),)),
    ("list_append", list_append, lambda d: (arr(d, 8, lo=0, hi=4),)),
    ("object_arithmetic", object_arithmetic, lambda d: (arr(d, 5, lo=0, hi=4),)),
    ("generators", generators, lambda d: (arr(d, 5, lo=0, hi=4),)),
    ("generator_function", uses_generator_function, lambda d: (arr(d, 5, lo=0, hi=4),)),
    ("iterate_array", iterate_array_directly,
     lambda d: (arr(d, 4, lo=0, hi=4), arr(d, (3, 2), lo=0, hi=4))),
]


@pytest.mark.parametrize("name,fn,make,dtype", [r + (d,) for r, d in zip(
    NOT_CAPTURED, ["float64", "int64", "uint8", "float32", "int32", "int8"])],
    ids=[r[0] for r in NOT_CAPTURED])
def test_loops_left_to_the_tracer(name, fn, make, dtype):
    check_calls(fn, make(dtype))


@pytest.mark.parametrize("dtype", ["float64"])
def test_slices_and_dot_inside_loops(dtype):
    A = arr(dtype, (5, 5))
    x, y = arr(dtype, 5, seed=1), arr(dtype, 5, seed=2)
    check_calls(slices_in_the_loop, (A, x, y, 1.5),
                (A[:2, :2].copy(), x[:2].copy(), y[:2].copy(), 2.0))
    S = _spd(6, 3).astype(dtype)
    check_calls(dot_on_row_slices, (S,), (S[:1, :1].copy(),))


# ---------------------------------------------------------------------------
# the capture report: what CompiledFunction._loop_info() says (issue 17.2,
# "explain names each loop with captured or the construct and line that
# prevented it"). Skipped until the API exists.

def cap_range_sum(A):
    s = 0
    for i in range(len(A)):
        s += A[i]
    return s


def cap_while(A):
    i = 0
    s = A[0] * 0
    while i < len(A):
        s = s + A[i] * 2
        i += 1
    return s


def cap_if_break_continue(A, B):
    n = len(A)
    for i in range(n):
        if A[i] < 1:
            continue
        elif A[i] > 8:
            break
        else:
            B[i] = A[i] + B[i]
    return B


def cap_nested_2d(M):
    n, m = M.shape
    for i in range(n):
        for j in range(1, m):
            M[i, j] += M[i, j - 1]
    return M


def cap_two_loops(A):
    s = 0
    for i in range(len(A)):
        s += A[i]
    seen = []
    for i in range(len(A)):
        seen.append(i)
    return s, seen


def _line_of(fn, text):
    """Line (in fn's file) of the first source line of fn containing text."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(text)


def _info(fn, *args):
    f = numdyn.compile(fn)
    check_calls(fn, args, compiled=f)
    f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    info = f._loop_info()
    assert isinstance(info, list)
    for d in info:
        assert set(d) >= {"line", "captured", "reason"}, d
        assert type(d["line"]) is int and type(d["captured"]) is bool
        # the reason of a captured loop is empty ("" or None); else a str
        assert (not d["reason"]) if d["captured"] else type(d["reason"]) is str, d
    assert [d["line"] for d in info] == outer_loop_lines(fn), (info, outer_loop_lines(fn))
    return info


@pytest.mark.skipif(not getattr(numdyn.config, "loop_capture", True),
                    reason="loop capture turned off (NUMDYN_LOOPS=0)")
class TestCaptureReport:
    @pytest.mark.parametrize("dtype", ["float64", "int64"])
    @pytest.mark.parametrize("fn,make", [
        (cap_range_sum, lambda d: (arr(d, 20),)),
        (cap_while, lambda d: (arr(d, 20),)),
        (cap_if_break_continue, lambda d: (arr(d, 20, lo=0, hi=10), arr(d, 20, seed=1))),
        (cap_nested_2d, lambda d: (arr(d, (4, 5)),)),
    ], ids=["range", "while", "if_break_continue", "nested_2d"])
    def test_simple_element_loops_are_captured(self, fn, make, dtype):
        info = _info(fn, *make(dtype))
        assert len(info) == 1
        assert info[0]["captured"] is True, info
        assert not info[0]["reason"], info

    @pytest.mark.parametrize("fn,construct,text", [
        (calls_user_function, "_helper", "s = _helper(A[i], s)"),
        (list_append, "append", "out.append(A[i])"),
    ], ids=["user_function", "list_append"])
    def test_loops_with_python_calls_are_not_captured(self, fn, construct, text):
        info = _info(fn, arr("float64", 10))
        assert len(info) == 1
        assert info[0]["captured"] is False, info
        reason = info[0]["reason"]
        assert reason, info
        assert str(_line_of(fn, text)) in reason, (reason, _line_of(fn, text))
        assert construct in reason or "call" in reason.lower(), reason

    def test_each_outermost_loop_is_reported_in_source_order(self):
        info = _info(cap_two_loops, arr("int64", 10))
        assert len(info) == 2
        assert info[0]["captured"] is True and not info[0]["reason"], info
        assert info[1]["captured"] is False and info[1]["reason"], info
        assert str(_line_of(cap_two_loops, "seen.append(i)")) in info[1]["reason"], info
        assert info[0]["line"] < info[1]["line"]
