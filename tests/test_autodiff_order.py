"""Gradients of order statistics, running extrema, convolutions, pinv,
the Hermitian FFTs and the singular-value norms (issue 14's list, item 3):
median / quantile / percentile (NumPy's interpolation weights, every
method NumPy has), maximum/minimum.accumulate, logaddexp(2).accumulate,
convolve/correlate in every mode, linalg.pinv, fft.hfft/ihfft, and
linalg.norm ord=2 / -2 / 'nuc' (now traced through svd) -- numdyn.grad
against central differences in float64, jax.grad and torch.autograd."""
import numpy as np
import pytest

import numdyn
from grad_check import check_grad

R = np.random.default_rng(23)


check = check_grad


X = R.standard_normal((4, 7))
X3 = R.standard_normal((3, 4, 5))
W = R.standard_normal((4, 7))

QUANT = {
    "median_all": lambda a: np.median(a) ** 2,
    "median_axis1_even": lambda a: np.sum(np.median(a[:, :6], axis=1) * W[:, 0]),
    "median_axis0_keep": lambda a: np.sum(np.median(a, axis=0, keepdims=True) * W[:1]),
    "median_axes_tuple": lambda a: np.sum(np.median(X3 * a[0, :5], axis=(0, 2)) ** 2),
    "quantile_scalar": lambda a: np.quantile(a, 0.3),
    "quantile_list_axis": lambda a: np.sum(np.quantile(a, [0.1, 0.5, 0.95], axis=1) * W[:3, :4].T[None, :, 0]),
    "quantile_2d_q": lambda a: np.sum(np.quantile(a, [[0.25, 1.0], [0.0, 0.6]], axis=-1) ** 2),
    "percentile": lambda a: np.sum(np.percentile(a, [10, 70], axis=0) * W[:2]),
    "percentile_keepdims": lambda a: np.sum(np.percentile(a, 33.3, axis=1, keepdims=True) * a),
}


@pytest.mark.parametrize("name", sorted(QUANT))
def test_order_statistics(name):
    check(QUANT[name], X)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint", "weibull",
                                    "hazen", "median_unbiased", "normal_unbiased",
                                    "interpolated_inverted_cdf", "inverted_cdf",
                                    "averaged_inverted_cdf", "closest_observation"])
def test_quantile_methods(method):
    w = R.standard_normal(4)
    check(lambda a: np.sum(np.quantile(a, [0.02, 0.37, 0.5, 0.98], axis=0, method=method) * w), X.T)


@pytest.mark.parametrize("method", ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                                    "midpoint", "nearest"])
def test_discrete_methods_at_exact_indices(method):
    """n * q integral (8 values): inverted_cdf keeps that order statistic,
    averaged_inverted_cdf halves the cotangent with the next, and
    closest_observation keeps it only at odd (0-based) indices -- NumPy's
    _inverted_cdf / fix_gamma / _closest_observation"""
    q = [0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0]
    w = np.arange(1.0, 8.0)
    x = X3.reshape(-1)[:24].reshape(3, 8)
    g = check(lambda a: np.sum(np.quantile(a, q, axis=1, method=method).T * w), x)
    assert np.all(g.sum(axis=1) == w.sum())  # every cotangent lands somewhere, whole


def test_quantile_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    for make in (lambda xp: lambda a: xp.sum(xp.median(a, axis=1) ** 2),
                 lambda xp: lambda a: xp.sum(xp.quantile(a, xp.asarray([0.2, 0.9]), axis=0) * a[:2]),
                 lambda xp: lambda a: xp.sum(xp.percentile(a, 40.0) * a)):
        g = numdyn.grad(make(np))(X)
        np.testing.assert_allclose(g, np.asarray(jax.grad(make(jnp))(jnp.asarray(X))), rtol=1e-10, atol=1e-12)


def test_quantile_float32_keeps_dtype():
    x = X.astype(np.float32)
    g = numdyn.grad(lambda a: np.sum(np.quantile(a, 0.4, axis=1) ** 2))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, numdyn.grad(lambda a: np.sum(np.quantile(a, 0.4, axis=1) ** 2))(X), rtol=1e-5)


ACC = {
    "maximum_axis1": lambda a: np.sum(np.maximum.accumulate(a, axis=1) * W),
    "maximum_axis0": lambda a: np.sum(np.maximum.accumulate(a, axis=0) ** 2),
    "minimum_1d": lambda a: np.sum(np.minimum.accumulate(a[1]) * W[0]),
    "fmax": lambda a: np.sum(np.fmax.accumulate(a, axis=1) * W),
    "fmin_3d": lambda a: np.sum(np.fmin.accumulate(X3 * a[0, :5], axis=1) ** 2),
    "logaddexp_axis1": lambda a: np.sum(np.logaddexp.accumulate(a, axis=1) * W),
    "logaddexp_axis0": lambda a: np.sum(np.logaddexp.accumulate(3 * a, axis=0) ** 2),
    "logaddexp2_3d": lambda a: np.sum(np.logaddexp2.accumulate(X3 * a[0, :5], axis=1) * X3),
}


@pytest.mark.parametrize("name", sorted(ACC))
def test_running_extrema(name):
    check(ACC[name], X)


def test_running_extrema_ties_match_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0], [4.0, 4.0, 1.0, 4.0, 0.0, 7.0, 7.0]])
    w = np.arange(1.0, 15.0).reshape(2, 7)
    for npf, tf in ((np.maximum, torch.cummax), (np.minimum, torch.cummin)):
        g = numdyn.grad(lambda a: np.sum(npf.accumulate(a, axis=1) * w))(x)
        t = torch.tensor(x, requires_grad=True)
        (tf(t, dim=1).values * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(g, t.grad.numpy())


def test_logaddexp_accumulate_matches_torch():
    """torch.logcumsumexp's gradient, with values that overflow exp (the
    reverse scan's factors never exceed 1), -inf elements (gradient 0),
    float32 (keeps its dtype), and logaddexp2 as logaddexp of x ln 2"""
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 800.0, -np.inf, 790.0, 2.0, 805.0, 0.5],
                  [-np.inf, -3.0, 4.0, 4.0, -np.inf, 1.0, 7.0]])
    w = np.arange(1.0, 15.0).reshape(2, 7) * np.array([1.0, -1.0] * 3 + [1.0])
    for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-3)):  # y ~ 800: f32 ulp 6e-5
        g = numdyn.grad(lambda a: np.sum(np.logaddexp.accumulate(a, axis=1) * w.astype(dt)))(x.astype(dt))
        assert g.dtype == dt
        t = torch.tensor(x.astype(dt), requires_grad=True)
        (torch.logcumsumexp(t, dim=1) * torch.tensor(w.astype(dt))).sum().backward()
        # a leading -inf: torch and JAX give nan there, numdyn 0 (exp(x) = 0)
        ref = t.grad.numpy()
        assert np.isnan(ref[1, 0]) and g[1, 0] == 0
        ref[1, 0] = 0
        np.testing.assert_allclose(g, ref, rtol=tol, atol=tol)
    g2 = numdyn.grad(lambda a: np.sum(np.logaddexp2.accumulate(a, axis=1) * w))(x)
    t = torch.tensor(x, requires_grad=True)
    (torch.logcumsumexp(t * np.log(2), dim=1) / np.log(2) * torch.tensor(w)).sum().backward()
    ref = np.nan_to_num(t.grad.numpy())
    np.testing.assert_allclose(g2, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (4, 6), (5, 5), (1, 4)])
def test_convolve_correlate(mode, n, m):
    v = R.standard_normal(n + m)
    w = R.standard_normal(n + m)
    for fn in (np.convolve, np.correlate):
        def f(z):
            y = fn(z[:n], z[n:], mode)
            return np.sum(y * w[:y.shape[0]])
        check(f, v)


def test_convolve_matches_torch_and_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    a, v = R.standard_normal(9), R.standard_normal(4)
    for mode in ("full", "same", "valid"):
        f = lambda xp: lambda a, v: xp.sum(xp.convolve(a, v, mode) ** 2) + xp.sum(xp.correlate(a, v, mode) * 0.5)
        ga, gv = numdyn.grad(f(np), argnums=(0, 1))(a, v)
        ja, jv = jax.grad(f(jnp), argnums=(0, 1))(jnp.asarray(a), jnp.asarray(v))
        np.testing.assert_allclose(ga, np.asarray(ja), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gv, np.asarray(jv), rtol=1e-10, atol=1e-12)


PINV = {
    "square": (lambda a: np.sum(np.linalg.pinv(a) * W[:4, :4].T), R.standard_normal((4, 4))),
    "tall": (lambda a: np.sum(np.linalg.pinv(a) ** 2), R.standard_normal((6, 3))),
    "wide": (lambda a: np.sum(np.linalg.pinv(a) * W[:3, :4].T), R.standard_normal((3, 4))),
    "batch": (lambda a: np.sum(np.linalg.pinv(a) ** 3), R.standard_normal((2, 5, 3))),
}


@pytest.mark.parametrize("name", sorted(PINV))
def test_pinv(name):
    f, x = PINV[name]
    check(f, x, rtol=1e-5, atol=1e-5)


def test_pinv_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    a = R.standard_normal((5, 3))
    f = lambda xp: lambda a: xp.sum(xp.sin(xp.linalg.pinv(a)))
    np.testing.assert_allclose(numdyn.grad(f(np))(a), np.asarray(jax.grad(f(jnp))(jnp.asarray(a))),
                               rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("n", [None, 6, 11, 16])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_hfft_ihfft(n, norm):
    w = R.standard_normal(20)
    z = R.standard_normal((2, 6))  # real and imaginary parts of a complex input

    def f_h(p):
        y = np.fft.hfft(p[0] + 1j * p[1], n=n, norm=norm)
        return np.sum(y * w[:y.shape[0]])
    check(f_h, z)

    def f_ih(x):
        y = np.fft.ihfft(x, n=n, norm=norm)
        return np.sum(y.real * w[:y.shape[0]] + y.imag ** 2)
    check(f_ih, R.standard_normal(8))


def test_hfft_matches_torch():
    torch = pytest.importorskip("torch")
    x = R.standard_normal(9)
    g = numdyn.grad(lambda a: np.sum(np.fft.hfft(a, n=12) ** 2) + np.sum(np.abs(np.fft.ihfft(a)) ** 2))(x)
    t = torch.tensor(x, requires_grad=True)
    ((torch.fft.hfft(t, n=12) ** 2).sum() + (torch.fft.ihfft(t).abs() ** 2).sum()).backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


NORMS = {
    "ord2": lambda a: np.linalg.norm(a, 2),
    "ord_minus2": lambda a: np.linalg.norm(a, -2),
    "nuc": lambda a: np.linalg.norm(a, "nuc"),
    "ord2_axes": lambda a: np.sum(np.linalg.norm(X3 * a[0, :5], 2, axis=(2, 0)) * W[0, :4]),
    "nuc_keepdims": lambda a: np.sum(np.linalg.norm(a.reshape(2, 2, 7), "nuc", axis=(1, 2), keepdims=True) * a),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_singular_value_norms(name):
    check(NORMS[name], X)


def test_singular_value_norms_are_traced_with_numpys_results():
    """ord=2/-2/'nuc' now run inside the graph (they were NumPy calls outside
    it): values, dtypes, shapes and result types are NumPy's"""
    for x in (X, X3, X.astype(np.float32), (X * 4).astype(np.int64)):
        for o in (2, -2, "nuc", 2.0):
            for kw in ({}, {"keepdims": True}, {"axis": (-1, 0)}, {"axis": (0, -1), "keepdims": True}):
                if x.ndim == 3 and "axis" not in kw:
                    kw = dict(kw, axis=(1, 2))
                f = lambda a: np.linalg.norm(a, o, **kw)
                ref, got = f(x), numdyn.compile(f)(x)
                assert type(got) is type(ref) and np.shape(got) == np.shape(ref)
                assert np.asarray(got).dtype == np.asarray(ref).dtype
                np.testing.assert_allclose(got, ref, rtol=1e-5 if x.dtype == np.float32 else 1e-12)
    with pytest.raises(ValueError, match="Invalid norm order"):
        numdyn.compile(lambda a: np.linalg.norm(a, 3))(X)


def test_norms_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    for o in (2, -2, "nuc"):
        f = lambda xp: lambda a: xp.linalg.norm(a, o) ** 2
        np.testing.assert_allclose(numdyn.grad(f(np))(X), np.asarray(jax.grad(f(jnp))(jnp.asarray(X))),
                                   rtol=1e-9, atol=1e-11)
