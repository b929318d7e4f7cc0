"""Gradients of numpy.linalg's decompositions (issue 14): eigh, eigvalsh,
svd and qr, checked against central finite differences of the function run
by NumPy (float64), against torch.autograd where installed, and for float32
against the float64 gradient. Losses are invariant to the decompositions'
sign/phase choices (a gradient is only defined for those). eigh follows
JAX's convention: the gradient of eigh((A + A^T) / 2), so it is checked
along symmetric directions and is itself symmetric.
"""
import numpy as np
import pytest

import numdyn

RNG = np.random.default_rng(99)


def fd(f, x, eps=1e-6, sym=False):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        if sym:
            d = (d + np.swapaxes(d, -1, -2)) / 2
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def check(f, x, sym=False, rtol=1e-5, atol=1e-7):
    v, g = numdyn.value_and_grad(f)(x)
    np.testing.assert_allclose(v, f(x), rtol=1e-10)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, fd(f, x, sym=sym), rtol=rtol, atol=atol)
    return g


def spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


W = RNG.standard_normal(5)


def eigvals_loss(A):
    return np.sum(np.linalg.eigvalsh(A) * W[:A.shape[-1]])


def eigh_loss(A):
    w, V = np.linalg.eigh(A)
    return np.sum(w ** 2) + np.sum(V[..., 0] ** 2 * W[:A.shape[-1]])


def eigh_vectors_only(A):
    _, V = np.linalg.eigh(A)
    return np.sum((V * V)[..., :2] * W[:A.shape[-1], None])


@pytest.mark.parametrize("f", [eigvals_loss, eigh_loss, eigh_vectors_only])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigh(f, batch):
    A = spd(4, batch)
    g = check(f, A, sym=True)
    np.testing.assert_allclose(g, np.swapaxes(g, -1, -2), atol=1e-12)


def test_eigh_upper():
    A = spd(3)
    f = lambda A: np.sum(np.linalg.eigh(A, "U")[0] ** 3)  # noqa: E731
    check(f, A, sym=True)


def svd_loss(A):
    U, s, Vh = np.linalg.svd(A, full_matrices=False)
    k = s.shape[-1]
    return (np.sum(s * W[:k]) + np.sum(U[..., :, 0] ** 2 * np.arange(A.shape[-2]))
            + np.sum(Vh[..., 0, :] ** 2 * np.arange(A.shape[-1])))


def svd_u_only(A):
    U = np.linalg.svd(A, full_matrices=False)[0]
    return np.sum(U[..., :, 1] ** 2 * np.arange(A.shape[-2]))


def svd_vh_only(A):
    Vh = np.linalg.svd(A, full_matrices=False)[2]
    return np.sum(Vh[..., 1, :] ** 2 * np.arange(A.shape[-1]))


def svdvals_loss(A):
    return np.sum(np.linalg.svd(A, compute_uv=False) ** 3)


@pytest.mark.parametrize("f", [svd_loss, svd_u_only, svd_vh_only, svdvals_loss])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_svd(f, shape):
    check(f, RNG.standard_normal(shape))


def test_svd_full_matrices_square():
    f = lambda A: np.sum(np.linalg.svd(A)[0][:, 0] ** 2 * np.arange(3.0))  # noqa: E731
    check(f, RNG.standard_normal((3, 3)))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 3)])
def test_svd_full_matrices_rectangular(shape):
    # U's columns / Vh's rows past min(M, N) are any basis of a complement: a
    # loss on the others has a gradient (finite differences) ...
    K = min(shape[-2:])

    def f(A):
        U, s, Vh = np.linalg.svd(A)
        return (np.sum(U[..., :, :K] ** 2 * np.arange(U.shape[-2])[:, None])
                + np.sum(Vh[..., :K, :] ** 2 * np.arange(Vh.shape[-1])) + np.sum(s ** 3))
    check(f, RNG.standard_normal(shape))


def test_svd_full_matrices_ignores_complement_as_torch():
    # ... and a loss on all of them gets torch's gradient: the complement's
    # cotangent ignored
    torch = pytest.importorskip("torch")
    for shape in [(5, 3), (3, 5)]:
        A = RNG.standard_normal(shape)
        W = RNG.standard_normal((shape[0], shape[0]))
        V = RNG.standard_normal((shape[1], shape[1]))

        def f(A, xp_svd, W=W, V=V):
            U, s, Vh = xp_svd(A)
            return ((U * U * W).sum() + (Vh * Vh * V).sum())
        g = numdyn.grad(lambda A: f(A, np.linalg.svd))(A)
        t = torch.tensor(A, requires_grad=True)
        f(t, lambda a: torch.linalg.svd(a, full_matrices=True),
          torch.tensor(W), torch.tensor(V)).backward()
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-8, atol=1e-10)


def qr_loss(A):
    Q, R = np.linalg.qr(A)
    return np.sum(np.abs(np.diagonal(R, axis1=-2, axis2=-1)) ** 1.5) + np.sum((Q * Q)[..., 0] * np.arange(A.shape[-2]))


def qr_q_only(A):
    Q = np.linalg.qr(A)[0]
    return np.sum(Q ** 2 * np.arange(A.shape[-1]))


def qr_r_mode(A):
    return np.sum(np.linalg.qr(A, mode="r") ** 2 * np.arange(A.shape[-1]))


@pytest.mark.parametrize("f", [qr_loss, qr_q_only, qr_r_mode])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 4, 3)])
def test_qr(f, shape):
    check(f, RNG.standard_normal(shape))


def qr_q_cols(A):
    Q = np.linalg.qr(A)[0]
    return np.sum(Q ** 2 * np.arange(Q.shape[-1]))


@pytest.mark.parametrize("f", [qr_loss, qr_q_cols, qr_r_mode])
@pytest.mark.parametrize("shape", [(2, 4), (3, 5), (2, 3, 5)])
def test_qr_wide(f, shape):
    check(f, RNG.standard_normal(shape))


def test_qr_wide_matches_torch():
    torch = pytest.importorskip("torch")
    A = RNG.standard_normal((3, 6))
    W = RNG.standard_normal((3, 6))
    g = numdyn.grad(lambda A: np.sum(np.linalg.qr(A)[1] ** 2 * W) + np.sum(np.linalg.qr(A)[0] ** 2 * W[:, :3]))(A)
    t = torch.tensor(A, requires_grad=True)
    Q, R = torch.linalg.qr(t)
    ((R ** 2 * torch.tensor(W)).sum() + (Q ** 2 * torch.tensor(W[:, :3])).sum()).backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_float32_matches_float64():
    A = RNG.standard_normal((4, 3))
    g64 = numdyn.grad(svd_loss)(A)
    g32 = numdyn.grad(svd_loss)(A.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4)


def test_against_torch():
    torch = pytest.importorskip("torch")
    A = RNG.standard_normal((5, 3))
    S = spd(4)

    def tloss(x, s):
        U, sv, Vh = torch.linalg.svd(x, full_matrices=False)
        Q, R = torch.linalg.qr(x)
        w, V = torch.linalg.eigh(s)
        return (torch.sum(sv ** 2 * torch.arange(3.0, dtype=x.dtype)) + torch.sum(U[:, 0] ** 2)
                + torch.sum(R ** 2 * torch.arange(3.0, dtype=x.dtype)) + torch.sum(w * torch.arange(4.0, dtype=x.dtype))
                + torch.sum(V[:, 1] ** 2 * torch.arange(4.0, dtype=x.dtype)))

    def nloss(x, s):
        U, sv, Vh = np.linalg.svd(x, full_matrices=False)
        Q, R = np.linalg.qr(x)
        w, V = np.linalg.eigh(s)
        return (np.sum(sv ** 2 * np.arange(3.0)) + np.sum(U[:, 0] ** 2)
                + np.sum(R ** 2 * np.arange(3.0)) + np.sum(w * np.arange(4.0))
                + np.sum(V[:, 1] ** 2 * np.arange(4.0)))

    ta = torch.tensor(A, requires_grad=True)
    ts = torch.tensor(S, requires_grad=True)
    tloss(ta, ts).backward()
    ga, gs = numdyn.grad(nloss, argnums=(0, 1))(A, S)
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    # torch's eigh gradient is not symmetrized: compare symmetric parts
    tg = ts.grad.numpy()
    np.testing.assert_allclose(gs, (tg + tg.T) / 2, rtol=1e-8, atol=1e-10)


def test_replayed_eigh_grad():
    g = numdyn.grad(eigh_loss)
    for _ in range(3):
        A = spd(3)
        np.testing.assert_allclose(g(A), fd(eigh_loss, A, sym=True), rtol=1e-5, atol=1e-7)


def test_aot_eager_backend():
    f = numdyn.compile(svd_loss, backend="aot_eager")
    A = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(numdyn.grad(f)(A), fd(svd_loss, A), rtol=1e-5, atol=1e-7)
