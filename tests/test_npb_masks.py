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


# ---- the mean of a masked read (azimint_naive's `data[mask].mean()` per bin)

def binned_means(data, radius, nbins):
    rmax = radius.max()
    res = np.zeros(nbins, dtype=np.float64)
    for i in range(nbins):
        m = np.logical_and(rmax * i / nbins <= radius, radius < rmax * (i + 1) / nbins)
        res[i] = data[m].mean()     # an empty bin: NumPy's nan and its two warnings
    return res


@pytest.mark.parametrize("dtype, nbins, rtol", [
    (np.float64, 90, None),   # 90 bins of 40 points: empty ones
    (np.float32, 5, 1e-6),    # a float32 mean: summed in another order than NumPy's
    (np.int16, 12, None),
])
def test_masked_mean_matches_numpy(dtype, nbins, rtol):
    rng = np.random.default_rng(nbins)
    data, radius = (rng.random(40) * 10).astype(dtype), rng.random(40)
    f = numdyn.compile(binned_means, options={"floor": False})
    with np.errstate(invalid="warn"):
        check(binned_means, data, radius, nbins, compiled=f, warnings=True, rtol=rtol)
    assert numdyn.explain(f)(data.real.astype(np.float64), radius, 3).graph_break_count == 0


def masked_reductions(a, lo):
    s = a[a > lo]
    return np.mean(s), np.sum(s), s.mean(dtype=np.float32), s.sum(dtype=np.int64)


def masked_mean_raises(a, lo):
    with np.errstate(invalid="raise"):
        return a[a > lo].mean()


@pytest.mark.parametrize("lo", [0.5, 2.0])
def test_masked_mean_function_forms_and_errstate(lo):
    a = np.random.default_rng(3).random(30)
    check(masked_reductions, a, lo, warnings=True)
    check(masked_mean_raises, a, lo, warnings=True)   # 2.0: "Mean of empty slice", then FloatingPointError


def many_bin_sums(data, radius, nbins):
    # 0-d values of a reduction (rmax * i / nbins for every i) joined its
    # kernel as outputs without bound: "kernel with too many operands"
    rmax = radius.max()
    res = np.zeros(nbins)
    for i in range(nbins):
        m = np.logical_and(rmax * i / nbins <= radius, radius < rmax * (i + 1) / nbins)
        res[i] = data[m].sum()
    return res


def test_reduction_epilogue_operands_bounded():
    rng = np.random.default_rng(4)
    check(many_bin_sums, rng.random(50), rng.random(50), 70, compiled=numdyn.compile(many_bin_sums))
