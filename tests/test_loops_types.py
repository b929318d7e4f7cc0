"""Loop capture, issue 17: locals whose type changes (a Python float at
first, a float64 once an element is added: `s = 0.0; s += a[i]`). The
compiled loop keeps one C local per C type and shares the code of the type
combinations that compute alike; these programs check that the rare paths
of such shared code (overflow, NaN from finite values, errors under
np.errstate, stores of either type) are still Python's and NumPy's. Plain
Python/NumPy is the oracle (values, types, warnings, exceptions).
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def captured(fn, *args):
    cf = numdyn.compile(fn)
    with np.errstate(all="ignore"):
        cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def float_then_f8(a, s0):
    s = s0
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


@pytest.mark.parametrize("errs", ["warn", "raise", "ignore"])
def test_overflow_in_shared_arm_with_python_float_operand(errs):
    # the first addition has a Python float operand, the later ones a float64
    big = np.array([1e308, 1e308, -np.inf, 2.0])
    with np.errstate(all=errs):
        check_calls(float_then_f8, (big, 1e308), (big, 0.0), (np.array([1.0, 2.0]), 0.5))
    captured(float_then_f8, big, 0.0)


def biquad(x, b0, b1, b2, a1, a2):
    n = x.shape[0]
    y = np.zeros(n)
    x1 = x2 = y1 = y2 = 0.0
    for i in range(n):
        yi = b0 * x[i] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        y[i] = yi
        x2 = x1
        x1 = x[i]
        y2 = y1
        y1 = yi
    return y, x1, x2, y1, y2


@pytest.mark.parametrize("case", ["plain", "overflow", "nan", "short"])
def test_four_locals_changing_type(case):
    x = np.random.default_rng(3).standard_normal(40)
    if case == "overflow":
        x[5] = 1e308
    elif case == "nan":
        x[7] = np.nan
        x[9] = np.inf
    elif case == "short":
        x = x[:1]
    check_calls(biquad, (x, 0.2, 0.4, 0.2, -0.3, 0.19), (x, 1e308, 2.0, 1.0, 0.5, 0.5))
    captured(biquad, x, 0.2, 0.4, 0.2, -0.3, 0.19)


def store_either(out, a, flags):
    acc = 0.0
    k = 0
    b = False
    for i in range(a.shape[0]):
        out[i] = acc          # a Python float first, a float64 later
        flags[i] = b          # a Python bool first, a NumPy bool later
        acc = acc + a[i]
        if i % 2:
            k = k + a[i]
        b = a[i] > 1.0
    return acc, k, b


def test_stores_of_a_local_of_either_type():
    a = np.array([0.5, 1.5, 2.5, -1.0, 3.0])
    for fdt in ("float64", "float32"):
        for bdt in ("bool", "uint8", "int64"):
            out, flags = np.zeros(5, dtype=fdt), np.zeros(5, dtype=bdt)
            check_calls(store_either, (out, a, flags))
    captured(store_either, np.zeros(5), a, np.zeros(5, dtype=bool))


def int_then_i8(a, s0):
    s = s0
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


@pytest.mark.parametrize("errs", ["warn", "raise"])
def test_int64_overflow_after_python_int(errs):
    a = np.array([2**62, 2**62, 5], dtype=np.int64)
    with np.errstate(all=errs):
        check_calls(int_then_i8, (a, 0), (a, 2**62), (a[:1], 1))
    captured(int_then_i8, a, 0)


# ------------------------------------------- steady types after the first
# iterations: the outermost loop runs its first iterations with the types
# that follow from the entry types, then the rest with its steady types; a
# loop nested in another tests its tags until they are the steady ones

@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_biquad_every_short_length(n):
    x = np.random.default_rng(n).standard_normal(7)[:n]
    check_calls(biquad, (x, 0.2, 0.4, 0.2, -0.3, 0.19))


def first_above(x, t):
    acc = 0.0
    prev = 0.0
    i = -1
    for i in range(x.shape[0]):
        d = x[i] - prev
        acc = acc * 0.5 + d * prev + d
        if acc > t:
            break
        prev = x[i]
    return acc, prev, i


@pytest.mark.parametrize("t", [-10.0, 0.0, 0.5, 1.5, 100.0])
def test_break_in_first_and_later_iterations(t):
    x = np.array([0.9, 0.3, 0.8, 0.1, 1.2, 0.7])
    check_calls(first_above, (x, t), (x[:1], t), (x[:0], t))
    captured(first_above, x, t)


def skip_some(x):
    s = 0.0
    m = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.5:
            continue
        s = s * 0.9 + x[i] * m
        m = x[i]
    return s, m


def test_continue_before_the_types_settle():
    x = np.array([0.1, 0.2, 0.9, 0.3, 0.6, 0.7, 0.05])
    check_calls(skip_some, (x,), (x[::-1].copy(),), (x[:2],), (x[2:],))
    captured(skip_some, x)


def rows_filtered(X, b):
    out = np.zeros_like(X)
    for r in range(X.shape[0]):
        x1 = 0.0
        y1 = 0.0
        for i in range(X.shape[1]):
            yi = b * X[r, i] + 0.5 * x1 - 0.25 * y1
            out[r, i] = yi
            x1 = X[r, i]
            y1 = yi
    return out, x1, y1


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nested_loop_enters_its_steady_version(dtype):
    X = np.random.default_rng(5).standard_normal((4, 6)).astype(dtype)
    check_calls(rows_filtered, (X, 0.3), (X[:, :1], 0.3), (X[:1, :0], 2.0), rtol=1e-6)
    captured(rows_filtered, X, 0.3)


def enum_steady(x):
    p = 0.0
    q = 0
    for k, v in enumerate(x):
        q = q + k * v
        p = p * 0.5 + v * p + 1.0
    return p, q


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32"])
def test_enumerate_with_changing_types(dtype):
    x = np.arange(1, 8).astype(dtype)
    check_calls(enum_steady, (x,), (x[:1],), (x[:2],))
    captured(enum_steady, x)


def reads_ahead(x, y):
    a = 0.0
    for i in range(x.shape[0]):
        y[i] = a
        a = a * 0.5 + x[i + 1]
    return a


def test_index_error_in_an_early_iteration_leaves_arrays_as_numpy():
    for n in (1, 2, 3, 5):
        x = np.arange(n, dtype=np.float64)
        check_calls(reads_ahead, (x, np.full(n, -1.0)))


def escape(cre, cim, maxit, bound):
    h, w = cim.shape[0], cre.shape[0]
    counts = np.zeros((h, w), dtype=np.int64)
    last = np.zeros((h, w))
    for i in range(h):
        for j in range(w):
            zr = 0.0
            zi = 0.0
            k = 0
            while k < maxit and zr * zr + zi * zi <= bound:
                zr, zi = zr * zr - zi * zi + cre[j], 2.0 * zr * zi + cim[i]
                k += 1
                if k == 7 and zr > 1.0:
                    break
            counts[i, j] = k
            last[i, j] = zr
    return counts, last


@pytest.mark.parametrize("bound", [4.0, np.inf])
def test_while_loop_enters_its_steady_version(bound):
    # bound=inf: |z| grows past float64's range (overflow, then inf - inf:
    # NaN) before maxit, as NumPy computes it (warnings compared)
    cre, cim = np.linspace(-2.0, 0.6, 7), np.linspace(-1.2, 1.2, 5)
    with np.errstate(all="ignore"):
        check_calls(escape, (cre, cim, 30, bound), (cre[:1], cim[:0], 3, bound))
    check_calls(escape, (cre, cim, 12, bound))
    captured(escape, cre, cim, 30, 4.0)


def skip_while(x):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        i += 1
        if x[i - 1] < 0.5:
            continue
        s = s * 0.5 + x[i - 1]
    return s, i


def test_while_with_continue_and_changing_type():
    x = np.array([0.1, 0.9, 0.3, 0.6, 0.7])
    check_calls(skip_while, (x,), (x[:1],), (x[1:],))
    captured(skip_while, x)


# ------------------------------------ range checks proved before the loop:
# an innermost loop runs a copy without checks when every proof held, and
# the checked copy otherwise (IndexError at NumPy's iteration)

def guarded(a, b, m):
    s = 0.0
    for i in range(m):
        if i < a.shape[0]:
            s += a[i] * b[i + 1]
        else:
            s -= 1.0
    return s


@pytest.mark.parametrize("m,nb", [(5, 6), (8, 6), (5, 5), (5, 3), (0, 0), (9, 10)])
def test_innermost_copy_without_checks_and_with(m, nb):
    a, b = np.arange(5.0), np.arange(float(nb))
    check_calls(guarded, (a, b, m))


def rows_sum(A, lo, hi):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        t = 0.0
        for j in range(lo, hi):
            t += A[i, j] * A[i, j - 1]
        out[i] = t
    return out


@pytest.mark.parametrize("lo,hi", [(1, 6), (0, 6), (1, 7), (-5, 0), (3, 3)])
def test_inner_loop_proof_holds_or_fails(lo, hi):
    A = np.arange(24.0).reshape(4, 6)
    check_calls(rows_sum, (A, lo, hi))
