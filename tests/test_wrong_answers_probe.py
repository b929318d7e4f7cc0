"""Wrong answers found by probe programs written as users write NumPy code
(session 20), each against NumPy.

1. ``out=`` of a Generator's filling methods (``random``, ``standard_normal``,
   ``standard_exponential``, ``standard_gamma``, ``permuted``) given a traced
   array -- an argument buffer, a view of one, an ``np.empty`` of the
   function: NumPy's Cython casts ``out`` to an ndarray unchecked, read the
   lazy array's struct as an ndarray's and raised "Supplied output array
   must be contiguous, writable, aligned, and in machine byte-order" where
   NumPy fills the buffer.
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
