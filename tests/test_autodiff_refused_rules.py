"""Gradients that numdyn used to refuse (NotImplementedError: the value left
the graph, or no rule): np.nanvar/np.nanstd, np.power.accumulate, np.i0, np.kron of operands
not in C order. Each is checked against
central finite differences of the function run by NumPy (float64) and
against a closed form, and the compiled forward against NumPy (values,
dtypes, result types, warnings)."""
import warnings

import numpy as np
import pytest

import numdyn
from grad_check import numeric_grad

RNG = np.random.default_rng(14)


def with_nans(shape):
    x = RNG.standard_normal(shape)
    x[x > 1.0] = np.nan
    return x


NANSTATS = [
    lambda x: np.nanvar(x),
    lambda x: np.nanstd(x, axis=0),
    lambda x: np.nanvar(x, axis=1, ddof=1, keepdims=True),
    lambda x: np.nanstd(x, axis=0, ddof=4.5),      # dof <= 0 in some columns: NaN and a warning
    lambda x: np.nanvar(x, keepdims=True),
    lambda x: np.nanvar(x, dtype=np.float32),
    lambda x: np.nanstd(x, correction=1),
]


@pytest.mark.parametrize("backend, dt", [("native", "float64"), ("native", "float32"),
                                         ("eager", "float16"), ("eager", "float64")])
def test_nanvar_nanstd_forward_is_numpys(backend, dt):
    x = with_nans((6, 4)).astype(dt)
    x[:, 2] = np.nan  # an all-NaN column
    def f(x):
        return tuple(e(x) for e in NANSTATS)
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        wants = f(x)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        gots = numdyn.compile(f, backend=backend)(x)
    for want, got in zip(wants, gots):
        assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=2e-3 if dt == "float16" else 1e-6, equal_nan=True)
    assert sorted({str(m.message) for m in w2}) == sorted({str(m.message) for m in w1})


def test_nanvar_nanstd_stay_in_the_graph():
    e = numdyn.explain(numdyn.compile(lambda x: np.nanstd(x, axis=0) + 1), with_nans((5, 3)))
    assert e.graph_break_count == 0, [str(b) for b in e.break_reasons]


def test_nanvar_nanstd_gradients():
    x = with_nans((6, 4))
    assert np.isnan(x).any()

    def loss(x):
        return (np.nanvar(x) + np.sum(np.nanstd(x, axis=0, ddof=1) * np.arange(1, 5))
                + np.sum(np.nanvar(x, axis=1, keepdims=True) ** 2))
    g = numdyn.grad(loss)(x)
    nan = np.isnan(x)
    assert g.dtype == x.dtype and np.all(g[nan] == 0)
    num = numeric_grad(loss, [x], 0)  # NaN entries stay NaN under +-eps: compared elsewhere
    np.testing.assert_allclose(g[~nan], num[~nan], rtol=1e-5, atol=1e-7)
    # closed form: d nanvar / dx = 2 (x - mean) / (n - ddof) over the non-NaN entries
    gv = numdyn.grad(numdyn.compile(lambda x: np.nanvar(x, ddof=1), backend="aot_eager"))(x)
    v = x[~nan]
    np.testing.assert_allclose(gv[~nan], 2 * (v - v.mean()) / (v.size - 1), rtol=1e-12)


def test_power_accumulate_gradient():
    """y_0 = x_0, y_i = y_{i-1} ** x_i: a reverse scan of the chain rule"""
    x = RNG.uniform(0.5, 1.5, (4, 3))
    w = RNG.standard_normal((4, 3))

    def loss(x):
        return (np.sum(np.power.accumulate(x, axis=0) * w)
                + np.sum(np.float_power.accumulate(x, axis=1) * w))
    v, g = numdyn.value_and_grad(loss)(x)
    np.testing.assert_allclose(v, loss(x), rtol=1e-12)
    assert g.dtype == x.dtype and g.shape == x.shape
    np.testing.assert_allclose(g, numeric_grad(loss, [x], 0), rtol=1e-6, atol=1e-8)
    # closed form: power.accumulate([a, b])[1] = a ** b
    a, b = 1.3, 0.7
    g2 = numdyn.grad(numdyn.compile(lambda v: np.power.accumulate(v)[1], backend="aot_eager"))(np.array([a, b]))
    np.testing.assert_allclose(g2, [b * a ** (b - 1), a ** b * np.log(a)], rtol=1e-12)


I0_X = np.array([-12.0, -8.0, -3.3, -0.5, 0.0, 0.7, 2.0, 7.99, 8.0, 8.01, 15.0, 40.0])


@pytest.mark.parametrize("dt", ["float64", "float32", "int64"])
def test_i0_forward_is_numpys(backend, dt):
    x = I0_X.astype(dt)
    f = numdyn.compile(lambda v: np.i0(v), backend=backend)
    want, got = np.i0(x), f(x)
    assert type(got) is type(want) and got.dtype == want.dtype
    # NumPy's operations in NumPy's order: equal up to the last bit of exp
    np.testing.assert_allclose(got, want, rtol=1e-6 if dt == "float32" else 1e-14)
    w0, g0 = np.i0(np.float64(1.5)), f(np.float64(1.5))  # a 0-d array, as piecewise returns
    assert type(g0) is type(w0) and g0.shape == w0.shape == ()
    with pytest.raises(TypeError, match="i0 not supported for complex values"):
        np.i0(x * 1j)
    with pytest.raises(TypeError, match="i0 not supported for complex values"):
        f(x * 1j)


def _i1(v):
    """the modified Bessel function I1 (d i0 / dx) by its series, exactly"""
    from fractions import Fraction
    from math import factorial
    h = Fraction(float(v)) / 2
    return float(sum(h ** (2 * k + 1) / (factorial(k) * factorial(k + 1)) for k in range(150)))


def test_i0_gradient():
    x = I0_X
    e = numdyn.explain(numdyn.compile(lambda v: np.i0(v) * 2), x)
    assert e.graph_break_count == 0, [str(b) for b in e.break_reasons]
    g = numdyn.grad(lambda v: np.sum(np.i0(v)))(x)
    np.testing.assert_allclose(g, [_i1(v) for v in x], rtol=1e-13, atol=1e-15)
    y = np.array([-3.0, -0.4, 0.9, 6.0, 9.5])  # sizes where central differences are exact enough
    f = lambda v: np.sum(np.i0(v) * np.arange(1, 6))  # noqa: E731
    np.testing.assert_allclose(numdyn.grad(f)(y), numeric_grad(f, [y], 0), rtol=1e-5, atol=1e-5)


KRON_CASES = {
    "T,C": lambda x, y: np.kron(x.T, y),
    "C,T": lambda x, y: np.kron(x, y.T),
    "rev,T": lambda x, y: np.kron(x[::-1], y.T),
    "T,rev": lambda x, y: np.kron(x.T, y[:, ::-1]),
}


@pytest.mark.parametrize("shapes", [((3, 2), (2, 4)), ((2, 3, 2), (2, 2, 2)), ((1, 4), (2, 4))])
def test_kron_of_operands_not_in_c_order(backend, shapes):
    """in the graph where NumPy lays the product out in C order (asked of
    NumPy on small stand-ins); values and strides are NumPy's either way"""
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    for name, f in KRON_CASES.items():
        cf = numdyn.compile(f, backend=backend)
        want, got = f(a, b), cf(a, b)
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides, name
        breaks = numdyn.explain(cf, a, b).graph_break_count
        assert breaks == (0 if want.flags.c_contiguous else 1), name


def test_kron_of_operands_not_in_c_order_gradient():
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((2, 4))
    w = RNG.standard_normal((12, 4))  # kron of (3, 2) and (4, 2)

    def loss(x, y):
        return np.sum(np.kron(x[::-1], y.T) * w)
    ga, gb = numdyn.grad(loss, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, numeric_grad(loss, [a, b], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numeric_grad(loss, [a, b], 1), rtol=1e-6, atol=1e-8)
    # closed form: d sum(kron(A, B) * W) / dA[i, j] = sum(B * (block (i, j) of W))
    bt = b.T
    gA = np.array([[np.sum(bt * w[i * 4:(i + 1) * 4, j * 2:(j + 1) * 2]) for j in range(2)]
                   for i in range(3)])
    np.testing.assert_allclose(ga, gA[::-1], rtol=1e-12)
