"""What numdyn.vjp's forward saves for its backward (issue 14: the min-cut
partition, src/passes/autodiff_partition.c): a minimum cut by bytes between
saving forward values and recomputing cheap pointwise work from them.
Every pullback's gradients are checked against numdyn.grad's fused
forward+backward (which saves nothing) or a hand-written gradient, and the
saved bytes against what saving every value the backward reads would keep
(the counters ad_saved_bytes / ad_boundary_bytes).
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

RNG = np.random.default_rng(99)


def r(*shape):
    return RNG.standard_normal(shape)


def counters():
    c = utils.counters
    return c["ad_saved_bytes"], c["ad_boundary_bytes"], c["ad_recomputed_nodes"]


def test_pointwise_node_of_two_large_values_is_saved_itself():
    # c = a + b of two matmuls: the backward reads only c (cos(c)); saving c
    # keeps one (400, 300) array where recomputing c from a and b keeps two
    x, w1, w2 = r(400, 50), r(50, 300), r(50, 300)

    def f(x, w1, w2):
        a = x @ w1
        b = x @ w2
        return np.sin(a + b)

    s0, b0, _ = counters()
    out, pull = numdyn.vjp(f, x, w1, w2)
    s1, b1, _ = counters()
    assert pull.saved_nbytes == 400 * 300 * 8
    assert s1 - s0 == 400 * 300 * 8
    ct = r(400, 300)
    gx, g1, g2 = pull(ct)
    d = ct * np.cos(x @ w1 + x @ w2)
    np.testing.assert_allclose(out, np.sin(x @ w1 + x @ w2), rtol=1e-12)
    np.testing.assert_allclose(gx, d @ w1.T + d @ w2.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g1, x.T @ d, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g2, x.T @ d, rtol=1e-10, atol=1e-10)


def test_broadcast_product_recomputed_from_small_saved_values():
    # e = exp(s[:, None] * v) is (300, 400) but made of a (300,) reduction
    # and an input: the cut saves s (2.4 KB), not e or the product (960 KB)
    x, v = r(300, 20), r(400)

    def f(x, v):
        s = np.sum(x * x, axis=1)
        e = np.exp(np.tanh(s[:, None] * v))
        return np.sum(e * e)

    s0, b0, n0 = counters()
    out, pull = numdyn.vjp(f, x, v)
    s1, b1, n1 = counters()
    assert pull.saved_nbytes == 300 * 8
    assert s1 - s0 == 300 * 8 and b1 - b0 >= 300 * 400 * 8
    assert n1 - n0 >= 3  # the product, tanh and exp are computed again
    gx, gv = pull(np.float64(1.5))
    ex, ev = numdyn.grad(lambda x, v: 1.5 * f(x, v), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, ex, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gv, ev, rtol=1e-10, atol=1e-12)


def test_saved_never_exceeds_what_the_backward_reads():
    x, w = r(64, 32), r(32, 16)

    def f(x, w):
        h = np.tanh(x @ w)
        m = np.max(h, axis=1, keepdims=True)
        e = np.exp(h - m)
        p = e / np.sum(e, axis=1, keepdims=True)
        return np.sum(p * np.log(p + 1.0)) + np.sum(np.cumsum(h, axis=0) ** 2)

    s0, b0, _ = counters()
    out, pull = numdyn.vjp(f, x, w)
    s1, b1, _ = counters()
    assert 0 < s1 - s0 <= b1 - b0
    gx, gw = pull(np.float64(1.0))
    ex, ew = numdyn.grad(f, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, ex, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw, ew, rtol=1e-9, atol=1e-12)


def test_float32_cast_chain_saves_the_narrow_value():
    # y = (x @ w) in float32 cast up to float64 and squared: the cut keeps
    # the float32 product (half the bytes), the backward recomputes the cast
    x, w = r(200, 30).astype(np.float32), r(30, 100).astype(np.float32)

    def f(x, w):
        z = (x @ w).astype(np.float64)
        return np.sin(z) * 3.0

    out, pull = numdyn.vjp(f, x, w)
    assert pull.saved_nbytes == 200 * 100 * 4
    ct = r(200, 100)
    gx, gw = pull(ct)
    z = (x @ w).astype(np.float64)
    d = (ct * 3.0 * np.cos(z)).astype(np.float32)
    np.testing.assert_allclose(gx, d @ w.T, rtol=2e-4, atol=1e-4)
    np.testing.assert_allclose(gw, x.T @ d, rtol=2e-4, atol=1e-4)


OPS = [
    lambda a: np.sin(a), lambda a: np.exp(-a * a), lambda a: np.tanh(a) * 2.0,
    lambda a: a @ np.ones((a.shape[1], a.shape[1])) / a.shape[1],
    lambda a: a - np.max(a, axis=1, keepdims=True),
    lambda a: a * np.mean(a, axis=0), lambda a: np.cumsum(a, axis=1) * 0.1,
    lambda a: np.maximum(a, 0.1) + a,
]


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_pullback_matches_fused_grad(seed):
    rng = np.random.default_rng(seed)
    chain = rng.integers(0, len(OPS), size=6)

    def f(x, y):
        a = x
        for k, op in enumerate(chain):
            a = OPS[op](a)
            if k == 2:
                a = a + y
        return np.sum(a * a)

    x, y = rng.standard_normal((16, 8)), rng.standard_normal(8)
    s0, b0, _ = counters()
    out, pull = numdyn.vjp(f, x, y)
    s1, b1, _ = counters()
    assert s1 - s0 <= b1 - b0
    assert pull.saved_nbytes == s1 - s0
    gx, gy = pull(np.float64(1.0))
    ex, ey = numdyn.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(out, f(x, y), rtol=1e-10)
    np.testing.assert_allclose(gx, ex, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gy, ey, rtol=1e-8, atol=1e-10)


def test_max_tie_mask_kept_as_bool():
    """a max reduction's backward (ties share evenly) keeps its tie mask
    between the count and the gradient as bool, not as a float cast; and
    the stabilizer's cotangent sum_j c_i e_ij is taken as c_i s_i from the
    forward's row sums s (autodiff.c red_factored), not by another pass
    over the rows: a logsumexp with its max stabilizer reads about 3.3x the
    input's bytes forward+backward (5.1x with that pass, 7.0x with a
    float64 mask as well)"""
    x, w = r(512, 1000), r(512)

    def loss(a):
        m = a.max(axis=1, keepdims=True)
        return np.sum(np.log(np.sum(np.exp(a - m), axis=1)) * w + m[:, 0])

    vg = numdyn.value_and_grad(loss)
    vg(x)
    utils.wait_compiles()
    c0 = utils.counters["bytes_read"]
    v, g = vg(x)
    assert utils.counters["bytes_read"] - c0 < 4 * x.nbytes
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True) * w[:, None]
    want[np.arange(512), x.argmax(axis=1)] += 1 - w  # m's own term (m is not weighted)
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
