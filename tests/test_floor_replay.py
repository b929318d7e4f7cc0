"""A replayed call's cost does not grow with its program (issue 13 point 1):
the entry hashes its graph once for the program cache (counter key_nodes:
graph nodes hashed), not on every call, and the runtime reads the kernels'
scalar parameters and the graph's inputs from a list made by the program's
first run, not by walking the graph. Results stay NumPy's when the
arguments' layout changes the key, when one program runs graphs of other
scalar values, and with dims marked static."""
import numpy as np

import numdyn
from numdyn import utils


def _steps(s0, a, b, dt, n):
    # tiny arrays, element reads of lazy stages, scalars in every kernel
    s = s0.copy()
    out = np.zeros((n, 3))
    for i in range(n):
        k = np.array([a * (s[1] - s[0]), s[0] * (b - s[2]) - s[1], s[0] * s[1] - 2.5 * s[2]])
        s = s + dt * k
        out[i] = s
    return out


def _delta(f, *args):
    before = dict(utils.counters)
    r = f(*args)
    after = dict(utils.counters)
    return r, {k: after[k] - before.get(k, 0) for k in after}


def test_replayed_calls_hash_no_nodes(monkeypatch):
    # (loop capture runs this loop as C since session 26, its 3-vector state
    # rebound each step: this test is of the tracer's replay)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    cf = numdyn.compile(_steps, options={"floor": False})
    s0 = np.array([1.0, 1.0, 1.0])
    args = (s0, 10.0, 28.0, 0.01, 40)
    want = _steps(*args)
    got, d = _delta(cf, *args)          # traced and recorded: hashed
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert d["key_nodes"] > 100, d
    # loop capture takes this loop (np.array of scalars is a loop expression)
    # and falls back to tracing at line 20 (s a view and another value), so
    # the first call may record nothing: calls until the first replay, which
    # learns the entry's key
    for _ in range(3):
        got, d = _delta(cf, *args)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        if d["replays"]:
            break
    assert d["replays"] == 1 and d["key_nodes"] > 0, d
    for _ in range(3):
        got, d = _delta(cf, *args)
        np.testing.assert_array_equal(got, want)
        assert d["replays"] == 1 and d["kernel_runs"] > 40, d
        assert d["key_nodes"] == 0, d
    np.testing.assert_array_equal(s0, [1.0, 1.0, 1.0])
    # a strided argument: another entry, which learns its own key once;
    # switching back and forth then hashes nothing
    wide = np.array([1.0, 0, 1.0, 0, 1.0, 0])[::2]
    keys = []
    for s in (wide, wide, wide, s0, wide, s0):
        got, d = _delta(cf, s, 10.0, 28.0, 0.01, 40)
        np.testing.assert_array_equal(got, want)
        keys.append(d["key_nodes"])
    assert keys[0] > 0 and keys[1] > 0 and keys[2:] == [0, 0, 0, 0], keys


def _scaled(x, a):
    return np.sin(x * a) + a


def test_one_program_many_scalar_values():
    # more scalar values than replay entries: graph-cache hits of one
    # program whose graphs hold other scalars (parameters read per run)
    cf = numdyn.compile(_scaled, options={"floor": False})
    x = np.linspace(0, 1, 50)
    for i in range(14):
        a = 0.5 + i
        np.testing.assert_array_equal(cf(x, a), _scaled(x, a))
    for i in (3, 0, 13):  # and the replayed ones again
        a = 0.5 + i
        np.testing.assert_array_equal(cf(x, a), _scaled(x, a))


def _twice(x):
    return x * 2.0 + 1.0


def test_marked_dims_hash_each_call():
    cf = numdyn.compile(_twice, options={"floor": False})
    x = np.arange(6.0)
    numdyn.mark_static(x, 0)
    for _ in range(3):
        got, d = _delta(cf, x)
        np.testing.assert_array_equal(got, _twice(x))
    assert d["key_nodes"] > 0, d
