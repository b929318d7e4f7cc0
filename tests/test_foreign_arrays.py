"""Real arrays the function's code holds and writes with NumPy itself.

A compiled function's own NumPy calls are traced, but arrays made by code
numdyn does not trace (helper functions, __init__ of a class, np.random,
globals, attributes) reach it as real ndarrays. A traced operation that
reads such an array runs later; NumPy code that writes the array before
then (`b += 1`, `G[0] = 5`, `m.b[:] = 0`) must not change what the
earlier operation read. Each case gave the value *after* the write before
the fix (the lazy read saw the array at flush time)."""
import numpy as np
import pytest

import numdyn

G = np.arange(5.0)


class Model:
    def __init__(self, n):
        self.W = np.eye(n) * 0.5
        self.b = np.zeros(n)

    def forward(self, x):
        return np.tanh(self.W @ x + self.b)


def make_zeros(n):
    return np.zeros(n)


def helper_result_then_iadd(x):
    b = make_zeros(len(x))
    y = x + b
    b += 1
    return y


def init_attribute_then_iadd(x):
    m = Model(len(x))
    y = m.forward(x)
    m.b += 1
    return y, m.forward(x)


def attribute_slice_write(x):
    m = Model(len(x))
    y = x * m.b
    m.b[:] = 3
    return y, x * m.b


def random_then_scale(x):
    rng = np.random.default_rng(0)
    n = rng.random(len(x))
    y = x * n
    n *= 0
    return y


def global_then_element_write(x):
    y = x + G
    G[0] = 100.0
    z = x + G
    G[0] = 0.0
    return y, z


def loop_reads_and_bumps(x):
    r = make_zeros(len(x))
    y = x.copy()
    for _ in range(3):
        y = y + r
        r += 1
    return y, r


def written_by_trace_then_read_by_python(x):
    r = make_zeros(len(x))
    np.add(r, x, out=r)
    first = float(r[0])
    return first, r


def view_then_base_write(x):
    r = make_zeros(len(x) + 2)
    y = x + r[1:-1]
    r[2] = 9.0
    return y, r


CASES = [helper_result_then_iadd, init_attribute_then_iadd, attribute_slice_write,
         random_then_scale, global_then_element_write, loop_reads_and_bumps,
         written_by_trace_then_read_by_python, view_then_base_write]


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_numpy_writes_after_a_lazy_read(fn):
    cf = numdyn.compile(fn)
    for _ in range(2):
        x = np.linspace(-1.0, 1.0, 5)
        want = _tuple(fn(x.copy()))
        got = _tuple(cf(x.copy()))
        assert len(want) == len(got)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-12)
