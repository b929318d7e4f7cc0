"""Gradients through reads by a boolean mask computed from the
differentiated input (issue 14): `np.sum(x[x > 0] ** 2)`. The read's shape
depends on the mask's count, so the mask is computed (a recorded break, as
without gradients); the value stays in the graph, gathered at the mask's
positions, where NumPy's own x[m] on the computed array took it out of the
graph and raised NotImplementedError. Checked against the hand-written
gradient, at a second input with the masks' positions moved (every call
traces the break again)."""
import numpy as np

import numdyn


def loss(b):
    return np.sum(b[b > 0] ** 2) + np.mean(b[b[:, 0] > 0])


def hand(b):
    rows = b[:, 0] > 0
    g = np.where(b > 0, 2 * b, 0.0)
    g[rows] += 1.0 / (rows.sum() * b.shape[1])
    return g


def test_grad_through_a_mask_of_the_input():
    rng = np.random.default_rng(5)
    vg = numdyn.value_and_grad(loss)
    b = rng.standard_normal((6, 4))
    b[0, 0] = abs(b[0, 0]) + 0.1  # some row selected
    # the second call: the same counts at other positions (the rows
    # permuted; the mask is computed again: its break is traced every call)
    for x in (b, b[::-1].copy()):
        v, g = vg(x)
        np.testing.assert_allclose(v, loss(x), rtol=1e-12)
        np.testing.assert_allclose(g, hand(x), rtol=1e-12, atol=1e-15)
