"""np.linalg.lstsq traced (issue 14): the forward is NumPy's (x, residuals,
rank, s) with NumPy's types, dtypes and shapes -- the residuals' shape
depends on the computed rank, so a tall matrix's rank is read at a
recorded graph break, a wide or square one's never is -- and gradients of
x and the residuals at full rank (the pseudo-inverse's rule, JAX's for
full-rank inputs), checked against central differences, JAX and
torch.linalg.lstsq; at a rank-deficient matrix the minimum-norm
solution's gradient (the pseudo-inverse's at lstsq's own cutoff, torch's
rule), checked by differences along matrices of that rank and against
torch (the rank is data: replayed calls included)."""
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


W6 = RNG.standard_normal((6, 3))


def lowrank_loss(U, V, b):
    x = np.linalg.lstsq(U @ V.T, b)[0]
    w = W6[:x.shape[0], :x.shape[1]] if x.ndim == 2 else W6[:x.shape[0], 0]
    return np.sum(x ** 3 * w) + np.sum(x * x)


@pytest.mark.parametrize("m, n, k, bk", [(5, 3, 2, 0), (3, 5, 2, 2), (4, 4, 2, 3), (6, 4, 1, 0),
                                         (4, 6, 3, 1)])
def test_rank_deficient_gradient_by_differences(m, n, k, bk):
    """along matrices of rank k (A = U V^T), where the minimum-norm
    solution is smooth: U, V and b against central differences"""
    U, V = RNG.standard_normal((m, k)), RNG.standard_normal((n, k))
    b = RNG.standard_normal((m, bk) if bk else (m,))
    assert np.linalg.lstsq(U @ V.T, b)[2] == k
    g = numdyn.grad(lowrank_loss, argnums=(0, 1, 2))(U, V, b)
    for j, arg in enumerate((U, V, b)):
        np.testing.assert_allclose(g[j], numeric_grad(lowrank_loss, (U, V, b), j),
                                   rtol=1e-6, atol=1e-7, err_msg=f"argument {j}")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_rank_deficient_gradient_matches_torch(shape, dt):
    torch = pytest.importorskip("torch")
    m, n = shape
    k = min(m, n) - 1
    cr = (lambda *s: RNG.standard_normal(s) + 1j * RNG.standard_normal(s)) if dt == np.complex128 \
        else (lambda *s: RNG.standard_normal(s))
    a = cr(m, k) @ cr(k, n)
    b = cr(m, 2)

    def make(xp, lstsq_):
        return lambda a, b: xp.sum(xp.abs(lstsq_(a, b)) ** 3)
    f = make(np, lambda a, b: np.linalg.lstsq(a, b)[0])
    g = numdyn.grad(f, argnums=(0, 1))
    g(cr(m, n), b)  # full rank first: the deficient call is replayed (wide, square)
    ga, gb = g(a, b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    make(torch, lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution)(ta, tb).backward()
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-7, atol=1e-8)


def test_rank_deficient_rcond_is_lstsqs():
    """an explicit rcond that drops a small singular value: the gradient is
    the pseudo-inverse's at that cutoff (the truncated problem's)"""
    U, _, Vt = np.linalg.svd(RNG.standard_normal((5, 4)), full_matrices=False)
    s = np.array([3.0, 2.0, 1.0, 1e-6])
    a, b = (U * s) @ Vt, RNG.standard_normal(5)
    f = lambda a, b: np.sum(np.linalg.lstsq(a, b, rcond=1e-4)[0] ** 2)  # noqa: E731
    assert np.linalg.lstsq(a, b, rcond=1e-4)[2] == 3
    at = (U[:, :3] * s[:3]) @ Vt[:3]  # what lstsq solves
    want = numdyn.grad(lambda b: np.sum((np.linalg.pinv(at) @ b) ** 2))(b)
    np.testing.assert_allclose(numdyn.grad(f, argnums=1)(a, b), want, rtol=1e-9, atol=1e-10)


def test_singular_values_gradient_refused_by_name():
    with pytest.raises(NotImplementedError, match="lstsq.*singular values"):
        numdyn.grad(lambda a: np.sum(np.linalg.lstsq(a, np.ones(5))[3]))(RNG.standard_normal((5, 3)))
