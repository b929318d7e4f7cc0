"""Loop capture, issue 17: the loop heads and slices beyond range() and
lo:hi -- `for x in a`, `enumerate(a)`, `enumerate(a, k)`, `zip(a, b, ...)`,
`enumerate(range(...))`, `zip(range(...), a)`, and slices with steps
(`a[lo:hi:s]`, negative steps, steps held in variables). Plain Python/NumPy
is the oracle (values, types, exceptions, arguments afterwards, warnings);
each program must also be captured (or, where a construct is not, say why).
"""
import numpy as np
import pytest

import numdyn
from loop_gen import arr
from loop_gen import check_calls as _check_calls
from programs_real import heat_2d

DTYPES = ["float64", "float32", "int64", "int32", "uint8", "bool"]

# the function check_calls compiled last, per program: assert_captured reads
# its loop report instead of compiling and calling the program again (what
# a loop statement was decided to be does not depend on the arguments)
_COMPILED = {}


def check_calls(fn, *arg_sets, **kw):
    if kw.get("compiled") is None:
        kw["compiled"] = numdyn.compile(fn, backend=kw.get("backend", "native"))
    _COMPILED[fn] = kw["compiled"]
    return _check_calls(fn, *arg_sets, **kw)


def loop_info(fn, *args):
    cf = numdyn.compile(fn)
    cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return cf._loop_info()


def assert_captured(fn, *args):
    cf = _COMPILED.pop(fn, None)
    info = cf._loop_info() if cf is not None else loop_info(fn, *args)
    assert info and all(i["captured"] for i in info), info
    return info


# ------------------------------------------------------------ loop heads

def heads(A, B):
    s = 0
    for i, x in enumerate(A):
        s += x * i
    for k, x in enumerate(B, 3):
        s += x + k
    for x, y in zip(A, B):
        s += x * y
    for i, x in zip(range(2, 100, 3), A):
        s += i * x
    for x in B:
        s += x
    for i, j in enumerate(range(7, -1, -2)):
        s += i * j
    for x, y, z in zip(A, B, A):
        s += x * y + z
    return s


@pytest.mark.parametrize("dtype", DTYPES)
def test_enumerate_zip_and_array_iteration(dtype):
    A, B = arr(dtype, 6, seed=1, hi=5), arr(dtype, 9, seed=2, hi=5)
    check_calls(heads, (A, B), (A[:0], B), (A, B[:2]), (A[:1], B[:1]))
    assert_captured(heads, A, B)


def stores_while_iterating(A, B):
    # the element is read before the body writes it (as Python's iterator)
    for i, x in enumerate(A):
        A[i] = x * 2 + B[i % len(B)]
        if i + 1 < len(A):
            A[i + 1] = x
    for x, y in zip(A, B):
        B[0] = x + y
    return A, B


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
def test_iteration_sees_earlier_stores(dtype):
    A, B = arr(dtype, 7, seed=3, hi=4), arr(dtype, 3, seed=4, hi=4)
    check_calls(stores_while_iterating, (A, B), (A[:2], B[:1]))
    assert_captured(stores_while_iterating, A, B)


def rows(M):
    s = 0.0
    for i, row in enumerate(M):
        for j, x in enumerate(row):
            s += x * (i + j)
            row[j] = i - j
    for row in M:
        row[0] = row[-1] + 1
    return s, M


@pytest.mark.parametrize("dtype", ["float64", "int64", "int8"])
def test_rows_of_a_2d_array(dtype):
    M = arr(dtype, (4, 5), seed=5, hi=4)
    check_calls(rows, (M,), (M[:1, :2],), (M.T.copy(),))
    assert_captured(rows, M)


def index_error_in_body(A, B):
    t = 0
    for i, x in enumerate(A):
        B[i] = x          # B shorter than A: IndexError at iteration len(B)
        t += 1
    return t


def test_index_error_at_the_same_iteration():
    A, B = np.arange(6.0), np.zeros(4)
    out = check_calls(index_error_in_body, (A, B), (A[:3], B))
    assert isinstance(out[0].exc, IndexError)
    assert out[1].exc is None
    assert_captured(index_error_in_body, A[:3], B)


def names_after_loop(A):
    x = -1
    i = -1
    for i, x in enumerate(A):
        pass
    return i, x


def test_targets_keep_their_values_after_an_empty_loop():
    for a in (np.arange(5), np.arange(0)):
        check_calls(names_after_loop, (a,))
    assert_captured(names_after_loop, np.arange(3))


def unbound_after_empty(A):
    for x in A:
        pass
    return x


def test_unbound_target_after_empty_loop():
    out = check_calls(unbound_after_empty, (np.arange(0.0),), (np.arange(2.0),))
    assert isinstance(out[0].exc, UnboundLocalError)


def rebinds_iterated(A, B):
    s = 0
    for x in A:
        s += x
        A = B       # the iterator keeps the first array
    return s


def test_rebinding_the_iterated_array_is_not_captured():
    A, B = np.arange(4), np.arange(10, 20)
    check_calls(rebinds_iterated, (A, B))
    info = loop_info(rebinds_iterated, A, B)
    assert not info[0]["captured"] and "rebinds" in info[0]["reason"], info


def python_int_counter(A):
    # enumerate's count is a Python int: past int64 it deoptimizes
    big = 2 ** 62
    s = 0
    for i, x in enumerate(A, 7):
        s += big * i
    return s


def test_enumerate_count_is_a_python_int():
    out = check_calls(python_int_counter, (np.arange(3),))
    assert out[0].value > 2 ** 63


def shadowed(A):
    s = 0
    for i, x in enumerate(A):
        s += i
    return s


def test_shadowed_enumerate_runs_python():
    # a global `enumerate` that is not the builtin: Python runs the loop
    def fake(a):
        return [(0, 100)]
    shadowed.__globals__["enumerate"] = fake
    try:
        check_calls(shadowed, (np.arange(5),))
    finally:
        del shadowed.__globals__["enumerate"]


# ------------------------------------------------------------ steps

def strided(A, B, s):
    t = 0.0
    for i in range(3):
        A[::2] += 1
        A[::-1] = A * 2
        t += np.sum(A[::s]) + np.sum(A[-2::-3]) + np.dot(A[5:1:-1], B[:4])
        w = A[len(A) - 1::-2]
        w[0] = 7
        B[i:i + 8:2] = A[:4]
        t += B[::3].max() + np.argmin(A[1::2])
    return t, A, B


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16"])
def test_strided_slices(dtype):
    A, B = arr(dtype, 10, seed=6, hi=3), arr(dtype, 12, seed=7, hi=3)
    # (float32 dot products round as BLAS's sdot may not: the float64 total
    # carries float32 rounding)
    check_calls(strided, (A, B, 2), (A, B, -1), (A, B, 3), (A[:8], B, -2),
                rtol=1e-5 if dtype == "float32" else None)
    assert_captured(strided, A, B, 2)


def signed_zero_extremes(A):
    out = np.zeros(4)
    for i in range(1):
        out[0] = np.max(A[::-1])
        out[1] = np.min(A[::-2])
        out[2] = np.sum(A[::-1])
        out[3] = np.argmax(A[::-1])
    return out, np.signbit(out)


def test_reductions_of_reversed_slices_follow_memory_order():
    A = np.array([0.0, -0.0, 1e-300, 0.0, -0.0, -0.0, 0.0, 1e16, 1.0, -1e16, 3.0])
    check_calls(signed_zero_extremes, (A,), (A[:7],), (-A,))
    assert_captured(signed_zero_extremes, A)


def test_zero_step_raises_value_error():
    A, B = np.arange(10.0), np.arange(12.0)
    out = check_calls(strided, (A, B, 0))
    assert isinstance(out[0].exc, ValueError)


def strided_2d(M, v):
    for i in range(M.shape[0]):
        M[i, ::2] = M[i, ::2] * 2
        M[::-1, i % M.shape[1]] += v[i % len(v)]
    return M


def test_strided_rows_and_columns_of_2d():
    M, v = arr("float64", (5, 6), seed=8), arr("float64", 4, seed=9)
    check_calls(strided_2d, (M, v), (M[:, :3], v))
    assert_captured(strided_2d, M, v)


def overlap_steps(A):
    for _ in range(2):
        A[1::2] = A[::2][:len(A[1::2])]  # noqa: E501  (a chained slice: not captured)
        A[::-1] = A                       # reads what it writes, reversed
        A[2:] += A[:-2:1]
    return A


def test_overlapping_strided_store_is_numpys():
    A = np.arange(9.0)
    check_calls(overlap_steps, (A,), (np.arange(4.0),))


def reverse_in_place(A):
    n = len(A)
    for _ in range(3):
        A[::-1] = A
        A[: n // 2] = A[n - 1: (n - 1) // 2: -1]
    return A


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_reversed_views_overlapping_the_target(dtype):
    A = arr(dtype, 9, seed=10)
    check_calls(reverse_in_place, (A,), (A[:4],), (A[:1],))
    assert_captured(reverse_in_place, A)


# ------------------------------------------------------------ 2-D parts

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_2d_stencil_with_swapped_buffers(dtype):
    u = arr(dtype, (12, 9), seed=11)
    check_calls(heat_2d, (u, 0.2, 5), (u[:3], 0.1, 4), (u, 0.2, 0), (u[:, :2], 0.2, 3),
                (np.asfortranarray(u), 0.2, 2))
    assert_captured(heat_2d, u, 0.2, 3)


def swap_identity(a, b, n):
    for _ in range(n):
        a, b = b, a
    a[0, 0] = 99
    return a, b


def test_swapped_names_are_the_same_objects():
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    check_calls(swap_identity, (a, b, 3), (a, b, 2), (a, b, 0))
    cf = numdyn.compile(swap_identity)
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    ra, rb = cf(a, b, 3)
    assert ra is b and rb is a and b[0, 0] == 99
    assert_captured(swap_identity, a, b, 1)


def rotate3(a, b, c, n):
    for _ in range(n):
        a, b, c = b, c, a
        b[0] += 1
        d = a
        d[-1] -= 1
    return a, b, c


def test_three_way_rotation_and_copy_of_names():
    a, b, c = np.zeros(4), np.ones(4), np.full(4, 2.0)
    check_calls(rotate3, (a, b, c, 4), (a, b, c, 0))
    assert_captured(rotate3, a, b, c, 2)


def readonly_swap(a, b, n):
    for _ in range(n):
        a, b = b, a
        a[0, 0] = 1.0
    return a


def test_swap_into_a_read_only_array_raises_as_numpy():
    # (check_calls deep-copies its arguments, which makes them writeable)
    def args():
        a, b = np.zeros((2, 2)), np.zeros((2, 2))
        b.flags.writeable = False
        return a, b
    cf = numdyn.compile(readonly_swap)
    for n in (1, 2):
        a, b = args()
        with pytest.raises(ValueError) as exp:
            readonly_swap(a, b, n)
        a2, b2 = args()
        with pytest.raises(ValueError) as got:
            cf(a2, b2, n)
        assert str(got.value) == str(exp.value)
        assert np.array_equal(a, a2) and np.array_equal(b, b2)
    a, b = args()
    cf(a, b, 0)


def reductions_2d(A, B):
    t = 0.0
    for i in range(2):
        t += np.max(np.abs(A[1:, :] - B[:-1, :])) + np.min(A[:, 1:] * 2)
        t += np.sum(A[::2, 1:]) + np.argmax(B[1:, ::-1]) + np.argmin(A)
        t += np.sum(A * B) + (A[1:-1, 1:-1] + 1).sum()
        A[1:, 1:] -= 0.5 * B[:-1, :-1]
    return t, A


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_2d_reductions_and_updates(dtype):
    A, B = arr(dtype, (7, 6), seed=12, hi=5), arr(dtype, (7, 6), seed=13, hi=5)
    if "int" in dtype:
        # (an in-place float update of an int array: NumPy's casting error)
        out = check_calls(reductions_2d, (A, B))
        assert out[0].exc is not None
        return
    check_calls(reductions_2d, (A, B), (A[:2, :3], B[:2, :3]), rtol=1e-5 if dtype == "float32" else None)
    assert_captured(reductions_2d, A, B)


def int_2d_updates(A, B):
    s = 0
    for i in range(3):
        A[1:, :] += B[:-1, :] * i
        A[:, ::2] //= 2
        A[1:-1, 1:-1] = A[:-2, 2:] - A[2:, :-2]
        s += np.sum(A[::-1, :]) + np.max(B[:, 1:])
    return s, A


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_2d_integer_work(dtype):
    A, B = arr(dtype, (6, 7), seed=14, hi=50), arr(dtype, (6, 7), seed=15, hi=50)
    check_calls(int_2d_updates, (A, B), (A[:1], B[:1]), (A[:, :2], B[:, :2]))
    assert_captured(int_2d_updates, A, B)


def overlap_2d(A):
    for _ in range(2):
        A[1:, 1:] = A[:-1, :-1] + A[1:, 1:]     # reads what it writes, shifted
        A[::-1, :] = A * 0.5                     # reversed rows
        A[:, :] += 1.0
    return A


def test_overlapping_2d_stores_are_numpys():
    A = arr("float64", (6, 6), seed=16)
    check_calls(overlap_2d, (A,), (A[:2, :3],))
    assert_captured(overlap_2d, A)


def shape_mismatch_2d(A, B):
    for _ in range(2):
        A[1:, :] = B      # B broadcasts (or does not) as NumPy decides
    return A


def test_2d_broadcast_or_mismatch_goes_to_numpy():
    A = np.zeros((4, 3))
    check_calls(shape_mismatch_2d, (A, np.ones((3, 3))), (A, np.ones((1, 3))), (A, np.ones((2, 3))))


def index_error_2d(A, k):
    for i in range(5):
        A[i, :] = A[i, :] * 2     # row i: IndexError at i == len(A)
        A[1:, 1:] += 1
    return A


def test_2d_work_then_index_error_at_the_same_iteration():
    A = arr("float64", (3, 4), seed=17)
    out = check_calls(index_error_2d, (A, 0), (arr("float64", (6, 4), seed=18), 0))
    assert isinstance(out[0].exc, IndexError) and out[1].exc is None


# ------------------------------------------------------------ hoisted range checks

def shifted_indices(A, B, n):
    s = 0.0
    for i in range(1, n):
        for j in range(n - 1, -1, -1):
            A[i, j] = A[i - 1, j] + B[j] * 0.5
            s += A[i, j - 1] + B[-1]
    for k in range(n):
        B[k + 1] = B[k] - 1     # leaves B at k == len(B) - 1
    return s, A, B


@pytest.mark.parametrize("n", [0, 1, 4, 5, 6])
def test_range_checks_proved_once_keep_index_errors(n):
    # n <= 4 fits A (4 x 5) and B (5) for the first loops, not the last;
    # n >= 5 leaves A at some iteration: IndexError where NumPy raises it,
    # arrays as NumPy leaves them
    A, B = np.arange(20.0).reshape(4, 5), np.arange(5.0)
    check_calls(shifted_indices, (A, B, n))
    assert_captured(shifted_indices, A, B, 3)


def rebound_loop_variable(A, n):
    s = 0
    for i in range(n):
        s += A[i]
        i = i + 7        # a rebound loop variable: checked at each access
        if i < len(A):
            s += A[i]
    return s


def test_rebound_loop_variable_keeps_its_checks():
    A = np.arange(10)
    check_calls(rebound_loop_variable, (A, 10), (A, 11), (A, 3))
    assert_captured(rebound_loop_variable, A, 3)


def row_scan(A):
    s = 0
    for i in range(A.shape[0]):
        for j in range(1, A.shape[1]):
            A[i, j] += A[i, j - 1]
            s += A[i, j]
    return s, A


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
def test_contiguous_rows_and_strided_views_compile_apart(dtype):
    # a contiguous last axis makes its stride a constant of the C code: a
    # strided view of the same dtype is another signature
    A = arr(dtype, (5, 8), seed=19, hi=4)
    cf = numdyn.compile(row_scan)
    check_calls(row_scan, (A,), (A[:, ::2],), (A.T,), (A[::-1, ::-1],), (A[:, :1],), compiled=cf)
    assert_captured(row_scan, A[:, ::3])
