"""`x[x > 0] = f(x[x > 0])`: two mask objects from one expression. The
store goes through the read's mask when both masks are the same
comparison of the same values (shim_masked.c same_value), so it is one
where() in the graph, not three breaks (mask positions, the masked read,
the masked store). Masks that differ in any way, or whose array was
written in between, keep NumPy's own path and its errors."""
import numpy as np
import pytest

import numdyn
from oracle import check


def inverse_cube(d, soft):
    r = d * d + soft
    r[r > 0] = r[r > 0] ** (-1.5)
    q = np.sqrt(d * d)
    q[q > 0] = 1.0 / q[q > 0]          # the zeros (diagonal) are never divided: no warning
    return r, q


def pairwise(x):
    d = x[:, 0:1].T - x[:, 0:1]
    return inverse_cube(d, 0.0)


def as_layout(a, layout):
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":
        return np.repeat(a, 2, axis=0)[::2]
    if layout == "reversed":
        return a[::-1].copy()[::-1]
    return a


@pytest.fixture(scope="module")
def cf():
    return numdyn.compile(pairwise, options={"floor": False})


@pytest.mark.parametrize("dtype, layout, n", [
    (np.float64, "C", 7), (np.float64, "F", 7), (np.float64, "strided", 7), (np.float64, "reversed", 7),
    (np.float32, "C", 7),
    (np.float64, "C", 1),      # an all-False mask in q: NumPy divides nothing, warns nothing
    (np.float64, "C", 0),
])
def test_masked_self_update_matches_numpy(cf, dtype, layout, n):
    x = as_layout(np.random.default_rng(n).standard_normal((n, 3)).astype(dtype), layout)
    check(pairwise, x, compiled=cf, warnings=True)


def test_masked_self_update_is_one_graph(cf):
    x = np.random.default_rng(0).standard_normal((5, 3))
    ex = numdyn.explain(cf)(x)
    assert ex.graph_break_count == 0, ex.break_reasons[:2]


def other_threshold(x):
    y = x * 1
    y[y > 0] = y[y > 1] * 2     # another mask: NumPy's ValueError when the counts differ
    return y


def written_between(x):
    y = x * 1
    v = y[y > 0] * 2
    y[0] = -5.0                 # y's value changed: `y > 0` below is another mask
    y[y > 0] = v
    return y


def int_update(x):
    y = x.copy()
    y[y % 3 == 1] = y[y % 3 == 1] * 7 - 1
    return y


@pytest.mark.parametrize("fn, x", [
    (other_threshold, np.array([0.5, 2.0, -1.0, 3.0])),
    (other_threshold, np.array([2.0, -2.0, 3.0])),
    (written_between, np.array([1.0, 2.0, -3.0, 4.0])),
    (written_between, np.array([-1.0, 2.0, -3.0, 4.0])),
    (int_update, np.arange(-6, 7, dtype=np.int32)[::-1]),
])
def test_other_masks_keep_numpys_path(fn, x):
    check(fn, x)
