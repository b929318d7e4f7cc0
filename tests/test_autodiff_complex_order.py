"""Gradients of complex cholesky, of np.sort / np.partition values (the
cotangent gathered back through the permutation NumPy applied, whatever
the selection algorithm) and of max/min/maximum/minimum of complex values
(NumPy's lexicographic order), issue 14. Checked against central
differences in both real directions (dL/dre + 1j dL/dim: numdyn.grad's
torch convention) and against torch.autograd where torch has the op."""
import numpy as np
import pytest

import numdyn

RNG = np.random.default_rng(14)


def crand(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def wirtinger_fd(f, z, eps=1e-6):
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for u in ((1.0, 1j) if np.iscomplexobj(z) else (1.0,)):
            zp, zm = z.copy(), z.copy()
            zp[i] += eps * u
            zm[i] -= eps * u
            g[i] += u * (f(zp) - f(zm)) / (2 * eps)
    return g


def check(f, z, rtol=1e-6, atol=1e-7):
    g = numdyn.grad(f)(z.copy())
    assert g.dtype == z.dtype and g.shape == z.shape
    np.testing.assert_allclose(g, wirtinger_fd(f, z), rtol=rtol, atol=atol)
    np.testing.assert_allclose(numdyn.grad(f)(z.copy()), g, rtol=1e-12, atol=1e-13)  # replayed
    return g


W44 = RNG.standard_normal((4, 4))


def chol_loss(xp):
    def f(B):
        n = B.shape[-1]
        H = B @ xp.conj(xp.swapaxes(B, -1, -2)) + n * xp.eye(n)
        Lc = xp.linalg.cholesky(H)
        return xp.sum(xp.abs(Lc) ** 2 * xp.asarray(W44[:n, :n])) + xp.sum(xp.real(Lc) * xp.imag(Lc))
    return f


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_complex_cholesky(shape):
    B = crand(*shape)
    g = check(chol_loss(np), B)
    torch = pytest.importorskip("torch")
    t = torch.tensor(B, requires_grad=True)
    chol_loss(torch)(t).backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_cholesky_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    A = RNG.standard_normal((3, 5, 5)).astype(dtype)

    def f(xp):
        def loss(a):
            S = a @ xp.swapaxes(a, -1, -2) + 5 * xp.eye(5, dtype=a.dtype)
            return xp.sum(xp.tril(xp.linalg.cholesky(S)) ** 3)
        return loss
    g = numdyn.grad(f(np))(A.copy())
    assert g.dtype == dtype
    t = torch.tensor(A, requires_grad=True)
    f(torch)(t).backward()
    tol = 2e-3 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_complex_sort(axis):
    z = crand(4, 5)
    w = RNG.standard_normal(20 if axis is None else (4, 5))
    check(lambda z: np.sum(np.abs(np.sort(z, axis=axis) * w) ** 2 + np.real(np.sort(z, axis=axis)) * w), z)


def test_complex_sort_lexicographic_ties_of_real_parts():
    # equal real parts: the imaginary part decides (NumPy's order)
    z = np.array([1 + 3j, 1 - 2j, 0.5 + 1j, 1 + 0.5j])
    w = np.arange(1.0, 5.0)
    g = numdyn.grad(lambda z: np.sum(np.imag(np.sort(z)) * w))(z.copy())  # (a kink: no differences)
    np.testing.assert_allclose(g, 1j * np.array([4.0, 2.0, 1.0, 3.0]))


@pytest.mark.parametrize("kth,axis", [(2, 1), ((0, 3), 1), (1, 0), (-1, -1), (5, None), ([0, 7, 19], None)])
def test_partition(kth, axis):
    x = RNG.standard_normal((4, 5))
    w = RNG.standard_normal(20 if axis is None else x.shape)
    f = lambda x: np.sum(np.partition(x, kth, axis=axis) ** 2 * w)
    check(f, x)


def test_partition_float32_and_complex_and_method():
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    w = RNG.standard_normal((6, 7)).astype(np.float32)
    g = numdyn.grad(lambda x: np.sum(np.partition(x, 3) * w))(x.copy())
    assert g.dtype == np.float32
    # each element receives the weight of the position it was moved to
    p = np.partition(x, 3)
    for r_ in range(6):
        for j in range(7):
            k = int(np.nonzero(p[r_] == x[r_, j])[0][0])
            assert g[r_, j] == w[r_, k]
    z = crand(3, 6)
    wz = RNG.standard_normal((3, 6))
    check(lambda z: np.sum(np.abs(np.partition(z, (1, 4), axis=1)) ** 3 * wz), z)

    def method(x):
        y = x * 1.0
        y.partition(2, axis=0)
        return np.sum(y[:3] ** 2 * w[:3])
    check(method, x.astype(np.float64))


@pytest.mark.parametrize("red", ["max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_max_min_reductions(red, axis):
    z = crand(3, 4)
    w = RNG.standard_normal(np.sum(z, axis=axis).shape)
    check(lambda z: np.sum(np.abs(getattr(np, red)(z, axis=axis) * (1 + 2j)) ** 2 * w), z)


def test_complex_max_tie_splits_evenly_and_lexicographic():
    z = np.array([2 + 1j, 2 + 1j, 2 - 5j, -3 + 9j])
    g = numdyn.grad(lambda z: np.real(np.max(z) * (1 - 2j)))(z.copy())
    # the tie at 2+1j (larger than 2-5j by the imaginary part) shares the cotangent
    np.testing.assert_allclose(g, np.array([0.5 + 1j, 0.5 + 1j, 0, 0]))


@pytest.mark.parametrize("fn", ["maximum", "minimum", "fmax", "fmin"])
def test_complex_maximum_minimum(fn):
    a, b = crand(3, 4), crand(4)
    u = getattr(np, fn)
    check(lambda a: np.sum(np.abs(u(a, b)) ** 2 + np.imag(u(a, 0.25 + 0j))), a)
    check(lambda b: np.sum(np.abs(u(a, b) * (2 - 1j)) ** 2), b)
    # a tie: half each
    z = np.array([1 + 1j, 2 - 1j])
    g = numdyn.grad(lambda z: np.real(np.sum(u(z, z.copy() * 1.0))))(z.copy())
    np.testing.assert_allclose(g, np.ones(2))


def test_complex_rint_has_zero_gradient():
    z = crand(5) * 3
    g = numdyn.grad(lambda z: np.sum(np.abs(np.rint(z) + z) ** 2))(z.copy())
    np.testing.assert_allclose(g, 2 * (np.rint(z) + z))
