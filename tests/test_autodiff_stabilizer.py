"""logsumexp's and softmax's max stabilizer gets no cotangent (issue 14;
autodiff.c lse_stabilizer): log(sum(exp(x - m))) + m and e / sum(e),
e = exp(x - m), do not depend on m, so when nothing else reads m, the exp, its sum or the log, the backward
drops m's cotangent (c - (c/s)*s, zero but for rounding) and with it the
max's tie mask and tie count: two passes over x. Gradients are checked
against the hand-written softmax gradient (ties included: the stabilizer's
tied maxima get no extra share, as with JAX's stop_gradient), with a max
read otherwise keeping its cotangent (as does softmax, e / e.sum(), whose
exp has two readers: test_autodiff.py's softmax cases)."""
import numpy as np
import pytest

import numdyn
from numdyn import utils

RNG = np.random.default_rng(7)


def softmax(x, axis):
    with np.errstate(invalid="ignore"):  # -inf rows: NaN, as the gradient's
        e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lse_rows(a, w):
    m = a.max(axis=1, keepdims=True)
    return np.sum(w * (np.log(np.sum(np.exp(a - m), axis=1)) + m[:, 0]))


def softmax_q(d, q):
    e = np.exp(d - d.max(axis=1, keepdims=True))
    return np.sum(e / e.sum(axis=1, keepdims=True) * q)


def lse_all(a, w, b, v, c, d, q):
    # rows of a (keepdims, m read by x - m directly and by a view), columns
    # of b (no keepdims: x - m through a broadcasting view); c's m is read
    # once more (mc.sum()): its cotangent is real and kept
    m = b.max(axis=0)
    mc = c.max(axis=1, keepdims=True)
    return (lse_rows(a, w) + np.sum(v * (np.log(np.sum(np.exp(b - m[None, :]), axis=0)) + m))
            + np.sum(np.log(np.sum(np.exp(c - mc), axis=1)) + mc[:, 0] + 0.5 * mc.sum())
            + softmax_q(d, q))


def test_stabilizer_spares_the_tie_passes():
    x, w = RNG.standard_normal((512, 1000)), RNG.standard_normal(512)
    x[:40, 3] = x[:40, 7] = x[:40].max(axis=1) + 1.0  # tied maxima
    b, v = RNG.standard_normal((1000, 256)), RNG.standard_normal(256)
    b[5, :] = b[9, :] = b.max(axis=0) + 1.0
    c = RNG.standard_normal((7, 5))
    d, q = RNG.standard_normal((512, 1000)), RNG.standard_normal((512, 1000))
    d[:30, 5] = d[:30, 9] = d[:30].max(axis=1) + 1.0
    vg = numdyn.value_and_grad(lse_all, argnums=(0, 2, 4, 5))
    vg(x, w, b, v, c, d, q)
    utils.wait_compiles()
    c0 = dict(utils.counters)
    val, (g, gb, gc, gd) = vg(x, w, b, v, c, d, q)
    # x's forward row kernel reads it once, the backward exp(x - m) once
    # (3.3x with the tie mask and count); b's column reductions are not a
    # row kernel: max, exp, sum, backward 4 passes (6 with the tie mask);
    # softmax e / s times q reads d and q 5.0x d's bytes (8.1x with them)
    assert (utils.counters["bytes_read"] - c0["bytes_read"]
            < 2.1 * x.nbytes + 4.1 * b.nbytes + 5.2 * d.nbytes)
    np.testing.assert_allclose(val, lse_all(x, w, b, v, c, d, q), rtol=1e-12)
    p = softmax(d, 1)  # softmax's gradient, ties included (no share to them)
    np.testing.assert_allclose(gd, p * (q - (p * q).sum(axis=1, keepdims=True)), rtol=1e-10,
                               atol=1e-15)
    np.testing.assert_allclose(g, softmax(x, 1) * w[:, None], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb, softmax(b, 0) * v, rtol=1e-12, atol=1e-15)
    # c: softmax, plus 0.5 * rows at each row's maximum (mc.sum() is added
    # to every row's term)
    want = softmax(c, 1)
    want[np.arange(7), c.argmax(axis=1)] += 0.5 * 7
    np.testing.assert_allclose(gc, want, rtol=1e-12, atol=1e-15)
    # non-finite rows (the same shapes: replayed): NaN rows stay NaN, -inf
    # elements get 0
    y = x.copy()
    y[1, 5] = np.nan
    y[2, :500] = -np.inf
    y[3, :] = -np.inf
    with pytest.warns(RuntimeWarning, match="invalid value"):  # NumPy's, from -inf - -inf
        _, (gy, _, _, _) = vg(y, w, b, v, c, d, q)
    assert np.isnan(gy[1]).all() and np.isnan(gy[3]).all()
    assert (gy[2, :500] == 0).all()
    np.testing.assert_allclose(gy[2, 500:], softmax(y[2:3, 500:], 1)[0] * w[2], rtol=1e-12)
    rest = np.r_[0, 4:512]
    np.testing.assert_allclose(gy[rest], (softmax(y, 1) * w[:, None])[rest], rtol=1e-12, atol=1e-15)
