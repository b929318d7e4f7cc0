"""Complex and FFT gradients (issue 14).

Conventions (src/passes/autodiff.h): numdyn.vjp and grad(holomorphic=True)
follow JAX (cotangents by the transpose: vjp(f)(1) = f'(z)); numdyn.grad of
a real loss of complex inputs gives torch's conjugate-Wirtinger gradient
dL/dre + 1j dL/dim (x.grad in torch; conj of jax.grad). Checked against
central finite differences on the real and imaginary parts, against JAX
and against torch.autograd, in complex64 and complex128.
"""
import warnings

import numpy as np
import pytest

import numdyn

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def crand(*shape, dt=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def fd_grad(f, z, eps=1e-6):
    """dL/dre + 1j dL/dim of the real scalar f at z (float64 / complex128)"""
    z = np.array(z, dtype=np.complex128 if np.iscomplexobj(z) else np.float64)
    g = np.zeros(z.shape, dtype=z.dtype)
    for i in np.ndindex(z.shape):
        for unit in ((1.0, 1j) if np.iscomplexobj(z) else (1.0,)):
            zp, zm = z.copy(), z.copy()
            zp[i] += eps * unit
            zm[i] -= eps * unit
            g[i] += unit * (float(f(zp)) - float(f(zm))) / (2 * eps)
    return g


LOSSES = {
    "mul-exp-abs": lambda xp: lambda z, w: xp.sum(xp.abs(z * xp.exp(z) + w) ** 2),
    "div-log-real-imag": lambda xp: lambda z, w: xp.sum(xp.real(z / (w + 3.0)) * xp.imag(xp.log(z))),
    "conj-square-sqrt": lambda xp: lambda z, w: xp.sum(xp.real(xp.conj(z) * xp.sqrt(z) ** 2 * w)),
    "trig-power": lambda xp: lambda z, w: xp.sum(xp.abs(xp.sin(z) * xp.cosh(w) + z ** 3)),
    "matmul-mean": lambda xp: lambda z, w: xp.real(xp.mean((z[:, None] * w[None, :]) @ w.reshape(-1, 1)) ** 2),
    "real-times-complex": lambda xp: lambda z, w: xp.sum(xp.abs(xp.real(z) * w + 1j * xp.imag(w)) ** 2),
    "astype-complex": lambda xp: lambda z, w: xp.sum(xp.abs(xp.real(w).astype(xp.complex128) * z)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_real_loss_matches_finite_differences_torch_convention(name):
    z, w = crand(4), crand(4)
    f = LOSSES[name](np)
    gz, gw = numdyn.grad(f, argnums=(0, 1))(z, w)
    np.testing.assert_allclose(gz, fd_grad(lambda a: f(a, w), z), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw, fd_grad(lambda a: f(z, a), w), rtol=1e-6, atol=1e-7)
    # JAX's gradient is the conjugate
    jz, jw = jax.grad(LOSSES[name](jnp), argnums=(0, 1))(jnp.asarray(z), jnp.asarray(w))
    np.testing.assert_allclose(gz, np.conj(np.asarray(jz)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw, np.conj(np.asarray(jw)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_torch_autograd_oracle(dt):
    z = crand(3, 5, dt=dt)

    def f(xp_abs, xp_exp, z):
        return (xp_abs(z * xp_exp(z * 0.5)) ** 2).sum() + (z.real * (z * z).imag).sum()

    g = numdyn.grad(lambda z: f(np.abs, np.exp, z))(z)
    t = torch.tensor(z, requires_grad=True)
    f(torch.abs, torch.exp, t).backward()
    assert g.dtype == dt and g.shape == z.shape
    tol = 2e-4 if dt == np.complex64 else 1e-10
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=tol, atol=tol)


def test_holomorphic_grad_and_vjp_match_jax():
    z = crand(5)

    def f(xp):
        return lambda z: xp.sum(xp.sin(z) * z ** 2 / (z + 4.0) + xp.exp(z) @ z)
    gh = numdyn.grad(f(np), holomorphic=True)(z)
    gj = jax.grad(f(jnp), holomorphic=True)(jnp.asarray(z))
    np.testing.assert_allclose(gh, np.asarray(gj), rtol=1e-10)
    # f'(z) by a complex finite difference: holomorphic means one direction suffices
    h = 1e-6
    e = np.zeros(5, complex)
    e[2] = h
    np.testing.assert_allclose(gh[2], (f(np)(z + e) - f(np)(z - e)) / (2 * h), rtol=1e-6)
    out, pull = numdyn.vjp(lambda z: np.tanh(z) * z, z)
    ct = crand(5)
    oj, pj = jax.vjp(lambda z: jnp.tanh(z) * z, jnp.asarray(z))
    np.testing.assert_allclose(pull(ct)[0], np.asarray(pj(jnp.asarray(ct))[0]), rtol=1e-10)


def test_holomorphic_requires_complex():
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        numdyn.grad(lambda x: np.sum(x), holomorphic=True)(np.ones(3))
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        numdyn.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(np.ones(3, complex))


def test_real_output_grad_of_complex_function_still_refused():
    with pytest.raises(TypeError, match="real-valued outputs"):
        numdyn.grad(lambda z: np.sum(z * z))(crand(3))


FFTS = [
    ("fft", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.fft(x * 1.5)) ** 2 * xp.arange(6.0)), "c", (6,)),
    ("fft-axis0-ortho", lambda xp: lambda x: xp.sum(xp.real(xp.fft.fft(x, axis=0, norm="ortho")) ** 3), "c", (4, 3)),
    ("ifft-forward", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.ifft(x, norm="forward"))), "c", (5,)),
    ("fft-of-real", lambda xp: lambda x: xp.sum(xp.imag(xp.fft.fft(x)) ** 2 * xp.arange(6.0)), "r", (6,)),
    ("rfft", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft(x)) ** 3), "r", (8,)),
    ("rfft-odd-ortho", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft(x, norm="ortho")) ** 2 * xp.arange(4.0)), "r", (7,)),
    ("irfft", lambda xp: lambda x: xp.sum(xp.fft.irfft(x) ** 3), "c", (5,)),
    ("irfft-odd-n", lambda xp: lambda x: xp.sum(xp.sin(xp.fft.irfft(x, n=9, norm="ortho"))), "c", (5,)),
    ("irfft-forward-axis0", lambda xp: lambda x: xp.sum(xp.fft.irfft(x, axis=0, norm="forward") ** 2 * 0.1), "c", (3, 2)),
    ("fft2", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.fft2(x)) ** 2 * xp.arange(3.0)), "c", (2, 3)),
    ("ifft2-forward", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.ifft2(x, norm="forward")) ** 2), "c", (2, 3)),
    ("fftn-axes", lambda xp: lambda x: xp.sum(xp.real(xp.fft.fftn(x, axes=(0, 2))) ** 3), "c", (2, 2, 3)),
    ("ifftn", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.ifftn(x * x))), "c", (3, 2)),
    ("rfft2", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft2(x)) ** 2 * xp.arange(3.0)), "r", (3, 4)),
    ("rfftn", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfftn(x)) ** 3), "r", (2, 3, 4)),
    ("irfft2", lambda xp: lambda x: xp.sum(xp.fft.irfft2(x) ** 2 * xp.arange(4.0)), "c", (2, 3)),
    ("irfftn-ortho", lambda xp: lambda x: xp.sum(xp.cos(xp.fft.irfftn(x, norm="ortho"))), "c", (2, 2, 3)),
    # n/s that pad (zeros appended) or crop the input along the transformed axes
    ("fft-pad", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.fft(x, n=8)) ** 2 * xp.arange(8.0)), "c", (5,)),
    ("fft-crop", lambda xp: lambda x: xp.sum(xp.real(xp.fft.fft(x, n=3)) ** 3), "c", (5,)),
    ("ifft-pad-axis0-ortho", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.ifft(x, n=6, axis=0, norm="ortho"))), "c", (4, 3)),
    ("fft-of-real-crop-forward", lambda xp: lambda x: xp.sum(xp.imag(xp.fft.fft(x, n=4, norm="forward")) ** 2), "r", (6,)),
    ("rfft-pad", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft(x, n=10)) ** 3), "r", (7,)),
    ("rfft-crop-ortho", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft(x, n=4, norm="ortho")) ** 2 * xp.arange(3.0)), "r", (7,)),
    ("irfft-pad", lambda xp: lambda x: xp.sum(xp.fft.irfft(x, n=14) ** 3), "c", (5,)),
    ("irfft-crop-forward", lambda xp: lambda x: xp.sum(xp.sin(xp.fft.irfft(x, n=4, norm="forward"))), "c", (5,)),
    ("fft2-pad", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.fft2(x, s=(3, 5), axes=(0, 1))) ** 2 * xp.arange(5.0)), "c", (2, 3)),
    ("fftn-pad-crop", lambda xp: lambda x: xp.sum(xp.real(xp.fft.fftn(x, s=(1, 4), axes=(0, 2))) ** 3), "c", (2, 2, 3)),
    ("rfft2-crop-pad", lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft2(x, s=(2, 6), axes=(-2, -1))) ** 2), "r", (3, 4)),
    ("irfft2-pad-crop-forward", lambda xp: lambda x: xp.sum(xp.fft.irfft2(x, s=(4, 4), axes=(0, 1), norm="forward") ** 2 * xp.arange(4.0)), "c", (2, 5)),
]


@pytest.mark.parametrize("name,make,kind,shape", FFTS, ids=[f[0] for f in FFTS])
def test_fft_gradients(name, make, kind, shape):
    x = crand(*shape) if kind == "c" else RNG.standard_normal(shape)
    f = make(np)
    g = numdyn.grad(f)(x)
    assert g.dtype == x.dtype and g.shape == x.shape
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=1e-6, atol=1e-6)
    gj = np.asarray(jax.grad(make(jnp))(jnp.asarray(x)))
    np.testing.assert_allclose(g, np.conj(gj) if kind == "c" else gj, rtol=1e-9, atol=1e-10)


def test_fft_complex64_and_vjp_replay():
    x = crand(4, 8, dt=np.complex64)
    out, pull = numdyn.vjp(lambda x: np.fft.ifft(np.fft.fft(x, axis=1) * 2.0, axis=0), x)
    assert out.dtype == np.complex64
    ct = crand(4, 8, dt=np.complex64)
    (g,) = pull(ct)
    oj, pj = jax.vjp(lambda x: jnp.fft.ifft(jnp.fft.fft(x, axis=1) * 2.0, axis=0), jnp.asarray(x))
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, np.asarray(pj(jnp.asarray(ct))[0]), rtol=1e-4, atol=1e-4)
    # warm calls replay and agree
    for _ in range(2):
        x = crand(4, 8, dt=np.complex64)
        out, pull = numdyn.vjp(lambda x: np.fft.ifft(np.fft.fft(x, axis=1) * 2.0, axis=0), x)
        oj, pj = jax.vjp(lambda x: jnp.fft.ifft(jnp.fft.fft(x, axis=1) * 2.0, axis=0), jnp.asarray(x))
        np.testing.assert_allclose(pull(ct)[0], np.asarray(pj(jnp.asarray(ct))[0]), rtol=1e-4, atol=1e-4)


def test_fft_resizing_float32_and_replay():
    """n= padding and cropping in single precision, recorded and replayed"""
    f = lambda xp: lambda x: xp.sum(xp.abs(xp.fft.rfft(x, n=12, axis=0)) ** 2) + \
        xp.sum(xp.real(xp.fft.fft(x, n=2, axis=1)))
    for _ in range(3):
        x = RNG.standard_normal((9, 3)).astype(np.float32)
        g = numdyn.grad(f(np))(x)
        assert g.dtype == np.float32
        gj = np.asarray(jax.grad(f(jnp))(jnp.asarray(x)))
        np.testing.assert_allclose(g, gj, rtol=1e-4, atol=1e-4)


# (complex sort, cholesky and maximum have rules since session 21:
# test_autodiff_complex_order.py)
def test_complex_without_rule_is_refused():
    with pytest.raises(NotImplementedError, match="complex values in the scan: power"):
        numdyn.grad(lambda z: np.sum(np.abs(np.power.accumulate(z))))(crand(3))


def test_complex_gradient_through_compile_and_a_break():
    @numdyn.compile
    def f(z):
        y = z * np.exp(1j * np.abs(z))
        if np.abs(y).sum() > -1:  # a graph break (bool() of a lazy value)
            y = y * 1.0
        return np.sum(np.abs(y + 1.0) ** 2)

    z = crand(4)
    g = numdyn.grad(lambda z: f(z))(z)
    np.testing.assert_allclose(g, fd_grad(f, z), rtol=1e-6, atol=1e-7)


# --------------------------------------------------- Tensor and the torch bridge

def test_tensor_backward_complex_matches_torch():
    z0, w0 = crand(3, 4), crand(4)
    z = numdyn.tensor(z0, requires_grad=True)
    w = numdyn.tensor(w0, requires_grad=True)
    y = z * np.exp(w) + 2.0
    (abs(y) ** 2).sum().backward()
    tz = torch.tensor(z0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    (torch.abs(tz * torch.exp(tw) + 2.0) ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10)
    # a complex non-scalar output with an explicit complex grad, as torch
    z2 = numdyn.tensor(z0, requires_grad=True)
    g = crand(3, 4)
    (z2 * z2 * 1j).backward(g)
    tz2 = torch.tensor(z0, requires_grad=True)
    (tz2 * tz2 * 1j).backward(torch.tensor(g))
    np.testing.assert_allclose(z2.grad.numpy(), tz2.grad.numpy(), rtol=1e-10)
    # a leaf's own backward(grad) is grad itself
    z3 = numdyn.tensor(z0, requires_grad=True)
    z3.backward(g)
    np.testing.assert_allclose(z3.grad.numpy(), g)


def test_wrap_numpy_complex_torch_grad():
    @numdyn.wrap_numpy
    def f(z, w):
        return np.abs(np.fft.fft(z * w)) ** 2

    z0, w0 = crand(6), crand(6)
    tz = torch.tensor(z0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    out = f(tz, tw)
    (out * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    rz = torch.tensor(z0, requires_grad=True)
    rw = torch.tensor(w0, requires_grad=True)
    ((torch.abs(torch.fft.fft(rz * rw)) ** 2) * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(tz.grad.numpy(), rz.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), rtol=1e-9, atol=1e-12)
    # a complex output and complex cotangent through the bridge
    tz = torch.tensor(z0, requires_grad=True)
    g = torch.tensor(crand(6))
    numdyn.wrap_numpy(lambda z: np.exp(z) * z)(tz).backward(g)
    rz = torch.tensor(z0, requires_grad=True)
    (torch.exp(rz) * rz).backward(g)
    np.testing.assert_allclose(tz.grad.numpy(), rz.grad.numpy(), rtol=1e-10)


def test_conjugated_gradient_never_writes_an_argument():
    # d/dz re(sum(z * c)) is conj(c) in torch's convention: the result must be
    # a new array, c left as it was (also on replayed calls), 0-d stays 0-d
    c = crand(3)
    c0 = c.copy()
    g = numdyn.grad(lambda z, c: np.real(np.sum(z * c)))
    for _ in range(3):
        np.testing.assert_allclose(g(crand(3), c), np.conj(c0))
        np.testing.assert_array_equal(c, c0)
    g0 = numdyn.grad(lambda z: np.abs(z) ** 2)(np.array(1 + 2j))
    assert isinstance(g0, np.ndarray) and g0.shape == ()
    np.testing.assert_allclose(g0, 2 + 4j)


# ------------------------------------------------------------ linalg.eig

def _eig_losses(xp, lib):
    wt = np.arange(1.0, 5.0)[:3]
    if lib == "torch":
        wt = torch.tensor(wt)
        eigvals, eig, absf, real = torch.linalg.eigvals, torch.linalg.eig, torch.abs, torch.real
    else:
        eigvals, eig, absf, real = np.linalg.eigvals, np.linalg.eig, np.abs, np.real
    return {
        "eigvals": lambda z: (absf(eigvals(z)) ** 2 * wt).sum(),
        "eig-values": lambda z: (real(eig(z)[0]) * wt).sum() + (absf(eig(z)[0]) ** 3).sum(),
        "eig-vectors": lambda z: (absf(eig(z)[1]) ** 3 * wt).sum(),     # phase-invariant
        "eig-both": lambda z: (absf(eig(z)[1] * eig(z)[0][..., None, :]) ** 2).sum(),
    }


@pytest.mark.parametrize("name", ["eigvals", "eig-values", "eig-vectors", "eig-both"])
@pytest.mark.parametrize("dt,shape", [(np.complex128, (3, 3)), (np.complex128, (2, 3, 3)),
                                      (np.complex64, (3, 3))])
def test_eig_gradients_match_torch_and_fd(name, dt, shape):
    """linalg.eig/eigvals of complex matrices (distinct eigenvalues): torch's
    gradient (the conjugate-Wirtinger one numdyn.grad gives for real losses)
    and central differences on the real and imaginary parts"""
    f = _eig_losses(np, "numpy")[name]
    tf = _eig_losses(torch, "torch")[name]
    for _ in range(2):                                  # the second call replays
        z = crand(*shape, dt=dt)
        g = numdyn.grad(f)(z)
        assert g.dtype == dt and g.shape == z.shape
        zt = torch.tensor(z.astype(np.complex128), requires_grad=True)
        tf(zt).backward()
        tol = 1e-9 if dt == np.complex128 else 2e-3
        np.testing.assert_allclose(g, zt.grad.numpy(), rtol=tol, atol=tol)
        if dt == np.complex128:
            np.testing.assert_allclose(g, fd_grad(f, z), rtol=1e-5, atol=1e-6)


def test_eig_values_vjp_is_holomorphic_jax():
    """the eigenvalues are holomorphic in A: vjp matches jax.vjp (JAX
    differentiates eigenvalues only)"""
    z = crand(4, 4)
    ct = crand(4)
    out, pull = numdyn.vjp(np.linalg.eigvals, z)
    oj, pj = jax.vjp(jnp.linalg.eigvals, jnp.asarray(z))
    order = np.argsort(np.asarray(oj).real)            # LAPACK backends may order them differently
    mine = np.argsort(out.real)
    ctj = np.zeros(4, complex)
    ctj[order] = ct[mine]
    np.testing.assert_allclose(pull(ct)[0], np.asarray(pj(jnp.asarray(ctj))[0]), rtol=1e-8, atol=1e-10)


def test_eig_of_a_complex_matrix_traced_as_numpy():
    f = numdyn.compile(lambda z: np.linalg.eig(z * 1.0))
    g = numdyn.compile(lambda z: np.linalg.eigvals(z + 0.0))
    for dt in (np.complex128, np.complex64):
        for _ in range(2):
            z = crand(2, 3, 3, dt=dt)
            r, want = f(z), np.linalg.eig(z * 1.0)
            assert type(r) is type(want)
            for x, y in zip(r, want):
                assert x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
            w = g(z)
            assert w.dtype == dt
            np.testing.assert_allclose(w, np.linalg.eigvals(z), rtol=1e-5, atol=1e-5)


def test_abs_squared_goes_straight_to_z():
    """|z|^2's gradient is 2 c conj(z) straight to z (no complex division
    by |z|, no select at 0, autodiff.c's SQUARE rule), exact at z = 0, and
    |z| read elsewhere still gets its own rule: torch's x.grad"""
    z = np.array([0, 1 + 2j, -3j, 0, 0.5 - 0.25j, 2.0])
    f = lambda a: np.sum(np.abs(a) ** 2 * 3.0 + np.abs(a))  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # |z|'s rule at 0: no 0/0 warning
        g = numdyn.grad(f)(z)
    unit = np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))
    np.testing.assert_allclose(g, 6 * z + unit, rtol=1e-15, atol=0)
    t = torch.tensor(z, requires_grad=True)
    (torch.abs(t) ** 2 * 3.0 + torch.abs(t)).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-15, atol=0)


def test_cumprod_complex_matches_torch_and_jax():
    # exact at a zero (no division), torch's convention for a real loss,
    # JAX's for the holomorphic vjp
    z, w = crand(3, 4), RNG.standard_normal((3, 4))
    z[1, 2] = 0
    g = numdyn.grad(lambda z: np.sum(np.abs(np.cumprod(z, axis=1) * w) ** 2))(z)
    t = torch.tensor(z, requires_grad=True)
    (torch.abs(torch.cumprod(t, dim=1) * torch.tensor(w)) ** 2).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    ct = crand(3, 4)
    _, pull = numdyn.vjp(lambda z: np.cumprod(z, axis=0), z)
    _, pj = jax.vjp(lambda z: jnp.cumprod(z, axis=0), jnp.asarray(z))
    np.testing.assert_allclose(pull(ct)[0], np.asarray(pj(jnp.asarray(ct))[0]), rtol=1e-10, atol=1e-12)


def test_slogdet_complex_logabsdet_and_sign():
    a = crand(2, 3, 3) + 3 * np.eye(3)
    f = lambda xp: lambda a: xp.sum(xp.linalg.slogdet(a)[1] ** 2)
    g = numdyn.grad(f(np))(a)
    np.testing.assert_allclose(g, fd_grad(f(np), a), rtol=1e-6, atol=1e-7)
    gj = jax.grad(f(jnp))(jnp.asarray(a))
    np.testing.assert_allclose(g, np.conj(np.asarray(gj)), rtol=1e-10)
    # the sign (the determinant's phase): ds = s i Im(tr(a^-1 da)), JAX's rule
    w = np.array([0.3 - 0.7j, 1.1 + 0.2j])
    h = lambda xp: lambda a: (xp.sum(xp.real(xp.linalg.slogdet(a)[0] * w))  # noqa: E731
                              + xp.sum(xp.abs(xp.linalg.slogdet(a)[0] + 1.0)))
    g = numdyn.grad(h(np))(a)
    np.testing.assert_allclose(g, fd_grad(h(np), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, np.conj(np.asarray(jax.grad(h(jnp))(jnp.asarray(a)))), rtol=1e-10)
    # closed form for one matrix: L = Im(log s) = angle(det a), dL = Im(tr(a^-1 da)),
    # numdyn's gradient dL/dre + i dL/dim = i conj(a^-T)
    g1 = numdyn.grad(lambda a: np.angle(np.linalg.slogdet(a)[0]))(a[0])
    np.testing.assert_allclose(g1, 1j * np.conj(np.linalg.inv(a[0]).T), rtol=1e-10)
