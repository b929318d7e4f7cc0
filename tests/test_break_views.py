"""Views that leave the graph: a graph break (a NumPy function numdyn does
not trace, a method run on the materialized array, a numdyn.disable'd
function, a captured loop's Python copy while its C compiles) hands NumPy
the real memory of lazy values, and NumPy hands back views of it. Under
NumPy those are views: later writes to the value are seen through them and
their writes through the value. They were copies in effect (the lazy
value's later writes went to a new buffer): wrong answers."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import numdyn
from numdyn import utils
from oracle import check
from test_first_call import gated  # noqa: F401  (a fixture)


def windows_then_write(x):
    y = x * 2
    w = sliding_window_view(y, 3)           # a break: NumPy's read-only view of y
    y[0] = 100.0
    first = w[0].copy()
    y += 1
    return w.sum(axis=1), first


def dtype_view_then_write(x):
    y = x * 1.0
    v = y.view(np.int64)                    # a method run on the materialized y
    y[2] = 0.0
    v[3] = 0                                # and a write through the view
    return v.copy(), y


@numdyn.disable
def _middle(a):
    return a[1:4]


def disabled_views(x):
    y = x * 2
    v = _middle(y)
    v[0] = 100.0                            # seen by y
    z = y + 1
    y[2] = -5.0                             # seen by v
    w = _middle(x)
    x[1] = 7.0                              # an argument's view too
    return y, z, v * 2, w.sum()


def array_copy_none(x):
    y = x * 2
    b = np.array(y, copy=None)              # y itself (NumPy 2)
    b[0] = 55.0
    c = np.array(y, copy=None, ndmin=3)     # a view with leading 1-dims
    c[0, 0, 1] = 66.0
    return y, b is y, c.shape, c.base is y, np.array(y, ndmin=2).shape


def test_views_from_a_numpy_break_alias_the_lazy_value():
    x = np.arange(12.0)
    check(windows_then_write, x)
    check(dtype_view_then_write, x)


def test_views_from_a_disabled_function_alias_both_ways():
    check(disabled_views, np.arange(12.0))


def test_np_array_copy_none_is_the_array_itself():
    check(array_copy_none, np.arange(6.0))


def best_window(x):
    y = x * 2
    best = y[:3]
    for i in range(y.shape[0] - 2):
        cand = y[i:i + 3]
        if cand[0] + cand[1] + cand[2] > best[0] + best[1] + best[2]:
            best = cand
    y[-1] = -100.0                          # seen through best (a view of y)
    best[0] = 55.0                          # seen by y
    return best.copy(), y


def test_views_a_loop_hands_back_while_its_c_compiles(gated):
    gate, _ = gated
    f = numdyn.compile(best_window, options={"floor": False})
    x = np.arange(10.0)
    p0 = utils.counters["loop_pending_runs"]
    check(best_window, x, compiled=f)       # Python ran the loop (C held at the gate)
    assert utils.counters["loop_pending_runs"] > p0
    gate.touch()
    utils.wait_compiles()
    check(best_window, x, compiled=f)       # and the C loop
