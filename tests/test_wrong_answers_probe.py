"""Wrong answers found by probe programs written as users write NumPy code
(session 20), each against NumPy.

1. ``out=`` of a Generator's filling methods (``random``, ``standard_normal``,
   ``standard_exponential``, ``standard_gamma``, ``permuted``) given a traced
   array -- an argument buffer, a view of one, an ``np.empty`` of the
   function: NumPy's Cython casts ``out`` to an ndarray unchecked, read the
   lazy array's struct as an ndarray's and raised "Supplied output array
   must be contiguous, writable, aligned, and in machine byte-order" where
   NumPy fills the buffer.
2. ``np.linalg.norm(v, ord)`` of a vector for an ord other than 0, 1, 2 and
   inf raised ``|v|`` with np.power where NumPy writes ``absx **= ord``:
   ndarray's in-place power makes a Python int -1 np.reciprocal (and 0.5
   np.sqrt), so a zero element warned "divide by zero encountered in power"
   instead of "... in reciprocal".
3. ``a.conj()`` / ``a.conjugate()`` of a real (non-complex) array is ``a``
   itself under NumPy (PyArray_Conjugate), so ``c = a.conj(); c += 1``
   writes into ``a``; numdyn made a new array (a wrong answer). And
   ``a.squeeze()`` with no dim of size 1 is ``a`` itself (PyArray_Squeeze),
   not a view.
4. A NumPy scalar the function computes (``s = x.sum()``, ``a0 * 2`` of a
   0-d array, an element read kept lazy) is immutable, so whatever NumPy
   makes of it -- ``np.asarray(s)``, ``np.atleast_1d(s)``, ``s.reshape(1)``,
   ``np.ravel(s)``, ``np.expand_dims(s, 0)``, ``s[...]`` -- is a new array:
   numdyn's was a view of the scalar's own storage, so writing into it
   changed ``s`` (a wrong answer). Methods of a scalar give scalars
   (``s.squeeze()``, ``s.T``, ``s.copy()``, ``np.squeeze(s)``), not 0-d
   arrays; ``np.array(s, copy=False)`` raises as NumPy's; and ``s[...] = v``
   raises NumPy's TypeError instead of being ignored. NumPy code numdyn
   does not trace (``np.asarray_chkfinite``, ``np.require``,
   ``np.asfortranarray``, ``as_strided``) took the scalar's own memory
   through the buffer protocol / ``__array__``: now a copy of its value.
"""
import numpy as np
import pytest

import numdyn
from oracle import check


# ------------------------------------------------------- 1. random out=

def fill_argument(g, buf):
    buf += 1
    g.standard_normal(out=buf)
    buf *= 2
    return buf.sum(), g.bit_generator.state


def fill_view(g, buf):
    g.random(out=buf[1:])
    buf[0] = buf[1:].sum()
    return buf * 2, g.bit_generator.state


def fill_strided_view(g, buf):      # NumPy refuses a non-contiguous out
    g.standard_normal(out=buf[::2])
    return buf


def fill_rows_in_a_loop(g, buf):
    for i in range(buf.shape[0]):
        g.standard_exponential(out=buf[i])
        buf[i] *= i
    return buf.sum(axis=1), g.bit_generator.state


def fill_new_arrays(g, x):
    y = np.empty_like(x)
    g.permuted(x * 2, axis=0, out=y)
    z = x * 3
    g.standard_gamma(2.0, None, np.float64, z)      # out by position
    w = np.empty(x.shape, np.float32)
    g.standard_normal(dtype=np.float32, out=w)
    return y + 1, z, w, g.bit_generator.state


@pytest.mark.parametrize("fn,shape", [(fill_argument, (5,)), (fill_argument, (2, 3)),
                                      (fill_view, (5,)), (fill_strided_view, (6,)),
                                      (fill_rows_in_a_loop, (3, 4))])
def test_generator_out_of_traced_arrays(backend, fn, shape):
    for seed in (1, 2):
        check(fn, np.random.default_rng(seed), np.zeros(shape), backend=backend)


def test_generator_out_of_arrays_the_function_makes(backend):
    for seed in (1, 2):
        check(fill_new_arrays, np.random.default_rng(seed), np.arange(12.0).reshape(4, 3),
              backend=backend)


# ------------------------------------------------- 2. norm's absx **= ord

def vector_norms(v):
    return (np.linalg.norm(v, ord=-1), np.linalg.norm(v, ord=-1.0), np.linalg.norm(v, ord=0.5),
            np.linalg.norm(v, ord=3), np.linalg.norm(v[None], ord=-1, axis=1))


@pytest.mark.parametrize("v", [np.array([0.0, 1.0, 2.0]), np.array([0, 3, 4]),
                               np.array([3.0, -1.0, 2.0], np.float32), np.array([0j, 1 + 1j])])
def test_vector_norm_orders_warn_as_numpy(backend, v):
    check(vector_norms, v, backend=backend, warnings=True)


# ------------------------------------------ 3. methods that return self

def conj_writes_through(a):
    c = a + 0
    b = c.conj()
    b += 1
    d = a.conjugate()
    d[0] = -1
    return c, b is c, d is a


def squeeze_is_self(a):
    c = a * 2
    e = c.squeeze()
    e *= 2
    return c, e is c, a.squeeze() is a, np.squeeze(a) is a, a.squeeze(axis=()) is a


@pytest.mark.parametrize("a", [np.arange(3.0), np.arange(6).reshape(2, 3), np.ones((2, 1)),
                               np.array([True, False]), np.array(2.5),
                               np.array([1 + 2j, 3j], np.complex64)])
def test_methods_that_return_the_array_itself(backend, a):
    check(conj_writes_through, a, backend=backend)
    check(squeeze_is_self, a, backend=backend)


# ------------------------------------- 4. NumPy scalars are immutable

def _views_of_scalar(s):
    return [np.asarray(s), np.atleast_1d(s), np.atleast_2d(s), s.reshape(1), np.reshape(s, (1,)),
            np.ravel(s), s.ravel(), np.expand_dims(s, 0), s[...], s[None], np.asanyarray(s),
            np.ascontiguousarray(s), np.array(s)]


def write_into_views_of_a_sum(x):
    s = x.sum()
    outs = _views_of_scalar(s)
    for o in outs:
        o[...] = 7
    return s, outs


def write_into_views_of_a_scalar_product(a0):
    s = a0 * 2                      # a 0-d array times 2: a NumPy scalar
    outs = _views_of_scalar(s)
    for o in outs:
        o += 1
    return s, outs


def scalar_methods_are_scalars(x):
    s = x.max()
    outs = [s.squeeze(), s.T, s.transpose(), s.copy(), np.squeeze(s), np.transpose(s),
            s.view(), s.astype(np.float32), s.reshape(())]
    for o in outs:
        o *= 3                      # rebinds a scalar; never writes s
    return s, outs


def scalar_refuses_item_assignment(x):
    s = x.sum()
    s[...] = 7
    return s


def scalar_refuses_copy_false(x):
    return np.array(x.sum(), copy=False)


@pytest.mark.parametrize("x", [np.arange(4.0), np.arange(5), np.array([1 + 2j, 3j])])
def test_a_computed_scalar_is_never_written(backend, x):
    check(write_into_views_of_a_sum, x, backend=backend)
    check(write_into_views_of_a_scalar_product, np.array(x[1]), backend=backend)
    check(scalar_refuses_item_assignment, x, backend=backend)
    check(scalar_refuses_copy_false, x, backend=backend)
    if x.dtype.kind != "c":
        check(scalar_methods_are_scalars, x, backend=backend)


def test_a_computed_scalar_is_never_written_replayed():
    cf = numdyn.compile(write_into_views_of_a_sum)
    for n in (4, 4, 6, 4):
        x = np.arange(float(n))
        check(write_into_views_of_a_sum, x, compiled=cf)


def numpy_code_given_a_computed_scalar(x):
    s = x.sum() * 1
    outs = [np.asarray_chkfinite(s), np.require(s), np.asfortranarray(s),
            np.lib.stride_tricks.as_strided(s), np.array(memoryview(s))]
    for o in outs:
        o[...] = 7
    return s, outs


@pytest.mark.parametrize("x", [np.arange(4.0), np.arange(5, dtype=np.int32)])
def test_numpy_code_given_a_computed_scalar_copies_it(backend, x):
    check(numpy_code_given_a_computed_scalar, x, backend=backend)
