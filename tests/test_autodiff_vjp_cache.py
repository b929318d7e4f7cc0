"""Warm numdyn.vjp calls (issue 14): the forward recorded per argument
signature replays without tracing fn (it computes the outputs and the
values the partition saves), and the pullback runs the recorded backward
graph bound to this call's saved values, cotangents and arguments. Every
result is checked against a hand-written NumPy gradient.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

RNG = np.random.default_rng(21)


def replays():
    return utils.counters["replays"]


def layer(x, w):
    return np.tanh(x @ w) * 2.0


def layer_vjp(x, w, ct):
    h = np.tanh(x @ w)
    d = ct * 2.0 * (1 - h * h)
    return d @ w.T, x.T @ d


def test_warm_vjp_replays_and_matches_numpy():
    numdyn.vjp(layer, RNG.standard_normal((6, 4)), RNG.standard_normal((4, 3)))
    r0 = replays()
    for _ in range(3):
        x, w = RNG.standard_normal((6, 4)), RNG.standard_normal((4, 3))
        out, pull = numdyn.vjp(layer, x, w)
        np.testing.assert_allclose(out, layer(x, w), rtol=1e-12)
        for _ in range(2):  # a pullback may be called many times
            ct = RNG.standard_normal((6, 3))
            gx, gw = pull(ct)
            ex, ew = layer_vjp(x, w, ct)
            np.testing.assert_allclose(gx, ex, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(gw, ew, rtol=1e-10, atol=1e-12)
        assert pull.saved_nbytes == 6 * 3 * 8  # the matmul's result
    assert replays() - r0 == 3


def test_older_pullback_keeps_its_own_values():
    x1, w1 = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 2))
    x2, w2 = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 2))
    numdyn.vjp(layer, x1, w1)
    _, p1 = numdyn.vjp(layer, x1, w1)
    _, p2 = numdyn.vjp(layer, x2, w2)
    ct = RNG.standard_normal((5, 2))
    for pull, x, w in ((p1, x1, w1), (p2, x2, w2), (p1, x1, w1)):
        for a, b in zip(pull(ct), layer_vjp(x, w, ct)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_signatures_and_dtypes(dt):
    tol = 2e-5 if dt == np.float32 else 1e-10
    for shape in [(7, 3), (2, 5), (7, 3)]:
        for _ in range(2):
            x = RNG.standard_normal(shape).astype(dt)
            w = RNG.standard_normal((shape[1], 4)).astype(dt)
            out, pull = numdyn.vjp(layer, x, w)
            ct = RNG.standard_normal((shape[0], 4)).astype(dt)
            gx, gw = pull(ct)
            assert out.dtype == dt and gx.dtype == dt and gw.dtype == dt
            ex, ew = layer_vjp(x, w, ct)
            np.testing.assert_allclose(gx, ex, rtol=tol, atol=tol)
            np.testing.assert_allclose(gw, ew, rtol=tol, atol=tol)


def test_has_aux_dict_output_int_argument():
    def f(x, idx):
        y = x[idx] * 3.0
        return {"y": y, "s": np.sum(x * x)}, idx.shape

    for _ in range(3):
        x, idx = RNG.standard_normal(6), RNG.integers(0, 6, 4)
        r0 = replays()
        out, pull, aux = numdyn.vjp(f, x, idx, has_aux=True)
        assert aux == (4,)
        np.testing.assert_allclose(out["y"], x[idx] * 3.0)
        cy = RNG.standard_normal(4)
        gx, gi = pull({"y": cy, "s": 0.5})
        assert gi is None
        e = 0.5 * 2 * x
        np.add.at(e, idx, 3.0 * cy)
        np.testing.assert_allclose(gx, e, rtol=1e-12)
    assert replays() - r0 == 1


def test_bad_cotangent_on_warm_call():
    x, w = RNG.standard_normal((3, 2)), RNG.standard_normal((2, 2))
    numdyn.vjp(layer, x, w)
    _, pull = numdyn.vjp(layer, x, w)
    with pytest.raises(ValueError, match="cotangent of shape"):
        pull(np.ones((2, 2)))
    with pytest.raises(ValueError, match="cotangent of shape"):
        pull(np.ones(2))
    gx, gw = pull(np.ones((3, 2)))  # still usable
    ex, ew = layer_vjp(x, w, np.ones((3, 2)))
    np.testing.assert_allclose(gx, ex, rtol=1e-12)


def test_rebound_global_is_seen_by_warm_vjp():
    global SCALE
    SCALE = 2.0

    def f(w):
        return SCALE * w * w

    w = RNG.standard_normal(3)
    for s in (2.0, 2.0, 3.0, 3.0):
        SCALE = s
        out, pull = numdyn.vjp(f, w)
        np.testing.assert_allclose(out, s * w * w)
        np.testing.assert_allclose(pull(np.ones(3))[0], 2 * s * w)


def test_branch_on_values_is_traced_each_call():
    def f(w):
        if w.sum() > 0:
            return w * w
        return -w

    a, b = np.ones(3), -np.ones(3)
    for _ in range(2):
        np.testing.assert_allclose(numdyn.vjp(f, a)[1](np.ones(3))[0], 2 * a)
        np.testing.assert_allclose(numdyn.vjp(f, b)[1](np.ones(3))[0], -np.ones(3))
