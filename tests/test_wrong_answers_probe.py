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
"""
import numpy as np
import pytest

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
