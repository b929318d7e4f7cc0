"""Arrays a compiled function creates itself stay in its graph (issue 13: a
real array filled by lazy stores breaks at every store). np.ndarray(shape)
called directly is the shim's lazy np.empty; np.ndarray read any other way
stays NumPy's type. Checked against NumPy: values, dtypes, types, flags."""
import operator

import numpy as np
import pytest

import numdyn

OWN = {"floor": False}


def energies(pos, vel, steps):
    # NPBench nbody's pattern: outputs made by np.ndarray, one store a step
    KE = np.ndarray(steps + 1, dtype=np.float64)
    PE = np.ndarray(steps + 1)
    KE[0], PE[0] = 0.5 * np.sum(vel ** 2), np.sum(pos)
    for i in range(steps):
        pos += vel * 0.1
        vel -= pos * 0.05
        KE[i + 1], PE[i + 1] = 0.5 * np.sum(vel ** 2), np.sum(pos)
    return KE, PE


def test_ndarray_filled_by_lazy_stores_does_not_break():
    rng = np.random.default_rng(0)
    pos, vel = rng.random((8, 3)), rng.random((8, 3))
    want_p, want_v = pos.copy(), vel.copy()
    want = energies(want_p, want_v, 12)
    cf = numdyn.compile(energies, options=OWN)
    got_p, got_v = pos.copy(), vel.copy()
    out = numdyn.explain(cf)(got_p, got_v, 12)
    # a store of a lazy value into a real array was a break: 26 a call
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    for _ in range(2):
        got_p, got_v = pos.copy(), vel.copy()
        got = cf(got_p, got_v, 12)
        for a, b in zip(got, want):
            assert type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-13)
        np.testing.assert_allclose(got_p, want_p, rtol=1e-13)
        np.testing.assert_allclose(got_v, want_v, rtol=1e-13)


def uses_the_type(x):
    # a code object that reads np.ndarray as a value keeps NumPy's type
    # (its co_names entry is shared by every use); the nested one calls it
    def typed(y):
        T = np.ndarray
        return (isinstance(y, np.ndarray), type(y) is np.ndarray, T is np.ndarray,
                issubclass(type(y), np.ndarray), np.ndarray.__name__)

    def made(y):
        out = np.ndarray(y.shape)
        out[:] = y
        return out
    y = x * 2.0
    out = made(y)
    return typed(y) + (type(out) is np.ndarray, y + 1, out)


def test_ndarray_read_as_a_value_is_numpys_type():
    # only the direct call np.ndarray(...) is renamed: read as a value,
    # np.ndarray is NumPy's own type object
    x = np.arange(4.0)
    want = uses_the_type(x)
    cf = numdyn.compile(uses_the_type, options=OWN)
    out = numdyn.explain(cf)(x)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    got = cf(x)
    assert got[:6] == want[:6] == (True, True, True, True, "ndarray", True)
    for g, w in zip(got[6:], want[6:]):
        assert type(g) is np.ndarray and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def made(n, buf, x):
    a = np.ndarray((n, 2), dtype=np.int32)
    a[:] = x[:, None] * 2
    b = np.ndarray(n, dtype=np.float64, buffer=buf, offset=8)
    c = np.ndarray((2, n), order="F")
    c[...] = x * 1.5
    return a, b + 1, c, type(np.ndarray(1)).__name__


def test_ndarray_constructor_forms_match_numpy():
    # F order is laid out as NumPy's; a buffer is NumPy's constructor as
    # called, no break
    buf, x = bytearray(np.arange(8.0).tobytes()), np.arange(3, dtype=np.int32)
    want = made(3, buf, x)
    cf = numdyn.compile(made, options=OWN)
    out = numdyn.explain(cf)(3, buf, x)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    got = cf(3, buf, x)
    for g, w in zip(got[:3], want[:3]):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        assert g.flags.c_contiguous == w.flags.c_contiguous
        assert g.flags.f_contiguous == w.flags.f_contiguous
        np.testing.assert_array_equal(g, w)
    assert got[3] == want[3] == "ndarray"
    with pytest.raises(ValueError, match="negative dimensions"):
        np.ndarray(-1)
    with pytest.raises(ValueError, match="negative dimensions"):
        cf(-1, buf, x)


def grid_masked(x):
    # NPBench mandelbrot2: index arrays from np.mgrid (real arrays) taken by
    # a lazy mask each iteration
    Xi = np.mgrid[0:4, 0:5][0].ravel()
    m = x > 0.5
    return Xi[m], operator.index(x.sum(dtype=np.int64) * 0 + 3)


def test_real_array_indexed_by_lazy_mask_breaks_once():
    # NumPy asks the index for __index__ before converting it: a lazy array
    # of rank 1 refuses as NumPy does without a flush or a recorded break
    x = np.linspace(0.0, 1.0, 20)
    want = grid_masked(x)
    cf = numdyn.compile(grid_masked, options=OWN)
    out = numdyn.explain(cf)(x)
    reasons = [r.reason for r in out.break_reasons]
    # Xi[m]: the mask's data for NumPy (one break); the 0-d operator.index
    # needs its value (one break); before, Xi[m] also flushed for __index__
    assert len(reasons) == 2 and sum("__index__" in r for r in reasons) == 1, reasons
    got = cf(x)
    assert type(got[0]) is np.ndarray and got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == 3 and type(got[1]) is int

    def index_of(a):
        return operator.index(a * 2)
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        index_of(np.arange(3))
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        numdyn.compile(index_of, options=OWN)(np.arange(3))


def viewed(x):
    y = x * 2.0
    v = y.view(np.ndarray)
    w = y.view()
    v[0] = -1.0          # a view: y sees the write, as under NumPy
    w[1:, 0] += 10.0
    return y, v, w, y.T.view(type=np.ndarray)


@pytest.mark.parametrize("order", ["C", "F"])
def test_view_as_ndarray_stays_in_graph(order):
    # x.view(np.ndarray) / x.view() of a lazy array: a view sharing its
    # storage (was a graph break: NumPy ran it on the concrete array)
    x = np.asarray(np.arange(12.0).reshape(3, 4), order=order)
    want = viewed(x)
    cf = numdyn.compile(viewed, options=OWN)
    out = numdyn.explain(cf)(x)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    got = cf(x)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        assert g.strides == w.strides
        np.testing.assert_array_equal(g, w)
