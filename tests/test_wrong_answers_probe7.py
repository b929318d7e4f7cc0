"""Differences from NumPy found by probe programs written as users write
NumPy code (session 25, probe7), each against NumPy.

1. A reshape NumPy makes a view of an argument laid out in another memory
   order (``a.T.ravel()``, ``a.T.reshape(2, 6)`` of a Fortran-ordered
   ``a``) re-expressed the argument's storage over its memory order, and
   the view returned was built on the value of that re-expression -- a
   copy -- not on the caller's memory: NumPy's result shares memory with
   ``a`` (writes into it change ``a``), numdyn's did not. A re-expressed
   storage not written since is the caller's memory itself.
2. ``np.asfortranarray(a)`` is NumPy's C function, which took a lazy array
   through the buffer protocol: of an argument already Fortran-ordered it
   gave a new ndarray over its memory where NumPy gives ``a`` itself (a
   recorded break, too). It is in the shim now, as ``ascontiguousarray``.
3. An argument that is a view of another argument's memory (``f(b, b[1:])``)
   returned as it was (``return x, y``) came back as a new view of that
   memory where NumPy gives the argument object itself.
4. A 0-d integer ndarray in an index that does not name one element
   (``m[np.array(1)]``, ``m[k, 1:]`` with ``k = np.asarray(np.argmax(v))``)
   indexed as an integer and gave a view: NumPy's index is then advanced
   (its HAS_SCALAR_ARRAY) and the result a copy, so a write into it
   changed ``m`` under numdyn only. A NumPy scalar index stays a view.
5. ``np.concatenate([x])`` / ``np.hstack((x,))`` of one array of the
   result's dtype was ``x``'s own value: returned, it was the argument
   itself, so the caller's writes into the result changed ``x`` (NumPy's
   result is a new array).
6. A storage left at another value's version -- a whole write
   (``b[...] = c``, ``np.copyto(b, a)``) or an identity op
   (``np.roll(c, 0, axis=0)``) -- handed back that value's array: ``return
   b, c`` gave one memory twice, ``np.copyto(b, a); return b`` gave the
   argument's memory. A value so shared becomes a copy of its own when it
   is handed out.
"""
import numpy as np
import pytest

from oracle import check

import numdyn


def _calls(fn, backend, *makers, **kw):
    """One compiled fn, called on the arguments each maker builds (first and
    warm calls)"""
    cf = numdyn.compile(fn, backend=backend)
    for make in makers:
        check(fn, make_args=make, compiled=cf, **kw)


# ------------------- 1. views through a re-expressed argument's memory
def _fortran():
    return (np.asfortranarray(np.arange(12.0).reshape(3, 4)),)


def _transposed():
    return (np.arange(12.0).reshape(4, 3).T,)


def reshaped_views_of_other_orders(a):
    return a.T.ravel(), a.T.reshape(2, 6), np.transpose(a).reshape(-1)[2:]


def test_reshape_view_of_a_fortran_argument(backend):
    _calls(reshaped_views_of_other_orders, backend, _fortran, _transposed, _fortran,
           check_aliasing=True)


# ------------------------------------------------- 2. np.asfortranarray
def as_fortran(a):
    b = np.asfortranarray(a)
    return (b, np.asfortranarray(a, dtype=np.float32), np.asfortranarray(a * 2).ravel("K"),
            np.asfortranarray(a.sum()), b.flags.f_contiguous)


def test_asfortranarray_of_a_fortran_argument_is_itself(backend):
    _calls(as_fortran, backend, _fortran, lambda: (np.arange(12.0).reshape(3, 4),),
           lambda: (np.arange(5.0),), lambda: (np.array(2.0),), _fortran, check_aliasing=True)


# ---------------------- 3. arguments that are views of one another's memory
def add_and_return_both(x, y):
    n = min(len(x), len(y))
    x[:n] += y[:n]
    return x, y


def _shifted():
    b = np.arange(10.0)
    return b, b[1:]


def _halves():
    b = np.arange(10.0)
    return b[:6], b[4:]


def _reversed():
    b = np.arange(10.0)
    return b, b[::-1]


def test_aliasing_arguments_return_themselves(backend):
    _calls(add_and_return_both, backend, _shifted, _halves, _reversed, _shifted,
           check_aliasing=True)


# --------------------------------------- 4. a 0-d integer array as an index
def zero_d_array_index(m, v, i):
    k = np.asarray(np.argmax(v))
    r = m[k]
    r[0] = 9
    q = m[i, 1:]
    q += 100
    s = m[np.argmin(v)]   # a NumPy scalar index: a view
    s[1] = -7
    m[np.array(2)] += 1
    return m, r, q, s, m[k, 2], m[i][::-1]


def test_zero_d_integer_array_index_copies(backend):
    _calls(zero_d_array_index, backend,
           lambda: (np.arange(12.0).reshape(3, 4), np.array([1.0, 5.0, 2.0]), np.array(0)),
           lambda: (np.arange(8.0).reshape(4, 2), np.array([7.0, 5.0, 2.0, 1.0]), np.array(-1)),
           check_aliasing=True)


# ------------------------------------------------ 5. a join of one array
def joins_of_one(a):
    return (np.concatenate([a]), np.hstack((a,)), np.concatenate((a,), axis=0, dtype=a.dtype),
            np.concatenate([a * 2]))


def test_join_of_one_array_is_a_new_array(backend):
    _calls(joins_of_one, backend, lambda: (np.arange(6.0),), lambda: (np.arange(6.0)[::-2],),
           lambda: (np.arange(6.0),), check_aliasing=True)


# ------------------------------- 6. two names of one value, two arrays
def shared_versions(a):
    b = np.empty_like(a)
    c = a * 2
    b[...] = c
    d = np.empty_like(a)
    np.copyto(d, a)
    e = np.roll(c, 0, axis=0)
    return b, c, d, e, b[1:]


def test_values_sharing_a_version_are_distinct_arrays(backend):
    _calls(shared_versions, backend, lambda: (np.arange(6.0),), lambda: (np.arange(12.0)[::2],),
           lambda: (np.arange(6.0),), check_aliasing=True)
    b, c, d, e, b1 = numdyn.compile(shared_versions, backend=backend)(np.arange(6.0))
    arrays = (b, c, d, e)
    assert not any(np.shares_memory(x, y) for i, x in enumerate(arrays) for y in arrays[i + 1:])
