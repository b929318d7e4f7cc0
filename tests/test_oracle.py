"""The oracle must catch every kind of difference numdyn could have from
NumPy. Each test feeds check() a deliberately wrong fake "compiled" function
(or a right one, for the cases that must pass)."""
import collections
import re

import numpy as np
import pytest

from oracle import assert_same, check, dtype_tol


def fails(match):
    return pytest.raises(AssertionError, match=match)


def add_one(x):
    return x + 1


X = np.arange(6, dtype=np.float64).reshape(2, 3)


# ---- what must pass ---------------------------------------------------------

def test_identical_function_passes():
    out = check(add_one, X, compiled=add_one)
    np.testing.assert_array_equal(out, X + 1)


def test_float_tolerance_by_dtype():
    x = np.linspace(0.1, 1, 7, dtype=np.float32)
    # One float32 ulp off is within tolerance...
    check(np.exp, x, compiled=lambda x: np.nextafter(np.exp(x), np.float32(np.inf)))
    # ...a relative error of 1e-3 is not.
    with fails("values differ"):
        check(np.exp, x, compiled=lambda x: np.exp(x) * np.float32(1.001))


def test_float64_is_tight():
    x = np.linspace(0.1, 1, 7)
    with fails("values differ"):
        check(np.exp, x, compiled=lambda x: np.exp(x) * (1 + 1e-9))


def test_explicit_tolerance_overrides():
    x = np.linspace(0.1, 1, 7)
    check(np.exp, x, compiled=lambda x: np.exp(x) * (1 + 1e-9), rtol=1e-6)


def test_nan_positions_must_match():
    x = np.array([1.0, np.nan, 3.0])
    check(np.sqrt, x, compiled=np.sqrt)
    with fails("values differ"):
        check(np.sqrt, x, compiled=lambda x: np.nan_to_num(np.sqrt(x)))
    with fails("values differ"):
        check(lambda x: x * 2, x, compiled=lambda x: np.where(x == 1, np.nan, x * 2))


def test_infinities_need_same_sign():
    x = np.array([1.0, -1.0])
    with fails("values differ"):
        check(lambda x: x / 0.0, x, compiled=lambda x: np.abs(x) / 0.0)


def test_integers_are_exact():
    x = np.arange(5, dtype=np.int64)
    with fails("exact"):
        check(lambda x: x * 3, x, compiled=lambda x: x * 3 + (x == 4))


def test_complex_parts_compared():
    z = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    check(np.conj, z, compiled=np.conj)
    with fails(r"\.imag"):
        check(np.conj, z, compiled=lambda z: z)


def test_signed_zeros_optional():
    x = np.array([0.0, 1.0])
    neg = lambda x: -x  # noqa: E731
    check(neg, x, compiled=lambda x: 0.0 - x)  # +0.0 vs -0.0 allowed by default
    with fails("sign of zero"):
        check(neg, x, compiled=lambda x: 0.0 - x, signed_zeros=True)


# ---- dtypes, shapes, types --------------------------------------------------

def test_catches_wrong_dtype():
    with fails("dtype differs: got float32, NumPy gives float64"):
        check(add_one, X, compiled=lambda x: (x + 1).astype(np.float32))


def test_catches_wrong_integer_width():
    x = np.arange(4, dtype=np.int8)
    with fails("dtype differs"):
        check(lambda x: x + 1, x, compiled=lambda x: x.astype(np.int64) + 1)


def test_catches_wrong_shape():
    with fails("shape differs"):
        check(add_one, X, compiled=lambda x: (x + 1).ravel())


def test_catches_wrong_value():
    with fails("1 of 6 values differ"):
        check(add_one, X, compiled=lambda x: np.where(x == 5, 0, x + 1))


def test_catches_0d_array_instead_of_scalar():
    with fails("type differs"):
        check(np.sum, X, compiled=lambda x: np.asarray(np.sum(x)))


def test_catches_python_float_instead_of_numpy_scalar():
    with fails("type differs"):
        check(np.sum, X, compiled=lambda x: float(np.sum(x)))


def test_catches_wrong_scalar_dtype():
    with fails("type differs"):
        check(lambda x: x.sum(), X, compiled=lambda x: np.float32(x.sum()))


def test_python_scalars_compared_by_type_and_value():
    check(lambda x: int(x.sum()), X, compiled=lambda x: int(x.sum()))
    with fails("type differs"):
        check(lambda x: int(x.sum()), X, compiled=lambda x: bool(x.sum()))
    with fails("got 16"):
        check(lambda x: int(x.sum()), X, compiled=lambda x: int(x.sum()) + 1)
    with fails("values differ"):
        check(lambda x: float(x.sum()), X, compiled=lambda x: float(x.sum()) + 1e-6)


def test_structures_compared():
    def f(x):
        return x, (x.sum(), [x.shape]), {"a": x * 2}

    check(f, X, compiled=f)
    with fails(r"result\[2\]\['a'\]"):
        check(f, X, compiled=lambda x: (x, (x.sum(), [x.shape]), {"a": x * 3}))
    with fails("type differs"):
        check(f, X, compiled=lambda x: [x, (x.sum(), [x.shape]), {"a": x * 2}])
    with fails("length differs"):
        check(f, X, compiled=lambda x: (x, (x.sum(),), {"a": x * 2}))
    with fails("keys differ"):
        check(f, X, compiled=lambda x: (x, (x.sum(), [x.shape]), {"b": x * 2}))


def test_namedtuple_type_compared():
    P = collections.namedtuple("P", "a b")

    def f(x):
        return P(x, x)

    check(f, X, compiled=f)
    with fails("type differs"):
        check(f, X, compiled=lambda x: (x, x))


def test_layout_optional():
    f = np.asfortranarray(X)
    check(lambda x: x * 2, f, compiled=lambda x: np.ascontiguousarray(x * 2))
    with fails("layout differs"):
        check(lambda x: x * 2, f, compiled=lambda x: np.ascontiguousarray(x * 2),
              check_layout=True)


# ---- exceptions ---------------------------------------------------------------

def bad_add(x):
    return x + np.ones(7)


def test_same_exception_passes():
    check(bad_add, X, compiled=bad_add)


def test_catches_wrong_exception_type():
    def fake(x):
        raise TypeError(str(_numpy_error(bad_add, x)))

    with fails("exception type differs"):
        check(bad_add, X, compiled=fake)


def test_catches_wrong_exception_message():
    def fake(x):
        raise ValueError("operands could not be broadcast")

    with fails("exception message differs"):
        check(bad_add, X, compiled=fake)
    # relaxed comparisons
    check(bad_add, X, compiled=fake, exc_match="could not be broadcast")
    check(bad_add, X, compiled=fake, exc_normalize=lambda m: m.split(" together")[0])


def test_catches_missing_exception():
    with fails("NumPy raised .*ValueError.* but the compiled function returned"):
        check(bad_add, X, compiled=lambda x: x)


def test_catches_spurious_exception():
    def fake(x):
        raise NotImplementedError("not yet")

    with fails("NumPy returned .* but the compiled function raised .*NotImplementedError"):
        check(add_one, X, compiled=fake)


def test_overflow_error_like_numpy2():
    x = np.arange(3, dtype=np.int8)
    check(lambda x: x + 300, x, compiled=lambda x: x + 300)  # both raise OverflowError
    with fails("but the compiled function returned"):
        check(lambda x: x + 300, x, compiled=lambda x: x + np.int8(44))


def _numpy_error(fn, *args):
    try:
        fn(*args)
    except Exception as e:
        return e
    raise AssertionError("expected an exception")


# ---- mutation of arguments ----------------------------------------------------

def inc_inplace(x):
    x += 1
    return None


def test_mutation_must_match():
    check(inc_inplace, X, compiled=inc_inplace)
    with fails("positional args after the call"):
        check(inc_inplace, X, compiled=lambda x: None)


def test_mutation_through_kwargs():
    def f(x, *, out):
        np.add(x, 1, out=out)

    check(f, X, out=np.zeros_like(X), compiled=f)
    with fails("keyword args after the call"):
        check(f, X, out=np.zeros_like(X), compiled=lambda x, *, out: None)


def test_mutation_of_nested_argument():
    def f(pair):
        pair[0][...] = 7

    check(f, (X, X + 1), compiled=f)
    with fails(r"args after the call\[0\]\[0\]"):
        check(f, (X, X + 1), compiled=lambda pair: pair[1].fill(7))


def test_random_generator_state_must_match():
    def draw(g, n):
        return g.random(n).sum()

    for g in (np.random.default_rng(3), np.random.RandomState(3)):
        draw_legacy = (lambda g, n: g.random_sample(n).sum()) if isinstance(g, np.random.RandomState) else draw
        check(draw_legacy, g, 4, compiled=draw_legacy)
        with fails(r"args after the call\[0\] state"):
            check(draw_legacy, g, 4, compiled=lambda g, n: draw_legacy(g, n) + 0 * draw_legacy(g, 1))


def test_callers_arrays_untouched():
    x = X.copy()
    check(inc_inplace, x, compiled=inc_inplace)
    np.testing.assert_array_equal(x, X)


def test_aliasing_between_args_is_kept():
    def f(a, b):
        a += 1
        return b.copy()

    # With a deep copy per argument b would not see the write to a.
    a = np.zeros(3)
    out = check(f, a, a, compiled=f)
    np.testing.assert_array_equal(out, np.ones(3))


def test_make_args_for_views():
    def f(base, view):
        view[...] = 5
        return base

    def make():
        base = np.zeros(5)
        return base, base[1:3]

    check(f, make_args=make, compiled=f)
    with fails("values differ"):
        # A fake that writes into a copy: the base does not see it.
        check(f, make_args=make, compiled=lambda base, view: (view.copy().fill(5), base)[1])


def test_aliasing_optional():
    view = lambda x: x[1:]  # noqa: E731
    check(view, X, compiled=lambda x: x[1:].copy())
    check(view, X, compiled=view, check_aliasing=True)
    with fails("aliasing differs"):
        check(view, X, compiled=lambda x: x[1:].copy(), check_aliasing=True)
    ident = lambda x: x  # noqa: E731
    with fails("aliasing differs"):
        check(ident, X, compiled=lambda x: x[:], check_aliasing=True)


# ---- warnings -----------------------------------------------------------------

def test_warnings_optional():
    x = np.array([1.0, 0.0])
    recip = lambda x: 1.0 / x  # noqa: E731

    def quiet(x):
        with np.errstate(divide="ignore"):
            return 1.0 / x

    check(recip, x, compiled=quiet)
    with fails("warnings differ"):
        check(recip, x, compiled=quiet, warnings=True)
    check(recip, x, compiled=recip, warnings=True)


# ---- direct helpers -----------------------------------------------------------

def test_dtype_tol():
    assert dtype_tol(np.int32) == (0.0, 0.0)
    assert dtype_tol(np.bool_) == (0.0, 0.0)
    assert dtype_tol(np.float16)[0] == pytest.approx(1e-3)
    assert dtype_tol(np.float32)[0] == pytest.approx(1e-5)
    assert dtype_tol(np.float64)[0] == pytest.approx(1e-12)
    assert dtype_tol(np.complex64) == dtype_tol(np.float32)
    assert dtype_tol(np.complex128) == dtype_tol(np.float64)


def test_assert_same_direct():
    assert_same(np.float32(1), np.float32(1))
    with fails("type differs"):
        assert_same(np.float64(1), np.float32(1))
    with fails("dtype differs"):
        assert_same(np.zeros(2, np.int32), np.zeros(2, np.int64))
    with fails(re.escape("x: shape differs: got (2,), NumPy gives (1, 2)")):
        assert_same(np.zeros(2), np.zeros((1, 2)), path="x")
    assert_same(np.array([np.nan, -np.inf]), np.array([np.nan, -np.inf]))
    assert_same(np.float16(0.1), np.float16(0.1))
    assert_same(np.zeros((0, 3)), np.zeros((0, 3)))


def test_float16_difference_does_not_overflow():
    a = np.array([65504, -65504], dtype=np.float16)
    with fails("values differ"):
        assert_same(a, -a)
    assert_same(a, a.copy())


# ---- the default path: numdyn.compile -----------------------------------------

def test_check_compiles_with_numdyn(backend):
    """check() without compiled= goes through numdyn.compile(fn, backend=...)."""
    def f(x, y):
        return np.sin(x) * y + 1.5

    x = np.linspace(-2, 2, 12).reshape(3, 4)
    check(f, x, np.float64(2.0), backend=backend)
