"""linalg.eig / eigvals of REAL matrices (issue 14): NumPy returns real
eigenvalues/vectors when every eigenvalue is real and complex ones
otherwise; numdyn traces a complex node and takes NumPy's branch on the
data (a graph break), so compiled calls give NumPy's dtypes and values
whichever way the data goes, and gradients flow (torch.linalg.eig's
conventions: the real part of the complex gradient; distinct eigenvalues,
losses invariant to the eigenvectors' phases or signs)."""
import numpy as np
import pytest

import numdyn

R = np.random.default_rng(14)
AC = R.standard_normal((4, 4))                         # has a complex pair
AR = AC + AC.T + np.diag([0.0, 2.0, 5.0, 9.0])         # symmetric: all real
assert np.iscomplexobj(np.linalg.eigvals(AC)) and not np.iscomplexobj(np.linalg.eigvals(AR))
WT = R.standard_normal(4)
M16 = np.arange(16.0).reshape(4, 4)


def eig_fn(a):
    return np.linalg.eig(a)


def eigvals_fn(a):
    return np.linalg.eigvals(a * 1)


def test_compiled_results_follow_the_data():
    """one compiled function called with real-spectrum and complex-spectrum
    matrices, float64/float32/int and batched: NumPy's types, dtypes, values"""
    f, fv = numdyn.compile(eig_fn), numdyn.compile(eigvals_fn)
    batch = np.stack([AR, AR * 2])
    for a in (AR, AC, AR, AC.astype(np.float32), AR.astype(np.float32), np.triu(np.arange(16).reshape(4, 4)),
              batch, np.stack([AR, AC])):
        w, V = f(a)
        w0, V0 = np.linalg.eig(a)
        assert type(f(a)) is type(np.linalg.eig(a))
        assert w.dtype == w0.dtype and V.dtype == V0.dtype and w.shape == w0.shape
        assert w.strides == w0.strides and V.strides == V0.strides  # NumPy's w.real views
        np.testing.assert_array_equal(w, w0)
        np.testing.assert_array_equal(V, V0)
        wv, wv0 = fv(a), np.linalg.eigvals(a)
        assert wv.dtype == wv0.dtype
        np.testing.assert_array_equal(wv, wv0)


def _loss(xp, real_v):
    def loss(a):
        w, V = xp.linalg.eig(a)
        lw = (xp.real(w) * WT).sum() + (xp.imag(w) ** 2).sum()
        return lw + ((xp.abs(V) ** 2 if not real_v else V ** 2) * M16).sum()
    return loss


@pytest.mark.parametrize("which", ["complex", "real"])
def test_eig_gradient_matches_torch(which):
    torch = pytest.importorskip("torch")
    A = AC if which == "complex" else AR
    g = numdyn.grad(_loss(np, which == "real"))(A)
    assert g.dtype == np.float64 and g.shape == A.shape
    t = torch.tensor(A, requires_grad=True)
    w, V = torch.linalg.eig(t)
    l = (w.real * torch.tensor(WT)).sum() + (w.imag ** 2).sum() + (V.abs() ** 2 * torch.tensor(M16)).sum()
    l.backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(numdyn.grad(_loss(np, which == "real"))(A), g, rtol=1e-12)  # again


def _vloss(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.abs(w) ** 3) + np.real(w).prod()


def test_eigvals_gradient_central_differences_and_float32():
    loss = _vloss
    for A in (AC, AR):
        g = numdyn.grad(loss)(A)
        fd = np.zeros_like(A)
        for i in np.ndindex(A.shape):
            p, m = A.copy(), A.copy()
            p[i] += 1e-6
            m[i] -= 1e-6
            fd[i] = (loss(p) - loss(m)) / 2e-6
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
        g32 = numdyn.grad(loss)(A.astype(np.float32))
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g, rtol=2e-3, atol=2e-3)


def test_batched_eig_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    A = np.stack([AC, AR, AC.T])

    def loss(xp):
        return lambda a: (xp.abs(xp.linalg.eigvals(a)) * xp.arange(12.0).reshape(3, 4)).sum()
    g = numdyn.grad(loss(np))(A)
    t = torch.tensor(A, requires_grad=True)
    (torch.linalg.eigvals(t).abs() * torch.arange(12.0, dtype=torch.float64).reshape(3, 4)).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-10)
