"""numdyn.run(fn) as a new user calls it (issue 15, point 2): a seen input
replays its recorded program exactly as the compiled function's warm call
does (bench/bench_frozen.py times it: the same speed, call overhead
included), an unseen one runs plainly; the runner binds as a method, keeps
the wrapped function's metadata, and leaves frozen mode on every exit."""
import numpy as np
import pytest

import numdyn

C = numdyn.utils.counters


def _scaled(x):
    return x * 2.0 + 1.0


def test_run_fn_replays_seen_inputs_and_runs_unseen_plainly():
    f = numdyn.compile(_scaled)
    x = np.linspace(0.0, 1.0, 8)
    f(x)
    numdyn.utils.wait_compiles()
    f(x)
    frozen = numdyn.run(f)
    assert frozen.__wrapped__ is f and frozen.__name__ == "_scaled"
    r0, e0, g0 = C["replays"], C["eager_calls"], C["graph_compiles"]
    np.testing.assert_array_equal(frozen(x + 1.0), _scaled(x + 1.0))
    assert C["replays"] == r0 + 1 and C["eager_calls"] == e0   # the warm path itself
    y = np.ones((2, 2), np.float32)                             # unseen signature
    got = frozen(y)
    assert got.dtype == np.float32 and np.array_equal(got, _scaled(y))
    assert C["eager_calls"] == e0 + 1 and C["graph_compiles"] == g0
    with pytest.raises(TypeError, match="bogus"):               # Python's error, not numdyn's
        frozen(x, bogus=1)
    f(y)                          # frozen mode was left on the error: this compiles
    assert C["graph_compiles"] == g0 + 1


class _Model:
    k = 3.0

    @numdyn.run
    @numdyn.compile
    def scaled(self, x):
        return x * self.k

    def plus(self, x):
        return x + self.k

    frozen_plus = numdyn.run(plus)


def test_run_fn_binds_as_a_method():
    m = _Model()
    x = np.ones(3)
    np.testing.assert_array_equal(m.scaled(x), x * 3.0)
    np.testing.assert_array_equal(m.frozen_plus(x), x + 3.0)
    np.testing.assert_array_equal(_Model.frozen_plus(m, x), x + 3.0)
