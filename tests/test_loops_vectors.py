"""Loop capture of 1-D array work in loops (issue 13's column sweeps,
triangular solves and row updates; issue 17): slices a[i, lo:hi], rows a[i]
of 2-D arrays, elementwise arithmetic and NumPy ufuncs over them, np.dot /
np.sum / .sum() / .dot() reductions, and stores a[i, lo:hi] = v,
a[i] op= v. Each function is compared with plain NumPy (values, dtypes,
warnings, exceptions, arguments after the call) and must be captured:
without the vector capture these loops stay with the tracer."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls
from programs_real import back_subst_multi, cholesky_cols, cholesky_rows, knapsack_01


def captured(fn, *args):
    cf = numdyn.compile(fn)
    cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    info = cf._loop_info()
    assert info and all(i["captured"] for i in info), info
    return cf


def check_captured(fn, *arg_sets, **kw):
    """check_calls(fn, *arg_sets) on one compiled function, then that its
    loops were captured (one compile where captured() + check_calls() made
    two)."""
    cf = numdyn.compile(fn)
    outs = check_calls(fn, *arg_sets, compiled=cf, **kw)
    info = cf._loop_info()
    assert info and all(i["captured"] for i in info), info
    return outs


# ---------------------------------------------------------------- programs

def forward_subst(L, b):
    n = L.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i].dot(x[:i])) / L[i, i]
    return x


def gauss_seidel_rows(u, f, sweeps):
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    for _ in range(sweeps):
        for i in range(1, n - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:]
                                 + h2 * f[i, 1:-1])
    return u


def march_columns(p, nu):
    n, m = p.shape
    for j in range(1, m):
        p[1:n - 1, j] = p[1:n - 1, j - 1] + nu * (p[2:n, j - 1] - 2.0 * p[1:n - 1, j - 1]
                                                  + p[0:n - 2, j - 1])
    return p


def row_updates(A, c):
    for i in range(1, A.shape[0]):
        A[i] -= c * A[i - 1]
        A[i, ::1] *= 0.5
    return A


def spd(n, seed=0):
    M = np.random.default_rng(seed).standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_programs(dtype):
    S = spd(24).astype(dtype)
    L = (np.tril(arr(dtype, (30, 30), seed=1)) + 8 * np.eye(30)).astype(dtype)
    b = arr(dtype, 30, seed=2)
    U, F = arr(dtype, (20, 20), seed=3), arr(dtype, (20, 20), seed=4)
    P = arr(dtype, (16, 12), seed=5)
    for fn, args in [(cholesky_rows, (S,)), (forward_subst, (L, b)),
                     (gauss_seidel_rows, (U, F, 3)), (march_columns, (P, 0.1)),
                     (row_updates, (arr(dtype, (6, 5), seed=6), 0.25))]:
        check_captured(fn, args)


# ---------------------------------------------------------------- slices

def slice_bounds(A, lo, hi):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.sum(A[i, lo:hi]) + np.sum(A[i, lo:]) + np.sum(A[i, :hi]) + A[i, :].sum()
    return s


@pytest.mark.parametrize("lo,hi", [(1, 4), (-3, -1), (-100, 100), (4, 2), (0, 0), (5, 9)])
def test_slice_bounds_as_python(lo, hi):
    A = arr("float64", (4, 6))
    check_captured(slice_bounds, (A, lo, hi))


def shift_right(a):
    for _ in range(3):
        a[1:] = a[:-1]
    return a


def shift_left_add(a):
    for _ in range(2):
        a[:-1] += a[1:]
    return a


def two_names_one_buffer(a, b):
    for i in range(1, a.shape[0]):
        a[i, 1:] = b[i, :-1] * 2.0
    return a


def test_right_side_is_computed_before_the_write():
    a = np.arange(8.0)
    check_captured(shift_right, (a,))
    check_calls(shift_left_add, (np.arange(8.0),))
    A = arr("float64", (4, 5))
    captured(two_names_one_buffer, A.copy(), A.copy())
    # the same buffer under two names (NumPy reads b's old values)
    cf = numdyn.compile(two_names_one_buffer)
    X, Y = A.copy(), A.copy()
    assert np.array_equal(cf(X, X), two_names_one_buffer(Y, Y))


# ---------------------------------------------------------------- reductions

def reductions(A, B):
    s = 0.0
    d = 0
    for i in range(A.shape[0]):
        s += np.sum(A[i, :]) * 1.0
        d += np.dot(B[i, :], B[i, :])
    return s, d


@pytest.mark.parametrize("fdt,idt", [("float64", "int64"), ("float32", "int8"),
                                     ("float32", "uint16"), ("float64", "bool")])
def test_reduction_types_and_values(fdt, idt):
    A = arr(fdt, (5, 300), seed=7, lo=-1e3, hi=1e3)
    B = arr(idt, (5, 40), seed=8) if idt != "bool" else arr(idt, (5, 40), seed=8)
    outs = check_captured(reductions, (A, B))
    assert outs[0].exc is None


def float_sum_bits(A):
    out = np.zeros(A.shape[0], dtype=A.dtype)
    for i in range(A.shape[0]):
        out[i] = np.sum(A[i, :])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [3, 8, 100, 129, 526, 1000, 1999])
def test_sum_is_numpys_pairwise_sum_bit_for_bit(dtype, n):
    # 526, 1999: a half of 258-271 elements whose halves are 128 (a leaf) and
    # more (halved again): kernels/nd_loop.h's NDL_PAIRWISE inlines two levels
    A = (np.random.default_rng(n).standard_normal((3, n)) * 10.0 ** np.arange(n % 7)[None, :1]
         ).astype(dtype)
    captured(float_sum_bits, A)
    got = numdyn.compile(float_sum_bits)(A)
    assert np.array_equal(got, float_sum_bits(A))


def dot_shapes(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.dot(A[i, :], x[:i + 3])
    return s


def test_dot_of_different_lengths_raises_numpys_error():
    A, x = arr("float64", (4, 5)), arr("float64", 9)
    outs = check_calls(dot_shapes, (A, x))
    assert type(outs[0].exc) is ValueError


# ---------------------------------------------------------------- NumPy's array semantics

def int_rows(A, c):
    for i in range(1, A.shape[0]):
        A[i, :] = A[i, :] * c + A[i - 1, :]
    return A


def test_integer_arrays_wrap_silently():
    A = np.full((4, 5), 100, np.int8)
    outs = check_captured(int_rows, (A, 3), (np.full((4, 5), 7, np.uint8), 200))
    assert outs[0].categories == ()


def int_div_rows(A, B):
    for i in range(A.shape[0]):
        A[i, :] = A[i, :] // B[i, :]
    return A


def test_integer_division_by_zero_warns_as_numpy():
    A = arr("int32", (3, 4), seed=9)
    B = arr("int32", (3, 4), seed=10, lo=1, hi=5)
    B0 = B.copy()
    B0[1, 2] = 0
    outs = check_calls(int_div_rows, (A, B), (A, B0))
    assert outs[1].categories == ("RuntimeWarning",)


def sqrt_rows(A):
    for i in range(A.shape[0]):
        A[i, :] = np.sqrt(A[i, :]) + np.exp(A[i, :] * 2.0)
    return A


def test_float_events_warn_as_numpy():
    A = arr("float64", (3, 4))
    Aneg = A.copy()
    Aneg[2, 1] = -1.0
    Abig = A.copy()
    Abig[0, 0] = 1e300
    outs = check_calls(sqrt_rows, (A,), (Aneg,), (Abig,))
    assert outs[0].categories == ()
    assert outs[1].categories == ("RuntimeWarning",)
    assert outs[2].categories == ("RuntimeWarning",)
    with np.errstate(invalid="raise"):
        outs = check_calls(sqrt_rows, (Aneg,))
    assert type(outs[0].exc) is FloatingPointError


def nan_rows(A):
    s = 0.0
    for i in range(A.shape[0]):
        A[i, :] = A[i, :] * 2.0 + 1.0
        s += np.sum(A[i, :])
    return A, s


def test_nan_data_flows_without_warnings():
    A = arr("float64", (3, 4))
    A[1, 2] = np.nan
    A[2, 0] = np.inf
    outs = check_calls(nan_rows, (A,))
    assert outs[0].categories == ()


def fill_rows(A, v):
    for i in range(A.shape[0]):
        A[i, 1:3] = v
        A[i] += 1
    return A


@pytest.mark.parametrize("dtype,v", [("int8", 2.5), ("int8", 300.0), ("int8", np.nan),
                                     ("uint8", -1), ("float32", 1e300), ("int64", 7)])
def test_scalar_fill_as_numpy(dtype, v):
    outs = check_calls(fill_rows, (np.zeros((3, 4), dtype), v))
    assert outs is not None


def mixed_inplace(A, x):
    for i in range(A.shape[0]):
        A[i, :] += x[i, :]
    return A


def test_inplace_cast_rules():
    # float32 += float64: same_kind, computed in float64 then cast
    check_calls(mixed_inplace, (arr("float32", (3, 4)), arr("float64", (3, 4))))
    # int += float: NumPy raises UFuncTypeError (the loop stays with Python)
    outs = check_calls(mixed_inplace, (arr("int32", (3, 4)), arr("float64", (3, 4))))
    assert outs[0].exc is not None and "cast" in str(outs[0].exc)


def index_error(A, k):
    for i in range(A.shape[0] + k):
        A[i, 1:] = A[i, :-1] + 1.0
    return A


def test_index_error_at_the_same_row_with_rows_before_written():
    outs = check_calls(index_error, (arr("float64", (3, 4)), 2))
    assert type(outs[0].exc) is IndexError


def broadcast_one(A, b):
    for i in range(A.shape[0]):
        A[i, :] = A[i, :] + b[i:i + 1]
    return A


def test_length_one_broadcasts_like_numpy():
    check_calls(broadcast_one, (arr("float64", (3, 4)), arr("float64", 3)))


def length_mismatch(A):
    for i in range(A.shape[0]):
        A[i, 1:] = A[i, :]
    return A


def test_length_mismatch_raises_numpys_error():
    outs = check_calls(length_mismatch, (arr("float64", (3, 4)),))
    assert type(outs[0].exc) is ValueError


def bool_rows(M, A):
    for i in range(M.shape[0]):
        M[i, :] = A[i, :] > 0.5
    return M


def test_comparisons_give_bool_arrays():
    A = arr("float64", (3, 4))
    A[1, 1] = np.nan
    outs = check_calls(bool_rows, (np.zeros((3, 4), bool), A))
    assert outs[0].categories == ()


def array_and_scalar_in_one_name(A):
    s = 0.0
    for i in range(A.shape[0]):
        row = A[i, :] * 2.0
        s += row[0]
        row = 1.0
    return s, row


def test_a_name_given_an_array_and_a_scalar_is_left_to_python():
    cf = numdyn.compile(array_and_scalar_in_one_name)
    A = arr("float64", (3, 4))
    assert cf(A) == array_and_scalar_in_one_name(A)
    info = cf._loop_info()
    assert info and "name" in info[0].get("last_fallback", ""), info


# ---------------------------------------------------------------- array locals (views)

def lu_with_row_view(A):
    n = A.shape[0]
    for k in range(n):
        pivot = A[k, k]
        row = A[k, k + 1:]
        for i in range(k + 1, n):
            A[i, k] /= pivot
            A[i, k + 1:] -= A[i, k] * row
    return A


def knapsack(weights, values, capacity):
    best = np.zeros(capacity + 1)
    for i in range(weights.shape[0]):
        w = weights[i]
        old = best[:capacity + 1 - w]
        best[w:] = np.maximum(best[w:], old + values[i])
    return best


def views_write_through(A):
    s = 0.0
    for i in range(A.shape[0]):
        r = A[i]
        t = r[1:]
        t[0] = -1.0
        t[1:] *= 2.0
        s += np.sum(t) + len(r) + r[0] + t.shape[0]
    return s, r, t


def maybe_unbound(A, k):
    s = 0.0
    for i in range(A.shape[0]):
        if i >= k:
            r = A[i]
        s += r[0]
    return s


def view_before_the_loop(A, x):
    r = x
    for i in range(A.shape[0]):
        r[0] += 1.0
        r = A[i]
    return r


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_array_locals_are_views(dtype):
    M = (arr(dtype, (12, 12), seed=18) + 12 * np.eye(12)).astype(dtype)
    for fn, args in [(lu_with_row_view, (M,)), (views_write_through, (arr(dtype, (4, 5)),)),
                     (view_before_the_loop, (arr(dtype, (3, 4)), arr(dtype, 4)))]:
        check_captured(fn, args)
    W = np.array([3, 5, 1, 7, 2])
    check_captured(knapsack, (W, arr(dtype, 5), 20))


def test_returned_views_share_memory_with_their_array():
    A = arr("float64", (3, 4))
    r, t = numdyn.compile(views_write_through)(A)[1:]
    assert np.shares_memory(r, A) and np.shares_memory(t, A)
    r[0] = 123.0
    assert A[2, 0] == 123.0


def test_an_array_local_read_before_it_has_a_value_raises_as_python():
    A = arr("float64", (3, 2))
    outs = check_captured(maybe_unbound, (A, 0), (A, 1))
    assert type(outs[1].exc) is UnboundLocalError


def view_of_readonly(A):
    for i in range(A.shape[0]):
        r = A[i]
        r[0] = 1.0
    return A


def test_a_view_of_a_readonly_array_refuses_writes():
    A = arr("float64", (3, 2))
    before = A.copy()
    A.setflags(write=False)   # (check_calls' deep copies would be writeable)
    with pytest.raises(ValueError, match="read-only") as plain:
        view_of_readonly(A)
    with pytest.raises(ValueError) as compiled:
        numdyn.compile(view_of_readonly)(A)
    assert str(compiled.value) == str(plain.value)
    assert np.array_equal(A, before)


# ---------------------------------------------------------------- matrix products

def syrk_rows(C, A, alpha, beta):
    for i in range(C.shape[0]):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * (A[:i + 1, :] @ A[i, :])
    return C


def products_of_whole_arrays(M, v):
    out = np.zeros(M.shape[0], dtype=M.dtype)
    for i in range(1, M.shape[0]):
        out[:i] += np.dot(M[:i, :], v) + v[:i] @ M[:i, :i] + np.matmul(M[i, :i], M[:i, :i])
    return out, np.dot(v, v)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matrix_vector_products(dtype):
    S = spd(20).astype(dtype)
    U = (np.triu(arr(dtype, (12, 12), seed=11)) + 6 * np.eye(12)).astype(dtype)
    B = arr(dtype, (12, 3), seed=12)
    for fn, args in [(cholesky_cols, (S,)), (back_subst_multi, (U, B)),
                     (syrk_rows, (arr(dtype, (9, 9), seed=13), arr(dtype, (9, 4), seed=14), 0.5, 2.0))]:
        check_captured(fn, args)


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float64", "bool"])
def test_products_of_whole_arrays_wrap_like_numpy(dtype):
    M, v = arr(dtype, (7, 7), seed=15), arr(dtype, 7, seed=16)
    check_captured(products_of_whole_arrays, (M, v))


def mismatched_product(M, v):
    s = 0.0
    for i in range(M.shape[0]):
        s += np.sum(M[:, :i + 1] @ v)
    return s


def test_product_of_mismatched_shapes_raises_numpys_error():
    outs = check_calls(mismatched_product, (arr("float64", (4, 4)), arr("float64", 2)))
    assert type(outs[0].exc) is ValueError


def matrix_as_a_value(M):
    s = 0.0
    for i in range(M.shape[0]):
        s += np.sum(M[:i, :] * 2.0)
    return s


def test_elementwise_work_on_2d_slices_is_captured():
    # (2-D parts are captured since issue 17's 2-D work: tests/test_loops_more.py)
    M = arr("float64", (4, 3))
    check_calls(matrix_as_a_value, (M,), (M[:1],))
    captured(matrix_as_a_value, M)


# ---------------------------------------------------------------- extremes

def extremes(A):
    out = np.zeros((A.shape[0], 4))
    idx = np.zeros((A.shape[0], 2), dtype=np.int64)
    for i in range(A.shape[0]):
        out[i, 0] = np.max(A[i, :])
        out[i, 1] = A[i, 1:].min()
        out[i, 2] = np.amax(np.abs(A[i, :]) * 1.0)
        out[i, 3] = A[i, :].max() * 1.0 - np.min(A[i, :-1]) * 1.0
        idx[i, 0] = np.argmax(A[i, :])
        idx[i, 1] = A[i, :].argmin()
    return out, idx


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16", "bool"])
def test_max_min_argmax_argmin_as_numpy(dtype):
    A = arr(dtype, (6, 7), seed=17)
    if A.dtype.kind == "f":   # NaNs (first one wins), signed zeros (the later of equals)
        A[2, 3] = np.nan
        A[3, :] = 0.0
        A[3, 2] = -0.0
        A[4, 1] = A[4, 5] = np.nan
    check_captured(extremes, (A,))
    got = numdyn.compile(extremes)(A)[0]
    assert np.array_equal(np.signbit(got), np.signbit(extremes(A)[0]))


def extreme_of_empty(A, k):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.max(A[i, k:])
    return s


def test_extreme_of_an_empty_slice_raises_numpys_error():
    outs = check_calls(extreme_of_empty, (arr("float64", (3, 4)), 4))
    assert type(outs[0].exc) is ValueError and "zero-size" in str(outs[0].exc)


# ---------------------------------------------------------------- computed array locals

def nbody_acc(pos, mass):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for i in range(n):
        for j in range(n):
            if i != j:
                d = pos[j] - pos[i]
                r2 = np.dot(d, d) + 1e-3
                acc[i] += mass[j] * d / (r2 * np.sqrt(r2))
    return acc


def temp_reads_itself(A):
    for i in range(A.shape[0]):
        t = A[i] * 2
        t = t[::1] + t[0]
        t[0] = -1
    return t


def temp_of_ints(A, c):
    s = 0
    for i in range(A.shape[0]):
        d = A[i] * c - A[i - 1]
        s += d.sum()
    return s, d


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_computed_arrays_given_to_names(dtype):
    pos, mass = arr(dtype, (9, 3), seed=19), arr(dtype, 9, seed=20)
    check_captured(nbody_acc, (pos, mass))
    W = np.array([3, 5, 1, 7, 2])
    check_captured(knapsack_01, (W, arr(dtype, 5), 20))
    check_captured(temp_reads_itself, (arr(dtype, (3, 4)),))


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64"])
def test_computed_integer_arrays_wrap_and_are_handed_back(dtype):
    A = arr(dtype, (4, 5), seed=21)
    outs = check_captured(temp_of_ints, (A, 100), (A, 3))
    assert outs[0].exc is None


def view_of_a_temp(A):
    for i in range(A.shape[0]):
        t = A[i] * 2.0
        u = t[1:]
    return u


def test_a_view_of_a_computed_array_is_left_to_python():
    cf = numdyn.compile(view_of_a_temp)
    A = arr("float64", (3, 4))
    assert np.array_equal(cf(A), view_of_a_temp(A))
    assert "view" in cf._loop_info()[0].get("last_fallback", "")


# ---------------------------------------------------------------- random programs

def _random_program(rng):
    """A loop of 1-D array statements over rows and columns of A and B, with
    random bounds (some of which mismatch), operators, ufuncs, reductions and
    array locals."""
    def part(name):
        # four elements (5 x 5 arrays), now and then another length
        if rng.random() < 0.05:
            return f"{name}[i, {rng.choice(['2:', ':-2', 'j:'])}]"
        return rng.choice([f"{name}[i, 1:]", f"{name}[i, :-1]", f"{name}[i, :4]", f"{name}[1:, j]",
                           f"{name}[:4, j]", f"{name}[i, -4:]", f"{name}[(i + 1) % n, 1:n]"])

    def vexpr(depth=0):
        k = rng.integers(7 if depth < 2 else 3)
        if k == 0:
            return part(rng.choice(["A", "B"]))
        if k == 1:
            return "row"
        if k == 2:
            return f"{part('B')} * {rng.choice(['2', '0.5', 'c', 'A[i, 0]'])}"
        if k == 3:
            return f"({vexpr(depth + 1)} {rng.choice(['+', '-', '*'])} {vexpr(depth + 1)})"
        if k == 4:
            return f"np.{rng.choice(['abs', 'sqrt', 'exp', 'square'])}({vexpr(depth + 1)})"
        if k == 5:
            return f"np.maximum({vexpr(depth + 1)}, {rng.choice(['0.0', 'c', part('A')])})"
        return f"({vexpr(depth + 1)} + np.{rng.choice(['sum', 'max', 'min'])}({part('A')}))"

    stmts = [f"row = {part('A')}"]
    for _ in range(rng.integers(1, 4)):
        k = rng.integers(4)
        if k == 0:
            stmts.append(f"{part('A')} = {vexpr()}")
        elif k == 1:
            stmts.append(f"{part('A')} {rng.choice(['+=', '-=', '*='])} {vexpr()}")
        elif k == 2:
            stmts.append(f"s += np.dot({part('A')}, {part('B')})")
        else:
            stmts.append(f"t = {vexpr()}\n        s += t.sum()")
    body = "\n        ".join(stmts)
    return f"""
def f(A, B, c):
    n = A.shape[0]
    s = 0.0
    for i in range(n):
        j = (i * 7) % A.shape[1]
        {body}
    return A, s
"""


@pytest.mark.parametrize("seed", range(40))
def test_random_vector_programs(seed):
    from loop_gen import make_function
    rng = np.random.default_rng(1000 + seed)
    src = _random_program(rng)
    fn = make_function(src)
    dtype = ["float64", "float32", "int32"][seed % 3]
    A, B = arr(dtype, (5, 5), seed=seed), arr(dtype, (5, 5), seed=seed + 1)
    try:
        check_calls(fn, (A, B, 1.5), (A, B, -2.0))
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:{src}") from None
