"""A backward whose pointwise chain reads a saved forward value per step
(60 steps of s = sin(s) * y + cos(x * k) * 0.01) was scheduled as one kernel
of 74-81 operands: the grouping's operand count is an estimate, and the
runtime takes 64 operand pointers, so every compiled call raised
"RuntimeError: numdyn: kernel with too many operands" where NumPy gives the
value. Such a schedule is now redone with less merging, then with smaller
kernels, until every kernel fits."""
import numpy as np

import numdyn
from numdyn import utils

from grad_check import numeric_grad


def chain(x, y):
    s = x
    for i in range(60):
        s = np.sin(s) * y + np.cos(x * (i + 1)) * 0.01
    return np.sum(s * s)


def test_long_backward_chain_runs_compiled_and_is_right():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 6), rng.uniform(0.5, 1.0, 6)
    ref = [numeric_grad(chain, (x, y), k) for k in (0, 1)]
    g = numdyn.grad(chain, argnums=(0, 1))
    for call in range(4):
        gx, gy = g(x, y)  # the first calls may run while kernels compile
        np.testing.assert_allclose(gx, ref[0], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gy, ref[1], rtol=1e-6, atol=1e-8)
        utils.wait_compiles()
    k0 = utils.counters["kernel_runs"]
    g(x, y)
    assert utils.counters["kernel_runs"] > k0  # it ran compiled kernels


def test_forward_of_the_chain_unchanged():
    x, y = np.linspace(0, 1, 7), np.linspace(1, 2, 7)
    f = numdyn.compile(chain)
    for _ in range(3):
        np.testing.assert_allclose(f(x, y), chain(x, y), rtol=1e-12)
        utils.wait_compiles()
