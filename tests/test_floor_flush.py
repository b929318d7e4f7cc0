"""What a flush costs does not grow with the capture (issue 13 point 2): the
element reads of a time-stepping loop on tiny arrays flush every iteration,
and each flush's work (counter flush_nodes: nodes its walks visit) must stay
the same after 200 or 1000 iterations."""
import numpy as np

import numdyn
from numdyn import utils


def _f(s, a, b, c):
    return np.array([a * (s[1] - s[0]), s[0] * (b - s[2]) - s[1], s[0] * s[1] - c * s[2]])


def _rk_steps(s0, dt, n):
    # RK4 on a 3-vector (Lorenz): element reads of the stages every step,
    # a row of the output written every step. The test is of the flushing
    # path: the data-dependent branch lets array contents reach Python
    # first, so this capture is not recorded for replay and its element
    # reads are NumPy scalars, each a flush of its stage
    if s0.sum() > 1e300:
        raise ValueError("state too large")
    s = s0.copy()
    out = np.zeros((n, 3))
    for i in range(n):
        k1 = _f(s, 10.0, 28.0, 2.5)
        k2 = _f(s + 0.5 * dt * k1, 10.0, 28.0, 2.5)
        k3 = _f(s + 0.5 * dt * k2, 10.0, 28.0, 2.5)
        k4 = _f(s + dt * k3, 10.0, 28.0, 2.5)
        s = s + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        out[i] = s
    return out


def test_flush_walks_do_not_grow_with_the_capture():
    s0 = np.array([1.0, 1.0, 1.0])
    per_flush = []
    # every step flushes
    for n in (200, 1000):
        cf = numdyn.compile(_rk_steps, options={"floor": False})
        np.testing.assert_allclose(cf(s0, 0.01, n), _rk_steps(s0, 0.01, n), rtol=1e-12)
        before = dict(utils.counters)
        got = cf(s0, 0.01, n)
        after = dict(utils.counters)
        np.testing.assert_allclose(got, _rk_steps(s0, 0.01, n), rtol=1e-12)
        flushes = after["flushes"] - before["flushes"]
        assert flushes >= n, (n, flushes)
        per_flush.append((after["flush_nodes"] - before["flush_nodes"]) / flushes)
    # proving a 24-byte state unread later walked every node made since
    # it, up to 4096: 1000 steps cost several times more per flush than 200
    assert per_flush[1] <= per_flush[0] * 1.10, per_flush
