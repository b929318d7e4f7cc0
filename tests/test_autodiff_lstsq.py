"""np.linalg.lstsq traced (issue 14): the forward is NumPy's (x, residuals,
rank, s) with NumPy's types, dtypes and shapes -- the residuals' shape
depends on the computed rank, so a tall matrix's rank is read at a
recorded graph break, a wide or square one's never is -- and gradients of
x and the residuals at full rank (the pseudo-inverse's rule, JAX's for
full-rank inputs), checked against central differences, JAX and
torch.linalg.lstsq; at a rank-deficient matrix the backward raises
NotImplementedError (the rank is data: checked when the backward runs,
replayed calls included)."""
import numpy as np
import pytest

import numdyn
from grad_check import numeric_grad

RNG = np.random.default_rng(141)
SHAPES = [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 5), (3,)), ((3, 5), (3, 2)), ((4, 4), (4, 2))]


def lstsq(a, b):
    return np.linalg.lstsq(a, b)


def deficient(m, n):
    k = min(m, n) - 1  # rank k < min(m, n)
    return RNG.standard_normal((m, k)) @ RNG.standard_normal((k, n))


@pytest.mark.parametrize("ash, bsh", SHAPES)
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128])
def test_forward_is_numpys(ash, bsh, dt):
    b = RNG.standard_normal(bsh).astype(dt)
    for a in (RNG.standard_normal(ash).astype(dt), deficient(*ash).astype(dt)):
        want, got = lstsq(a, b), numdyn.compile(lstsq)(a, b)
        assert type(got) is tuple and len(got) == 4
        for w, g in zip(want, got):
            assert type(g) is type(w) and np.shape(g) == np.shape(w) and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-4 if dt == np.float32 else 1e-10, atol=1e-5)


def test_rank_read_only_for_tall_matrices():
    e = numdyn.explain(numdyn.compile(lstsq), RNG.standard_normal((3, 5)), np.ones(3))
    assert e.graph_break_count == 0
    e = numdyn.explain(numdyn.compile(lstsq), RNG.standard_normal((5, 3)), np.ones(5))
    assert e.graph_break_count == 1 and "rank" in str(e.break_reasons[0])


@pytest.mark.parametrize("ash, bsh", SHAPES)
def test_gradients_of_x_and_residuals(ash, bsh):
    a, b = RNG.standard_normal(ash), RNG.standard_normal(bsh)
    W = RNG.standard_normal((ash[1],) + bsh[1:])

    def f(a, b):
        x, res, _, _ = np.linalg.lstsq(a, b)
        return np.sum(np.sin(x) * W) + np.sum(res ** 2)
    ga, gb = numdyn.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, numeric_grad(f, (a, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numeric_grad(f, (a, b), 1), rtol=1e-6, atol=1e-8)
    ga2, gb2 = numdyn.grad(f, argnums=(0, 1))(a, b)  # a warm call agrees
    np.testing.assert_allclose(ga2, ga, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gb2, gb, rtol=1e-12, atol=1e-14)


def test_complex_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((5, 3)) + 1j * RNG.standard_normal((5, 3))
    b = RNG.standard_normal((5, 2)) + 1j * RNG.standard_normal((5, 2))
    f = lambda a, b: np.sum(np.abs(np.linalg.lstsq(a, b)[0]) ** 2)  # noqa: E731
    ga, gb = numdyn.grad(f, argnums=(0, 1))(a, b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.sum(torch.abs(torch.linalg.lstsq(ta, tb).solution) ** 2).backward()
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 2))
    make = lambda xp: lambda a, b: xp.sum(xp.linalg.lstsq(a, b)[0] ** 3)  # noqa: E731
    g = numdyn.grad(make(np), argnums=(0, 1))(a, b)
    gj = jax.grad(make(jnp), argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
    for x, y in zip(g, gj):
        np.testing.assert_allclose(x, np.asarray(y), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_rank_deficient_gradient_refused(shape):
    f = lambda a: np.sum(np.linalg.lstsq(a, np.ones(a.shape[0]))[0])  # noqa: E731
    g = numdyn.grad(f)
    g(RNG.standard_normal(shape))  # full rank first: a wide one is then replayed
    with pytest.raises(NotImplementedError, match="lstsq at a rank-deficient matrix"):
        g(deficient(*shape))


def test_singular_values_gradient_refused_by_name():
    with pytest.raises(NotImplementedError, match="lstsq.*singular values"):
        numdyn.grad(lambda a: np.sum(np.linalg.lstsq(a, np.ones(5))[3]))(RNG.standard_normal((5, 3)))
