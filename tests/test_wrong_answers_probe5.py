"""Differences from NumPy found by probe programs written as users write
NumPy code (session 23), each against NumPy.

1. ``np.put(x, idx, v)`` with an index array the caller passed (or the
   function computed) and an index out of range: NumPy's put stores index by
   index, so the values before the bad index are in ``x`` when IndexError
   leaves the call. numdyn deferred the bounds check of a computed index to
   a check node of the graph (a call recorded for replay defers them), which
   raised before any store: ``x`` came back untouched.
2. ``np.take(x, idx)`` of an empty axis with a non-empty index raises
   NumPy's "cannot do a non-empty take from an empty axes." in every mode
   (numdyn: the indexing message "index 0 is out of bounds ..." for mode
   'raise'); ``np.put`` into an empty array: "cannot replace elements of an
   empty array".
"""
import numpy as np
import pytest

from oracle import check

import numdyn


def _calls(fn, backend, *arg_sets):
    """One compiled fn, called on each argument set (first and warm calls)."""
    cf = numdyn.compile(fn, backend=backend)
    for args in arg_sets:
        check(fn, *args, compiled=cf)


# ------------------------------------------ 1. np.put stops at a bad index
def _put(x, i, v):
    np.put(x, i, v)
    return x


def test_put_partial_store_computed_index(backend):
    _calls(_put, backend,
           (np.zeros(5), np.array([1, 5, 2]), 9.0),
           (np.zeros(6), np.array([0, 2, -7, 1]), np.array([1.0, 2.0, 3.0, 4.0])),
           (np.zeros(5), np.array([3, 1]), 2.0))


def _put_computed(x, i):
    np.put(x, i * 2, 7.0)
    return x


def test_put_partial_store_index_computed_inside(backend):
    _calls(_put_computed, backend,
           (np.zeros(5), np.array([1, 3, 0])),
           (np.zeros(7), np.array([2, 1])))


# ------------------------------------ 2. take / put of an empty axis
def _take(x, i):
    return np.take(x, i), np.take(x, i, mode="clip")


def test_take_empty_axis_message(backend):
    _calls(_take, backend,
           (np.zeros(0), np.array([0])),
           (np.zeros(0), np.array([], np.int64)),
           (np.arange(3.0), np.array([2, 0])))


def test_take_put_empty_axis_message_concrete_index(backend):
    def f(x):
        return np.take(x, [0, 1])

    def g(x):
        np.put(x, [0], 1.0)
        return x

    check(f, np.zeros(0), backend=backend)
    check(g, np.zeros(0), backend=backend)


# ------------------------- 3. isclose ignores invalid values as NumPy's
_X = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, 1e300])
_Y = np.array([1.0 + 1e-9, np.nan, np.inf, np.inf, 1e-9, -1e300])


def _isclose(x, y):
    return (np.isclose(x, y), np.isclose(x, y, rtol=0, equal_nan=True),
            np.isclose(x, np.inf), np.allclose(x, y))


def test_isclose_of_infinities_gives_no_invalid_warning(backend):
    cf = numdyn.compile(_isclose, backend=backend)
    for args in ((_X, _Y), (_X[:5].astype(np.float32), _Y[:5]), (_Y, _X)):
        check(_isclose, *args, compiled=cf, warnings=True)


def _isclose_raise(x, y):
    with np.errstate(invalid="raise"):
        return np.isclose(x, y, atol=0.5)


def test_isclose_of_infinities_under_errstate_raise(backend):
    check(_isclose_raise, _X, _Y, backend=backend)


def _isclose_tol(x, y, atol):
    return np.isclose(x, y, atol=atol, rtol=0.0)


def test_isclose_non_finite_tolerance_warns(backend):
    cf = numdyn.compile(_isclose_tol, backend=backend)
    for atol in (np.inf, 0.25, np.float32(0.5)):
        check(_isclose_tol, _X, _Y, atol, compiled=cf, warnings=True)


# ---------------------- 4. np.clip's shape error names all its operands
def _clip(x, lo, hi):
    return np.clip(x, lo, hi)


def test_clip_broadcast_error_names_every_operand(backend):
    cf = numdyn.compile(_clip, backend=backend)
    x = np.arange(12.0).reshape(3, 4)
    for lo, hi in ((np.zeros(3), np.float64(2)), (1, np.zeros(5)), (np.zeros(4), 2.5)):
        check(_clip, x, lo, hi, compiled=cf)


# ------------------------------ 5. arange's length and dtype, linspace's step
def _arange(s, e, st):
    return np.arange(s, e, st)


def test_arange_step_past_the_stop(backend):
    # NumPy's _calc_length: a quotient of 0 (an infinite step, one that
    # underflows it) gives the start alone when the step points to stop
    cf = numdyn.compile(_arange, backend=backend)
    for args in ((0, 5, np.inf), (0, 5, -np.inf), (5, 0, -np.inf), (0.0, 1e-300, 1e300),
                 (0, 0, np.inf), (0, 5, 2)):
        check(_arange, *args, compiled=cf)


def _arange_dt(s, e, st, dt):
    return np.arange(s, e, st, dtype=dt)


def test_arange_sets_only_the_values_it_has(backend):
    cf = numdyn.compile(_arange_dt, backend=backend)
    for args in ((300, 0, 1, np.int8), (250, 251, 10, np.uint8), (250, 256, 5, np.uint8),
                 (0, 5, np.inf, np.float32)):
        check(_arange_dt, *args, compiled=cf)


def _arange_types(s, e):
    return np.arange(e), np.arange(s, e)


def test_arange_dtype_from_numpy_scalar_bounds(backend):
    # PyArray_ArangeObj promotes the arguments' types with intp: a uint64
    # bound gives float64, an int8 one int64, a float32 one float64
    cf = numdyn.compile(_arange_types, backend=backend)
    for args in ((np.uint64(1), np.uint64(4)), (np.int8(1), np.int8(5)), (1, np.float32(3.5)),
                 (np.uint8(250), np.int64(260)), (np.int8(3), 300), (2, 5)):
        check(_arange_types, *args, compiled=cf)


def _linspace_step(n):
    return np.linspace(0, 1, n, retstep=True), np.linspace(np.float32(0), 1, n, retstep=True)


def test_linspace_retstep_without_a_step_is_python_nan(backend):
    cf = numdyn.compile(_linspace_step, backend=backend)
    for n in (1, 0, 4):
        check(_linspace_step, n, compiled=cf)


# --------------------- 6. np.full of a Python float into an integer dtype
def _full(n, v, dt):
    return np.full(n, v, dtype=dt)


def test_full_casts_a_python_float_as_numpy(backend):
    # copyto(casting='unsafe') of np.asarray(v): 1e300 into int32 is INT_MIN,
    # NaN warns "invalid value encountered in cast", 1j into float64 warns
    # ComplexWarning; nothing is cast into an empty array
    cf = numdyn.compile(_full, backend=backend)
    for args in ((3, 1e300, np.int32), (3, np.nan, np.int64), (0, np.nan, np.int64),
                 (2, 1e10, np.int8), (2, 1 + 1j, np.float64), (0, np.float64(np.nan), np.int64),
                 (2, 300.7, np.int16)):
        check(_full, *args, compiled=cf, warnings=True)


def _copyto(x, v):
    np.copyto(x, v, casting="unsafe")
    return x


def test_copyto_unsafe_casts_a_python_float_as_numpy(backend):
    cf = numdyn.compile(_copyto, backend=backend)
    for args in ((np.zeros(3, np.int32), 1e300), (np.zeros(3, np.int32), np.nan),
                 (np.zeros(2, np.uint8), -1.5), (np.zeros(0, np.int8), np.nan),
                 (np.zeros(2, np.int16), 2.5)):
        check(_copyto, *args, compiled=cf, warnings=True)


# ------------- 7. np.array of float scalars with an integer dtype= stores
# each by setitem (int() of it), not by a cast of the stacked values
def _array_int(y):
    return np.array([y[0], y[1]], dtype=np.int8)


def test_array_of_computed_float_scalars_into_int8(backend):
    cf = numdyn.compile(_array_int, backend=backend)
    for y in (np.array([300.5, 2.0]), np.array([np.nan, 1.0]), np.array([1.5, -2.5]),
              np.array([127.9, 2.0], np.float32)):
        check(_array_int, y, compiled=cf)


# ------- 8. a Python float given to an integer loop (dtype=, casting='unsafe')
def _unsafe_loop(x):
    return (np.add(x, 1e300, dtype=np.int32, casting="unsafe"),
            np.maximum(x, 1e300, dtype=np.int32, casting="unsafe"),
            np.add(x, -1.5, dtype=np.uint8, casting="unsafe"))


def test_python_float_cast_to_an_integer_loop_as_numpy(backend):
    # NumPy casts the 0-d float64 to the loop's dtype: 1e300 is INT_MIN in
    # int32 (numdyn truncated it through int64: 0), with its warning
    cf = numdyn.compile(_unsafe_loop, backend=backend)
    for x in (np.array([3, 1, 0], np.int32), np.array([1.0, -2.0, -4.0])):
        check(_unsafe_loop, x, compiled=cf, warnings=True)
