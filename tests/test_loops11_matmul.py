"""2-D matrix work inside captured loops (issue 17, Kalman filter of
bench_loops): products of two 2-D operands (`@`, np.dot, np.matmul; each
operand a 2-D part, a whole array, `X.T`, or a computed 2-D value such as
another product), `X.T` of a name, np.linalg.inv of a small float matrix.
NumPy's results: floats within rounding (BLAS/LAPACK sum in other orders),
integers wrapping exactly; NumPy's errors at NumPy's iteration (a shape
mismatch's ValueError, a singular matrix's LinAlgError, with the arrays the
loop stored into as NumPy left them); bool products and inv of integer
matrices run in Python. The oracle is plain Python/NumPy."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls
from programs_loops import kalman_filter  # bench/programs_loops.py, the benchmark itself


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def not_c(cf, what=None):
    info = cf._loop_info()
    why = info[0].get("last_fallback") or info[0].get("reason") if info else None
    assert why and (what is None or what in why), info


def kalman_args(dtype, steps, seed=0):
    rng = np.random.default_rng(seed)
    dt = 0.1
    F = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1.0]], dtype=dtype)
    H = np.array([[1, 0, 0, 0], [0, 1, 0, 0.0]], dtype=dtype)
    zs = np.cumsum(rng.standard_normal((steps, 2)) * 0.1, axis=0).astype(dtype)
    return (zs, F, H, (np.eye(4) * 1e-3).astype(dtype), (np.eye(2) * 0.05).astype(dtype),
            np.zeros(4, dtype=dtype), np.eye(4, dtype=dtype))


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-9), ("float32", 2e-4)])
def test_kalman(dtype, rtol):
    args = kalman_args(dtype, 40)
    check_calls(kalman_filter, args, kalman_args(dtype, 3, seed=1), rtol=rtol, atol=rtol * 1e-3)
    cf = numdyn.compile(kalman_filter)
    cf(*args)
    if dtype == "float64":
        ran_as_c(cf)
    else:
        # I = np.eye(n) is float64: P turns float64 in the first step, a
        # name given arrays of two dtypes -- Python runs the loop
        not_c(cf, "dtypes")


def products(A, B, C, n):
    s = 0
    for i in range(n):
        P = A @ B + C * i
        Q = np.dot(P, B.T) - np.matmul(A, A.T @ A)
        s += P[0, -1] + Q[-1, 0]
    return s, P, Q


@pytest.mark.parametrize("ta,tb", [("float64", "float64"), ("float32", "float32"), ("int64", "int64"),
                                   ("int32", "int32"), ("int8", "int8"), ("uint8", "uint8"),
                                   ("int16", "float32"), ("float32", "float64")])
def test_product_dtypes(ta, tb):
    # (3, 4) @ (4, 4): C (3, 4); int8/uint8 products wrap as NumPy's
    A, B = arr(ta, (3, 4), seed=1), arr(tb, (4, 4), seed=2)
    C = arr(tb, (3, 4), seed=3)
    # (float32 products sum in another order than BLAS's: the last bits of
    # terms of ~1e3 differ, and the difference P @ B.T - ... cancels them)
    tol = 1e-5 if "float32" in (ta, tb) else None
    check_calls(products, (A, B, C, 3), (A[:1], B, C[:1], 2), rtol=tol, atol=tol and 1e-3)
    cf = numdyn.compile(products)
    cf(A, B, C, 3)
    ran_as_c(cf)


def transposes(A, B, v, n):
    t = 0.0
    for i in range(n):
        S = A.T * 2.0 + B          # A (m, k), B (k, m)
        T2 = S.T - A               # the transpose of a computed 2-D value
        w = v.T * i + 1.0          # a 1-D array's .T is itself
        t += np.sum(T2) + w[-1] + S[0, -1]
    return t, S, T2, w


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_transposes(dtype):
    A, B, v = arr(dtype, (3, 5), seed=4), arr(dtype, (5, 3), seed=5), arr(dtype, 4, seed=6)
    check_calls(transposes, (A, B, v, 3), (A[:, :2], B[:2], v, 1))
    cf = numdyn.compile(transposes)
    cf(A, B, v, 3)
    ran_as_c(cf)


def store_transposed(A, n):
    # A.T, read by the value, overlaps the target with its axes swapped
    for i in range(n):
        A[:, :] = A.T @ A * 0.25 + A.T
    return A


def aug_transposed(A, n):
    for i in range(n):
        A[:, :] += A.T
    return A


@pytest.mark.parametrize("fn", [store_transposed, aug_transposed])
def test_stores_reading_their_own_transpose(fn):
    A = arr("float64", (4, 4), seed=7)
    check_calls(fn, (A, 3))
    cf = numdyn.compile(fn)
    cf(A.copy(), 3)
    ran_as_c(cf)


def bare_transpose_view(A, n):
    # S = A.T is a view: later writes to A are seen through S
    t = 0.0
    for i in range(n):
        S = A.T
        A[0, 1] = 99.0 + i
        t += S[1, 0]
    return t


def test_bare_transpose_is_a_view():
    A = arr("float64", (3, 3), seed=9)
    check_calls(bare_transpose_view, (A, 3))


def mismatch(A, B, n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = i
        P = A[:, :i + 2] @ B      # the inner lengths differ from i == 1: ValueError
    return P


def test_shape_mismatch_raises_at_numpys_iteration():
    A, B = arr("float64", (3, 4), seed=10), arr("float64", (2, 3), seed=11)
    check_calls(mismatch, (A, B, 4))


def bool_product(A, B, n):
    for i in range(n):
        P = A @ B
    return P


def test_bool_product_runs_in_python():
    A, B = arr("bool", (3, 3), seed=12), arr("bool", (3, 3), seed=13)
    check_calls(bool_product, (A, B, 2))
    cf = numdyn.compile(bool_product)
    cf(A, B, 2)
    not_c(cf, "bool")


def inverses(A, B, cs, out):
    # M = B - c * A: singular where c makes its determinant exactly 0
    for i in range(cs.shape[0]):
        M = B - A * cs[i]
        Mi = np.linalg.inv(M)
        out[i] = np.sum(Mi @ M)
    return Mi


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-9), ("float32", 1e-4)])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_inverse(dtype, rtol, n):
    A = arr(dtype, (n, n), seed=n)
    B = (arr(dtype, (n, n), seed=n + 20) + np.eye(n, dtype=dtype) * 4 * n).astype(dtype)
    cs = np.array([0.0, 0.5, -1.0], dtype=dtype)
    check_calls(inverses, (A, B, cs, np.zeros(3, dtype=dtype)), rtol=rtol, atol=rtol)
    cf = numdyn.compile(inverses)
    cf(A, B, cs, np.zeros(3, dtype=dtype))
    ran_as_c(cf)


def test_singular_matrix_raises_linalgerror_at_its_iteration():
    # [[1, 2], [3, 4 - c]] is singular at c = -2: the third iteration
    A = np.array([[0.0, 0.0], [0.0, 1.0]])
    B = np.array([[1.0, 2.0], [3.0, 4.0]])
    cs = np.array([0.0, 1.0, -2.0, 3.0])
    outs = check_calls(inverses, (A, B, cs, np.zeros(4)))
    assert outs[0].exc is not None and type(outs[0].exc).__name__ == "LinAlgError"
    check_calls(inverses, (A * 0, B * 0, cs, np.zeros(4)))   # singular at once


def test_nonfinite_and_nonsquare_inverse():
    A = np.array([[0.0, 0.0], [0.0, 1.0]])
    B = np.array([[np.nan, 2.0], [3.0, 4.0]])
    check_calls(inverses, (A, B, np.array([0.0, 1.0]), np.zeros(2)))
    B = np.array([[np.inf, 2.0], [3.0, 4.0]])
    check_calls(inverses, (A, B, np.array([0.0, 1.0]), np.zeros(2)))
    A3, B3 = arr("float64", (2, 3), seed=14), arr("float64", (2, 3), seed=15)
    check_calls(inverses, (A3, B3, np.array([0.0]), np.zeros(1)))


def test_integer_inverse_runs_in_python():
    A, B = arr("int64", (3, 3), seed=16), arr("int64", (3, 3), seed=17) + np.eye(3, dtype=np.int64) * 30
    cs = np.array([0, 1])
    check_calls(inverses, (A, B, cs, np.zeros(2)))
    cf = numdyn.compile(inverses)
    cf(A, B, cs, np.zeros(2))
    not_c(cf)
