"""logsumexp's max stabilizer gets no cotangent (issue 14; autodiff.c
lse_stabilizer): in log(sum(exp(x - m))) + m the result does not depend on
m, so when nothing else reads m, the exp, its sum or the log, the backward
drops m's cotangent (c - (c/s)*s, zero but for rounding) and with it the
max's tie mask and tie count: two passes over x. Gradients are checked
against the hand-written softmax gradient (ties included: the stabilizer's
tied maxima get no extra share, as with JAX's stop_gradient) and, where m
is read otherwise, against central differences: that form keeps m's
cotangent (as does softmax, e / e.sum(), whose exp has two readers: the
walk tests' softmax cases)."""
import numpy as np
import pytest

import numdyn
from numdyn import utils

RNG = np.random.default_rng(7)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lse_rows(a, w):
    m = a.max(axis=1, keepdims=True)
    return np.sum(w * (np.log(np.sum(np.exp(a - m), axis=1)) + m[:, 0]))


def lse_both(a, w, b, v):
    # rows of a (keepdims, m read by x - m directly and by a view), columns
    # of b (no keepdims: x - m through a broadcasting view)
    m = b.max(axis=0)
    return lse_rows(a, w) + np.sum(v * (np.log(np.sum(np.exp(b - m[None, :]), axis=0)) + m))


def test_stabilizer_spares_the_tie_passes():
    x, w = RNG.standard_normal((512, 1000)), RNG.standard_normal(512)
    x[:40, 3] = x[:40, 7] = x[:40].max(axis=1) + 1.0  # tied maxima
    b, v = RNG.standard_normal((1000, 256)), RNG.standard_normal(256)
    b[5, :] = b[9, :] = b.max(axis=0) + 1.0
    vg = numdyn.value_and_grad(lse_both, argnums=(0, 2))
    vg(x, w, b, v)
    utils.wait_compiles()
    c0 = dict(utils.counters)
    val, (g, gb) = vg(x, w, b, v)
    # x's forward row kernel reads it once, the backward exp(x - m) once
    # (3.3x with the tie mask and count); b's column reductions are not a
    # row kernel: max, exp, sum, backward 4 passes (6 with the tie mask)
    assert utils.counters["bytes_read"] - c0["bytes_read"] < 2.1 * x.nbytes + 4.1 * b.nbytes
    np.testing.assert_allclose(val, lse_both(x, w, b, v), rtol=1e-12)
    np.testing.assert_allclose(g, softmax(x, 1) * w[:, None], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb, softmax(b, 0) * v, rtol=1e-12, atol=1e-15)
    # non-finite rows: NaN rows stay NaN, -inf elements get 0
    y = x[:8].copy()
    y[1, 5] = np.nan
    y[2, :500] = -np.inf
    y[3, :] = -np.inf
    with pytest.warns(RuntimeWarning, match="invalid value"):  # NumPy's, from -inf - -inf
        _, (gy, _) = vg(y, w[:8], b, v)
    assert np.isnan(gy[1]).all() and np.isnan(gy[3]).all()
    assert (gy[2, :500] == 0).all()
    np.testing.assert_allclose(gy[2, 500:], softmax(y[2:3, 500:], 1)[0] * w[2], rtol=1e-12)
    np.testing.assert_allclose(gy[[0, 4, 5, 6, 7]], (softmax(y, 1) * w[:8, None])[[0, 4, 5, 6, 7]],
                               rtol=1e-12, atol=1e-15)


def mixed(a):
    # m read once more (m.sum()): its cotangent is real, kept with its ties
    m = a.max(axis=1, keepdims=True)
    return np.sum((np.log(np.sum(np.exp(a - m), axis=1)) + m[:, 0] + 0.5 * m.sum()) ** 2)


def test_other_readers_of_the_max_keep_its_cotangent():
    a = RNG.standard_normal((6, 9))
    a[2, 4] = a[2, 6] = a[2].max() + 0.5  # a tie in a row of m1/m2
    g = numdyn.grad(mixed)(a)
    # central differences (a tie is a kink of m1.sum(): perturb away from it)
    eps, fd = 1e-6, np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if i == 2 and j in (4, 6):
                continue
            d = np.zeros_like(a)
            d[i, j] = eps
            fd[i, j] = (mixed(a + d) - mixed(a - d)) / (2 * eps)
    mask = np.ones(a.shape, bool)
    mask[2, [4, 6]] = False
    np.testing.assert_allclose(g[mask], fd[mask], rtol=1e-6, atol=1e-7)
    # the tie: along e24 + e26 the max moves with both (a smooth direction);
    # along e24 - e26 a central difference sees none of it, as the even
    # split (JAX's convention) gives
    for sgn in (1.0, -1.0):
        d = np.zeros_like(a)
        d[2, 4], d[2, 6] = eps, sgn * eps
        want = (mixed(a + d) - mixed(a - d)) / (2 * eps)
        np.testing.assert_allclose(g[2, 4] + sgn * g[2, 6], want, rtol=1e-6, atol=1e-7)
