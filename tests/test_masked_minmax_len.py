"""a[m].max() / .min() / np.max(a[m]) and len(a[m]) / .shape / .size of a
masked read (numpy_shim/shim_masked.c): only the mask's count is computed
(the count flush), a[m] itself is never built, and the values are NumPy's:
dtypes, NaNs, an empty selection's ValueError."""
import numpy as np
import pytest

import numdyn
from oracle import check


def breaks(fn, *args):
    return numdyn.explain(fn)(*args).graph_break_count


def mx(x):
    m = x > 0.25
    return x[m].max(), x[m].min()


def np_mx(x):
    m = x > 0.25
    return np.max(x[m]), np.min(x[m]), np.amax(x[m] * 2), np.amin(-x[m])


def scaled_max(x, y):
    m = x > 0.25
    v = x[m] * y[m] + 1
    return v.max() - v.min()


def shapes(x):
    m = x > 0.25
    v = x[m]
    return len(v), v.shape, v.size, v.ndim, v.dtype, v.shape[0]


def rows(a):
    m = a.sum(axis=1) > 0
    v = a[m]
    return len(v), v.shape, v.size, v.ndim, v.max(), v.min()


def len_then_store(x):
    m = x > 0.25
    n = len(x[m])
    x[m] = x[m] * 2.0 + n
    return x, n


DTYPES = [np.float64, np.float32, np.int32, np.int64, np.uint8]


def _x(dtype, n=40, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n) * 10 - 3).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", ["native", "eager"])
def test_max_min_dtypes(dtype, backend):
    x = _x(dtype)
    check(mx, x, backend=backend)
    check(np_mx, x, backend=backend)
    check(scaled_max, x, _x(dtype, seed=1), backend=backend)


def test_bool_max_min():
    def f(x, b):
        m = x > 0.5
        return b[m].max(), b[m].min(), np.max(b[m])
    x = np.random.default_rng(2).random(30)
    check(f, x, x > 0.7)
    check(f, x, np.ones(30, bool))


@pytest.mark.parametrize("backend", ["native", "eager"])
def test_nan_propagates(backend):
    x = _x(np.float64)
    x[7] = np.nan        # not selected (nan > 0.25 is False): max is finite
    check(mx, x, backend=backend)
    def g(x):
        m = x < 5
        return x[m].max(), x[m].min()
    y = _x(np.float64)
    y[3] = 0.1           # selected and then NaN through arithmetic
    def h(x):
        m = x < 5
        v = np.sqrt(x[m] - 0.2)   # NaN at negative lanes (invalid: warns)
        return v.max(), v.min()
    check(g, np.where(y > 4, np.nan, y), backend=backend)
    check(h, y, backend=backend, warnings=True)


@pytest.mark.parametrize("backend", ["native", "eager"])
def test_empty_selection_raises_numpys_error(backend):
    x = -np.ones(10)
    check(mx, x, backend=backend)                # ValueError: maximum
    def only_min(x):
        return x[x > 0].min()
    check(only_min, x, backend=backend)          # ValueError: minimum
    check(np_mx, x, backend=backend)
    check(mx, np.ones(10), backend=backend)      # all selected


def test_error_raised_where_numpy_raises_it():
    def f(x, out):
        out[0] = 1.0
        try:
            r = x[x > 0].max()
        except ValueError:
            r = -1.0
        out[1] = 2.0
        return r, out
    check(f, -np.ones(5), np.zeros(3))
    check(f, np.arange(5.0), np.zeros(3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_len_shape_size(dtype):
    check(shapes, _x(dtype))
    check(shapes, -np.ones(6, dtype=dtype))     # empty selection
    a = np.random.default_rng(3).random((6, 4)) - 0.5
    check(rows, a)
    check(len_then_store, _x(np.float64))


def len_keeps_lazy(x):
    m = x > 0.25
    v = x[m] * 2.0
    n = len(v) + v.shape[0] + v.size
    x[m] = v + n           # v is still a masked value: where(m, v + n, x)
    return x, v.max()


def test_no_compaction():
    x = _x(np.float64, 200)
    check(len_keeps_lazy, x)
    check(len_keeps_lazy, -np.ones(8))
    # the count is computed once per mask, a[m] never: before, each read
    # compacted (a break each: 2 and 2)
    assert breaks(mx, x) == 1
    for f in (mx, len_keeps_lazy, shapes):
        e = numdyn.explain(f)(x.copy())
        assert e.graph_break_count == 1
        assert "the count of a masked read" in str(e)
        assert "data-dependent output shape" not in str(e)   # no a[m]


def rewritten_mask(x):
    m = x > 0.25
    a = len(x[m])
    m[:3] = True           # the mask object written: its count is taken anew
    b = len(x[m])
    m &= x < 5
    c = x[m].max()
    d = (x[m] * 0).shape
    return a, b, c, d


def test_count_follows_writes_to_the_mask():
    check(rewritten_mask, _x(np.float64))
    check(rewritten_mask, _x(np.float64, seed=5))


def full_2d(a):
    m = a > 0.3
    v = a[m]
    return v.max(), v.min(), len(v), v.shape, np.amax(v * v)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_2d_mask_over_all_dims(dtype):
    a = (np.random.default_rng(4).random((5, 7)) * 4 - 1).astype(dtype)
    check(full_2d, a)
    check(full_2d, np.zeros((3, 4), dtype))     # empty: ValueError
    check(full_2d, np.ones((3, 4), dtype))      # all selected
    check(full_2d, np.ones((0, 4), dtype))      # no elements at all


def test_later_calls_still_see_the_count():
    # the count is data: a call after many others (replay, floor) with
    # an empty selection still raises, and lengths follow the data
    cf = numdyn.compile(mx)
    cs = numdyn.compile(shapes)
    for i in range(30):
        x = _x(np.float64, 50, seed=i)
        assert cf(x) == mx(x)
        assert cs(x) == shapes(x)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        cf(-np.ones(50))
    assert cs(-np.ones(50)) == shapes(-np.ones(50))
    assert cs(np.ones(50)) == shapes(np.ones(50))


def var_std(x):
    m = x > 0.25
    return x[m].var(), x[m].std(), x[m].var(ddof=1), (x[m] * 2).std(ddof=2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("backend", ["native", "eager"])
def test_var_std(dtype, backend):
    x = _x(dtype)
    check(var_std, x, backend=backend, warnings=True)
    one = np.zeros(9, dtype)
    one[4] = 1                                   # one selected: ddof 1, 2 warn
    check(var_std, one, backend=backend, warnings=True)
    check(var_std, np.zeros(9, dtype), backend=backend, warnings=True)   # empty
    check(var_std, np.ones(9, dtype), backend=backend, warnings=True)    # all


def test_var_std_nan_inf():
    x = _x(np.float64)
    x[[2, 5]] = [np.nan, np.inf]
    check(var_std, x, warnings=True)
    x[2] = 4.0
    check(var_std, x, warnings=True)             # inf - inf: invalid


def test_var_std_in_graph():
    x = _x(np.float64, 200)
    e = numdyn.explain(var_std)(x)
    assert e.graph_break_count == 1
    assert "data-dependent output shape" not in str(e)
