"""Differences from NumPy found by probe programs written as users write
NumPy code (session 24, probe6), each against NumPy.

1. ``order=`` of a ufunc call (``np.add(a, b, order='F')``,
   ``np.exp(x, order='C')``, ``np.negative(x, order='A')``) was parsed and
   ignored: the result took the iterator's 'K' layout, so a later
   ``.ravel('K')`` / ``.ravel('A')`` / ``tobytes('A')`` listed the elements
   in another order than NumPy's.
2. ``np.asarray(x, order='A')`` of a non-contiguous array copied it: NumPy
   takes any layout for 'A' as for 'K' (its STRIDING_OK), so the result is
   ``x`` itself.
3. Arguments sharing memory that numdyn cannot put on one storage -- a view
   of another dtype (``f(x, x.view(np.int64))``, ``f(z, z.real)``) -- were
   traced as independent arrays: a write through one was not seen through
   the other (NumPy: it is). They run with NumPy now (a recorded break).
   So do traced arguments sharing memory with an argument NumPy runs (a
   structured array and one of its fields, a datetime64 array and its
   int64 view) or with a traced subclass (``f(a.view(Sub), a)``).
4. A NumPy function that may raise on its values (``np.linalg.inv`` /
   ``solve`` of a singular matrix) whose result is never used (a bare call,
   a value rebound, only ``.shape`` read) was not run: NumPy's LinAlgError
   was lost. Unused values of such functions are run by the return flush,
   as unused ufuncs already were for their warnings.
"""
import numpy as np
import pytest

from oracle import check

import numdyn


def _calls(fn, backend, *makers, **kw):
    """One compiled fn, called on the arguments each maker builds (first and
    warm calls); makers, not arrays: the oracle's deep copy of a strided
    view is contiguous"""
    cf = numdyn.compile(fn, backend=backend)
    for make in makers:
        check(fn, make_args=make, compiled=cf, **kw)


def _c():
    return np.arange(12.0).reshape(3, 4)


def _f():
    return np.asfortranarray(_c())


def _s():
    return np.arange(24.0).reshape(3, 8)[:, ::2]


def _n():
    return _c()[::-1]


# ----------------------------------------------- 1. a ufunc's order=
def _ufunc_orders(a, b):
    return (np.add(a, b, order="F"), np.multiply(a, 2.0, order="C"),
            np.negative(a, order="A"), np.add(a, b, order="A"),
            np.add(a, 1.0, order="f").ravel("K"), np.add(a, b, order="A").ravel("A"),
            np.divmod(a, 3.0, order="F")[1].ravel("K"))


def test_ufunc_order_keyword(backend):
    _calls(_ufunc_orders, backend, lambda: (_c(), _c()), lambda: (_f(), _f()),
           lambda: (_f(), _c()), lambda: (_s(), _n()), lambda: (_f(), np.ones(4)),
           check_layout=True)


def _ufunc_bad_order(a):
    return np.add(a, 1.0, order="X")


def test_ufunc_order_keyword_error(backend):
    _calls(_ufunc_bad_order, backend, lambda: (np.ones((2, 2)),))


# ---------------------------------- 2. np.asarray(x, order='A') is x
def _asarray_any(a):
    b = np.asarray(a, order="A")
    b[0, 0] = 99.0
    return b is a, b, a.sum()


def test_asarray_order_any_is_the_array(backend):
    _calls(_asarray_any, backend, lambda: (_c(),), lambda: (_s(),), lambda: (_f(),),
           lambda: (_n(),), check_layout=True)


# ------------------- 3. arguments sharing memory across dtypes / layouts
def _bits_after_write(a, b):
    a += 1.0
    return b.copy(), (b & 0xFF).sum()


def _separate():
    return np.arange(6.0), np.arange(6)


def _punned():
    x = np.arange(6.0)
    return x, x.view(np.int64)


def test_argument_view_of_another_dtype(backend):
    # a first call with separate arrays, then aliasing ones (warm: replay)
    _calls(_bits_after_write, backend, _separate, _separate, _punned, _separate, _punned)


def _scale_real(z, re):
    re *= 2
    return z.sum(), np.abs(z)


def _complex_and_real():
    z = np.arange(4) + 1j * np.arange(4)
    return z, z.real


def test_argument_real_part_of_complex(backend):
    _calls(_scale_real, backend, _complex_and_real, _complex_and_real)



def _field_after_write(st, x):
    x *= 2
    return st["x"].copy(), st[0]["x"]


def _record_and_field():
    st = np.zeros(3, dtype=[("x", "f8"), ("y", "i4")])
    st["x"] = [1.0, 2.0, 3.0]
    return st, st["x"]


def test_argument_field_of_a_structured_argument(backend):
    _calls(_field_after_write, backend, _record_and_field, _record_and_field)


class _Sub(np.ndarray):
    pass


def _sub_after_write(s, a):
    a += 1
    return np.asarray(s).copy(), s.sum()


def _sub_and_base():
    a = np.arange(6.0)
    return a.view(_Sub), a


def test_argument_subclass_view_of_another_argument(backend):
    _calls(_sub_after_write, backend, _sub_and_base, _sub_and_base)


# ------------------------- 4. an unused result of a function that raises
def _bare_inv(a):
    np.linalg.inv(a)


def _inv_shape_only(a):
    y = np.linalg.inv(a)
    return y.shape


def _solve_dropped(a):
    np.linalg.solve(a, a[0])
    return a


def test_unused_linalg_result_still_raises(backend):
    sing = lambda: (np.zeros((2, 2)),)
    ok = lambda: (np.eye(2) * 2.0,)
    for fn in (_bare_inv, _inv_shape_only, _solve_dropped):
        _calls(fn, backend, sing, ok, sing)
