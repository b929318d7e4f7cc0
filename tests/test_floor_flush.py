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
        before = dict(utils.counters)  # the first call: its walks are the same as later ones'
        got = cf(s0, 0.01, n)
        after = dict(utils.counters)
        np.testing.assert_allclose(got, _rk_steps(s0, 0.01, n), rtol=1e-12)
        flushes = after["flushes"] - before["flushes"]
        assert flushes >= n, (n, flushes)
        per_flush.append((after["flush_nodes"] - before["flush_nodes"]) / flushes)
    # proving a 24-byte state unread later walked every node made since
    # it, up to 4096: 1000 steps cost several times more per flush than 200
    assert per_flush[1] <= per_flush[0] * 1.10, per_flush


def _grow(x):
    n = 0
    while x.max() < 1e38:  # a lazy comparison each step, read by Python
        x *= 2.0
        n += 1
    return n


def test_swept_values_are_not_run_again_at_return():
    # 1 MB a value: the trace releases values nothing reads every 64 MB, the
    # step comparisons among them. The return flush took them for values
    # never computed and recomputed the loop from the array's final
    # contents: 63 overflow warnings NumPy never gave, and a graph of the
    # whole loop (channel flow: 130,000 nodes, 5745 kernels at return)
    import warnings
    x0 = np.ones(1 << 18, dtype=np.float32)
    a, b = x0.copy(), x0.copy()
    with warnings.catch_warnings(record=True) as wn:
        warnings.simplefilter("always")
        want = _grow(a)
    cf = numdyn.compile(_grow, options={"floor": False})
    c0 = dict(utils.counters)
    with warnings.catch_warnings(record=True) as wd:
        warnings.simplefilter("always")
        got = cf(b)
    assert got == want == 127 and np.array_equal(a, b)
    assert [str(w.message) for w in wd] == [str(w.message) for w in wn] == []
    assert utils.counters["graphs"] - c0["graphs"] == want + 1  # one a test, none at return


@numdyn.disallow_in_graph
def _outside(a):
    return a  # arrays handed to code outside the graph


def _steps_with_breaks(x, n):
    for _ in range(n):
        x = x * 0.5 + 1.0
        x = _outside(x)  # a graph break with the array handed out each step
    return x


def test_handing_arrays_out_walks_what_is_live():
    # each break walked the whole trace graph for old contents to keep
    # (channel flow: a captured loop per step, 11% of the call): its walk
    # now counts what is live, the same after 40 or 160 steps
    x0 = np.linspace(0.0, 1.0, 64)
    cf = numdyn.compile(_steps_with_breaks, options={"floor": False})
    per_step = []
    for n in (40, 160):
        want = _steps_with_breaks(x0, n)
        c0 = utils.counters["writeback_nodes"]
        got = cf(x0, n)
        per_step.append((utils.counters["writeback_nodes"] - c0) / n)
        assert np.array_equal(got, want)
    assert 0 < per_step[1] <= per_step[0] * 1.1 + 1
