"""Python loops repeating array statements: results match NumPy, and the
native backend compiles each distinct kernel once (kernels are cached by
structure, so more iterations or other sizes compile nothing new).
"""
import numpy as np
import pytest

import numdyn
from oracle import check
from programs import gemver, heat_3d, jacobi_2d, levinson_durbin


def grid(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, n)), rng.random((n, n))


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_jacobi_2d(backend, steps):
    A, B = grid(12)
    check(jacobi_2d, A, B, steps, backend=backend)


def test_heat_3d(backend):
    rng = np.random.default_rng(1)
    check(heat_3d, rng.random((8, 9, 10)), rng.random((8, 9, 10)), 4, backend=backend)


@pytest.mark.parametrize("order", [1, 4, 12])
def test_levinson_durbin(backend, order):
    r = np.array([1.0 / (1 + k) for k in range(order + 1)])
    check(levinson_durbin, r, order, backend=backend)


def test_gemver(backend):
    rng = np.random.default_rng(2)
    n = 9
    args = [rng.random((n, n))] + [rng.random(n) for _ in range(8)] + [1.5, 1.2]
    check(gemver, *args, backend=backend)


def test_loop_with_extern_and_gather(backend):
    def f(x, W, idx):
        for _ in range(5):
            x = np.tanh(x @ W)[idx] + x
        return x
    rng = np.random.default_rng(3)
    check(f, rng.random((6, 6)), rng.random((6, 6)), np.array([5, 4, 3, 2, 1, 0]), backend=backend)


def _compiled_kernels(fn, *args):
    from numdyn import utils
    before = utils.counters["kernels_compiled"]
    fn(*args)
    return utils.counters["kernels_compiled"] - before


def test_jacobi_compiles_each_kernel_once():
    """200 steps of jacobi-2d compile a handful of kernels; running again
    (more steps, another size) compiles nothing new."""
    f = numdyn.compile(jacobi_2d, backend="native")
    A, B = grid(20)
    first = _compiled_kernels(f, A, B, 200)
    assert first <= 8, first
    A, B = grid(20, seed=1)
    assert _compiled_kernels(f, A, B, 300) == 0
    A, B = grid(33, seed=2)
    assert _compiled_kernels(f, A, B, 7) == 0
    eA, eB = jacobi_2d(*grid(33, seed=2), 7)
    A, B = grid(33, seed=2)
    rA, rB = f(A, B, 7)
    np.testing.assert_allclose(rA, eA, rtol=1e-12)
    np.testing.assert_allclose(rB, eB, rtol=1e-12)


def test_levinson_compiles_few_kernels():
    f = numdyn.compile(levinson_durbin, backend="native")
    r = np.array([1.0 / (1 + k) for k in range(41)])
    f(r, 40)
    r2 = np.array([2.0 / (3 + k) for k in range(41)])
    assert _compiled_kernels(f, r2, 40) == 0
    ea, ee = levinson_durbin(r2, 40)
    a, e = f(r2, 40)
    np.testing.assert_allclose(a, ea, rtol=1e-10)
    np.testing.assert_allclose(e, ee, rtol=1e-10)
