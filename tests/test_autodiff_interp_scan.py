"""Gradients of np.interp (for x and fp), np.subtract.accumulate and
np.divide.accumulate, rules issue 14's walk found missing: against jax.grad (interp,
where JAX's convention at the knots is the one followed: the segment to
the right of an interior knot, the last one at xp[-1], zero outside the
range), torch.autograd and central differences in float64."""
import numpy as np
import pytest

import numdyn

R = np.random.default_rng(14)
XP = np.sort(R.uniform(0.0, 10.0, 8))
FP = R.standard_normal(8)
# outside on both sides, inside, and exactly at the first, an interior and the last knot
X = np.concatenate([R.uniform(-2.0, 12.0, 24), XP[[0, 3, 7]]])
W = R.standard_normal(X.shape)


def _central(f, args, k, eps=1e-6):
    a = [np.array(v, dtype=np.float64) for v in args]
    g = np.zeros_like(a[k])
    for i in np.ndindex(a[k].shape):
        p = [v.copy() for v in a]
        m = [v.copy() for v in a]
        p[k][i] += eps
        m[k][i] -= eps
        g[i] = (f(*p) - f(*m)) / (2 * eps)
    return g


@pytest.mark.parametrize("left, right", [(None, None), (-1.5, 2.0)])
def test_interp_gradients_for_x_and_fp(left, right):
    def f(x, fp):
        return np.sum(np.interp(x, XP, fp, left=left, right=right) ** 2 * W)

    v, (gx, gfp) = numdyn.value_and_grad(f, argnums=(0, 1))(X, FP)
    np.testing.assert_allclose(v, f(X, FP), rtol=1e-12)
    assert gx.shape == X.shape and gfp.shape == FP.shape
    # away from the knots the derivative in x is the segment's slope
    inner = slice(0, 24)
    np.testing.assert_allclose(gx[inner], _central(f, (X, FP), 0)[inner], rtol=1e-6, atol=1e-8)
    # fp enters linearly: differences are exact there, knots included
    np.testing.assert_allclose(gfp, _central(f, (X, FP), 1), rtol=1e-6, atol=1e-8)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    jx, jfp = jax.grad(lambda x, fp: jnp.sum(jnp.interp(x, XP, fp, left=left, right=right) ** 2 * W),
                       argnums=(0, 1))(X, FP)
    np.testing.assert_allclose(gx, np.asarray(jx), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gfp, np.asarray(jfp), rtol=1e-12, atol=1e-14)


def test_interp_float32_one_knot_and_nan():
    # float32 x: its gradient keeps the dtype; one knot: a constant, fp's gradient
    # takes every point NumPy gave fp[0]; NaN x: NaN gradient, as the value
    x = np.array([-1.0, 0.5, 0.5, 2.0, np.nan], np.float32)
    fp1 = np.array([3.0])

    def f(x, fp):
        return np.nansum(np.interp(x, [0.5], fp) * np.interp(x, [0.0, 1.0], [1.0, 3.0]))

    gx, gfp = numdyn.grad(f, argnums=(0, 1))(x, fp1)
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx[:4], [0.0, 6.0, 6.0, 0.0])
    assert np.isnan(gx[4])
    np.testing.assert_allclose(gfp, [1.0 + 2.0 + 2.0 + 3.0])


def test_subtract_accumulate():
    # the three axes in one compiled function (CI time), weighted apart
    x = R.standard_normal((3, 5))
    w = R.standard_normal((3, 3, 5))

    def f(x):
        return sum(np.sum(np.subtract.accumulate(x, axis=ax) ** 2 * w[k])
                   for k, ax in enumerate((0, 1, -1)))

    g = numdyn.grad(f)(x)
    np.testing.assert_allclose(g, _central(f, (x,), 0), rtol=1e-6, atol=1e-8)
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    loss = 0
    for k, ax in enumerate((0, 1, -1)):
        n = x.shape[ax]
        head = t.narrow(ax, 0, 1)
        y = torch.cat([head, head - torch.cumsum(t.narrow(ax, 1, n - 1), dim=ax)], dim=ax)
        loss = loss + (y ** 2 * torch.tensor(w[k])).sum()
    loss.backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_divide_accumulate():
    # y_i = x_0 / x_1 / ... / x_i along each axis, in one compiled function
    x = R.uniform(0.5, 2.0, (3, 4)) * np.where(R.uniform(size=(3, 4)) < 0.3, -1.0, 1.0)
    w = R.standard_normal((2, 3, 4))

    def f(x):
        return sum(np.sum(np.divide.accumulate(x, axis=ax) * w[k]) for k, ax in enumerate((0, 1)))

    g = numdyn.grad(f)(x)
    np.testing.assert_allclose(g, _central(f, (x,), 0), rtol=1e-6, atol=1e-8)
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    loss = 0
    for k, ax in enumerate((0, 1)):
        head = t.narrow(ax, 0, 1)
        y = torch.cat([head, head / torch.cumprod(t.narrow(ax, 1, x.shape[ax] - 1), dim=ax)], dim=ax)
        loss = loss + (y * torch.tensor(w[k])).sum()
    loss.backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-14)
