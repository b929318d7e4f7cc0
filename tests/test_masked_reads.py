"""Reads through a lazy boolean mask kept lazy (numpy_shim/shim_masked.c).

`z[m] = z[m] * z[m] + c[m]`, `counts[m] += 1` with m computed in the graph
run as where(m, f(...), z): no graph break, no compaction. Everything else
done with a masked read compacts it first (NumPy's a[m]), so NumPy's
semantics hold: values, dtypes, the caller's arrays afterwards, errors, and
the floating-point warnings of np.errstate, which NumPy raises from the
masked elements only (f is never evaluated on the others).
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import numdyn
from oracle import check
from programs_real import lu_partial_pivot as lu_pivot  # bench/ is on sys.path (conftest)


def breaks(fn, *args):
    return numdyn.explain(fn)(*args).graph_break_count


# ------------------------------------------------------------- the idioms
def mandelbrot(cre, cim, maxit):
    c = cre[None, :] + 1j * cim[:, None]
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=np.int64)
    for _ in range(maxit):
        mask = np.abs(z) <= 2.0
        z[mask] = z[mask] * z[mask] + c[mask]
        counts[mask] += 1
    return counts, z


def masked_update(x, y):
    m = x > 0.5
    x[m] = x[m] * 2.0 + y[m]
    return x


def masked_scale_rows(a):
    m = a.sum(axis=1) > 0          # mask over the leading dim only
    a[m] = a[m] * 0.5 - 1.0
    return a


def masked_sum(x):
    m = x > 0
    return x[m].sum(), (x[m] * 2).sum(), (x > 1)[m].sum()


def masked_ufuncs(x):
    m = x > 0
    x[m] = np.sqrt(x[m]) + np.exp(-x[m])
    q, r = np.divmod(x[m], 0.25)
    x[m] = q + r
    return x


def masked_compare(x, out):
    m = x > 0.2
    out[m] = x[m] > 0.6
    return out


def test_mandelbrot_no_breaks_and_exact():
    cre = np.linspace(-2, 1, 40)
    cim = np.linspace(-1.2, 1.2, 30)
    check(mandelbrot, cre, cim, 12, backend="native")
    assert breaks(mandelbrot, cre, cim, 12) == 0


@pytest.mark.parametrize("backend", ["native", "eager"])
def test_masked_update(backend):
    rng = np.random.default_rng(1)
    x, y = rng.random(50), rng.random(50)
    check(masked_update, x, y, backend=backend)
    assert breaks(masked_update, x, y) == 0


def test_leading_dim_mask():
    a = np.random.default_rng(2).standard_normal((7, 3))
    check(masked_scale_rows, a, backend="native")
    assert breaks(masked_scale_rows, a) == 0


def test_masked_sum():
    x = np.random.default_rng(3).standard_normal(40)
    check(masked_sum, x, backend="native")
    assert breaks(masked_sum, x) == 0
    check(masked_sum, -np.abs(x) - 1, backend="native")  # nothing selected: 0.0, 0.0, 0


def test_masked_ufuncs_and_compare():
    x = np.random.default_rng(4).standard_normal(33)
    check(masked_ufuncs, x, backend="native")
    assert breaks(masked_ufuncs, x) == 0
    check(masked_compare, x, np.zeros(33, dtype=bool), backend="native")


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float32, np.complex64, np.uint16])
def test_dtypes_of_counts_and_values(dtype):
    def f(x, cnt):
        m = x != 0
        cnt[m] += 1
        x[m] = x[m] * 3 - 1
        return x, cnt

    x = (np.arange(24) % 5).astype(dtype)
    check(f, x, np.zeros(24, dtype=np.int16), backend="native")
    assert breaks(f, x, np.zeros(24, dtype=np.int16)) == 0


def test_assigning_into_another_dtype():
    def f(a, b):
        m = b > 0
        a[m] = b[m] * 2.5      # float values into an int array: NumPy's unsafe cast
        return a

    check(f, np.arange(10), np.linspace(-1, 1, 10), backend="native")


def test_inplace_alias_sees_update():
    def f(x):
        m = x > 0
        t = x[m]
        u = t
        t += 1.0
        x[m] = u
        return x, u

    check(f, np.linspace(-1, 1, 9), backend="native")


def test_inplace_casting_error_is_numpys():
    def f(x):
        m = x > 2
        t = x[m]
        t += 0.5
        x[m] = t
        return x

    check(f, np.arange(6), backend="native")


# ---------------------------------------- what is not elementwise compacts
def reversed_value(z):
    m = z > 0
    z[m] = z[m][::-1]
    return z


def cumsum_value(z):
    m = z > 0
    z[m] = np.cumsum(z[m])
    return z


def other_mask(z):
    m = z > 0
    m2 = z < 0
    z[m] = z[m2] * 2
    return z


def mask_written_between(z):
    m = z > 0
    t = z[m] + 1
    m[0] = True
    z[m] = t
    return z


def mask_from_written_array(z):
    z[z > 0] = z[z > 0] ** 0.5
    z[z < 0] = -(z[z < 0] ** 2)
    return z


def shape_and_len(z):
    t = z[z > 0] * 2
    return t.shape, len(t), t.dtype, t


def returned(z):
    m = z > 0
    return z[m] * 2, [z[m] + 1, {"k": -z[m]}]


def array_operand(z, w):
    m = z > 0
    return z[m] * w          # w has the count's length: fine under NumPy, else its error


def indexed(z):
    m = z > 0
    return z[m][1:], z[m][0], float(z[m][0]), z[m].max()


def joined(z):
    # masked reads inside a list: NumPy's dispatch goes through each item
    # (it recursed forever when only tuples were compacted)
    p = z[3]
    return (np.concatenate([z[z < p], z[z == p], z[z > p]]), np.stack([z[z > 0], z[z > 0]]),
            np.hstack((z[z < 0], [z[z > 3]])[0]), np.vstack([z[z > 0]]))


def quicksort(z):
    if z.size <= 1:
        return z
    p = z[z.size // 2]
    return np.concatenate([quicksort(z[z < p]), z[z == p], quicksort(z[z > p])])


@pytest.mark.parametrize("fn", [reversed_value, cumsum_value, mask_written_between,
                                mask_from_written_array, shape_and_len, returned, indexed,
                                joined, quicksort])
def test_non_elementwise_uses_match_numpy(fn):
    z = np.array([0.5, -1.0, 2.0, 3.0, -0.25, 1.5, 0.0, 4.0])
    check(fn, z, backend="native")


def test_other_mask_errors_like_numpy():
    check(other_mask, np.array([1.0, -2.0, 3.0, -4.0]), backend="native")        # 2 vs 2: fine
    check(other_mask, np.array([1.0, -2.0, 3.0, 4.0]), backend="native")         # 3 vs 1: broadcast
    check(other_mask, np.array([1.0, -2.0, 3.0, -4.0, 5.0]), backend="native")   # 3 vs 2: ValueError


def test_array_operand():
    z = np.array([1.0, -2.0, 3.0, -4.0])
    check(array_operand, z, np.array([10.0, 20.0]), backend="native")
    check(array_operand, z, np.array([10.0, 20.0, 30.0]), backend="native")


# ------------------------------------------------ np.errstate: masked lanes
def log_positive(x):
    m = x > 0
    x[m] = np.log(x[m])
    return x


def scale_small(x):
    m = np.abs(x) < 1.0
    x[m] = x[m] * 1e308 * 10.0
    return x


def divide_nonzero(x, y):
    m = y != 0
    x[m] = x[m] / y[m]
    return x


def int_divide_nonzero(x, y):
    m = y != 0
    x[m] = x[m] // y[m]
    return x


@pytest.mark.parametrize("fn,args", [
    (log_positive, (np.array([1.0, -1.0, 2.0, 0.0, -5.0, np.e]),)),
    (scale_small, (np.array([0.0, 1e300, -1e300, 0.0, 2.0]),)),       # in-mask 0*big: no flag
    (divide_nonzero, (np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 0.0, 0.0, 4.0]))),
    (int_divide_nonzero, (np.array([5, 6, 7, 8]), np.array([2, 0, 3, 0]))),
])
@pytest.mark.parametrize("state", ["warn", "raise"])
def test_no_flags_from_masked_out_lanes(fn, args, state):
    with np.errstate(all=state):
        check(fn, *args, backend="native", warnings=True)
    assert breaks(fn, *args) == 0


def test_flags_from_masked_lanes_are_numpys():
    x = np.array([0.5, 1e300, -0.5, 3.0])
    with np.errstate(over="warn"):
        check(scale_small, x, backend="native", warnings=True)   # 0.5*1e308*10: overflow, NumPy warns
    with np.errstate(over="raise"):
        check(scale_small, x, backend="native")                  # FloatingPointError like NumPy
    with np.errstate(invalid="warn"):
        check(log_positive, np.array([1.0, np.nan, -1.0]), backend="native", warnings=True)


def test_no_warning_escapes_with_errors_as_exceptions():
    f = numdyn.compile(log_positive)
    x = np.array([1.0, -1.0, 2.0, -3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = f(x.copy())
    np.testing.assert_allclose(got, log_positive(x.copy()))


# ------------------------------------------------- random masks (property)
def masked_program(x, y, cnt, thr):
    m = x > thr
    x[m] = x[m] * 0.5 - y[m] + 1.0
    cnt[m] += 1
    m = y < x
    y[m] = -y[m] / (np.abs(x[m]) + 1.0)
    return x, y, cnt, (x > thr)[m].sum()


@settings(deadline=None)
@given(data=st.data())
def test_random_masks(data):
    n = data.draw(st.integers(0, 40))
    shape = data.draw(st.sampled_from([(n,), (2, n // 2 + 1), (n // 3 + 1, 3)]))
    dt = data.draw(st.sampled_from([np.float64, np.float32]))
    fl = st.floats(-10, 10, allow_nan=False, width=32)
    x = data.draw(hnp.arrays(dt, shape, elements=fl))
    y = data.draw(hnp.arrays(dt, shape, elements=fl))
    thr = data.draw(st.floats(-5, 5, width=32))
    cnt = np.zeros(shape, dtype=np.int32)
    check(masked_program, x, y, cnt, thr, backend="native", warnings=True)


# ------------------------- list indices holding lazy integers (row swaps)
def swap_lazy(a, b):
    i = np.argmax(b)          # never computed by a branch: a lazy index list
    j = np.argmin(b)
    a[[i, j]] = a[[j, i]]
    return a, a[[0, i, -1]], a[(i, j), :1]


def list_index_errors(a, b):
    i = np.argmax(b) + 10     # out of range
    return a[[0, i]]


def test_row_swaps_by_list_of_lazy_ints(monkeypatch):
    # traced: loop capture runs this loop as C (tests/test_floor_rowswap.py)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    A = np.random.default_rng(5).standard_normal((12, 12))
    check(lu_pivot, A, backend="native")
    # only the pivot branch syncs: one break per column, none at the swaps
    assert breaks(lu_pivot, A) == 11


def test_lazy_int_list_index():
    a = np.arange(20.0).reshape(5, 4)
    b = np.array([3.0, 9.0, 1.0, -2.0, 5.0])
    check(swap_lazy, a, b, backend="native")
    assert breaks(swap_lazy, a, b) == 0
    check(list_index_errors, a, b, backend="native")


# -------------------------- a[s] op= x: no write-back of the region itself
def region_updates(A):
    A[1:, 0] /= A[0, 0]
    A[2:, 1:] -= 1.0
    A[::2, ::-1] *= 2.0
    v = A[1]
    v += 3.0
    A[1] = v                      # the same region and version: nothing to write
    return A


def test_region_update_writes_once():
    A = np.arange(16.0).reshape(4, 4) + 1
    check(region_updates, A, backend="native")
    g, _ = numdyn.export(region_updates)(A.copy())
    assert str(g).count("setitem(") == 4


def test_writing_a_region_back_after_it_changed():
    def f(A):
        v = A[1].copy()
        w = A[1]
        A[1] += 1.0
        A[1] = v                  # an older value: written
        A[2] = w                  # a view of the current version, other region
        return A

    check(f, np.arange(12.0).reshape(3, 4), backend="native")


def int_power_nonnegative(x):
    m = x >= 0
    x[m] = 2 ** x[m] + x[m] * 3      # a negative exponent anywhere would raise
    return x


def compare_then_divide(x, y):
    m = y != 0
    flag = x[m] > 1.0               # no substitution needed for the compare...
    x[m] = (flag + x[m]) / y[m]     # ...the division substitutes every operand
    return x


def test_substitution_per_operation():
    check(int_power_nonnegative, np.array([3, -2, 0, 5, -7]), backend="native")
    with np.errstate(all="raise"):
        check(compare_then_divide, np.array([3.0, 0.5, 2.0, 9.0]), np.array([2.0, 0.0, -1.0, 0.0]),
              backend="native")
    assert breaks(int_power_nonnegative, np.array([3, -2, 0, 5, -7])) == 0


def test_all_false_mask_raises_no_flag():
    # no lane inside the mask: every lane holds a value no arithmetic flags
    # (shim_masked.c unless_all_false), as NumPy computes on no element
    def f(x, y):
        m = y != 0
        x[m] = x[m] // y[m]
        return x

    with np.errstate(all="raise"):
        check(f, np.array([5, 6]), np.array([0, 0]), backend="native", warnings=True)
