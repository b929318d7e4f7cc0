"""NumPy scalars in traced code (outside captured loops) behave as NumPy's
scalars do, on the first (traced) call and on later (replayed) ones.

1. Storing a NumPy scalar into a signed integer array by a basic index or
   fill() converts it as int() does: ValueError "cannot convert float NaN to
   integer", OverflowError "cannot convert float infinity to integer",
   "Python int too large to convert to C long", "Python integer N out of
   bounds for int8". An unsigned array, a 0-d array value, np.copyto and a
   fancy index cast instead. A lazy scalar (a reduction, an element read
   while the call is recorded, arithmetic on those) is checked when the
   graph runs.

2. NumPy's scalar math (a Python operator on NumPy / Python scalars) warns
   "overflow encountered in scalar subtract" (raises FloatingPointError
   under np.errstate(over="raise")) where integers wrap -- add, subtract,
   multiply, negative, absolute, floor_divide / divmod of MIN by -1 -- and
   names the "scalar" operation in every warning; the same ufunc on arrays,
   on a 0-d array, or called as np.subtract(...) wraps silently.
"""
import numpy as np
import pytest

import numdyn
from oracle import check


def _opaque(x):
    """A user function: calling it makes a function not replayable."""
    return x


def calls(fn, arg_sets, mode="warn", backend=None, warnings=True):
    """Compile fn once and compare each call (in order) with NumPy, under
    np.errstate(all=mode): values, exceptions, warnings, arguments after."""
    f = numdyn.compile(fn, **({"backend": backend} if backend else {}))
    for args in arg_sets:
        with np.errstate(all=mode):
            check(fn, *args, compiled=f, warnings=warnings)
    return f


# ---------------------------------------------------------------------------
# 1. scalar stores

def st_sum(a, b):
    b[0] = a.sum()
    return b


def st_slice(a, b):
    b[1:3] = a.sum()
    return b


def st_ellipsis(a, b):
    b[...] = a.max()
    return b


def st_row(a, b):
    b[1] = a.sum()
    return b


def st_fill(a, b):
    b.fill(a.min())
    return b


def st_element(a, b):
    b[0] = a[1]
    return b


def st_arith(a, b):
    b[2] = a.sum() * 2.0 - 1.0
    return b


def st_ordered(a, b, out):
    out[0] = 1.0        # lands: before the store that raises
    b[0] = a.sum()
    out[1] = 2.0        # does not
    return b


def st_zero_d(a, b):
    b[()] = a.sum()
    return b


def st_not_recorded(a, b):
    _opaque(None)
    b[0] = a.sum()
    return b


SIGNED_STORES = [st_sum, st_slice, st_ellipsis, st_fill, st_element, st_arith,
                 st_not_recorded]

CLEAN = np.array([9.0, 2.5, -3.0, 7.0])
BAD = [np.array([1.0, np.nan, 0.0, 2.0]),        # ValueError
       np.array([150.0, 151.0, 0.0, 0.5]),        # out of int8 / past its range
       np.array([1e300, 1e300, 0.0, 1.0]),        # past C long
       np.array([np.inf, np.inf, 1.0, 1.0]),      # cannot convert infinity
       np.array([-np.inf, -1e20, -3e9, 1.0])]


def _sets(dst, shape=(4,)):
    seq = [CLEAN, CLEAN, BAD[0], CLEAN, BAD[1], BAD[1], CLEAN, BAD[2], BAD[3], BAD[4], CLEAN]
    return [(a, np.zeros(shape, dtype=dst)) for a in seq]


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("dst", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("fn", SIGNED_STORES, ids=lambda f: f.__name__)
def test_lazy_scalar_into_signed_array(fn, dst, mode, backend):
    f = calls(fn, _sets(dst), mode, backend)
    if fn is not st_not_recorded:
        assert f._replay_info()["hits"] >= 3


@pytest.mark.parametrize("dst", [np.int8, np.int64])
def test_lazy_scalar_into_a_row_and_a_zero_d_array(dst, backend):
    calls(st_row, [(a, np.zeros((3, 2), dtype=dst)) for a, _ in _sets(dst)], backend=backend)
    calls(st_zero_d, [(a, np.zeros((), dtype=dst)) for a, _ in _sets(dst)], backend=backend)


def test_store_leaves_the_writes_before_it(backend):
    seq = [CLEAN, CLEAN, BAD[1], CLEAN, BAD[0], BAD[2]]
    f = calls(st_ordered, [(a, np.zeros(3, np.int8), np.zeros(3)) for a in seq], backend=backend)
    assert f._replay_info()["hits"] >= 3


@pytest.mark.parametrize("src, dst", [
    (np.array([1, 300, 3]), np.int8),
    (np.array([2**62, 2**62, 3]), np.int32),
    (np.array([2**63, 1, 3], dtype=np.uint64), np.int64),
    (np.array([70000, 1, 3], dtype=np.uint32), np.int16),
    (np.array([3e9, 1, 3], dtype=np.float32), np.int32),
    (np.array([np.nan, 1, 3], dtype=np.float32), np.int64),
    (np.array([np.inf, 1, 3], dtype=np.float16), np.int8),
], ids=repr)
def test_integer_and_narrow_float_scalars(src, dst, backend):
    ok = src.copy()
    ok[:] = 1
    calls(st_sum, [(ok, np.zeros(3, dst)), (ok, np.zeros(3, dst)), (src, np.zeros(3, dst)),
                   (ok, np.zeros(3, dst)), (src, np.zeros(3, dst))], backend=backend)


def st_complex(c, b):
    b[0] = c.sum()
    return b


@pytest.mark.parametrize("dst", [np.int8, np.int64, np.uint8])
def test_complex_scalar_into_integer_array(dst, backend):
    ok = np.array([1 + 2j, 3 - 1j])
    seq = [ok, ok, np.array([300 + 1j, 1j]), ok, np.array([np.nan + 0j, 1j]), ok]
    calls(st_complex, [(c, np.zeros(3, dst)) for c in seq], backend=backend, warnings=True)


UNSIGNED_OR_CAST = [
    st_sum, st_fill, st_arith, st_element,
]


@pytest.mark.parametrize("dst", [np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("fn", UNSIGNED_OR_CAST, ids=lambda f: f.__name__)
def test_lazy_scalar_into_unsigned_array_casts(fn, dst, backend):
    # NaN and in-range values (out-of-range finite float casts are another matter)
    seq = [CLEAN, CLEAN, np.array([150.0, 151.0, 300.0, 0.5]), CLEAN,
           np.array([1.0, np.nan, 0.0, 2.0]), CLEAN]
    calls(fn, [(a, np.zeros(4, dst)) for a in seq], backend=backend)


def c_zero_d_array(a, b):
    b[0] = a[1:2].reshape(())     # a 0-d array, not a scalar: cast
    return b


def c_copyto(a, b):
    np.copyto(b, a.sum(), casting="unsafe")
    return b


def c_fancy(a, b):
    b[[0, 2]] = a.sum()
    return b


@pytest.mark.parametrize("fn", [c_zero_d_array, c_copyto, c_fancy], ids=lambda f: f.__name__)
def test_arrays_copyto_and_fancy_stores_cast(fn, backend):
    seq = [CLEAN, CLEAN, np.array([150.0, 151.0, 0.0, 0.5]), CLEAN,
           np.array([1.0, np.nan, 0.0, 2.0]), CLEAN]
    calls(fn, [(a, np.zeros(4, np.int8)) for a in seq], backend=backend)


def c_concrete(b, x):
    b[0] = np.int64(x)
    b[1] = np.float64(x)
    return b


@pytest.mark.parametrize("dst", [np.int8, np.uint8])
def test_concrete_numpy_scalars(dst, backend):
    calls(c_concrete, [(np.zeros(3, dst), 3), (np.zeros(3, dst), 3), (np.zeros(3, dst), 301),
                       (np.zeros(3, dst), 301), (np.zeros(3, dst), -1), (np.zeros(3, dst), 3)],
          backend=backend)


@pytest.mark.parametrize("dst", [np.int8, np.int64, np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("value", [np.float64(301.5), np.float64(-1.5), np.float64(1e10),
                                   np.float64(1e19), np.float64("nan"), np.float32("inf"),
                                   np.int64(-300), np.uint64(2**63)], ids=repr)
def test_concrete_numpy_scalar_values(value, dst):
    def f(b):
        b[1] = value
        return b
    check(f, np.zeros(3, dst), warnings=True)


def test_clean_stores_cost_no_rerun():
    from numdyn.utils import counters
    f = numdyn.compile(st_arith)
    a, b = CLEAN, np.zeros(4, np.int64)
    for _ in range(3):
        f(a, b)
    before, hits = counters["errstate_reruns"], f._replay_info()["hits"]
    f(a, b)
    assert counters["errstate_reruns"] == before
    assert f._replay_info()["hits"] == hits + 1


# ---------------------------------------------------------------------------
# 2. scalar math

def m_sub(A):
    return A[0] - 3


def m_rsub(A):
    return 3 - A[0]


def m_add(A):
    return A[0] + A[1]


def m_mul(A):
    return A[0] * A[1]


def m_neg(A):
    return -A[0]


def m_abs(A):
    return abs(A[0])


def m_floordiv(A):
    return A[0] // A[1]


def m_divmod(A):
    return divmod(A[0], A[1])


def m_mod(A):
    return A[0] % A[1]


def m_pow(A):
    return A[0] ** A[1]


def m_shift(A):
    return A[0] << A[1]


def m_chain(A):
    s = A[0]
    s = s * 3 + A[1]
    s -= A[0]
    return s


def m_store(A, B):
    B[0] = A[0] - 3
    B[1] = -A[1]
    return B


def m_sum(A):
    return A.sum() - 5


def m_not_recorded(A):
    _opaque(None)
    return A.sum() * 7 - A.sum()


def m_ufunc_calls(A):
    # np.<ufunc> on scalars and operators on 0-d arrays wrap silently
    return np.subtract(A[0], 3), np.negative(A[1]), np.abs(A[0]), A[0:1].reshape(()) - 3


def m_float(A):
    x = A[0] * 1e308
    return x / A[1], A[0] // A[1]


MATH = [m_sub, m_rsub, m_add, m_mul, m_neg, m_abs, m_floordiv, m_divmod, m_mod, m_pow,
        m_shift, m_chain, m_sum, m_not_recorded, m_ufunc_calls]

INT_DATA = {
    np.int8: [np.array([100, 2, 5], np.int8), np.array([-128, -1, 0], np.int8),
              np.array([120, 100, 0], np.int8), np.array([1, 0, 2], np.int8)],
    np.uint8: [np.array([200, 2, 5], np.uint8), np.array([0, 200, 1], np.uint8),
               np.array([255, 255, 0], np.uint8), np.array([1, 0, 2], np.uint8)],
    np.int32: [np.array([5, 2, 5], np.int32), np.array([-2**31, -1, 0], np.int32),
               np.array([2**30, 2**30, 0], np.int32), np.array([1, 0, 2], np.int32)],
    np.uint32: [np.array([7, 2, 5], np.uint32), np.array([0, 2**31, 1], np.uint32),
                np.array([2**31, 2**31, 0], np.uint32), np.array([1, 0, 2], np.uint32)],
    np.int64: [np.array([5, 2, 5], np.int64), np.array([-2**63, -1, 0], np.int64),
               np.array([2**62, 2**62, 0], np.int64), np.array([1, 0, 2], np.int64)],
    np.uint64: [np.array([9, 2, 5], np.uint64), np.array([0, 2**63, 1], np.uint64),
                np.array([2**63, 2**63, 0], np.uint64), np.array([1, 0, 2], np.uint64)],
}


def _math_sets(dt):
    clean, a, b, c = INT_DATA[dt]
    return [(x,) for x in (clean, clean, a, clean, b, b, c, clean, a)]


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("dt", list(INT_DATA), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn", MATH, ids=lambda f: f.__name__)
def test_integer_scalar_math(fn, dt, mode):
    calls(fn, _math_sets(dt), mode)


@pytest.mark.parametrize("fn", [m_sub, m_neg, m_abs, m_divmod, m_chain, m_ufunc_calls],
                         ids=lambda f: f.__name__)
def test_integer_scalar_math_eager(fn):
    for dt in (np.int8, np.uint32, np.int64):
        for mode in ("warn", "raise"):
            calls(fn, _math_sets(dt), mode, backend="eager")


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.uint64])
def test_wrapped_scalar_stored(dt, mode, backend):
    clean, a, b, c = INT_DATA[dt]
    seq = [clean, clean, a, clean, b, c]
    f = calls(m_store, [(x, np.zeros(3, dt)) for x in seq], mode, backend)
    if mode != "raise" or np.dtype(dt).kind == "i":  # (-A[1] of an unsigned raises)
        assert f._replay_info()["hits"] >= 3


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_float_scalar_math_names_the_scalar_operation(mode, backend):
    seq = [np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([10.0, 0.0]),
           np.array([0.0, 0.0]), np.array([1.0, 2.0])]
    calls(m_float, [(x,) for x in seq], mode, backend)


def test_mixed_types_promote_before_they_wrap():
    def f(A, B):
        return A[0] + B[0], A[0] * B[0]
    calls(f, [(np.array([100], np.int8), np.array([200], np.uint8))] * 3)


def test_wrapping_costs_nothing_when_ignored():
    from numdyn.utils import counters
    f = numdyn.compile(m_chain)
    A = INT_DATA[np.int8][0]
    with np.errstate(over="ignore"):
        for _ in range(3):
            f(A)
        before = counters["errstate_reruns"]
        assert f(A) == m_chain(A)
    assert counters["errstate_reruns"] == before


# ------------------------------------- NumPy scalars meeting Python's builtins

_BUILTIN_CASES = {
    "round": lambda a: (round(a.mean(), 2), round(a.sum()), round(a.argmax(), -1)),
    "list_times_int": lambda a: ([0] * a.argmax(), a.argmax() * (1, 2), ["x"] * a.argmin()),
    "str_times_int": lambda a: ("ab" * a.argmax(), a.argmax() * b"x"),
    "float_scalar_methods": lambda a: (a.sum().is_integer(), a.max().as_integer_ratio()),
    "int_scalar_missing_attr": lambda a: a.argmax().bit_length(),
    "list_times_float": lambda a: [0] * a.sum(),
    "str_plus_int": lambda a: "ab" + a.argmax(),
    "list_plus_int": lambda a: [1] + a.argmax(),
    "hash_keys": lambda a: ({a.argmax(): "x"}[3], len({a.argmax(), 3, a.argmax()})),
}


@pytest.mark.parametrize("name", sorted(_BUILTIN_CASES))
def test_numpy_scalars_meet_python_builtins_as_numpy_does(name):
    """a.sum() / a.argmax() are NumPy scalars: round() is theirs (an int),
    a sequence times an integer scalar repeats the sequence ([0] * 3, not
    array([0])), str and bytes are left to Python, and their own methods
    (float64.is_integer) exist."""
    fn = _BUILTIN_CASES[name]
    a = np.array([3.0, -1.5, 2.25, 7.0])
    exc_norm = lambda m: m.replace("numdyn._C.LazyArray", "numpy.int64")
    check(fn, a, exc_normalize=exc_norm)


@pytest.mark.parametrize("key", [0, slice(None), (0,), "a", 1.0, [0], (), Ellipsis, None, True])
def test_indexing_a_scalar(backend, key):
    # NumPy's scalar reports any failed index as "invalid index to scalar variable."
    def fn(a):
        return a.sum()[key]
    check(fn, np.arange(4.0), backend=backend)


def test_missing_attribute_names_ndarray(backend):
    def fn(a):
        return (a * 2).no_such_attribute
    check(fn, np.arange(4.0), backend=backend)


def _type_branches(a):
    s = a.sum()
    out = [type(a).__name__, type(s).__name__, type(a) is np.ndarray, type(s) is np.float64,
           type(a[0]) == np.float64, [type(v).__name__ for v in a[:2]], (lambda z: type(z).__name__)(a),
           type(s)(2.5), type(a.astype(np.int32).sum()).__name__, type(3).__name__]
    # code that dispatches on the exact type takes NumPy's branch
    out.append(float(s) * 2 if type(s) in (float, np.float64) else -1.0)
    out.append(type("K", (), {"x": 7}).x)
    return out


def test_type_builtin_answers_numpys_types(backend):
    check(_type_branches, np.arange(4.0), backend=backend)
    check(_type_branches, np.arange(3.0, dtype=np.float32), backend=backend)
