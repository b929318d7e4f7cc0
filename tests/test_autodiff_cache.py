"""Warm numdyn.grad / value_and_grad calls (issue 14): the forward+backward
graph recorded per argument signature replays without tracing the function
again, guarded as numdyn.compile's replay is. Every replayed result is
checked against the hand-written NumPy gradient or the first (traced) call.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

RNG = np.random.default_rng(7)


def loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


def loss_grad(w, x):
    h = np.tanh(x @ w)
    return np.sum(h ** 2), x.T @ (2 * h * (1 - h * h))


def replays():
    return utils.counters["replays"]


def test_warm_calls_replay_and_match_numpy():
    vg = numdyn.value_and_grad(loss)
    w, x = RNG.standard_normal((6, 3)), RNG.standard_normal((10, 6))
    vg(w, x)
    r0 = replays()
    for _ in range(3):
        w, x = RNG.standard_normal((6, 3)), RNG.standard_normal((10, 6))
        v, g = vg(w, x)
        ev, eg = loss_grad(w, x)
        assert isinstance(v, np.float64)
        np.testing.assert_allclose(v, ev, rtol=1e-12)
        np.testing.assert_allclose(g, eg, rtol=1e-10, atol=1e-12)
    assert replays() - r0 == 3


def test_new_signature_records_another_entry():
    g = numdyn.grad(loss)
    for shape, dt in [((6, 3), np.float64), ((4, 2), np.float64), ((6, 3), np.float32)]:
        w = RNG.standard_normal(shape).astype(dt)
        x = RNG.standard_normal((5, shape[0])).astype(dt)
        g(w, x)
        r0 = replays()
        got = g(w, x)
        assert replays() - r0 == 1
        assert got.dtype == dt and got.shape == shape
        np.testing.assert_allclose(got, loss_grad(w, x)[1], rtol=1e-4 if dt == np.float32 else 1e-10)


def test_argument_left_as_it_was_on_replay():
    def f(w):
        w[0] = 10.0  # a write inside fn never reaches the caller's array
        return np.sum(w * w)
    g = numdyn.grad(f)
    for _ in range(3):
        w = RNG.standard_normal(4)
        c = w.copy()
        got = g(w)
        np.testing.assert_array_equal(w, c)
        np.testing.assert_allclose(got, np.r_[0.0, 2 * c[1:]])


def test_write_to_other_argument_reaches_caller_on_replay():
    def f(w, out):
        out[...] = w * 2  # as under NumPy: out is the caller's array
        return np.sum(w * out)
    vg = numdyn.value_and_grad(f)
    for k in range(3):
        w, out = RNG.standard_normal(5), np.zeros(5)
        v, g = vg(w, out)
        np.testing.assert_allclose(out, w * 2)
        np.testing.assert_allclose(v, np.sum(2 * w * w))
        # out holds 2 w when it is read: d/dw sum(w * 2w) = 4w
        np.testing.assert_allclose(g, w * 4)


def test_rebound_global_is_seen():
    global SCALE
    SCALE = 2.0

    def f(w):
        return np.sum(SCALE * w * w)
    g = numdyn.grad(f)
    w = RNG.standard_normal(3)
    g(w); g(w)
    np.testing.assert_allclose(g(w), 4 * w)
    SCALE = 3.0
    np.testing.assert_allclose(g(w), 6 * w)


def test_scalar_argument_value_is_guarded():
    def f(w, p):
        return np.sum(w ** p)
    g = numdyn.grad(f)
    w = RNG.uniform(0.5, 1.5, 4)
    for p in (2, 2, 3, 3, 2):
        np.testing.assert_allclose(g(w, p), p * w ** (p - 1), rtol=1e-12)


def test_branch_on_values_is_not_replayed():
    def f(w):
        if w.sum() > 0:  # a graph break: the next call must trace again
            return np.sum(w * w)
        return np.sum(-w)
    g = numdyn.grad(f)
    a, b = np.ones(3), -np.ones(3)
    for _ in range(2):
        np.testing.assert_allclose(g(a), 2 * a)
        np.testing.assert_allclose(g(b), -np.ones(3))


def test_has_aux_and_argnums_on_replay():
    def f(w, b, x):
        z = x @ w + b
        return np.mean(z * z), z.shape
    vg = numdyn.value_and_grad(f, argnums=(0, 1), has_aux=True)
    for _ in range(3):
        w, b, x = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((4, 3))
        (v, aux), (gw, gb) = vg(w, b, x)
        z = x @ w + b
        assert aux == (4, 2)
        np.testing.assert_allclose(v, np.mean(z * z))
        np.testing.assert_allclose(gw, x.T @ (2 * z / z.size))
        np.testing.assert_allclose(gb, (2 * z / z.size).sum(0))


def test_replay_off_traces_every_call(monkeypatch):
    import subprocess
    import sys
    code = ("import numpy as np, numdyn\n"
            "g = numdyn.grad(lambda w: np.sum(w * w))\n"
            "[g(np.ones(3)) for _ in range(3)]\n"
            "print(numdyn.utils.counters['replays'])\n")
    env = dict(__import__("os").environ, NUMDYN_REPLAY="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_float_argument_still_gives_numpy_scalar():
    g = numdyn.grad(lambda w, s: np.sum(w * s), argnums=(0, 1))
    for _ in range(3):
        gw, gs = g(np.arange(3.0), 2.0)
        assert isinstance(gs, np.float64)
        np.testing.assert_allclose(gs, 3.0)
        np.testing.assert_allclose(gw, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_ce_replay_matches_numpy(dt):
    def ce(X, onehot):
        m = X.max(axis=1, keepdims=True)
        lse = np.log(np.sum(np.exp(X - m), axis=1)) + m[:, 0]
        return np.mean(lse - np.sum(X * onehot, axis=1))
    vg = numdyn.value_and_grad(ce)
    for _ in range(3):
        X = RNG.standard_normal((8, 5)).astype(dt)
        oh = np.eye(5, dtype=dt)[RNG.integers(0, 5, 8)]
        v, g = vg(X, oh)
        e = np.exp(X - X.max(1, keepdims=True))
        ref = (e / e.sum(1, keepdims=True) - oh) / 8
        assert g.dtype == dt
        np.testing.assert_allclose(g, ref, rtol=1e-5 if dt == np.float32 else 1e-12, atol=1e-7)
