"""The backward of a stencil fuses as its forward (issue 14): the cotangents
of the shifted windows a stencil reads (u[:-2, 1:-1], u[2:, 1:-1], ...) are
transposed together -- their shared cotangent placed once in a zero-padded
array, each window's transpose a view of it, their sum one pointwise kernel
-- and a window whose cotangent is alone updates the cotangent so far in
place, not a zeros array of the base's shape per window plus a sum.

Before: 18 kernels a time step of the 2-D heat equation's value_and_grad
(5 zero fills, 5 region kernels and an add per step for u's windows alone);
now 8. Values against the hand-written adjoint and central differences."""
import os
import sys

import numpy as np
import pytest

import numdyn
from numdyn import utils

from grad_check import numeric_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import bench_autodiff as B  # noqa: E402


def heat(T, dt=0.2):
    def loss(u0, k, target):
        u = u0
        for _ in range(T):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
            u = u + np.pad(dt * k[1:-1, 1:-1] * lap, 1)
        return np.sum((u - target) ** 2)
    return loss


def _args(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)), rng.uniform(0.1, 1.0, (n, n)),
            rng.standard_normal((n, n)) * 0.1)


@pytest.mark.parametrize("T", [1, 7])
def test_heat_gradient_matches_the_adjoint_with_few_kernels(T, monkeypatch):
    monkeypatch.setattr(B, "HEAT_T", T)
    args = _args(24)
    vg = numdyn.value_and_grad(heat(T), argnums=(0, 1))
    loss, (gu, gk) = vg(*args)
    ref_loss, (ru, rk) = B.heat_hand(*args)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    np.testing.assert_allclose(gu, ru, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gk, rk, rtol=1e-10, atol=1e-12)
    vg(*args)
    utils.wait_compiles()
    k0 = utils.counters["kernel_runs"]
    loss2, (gu2, gk2) = vg(*args)   # warm: the recorded graph replays
    runs = utils.counters["kernel_runs"] - k0
    np.testing.assert_allclose(gu2, ru, rtol=1e-10, atol=1e-12)
    # 4 forward + 4 backward kernels a step (the loss's reduction and its
    # cotangent aside); 18 a step before the windows were transposed together
    assert runs <= 8 * T + 6, runs


def test_heat_gradient_central_differences():
    args = _args(7, seed=3)
    f = heat(3)
    g = numdyn.grad(f, argnums=(0, 1))(*args)
    np.testing.assert_allclose(g[0], numeric_grad(f, args, 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g[1], numeric_grad(f, args, 1), rtol=1e-6, atol=1e-7)


def windows_mixed(x):
    # windows of one shape sharing a cotangent (and scalar multiples of it),
    # windows of another shape, a strided (non-box) view, a broadcast view,
    # and a window whose cotangent is its own
    a = x[1:, :-1] + x[:-1, 1:] - 3.0 * x[1:, 1:] - (-x[:-1, :-1])
    b = np.sin(x[2:, :]) * x[:-2, :]
    c = x[::2, ::3] ** 2
    d = x[None, 1:2, :] * x[:3, :][:, None, :]
    return np.sum(a ** 2) + np.sum(b) + np.sum(c) + np.sum(d * 0.5) + np.sum(np.exp(x[1:-1, 2:]))


def windows_3d(x):
    y = x[1:, 1:, :-1] - x[:-1, :-1, 1:] + 2.0 * x[1:, :-1, 1:]
    return np.sum(np.tanh(y) * x[:-1, 1:, :-1])


@pytest.mark.parametrize("f, shape", [(windows_mixed, (6, 7)), (windows_3d, (4, 3, 5))])
def test_windows_against_central_differences(f, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    g = numdyn.grad(f)(x)
    np.testing.assert_allclose(g, numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(numdyn.grad(f)(x), g, rtol=1e-12, atol=1e-14)


def test_complex_windows_real_part_and_float32():
    # a real base read by windows whose cotangents are complex: its share is
    # the real part; float32 windows keep float32
    def f(x):
        z = x[1:] * (1 + 2j) + x[:-1] * (3 - 1j)
        return np.sum(np.abs(z) ** 2)
    x = np.random.default_rng(2).standard_normal(9)
    np.testing.assert_allclose(numdyn.grad(f)(x), numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-7)
    x32 = x.astype(np.float32)
    g32 = numdyn.grad(lambda v: np.sum((v[1:] - v[:-1]) ** 2))(x32)
    assert g32.dtype == np.float32
    ref = numeric_grad(lambda v: np.sum((v[1:] - v[:-1]) ** 2), (x,), 0)
    np.testing.assert_allclose(g32, ref, rtol=1e-4, atol=1e-4)
