"""Gradients of numpy.linalg's decompositions of complex matrices (issue
14): eigh/eigvalsh (Hermitian), svd and qr, under autodiff.h's transpose
convention (numdyn.grad of a real loss: torch's conjugate-Wirtinger
gradient). Checked against central differences in both real directions of
every element (dL/dre + 1j dL/dim) and against torch.autograd. eigh's
gradient is that of eigh((A + A^H) / 2) (JAX's); svd losses are invariant
to the gauge U, V -> U e^{i phi}, V e^{i phi}; qr needs none (LAPACK's R
has a real diagonal)."""
import numpy as np
import pytest

import numdyn

RNG = np.random.default_rng(15)


def crand(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def herm(A):
    return (A + np.conj(np.swapaxes(A, -1, -2))) / 2


def wirtinger_fd(f, z, eps=1e-6):
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for u in (1.0, 1j):
            zp, zm = z.copy(), z.copy()
            zp[i] += eps * u
            zm[i] -= eps * u
            g[i] += u * (f(zp) - f(zm)) / (2 * eps)
    return g


def check(f, z, hermitian=False, rtol=1e-6, atol=1e-7):
    g = numdyn.grad(f)(z.copy())
    assert g.dtype == z.dtype and g.shape == z.shape
    ref = wirtinger_fd((lambda A: f(herm(A))) if hermitian else f, z)
    np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol)
    np.testing.assert_allclose(numdyn.grad(f)(z.copy()), g, rtol=1e-12, atol=1e-13)  # replayed
    return g


W = RNG.standard_normal((2, 4, 4))


def eigh_loss(A):
    w, V = np.linalg.eigh(A)
    n = A.shape[-1]
    return np.sum(w ** 3) + np.sum(np.abs(V) ** 3 * W[..., :n, :n])


def eigvalsh_loss(A):
    return np.sum(np.sin(np.linalg.eigvalsh(A)))


def eigh_projector(A):  # V diag(d) V^H: phase-free use of the eigenvectors
    _, V = np.linalg.eigh(A)
    n = A.shape[-1]
    P = (V * np.arange(1.0, n + 1)) @ np.conj(np.swapaxes(V, -1, -2))
    return np.sum(np.real(P) * W[..., :n, :n]) + np.sum(np.imag(P) ** 2)


@pytest.mark.parametrize("f", [eigh_loss, eigvalsh_loss, eigh_projector])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh_complex(f, shape):
    check(f, herm(crand(*shape)), hermitian=True)


def svd_loss(A):
    U, s, Vh = np.linalg.svd(A, full_matrices=False)
    m, n = A.shape[-2:]
    k = min(m, n)
    return (np.sum(s ** 3) + np.sum(np.abs(U) ** 3 * W[..., :m, :k])
            + np.sum(np.abs(Vh) ** 2 * W[..., :k, :n] ** 2)
            + np.sum(np.real(U @ Vh) * W[..., :m, :n]))


def svd_reconstruct(A):  # U diag(s^2) Vh: invariant to the gauge
    U, s, Vh = np.linalg.svd(A, full_matrices=False)
    B = (U * s[..., None, :] ** 2) @ Vh
    return np.sum(np.imag(B) * W[..., :B.shape[-2], :B.shape[-1]])


def svdvals_loss(A):
    return np.sum(np.linalg.svd(A, compute_uv=False) ** 3)


@pytest.mark.parametrize("f", [svd_loss, svd_reconstruct, svdvals_loss])
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 3, 3)])
def test_svd_complex(f, shape):
    check(f, crand(*shape))


def test_svd_complex_hermitian_and_full_matrices():
    f = lambda A: np.sum(np.linalg.svd(A, hermitian=True, compute_uv=False) ** 3)  # noqa: E731
    check(f, herm(crand(3, 3)), hermitian=True)
    g = lambda A: np.sum(np.abs(np.linalg.svd(A)[0][:, :3]) ** 2 * W[0, :4, :3])  # noqa: E731
    check(g, crand(4, 3))


def qr_loss(A):
    Q, R = np.linalg.qr(A)
    m, n = A.shape[-2:]
    k = min(m, n)
    return np.sum(np.abs(Q) ** 3 * W[..., :m, :k]) + np.sum(np.real(R) * np.imag(R))


def qr_q(A):
    return np.sum(np.real(np.linalg.qr(A)[0]) * W[..., :A.shape[-2], :min(A.shape[-2:])])


def qr_r(A):
    return np.sum(np.abs(np.linalg.qr(A, mode="r")) ** 3)


@pytest.mark.parametrize("f", [qr_loss, qr_q, qr_r])
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 3)])
def test_qr_complex(f, shape):
    check(f, crand(*shape))


def test_complex64_keeps_its_dtype():
    z = crand(3, 3).astype(np.complex64)
    for f in (svdvals_loss, qr_loss):
        g = numdyn.grad(f)(z.copy())
        assert g.dtype == np.complex64
        np.testing.assert_allclose(g, numdyn.grad(f)(z.astype(np.complex128)), rtol=2e-3, atol=2e-3)


def test_against_torch_autograd():
    torch = pytest.importorskip("torch")
    A = crand(4, 3)
    H = herm(crand(3, 3))
    w = torch.tensor(W[0])
    cases = [
        (A, lambda A: np.sum(np.linalg.svd(A, full_matrices=False)[1] ** 3),
         lambda t: torch.sum(torch.linalg.svdvals(t) ** 3)),
        (A, lambda A: np.sum(np.abs(np.linalg.svd(A, full_matrices=False)[0]) ** 3 * W[0, :4, :3]),
         lambda t: torch.sum(torch.abs(torch.linalg.svd(t, full_matrices=False)[0]) ** 3 * w[:4, :3])),
        (A, lambda A: np.sum(np.abs(np.linalg.qr(A)[0]) ** 3 * W[0, :4, :3])
         + np.sum(np.real(np.linalg.qr(A)[1]) * np.imag(np.linalg.qr(A)[1])),
         lambda t: torch.sum(torch.abs(torch.linalg.qr(t)[0]) ** 3 * w[:4, :3])
         + torch.sum(torch.real(torch.linalg.qr(t)[1]) * torch.imag(torch.linalg.qr(t)[1]))),
        (H, lambda A: np.sum(np.linalg.eigh(A)[0] ** 3) + np.sum(np.abs(np.linalg.eigh(A)[1]) ** 3 * W[0, :3, :3]),
         lambda t: torch.sum(torch.linalg.eigh(t)[0] ** 3)
         + torch.sum(torch.abs(torch.linalg.eigh(t)[1]) ** 3 * w[:3, :3])),
    ]
    for x, f, ft in cases:
        t = torch.tensor(x, requires_grad=True)
        ft(t).backward()
        tg = t.grad.numpy()
        if x is H:  # torch's eigh reads the lower triangle too: compare the Hermitian parts
            tg = herm(tg)
        np.testing.assert_allclose(numdyn.grad(f)(x.copy()), tg, rtol=1e-8, atol=1e-10)
