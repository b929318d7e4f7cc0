"""Gradients of pointwise losses compile as few fused kernels as the
forward+backward graph allows (issue 14: "at least as fast as JAX jit").

- A kernel over an array domain inlines up to 256 nodes
  (src/passes/pass_schedule.c, kmax_nodes): the backward of a pointwise
  loss is a long chain (Black-Scholes greeks: ~120 nodes), which the
  64-node bound cut into 15 kernels, each split a buffer written and read
  back.
- The derivative of x ** k for a scalar k is k * x ** (k - 1) with k - 1 a
  scalar of the graph (src/passes/autodiff.c, pow_const_exponent): x ** 3's
  is 3 * (x * x), where a 0-d node computed per call made a libm pow per
  element.

Gradients are checked against central differences and a hand-written
gradient; structure by the counters and NUMDYN_DEBUG_DIR's graph.txt.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

from grad_check import numeric_grad

C0 = 0.7978845608028654


def bs_loss(S, sigma, T, r, K):
    def cnd(x):
        return 0.5 * (1 + np.tanh(C0 * (x + 0.044715 * x ** 3)))
    sq = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma * sigma) * T) / sq
    d2 = d1 - sq
    price = S * cnd(d1) - K * np.exp(-r * T) * cnd(d2)
    return np.sum(price)


def bs_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(50, 150, n), rng.uniform(0.1, 0.5, n), rng.uniform(0.2, 2.0, n),
            rng.uniform(0.0, 0.05, n), rng.uniform(60, 140, n))


def kernel_runs(f, *args):
    before = utils.counters["kernel_runs"]
    out = f(*args)
    return utils.counters["kernel_runs"] - before, out


def test_black_scholes_greeks_fwd_bwd_is_two_kernels():
    args = bs_inputs(4096)
    vg = numdyn.value_and_grad(bs_loss, argnums=(0, 1, 2, 3))
    v0, g0 = vg(*args)
    numdyn.utils.wait_compiles()
    runs, (v, g) = kernel_runs(vg, *args)
    # one pointwise kernel (forward values the sum reads, four gradients),
    # one reduction: the 64-node bound made 15
    assert runs <= 2, runs
    np.testing.assert_allclose(v, bs_loss(*args), rtol=1e-12)
    small = bs_inputs(5, seed=1)
    gs = numdyn.grad(bs_loss, argnums=(0, 1, 2, 3))(*small)
    for k in range(4):
        np.testing.assert_allclose(gs[k], numeric_grad(bs_loss, small, k), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(g[k], g0[k], rtol=1e-12)


def chain(x, steps):
    y = x
    for k in range(steps):
        y = (y * 0.5 + x) * y
    return y


def test_long_pointwise_chain_is_one_kernel():
    # 150 pointwise nodes reading x 50 times: one kernel. Two before: at 64
    # nodes, and at 40 buffers when x counted once a read (it is one
    # operand of the kernel)
    x = np.linspace(-0.5, 0.5, 1000)
    cf = numdyn.compile(chain, options={"floor": False})
    cf(x, 50)
    numdyn.utils.wait_compiles()
    runs, out = kernel_runs(cf, x, 50)
    assert runs == 1, runs
    np.testing.assert_allclose(out, chain(x, 50), rtol=1e-13)


def test_gradient_of_a_chain_is_one_pointwise_kernel():
    # forward and backward of 20 steps (~180 nodes): one pointwise kernel
    # and the sum's reduction (the 64-node bound made 12)
    def loss(x):
        return np.sum(chain(x, 20) ** 2)

    x = np.linspace(-0.5, 0.5, 1000)
    g = numdyn.grad(loss)
    g(x)
    numdyn.utils.wait_compiles()
    runs, gx = kernel_runs(g, x)
    assert runs <= 2, runs
    xs = x[::100].copy()
    np.testing.assert_allclose(numdyn.grad(loss)(xs), numeric_grad(loss, (xs,), 0),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gx[::100], numdyn.grad(loss)(xs), rtol=1e-12)


def _power_exponents(tmp_path):
    """per power node of the graphs written: is its exponent a scalar?"""
    out = []
    for p in tmp_path.rglob("graph.txt"):
        lines = dict(ln.split(" = ", 1) for ln in p.read_text().splitlines() if " = " in ln)
        for rhs in lines.values():
            if rhs.startswith("ufunc power("):
                expo = rhs[len("ufunc power("):].split(")")[0].split(", ")[1]
                out.append(lines[expo].startswith("scalar "))
    return out


@pytest.mark.parametrize("k, dt", [(3, np.float64), (3.0, np.float32), (-1.5, np.float64),
                                   (2.5, np.float32)])
def test_power_by_scalar_derivative_needs_no_computed_exponent(tmp_path, monkeypatch, k, dt):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))
    x = np.linspace(0.5, 2.0, 64).astype(dt)

    def f(x):
        return np.sum(x ** k)

    v, g = numdyn.value_and_grad(f)(x)
    numdyn.utils.wait_compiles()
    tol = 1e-5 if dt == np.float32 else 1e-13
    assert g.dtype == dt
    np.testing.assert_allclose(g, k * x.astype(np.float64) ** (k - 1), rtol=tol)
    # every power's exponent is a scalar of the graph (k - 1 = 2: a
    # product in the kernel); before, the backward held power(x,
    # subtract(k, 1)), a 0-d node computed per call (a pow an element),
    # under a select on k == 0
    ex = _power_exponents(tmp_path)
    assert ex and all(ex), ex
    assert "where(" not in "".join(p.read_text() for p in tmp_path.rglob("graph.txt"))


def test_power_derivative_edge_values_unchanged():
    # x ** 3 at 0, -0, negative, inf, nan: 3 x^2 as JAX/torch give it
    x = np.array([0.0, -0.0, -2.0, np.inf, -np.inf, np.nan, 1e-200, 1e200])
    with np.errstate(all="ignore"):
        g = numdyn.grad(lambda x: np.sum(x ** 3))(x)
        expect = 3 * x * x
    np.testing.assert_array_equal(g, expect)
    # x ** 0.5 at 0: inf (0.5 * 0 ** -0.5), as before
    with np.errstate(all="ignore"):
        g = numdyn.grad(lambda x: np.sum(x ** 0.5))(np.array([0.0, 4.0]))
    np.testing.assert_array_equal(g, [np.inf, 0.25])
    # a zero exponent keeps the select: 0, not nan, where x ** -1 would be inf
    with np.errstate(all="ignore"):  # the select's other side: 0 ** -1
        g = numdyn.grad(lambda x: np.sum(x ** 0.0))(np.array([0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])
