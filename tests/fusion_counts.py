"""What the fusion tests count (issue 19): the kernels one warm call of a
compiled function runs (counter kernel_runs) and the bytes its kernels read
(bytes_read: each array once per kernel run), so bytes_read / x.nbytes is
the number of passes over x; and the operands they count it on, in every
layout a kernel meets."""
import numpy as np

import numdyn


def measure(fn, *args):
    """(kernels, bytes read) of one warm call of the compiled fn"""
    f = numdyn.compile(fn)
    f(*args)
    c = numdyn.utils.counters
    k0, b0 = c["kernel_runs"], c["bytes_read"]
    f(*args)
    return c["kernel_runs"] - k0, c["bytes_read"] - b0


def passes(fn, x, *rest):
    """kernels run, and passes over x (bytes read / x.nbytes, rounded to
    tenths: small per-column arrays add a little)"""
    k, b = measure(fn, x, *rest)
    return k, round(b / x.nbytes, 1)


def kernel_runs(fn, *args):
    """kernels one warm call of the compiled fn runs"""
    return measure(fn, *args)[0]


def data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    return rng.integers(-50, 50, size=shape).astype(dt)


def layouts(shape, dt):
    """x in C order, Fortran order, strided (every other row) and reversed"""
    a = data(shape, dt)
    yield a
    yield np.asfortranarray(a)
    yield data((shape[0] * 2,) + tuple(shape[1:]), dt, 1)[::2]
    yield a[::-1, ::-1]
