"""Element writes into an argument, each followed by an element read that
flushes, write into the argument in place (as NumPy does) instead of copying
it whole for every write: the loop was quadratic in the array's length
(base_copy_bytes = n * 8 bytes per iteration). Python code that holds the
argument or a view of it sees each write, pending readers of the old
contents keep them, and an argument passed twice is not written in place.
"""
import numpy as np

import numdyn


def _step(v, a):
    return v * a + 0.1


def _branchy(x):
    for i in range(1, len(x)):
        v = _step(x[i - 1], 0.5)   # a helper call: the loop is traced, not captured
        if v > 0.3:                # an element read: a flush each iteration
            x[i] = v + x[i]
    return x


def _old_reader(x, w):
    y = x * 2                      # reads x's old contents, pending
    v = w[:3]                      # a view Python holds
    seen = []
    for i in range(len(x)):
        x[i] = _step(x[i], 3.0)
        seen.append(float(v[min(i, 2)]))   # flushes; v is x's memory when w is x
    return y, seen, x.sum()


def test_element_writes_into_an_argument_are_in_place():
    cf = numdyn.compile(_branchy, options={"floor": False})
    x = np.random.default_rng(0).standard_normal(4000)
    a, b = x.copy(), x.copy()
    cf(b.copy())                   # compiled and cached
    C = numdyn.utils.counters
    c0 = C["base_copy_bytes"]
    r = cf(b)
    assert r is b and np.array_equal(_branchy(a), b)
    # at most one copy of the array for the whole call (was ~n/2 copies)
    assert C["base_copy_bytes"] - c0 <= x.nbytes


def test_in_place_writes_keep_numpy_semantics():
    cf = numdyn.compile(_old_reader, options={"floor": False})
    for same in (True, False):
        x = np.linspace(-1.0, 1.0, 300)
        x1, x2 = x.copy(), x.copy()
        w1 = x1 if same else x1.copy()
        w2 = x2 if same else x2.copy()
        want, got = _old_reader(x1, w1), cf(x2, w2)
        assert np.array_equal(want[0], got[0]) and want[1] == got[1]
        np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
        assert np.array_equal(x1, x2) and np.array_equal(w1, w2)
