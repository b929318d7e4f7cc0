"""Arrays handed to code outside the graph (a NumPy fallback, a
numdyn.disable'd function) that writes into them: values computed lazily
before the call must hold the old contents, views and the caller's arrays
the new ones, exactly as NumPy's eager order gives (src/trace/trace_outside.c).
Each case fails without the version split: the lazy reader computes after
the write and sees it."""
import numpy as np
import pytest

import numdyn
from oracle import check


def read_then_fill(a):
    before = a + 1                 # lazy reader of a's old contents
    np.fill_diagonal(a, 0)         # not in the shim: NumPy writes the caller's buffer
    return before, a


def write_then_fill(a):
    a[0] = 5                       # a pending write lands before NumPy sees a
    np.fill_diagonal(a, 0)
    return a


def fill_a_view(a):
    before = a * 1
    np.fill_diagonal(a[1:, 1:], 7)
    return before, a


def fill_a_computed_value(a):
    t = a * 2
    u = t + 1                      # reads t before the write
    np.fill_diagonal(t, 0)
    return t, u


def copies_and_views(a):
    c = a.copy()                   # a copy: old contents
    d = a.T                        # a view: new contents
    e = a[1:].copy()
    r = a.reshape(-1)              # a view
    np.fill_diagonal(a, 0)
    return c, d, e, r


def fill_view_of_computed(a):
    t = a * 2
    w = t[1:]
    s = t.sum()                    # a lazy reduction of the old t
    np.fill_diagonal(w, 9)
    return t, s


def cyclic_put(a, b):
    before = a * 2
    np.put(a, [0, 5], b)           # values repeated cyclically: a graph break
    return before, a


def sort_in_place_fallback(a):
    before = a - 1
    a.sort(axis=0, kind="stable")
    return before, a


def no_write(a):
    before = a + 1
    n = np.linalg.matrix_rank(a)   # reads only: nothing to split
    return before, n


@numdyn.disable
def _user_mutator(x):
    x[0, 0] = -100.0
    x[:, 1] *= 3
    return None


def disabled_function_writes(a):
    before = a.sum(axis=0)
    _user_mutator(a)
    after = a.sum(axis=0)
    return before, after, a


def loop_of_breaks(a):
    acc = np.zeros(a.shape[1])
    for i in range(3):
        acc = acc + a[i]           # lazy: reads row i before the write below
        np.fill_diagonal(a, i + 10)
    return acc, a


def view_read_before_and_after(a):
    r = a[1:]
    t = float(r.sum())             # a flush: r's view value may be cached
    np.fill_diagonal(a, 0)         # nothing pending reads a: no snapshot taken
    return r.sum(), t, r, r * 1


CASES = [view_read_before_and_after, read_then_fill, write_then_fill, fill_a_view, fill_a_computed_value,
         copies_and_views, fill_view_of_computed, sort_in_place_fallback, no_write,
         disabled_function_writes, loop_of_breaks]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("layout", ["C", "F"])
def test_outside_write_is_ordered_like_numpy(backend, fn, layout):
    def make():
        a = np.arange(20.0).reshape(4, 5) * 0.5 - 3
        return (np.asfortranarray(a) if layout == "F" else a,)
    check(fn, make_args=make, backend=backend)


def test_cyclic_put(backend):
    check(cyclic_put, make_args=lambda: (np.arange(24).reshape(4, 6), np.array([7, 8, 9])),
          backend=backend)


def test_unchanged_buffers_keep_their_version(backend):
    """A break that writes nothing must not split versions: the result is
    still the caller's array itself."""
    def f(a):
        np.linalg.matrix_rank(a)
        return a
    a = np.eye(3)
    assert numdyn.compile(f, backend=backend)(a) is a


@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_failed_put_writes_partially_only_in_place(backend, layout):
    """NumPy puts into a C-contiguous array in place (a failing index leaves
    the earlier values written) and into a copy of any other array (nothing
    written)."""
    def f(a):
        np.put(a, [1, 200], [5, 6])
        return a

    def make():
        a = np.arange(12.0).reshape(3, 4)
        if layout == "F":
            a = np.asfortranarray(a)
        elif layout == "neg":
            a = a[::-1]
        return (a,)
    check(f, make_args=make, backend=backend)
