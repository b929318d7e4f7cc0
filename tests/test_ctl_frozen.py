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


def _plain_affine(x):
    return x * 3.0 - 1.0


def test_run_of_the_plain_function_uses_its_compiled_programs():
    """numdyn.run(f) with f the plain function, after cf = numdyn.compile(f)
    ran: a seen input replays cf's program (torch._dynamo.run(f) uses the
    cache torch.compile(f) filled); it ran f eagerly before. With no live
    compiled function of f, f runs plainly; the runner pickles."""
    import pickle
    frozen = numdyn.run(_plain_affine)      # made before the compile: looked up per call
    x = np.linspace(0.0, 1.0, 16)
    r0, e0 = C["replays"], C["eager_calls"]
    np.testing.assert_array_equal(frozen(x), _plain_affine(x))
    assert C["replays"] == r0 and C["eager_calls"] == e0   # nothing compiled: f itself
    cf = numdyn.compile(_plain_affine)
    cf(x)
    numdyn.utils.wait_compiles()
    cf(x)
    r0, e0, g0 = C["replays"], C["eager_calls"], C["graph_compiles"]
    np.testing.assert_array_equal(frozen(x + 1.0), _plain_affine(x + 1.0))
    assert C["replays"] == r0 + 1 and C["eager_calls"] == e0
    y = np.ones(3, np.float32)                              # unseen: cf's plain run, no compile
    assert frozen(y).dtype == np.float32
    assert C["eager_calls"] == e0 + 1 and C["graph_compiles"] == g0
    assert pickle.loads(pickle.dumps(frozen))(x)[1] == _plain_affine(x)[1]
    r0 = C["replays"]
    np.testing.assert_array_equal(numdyn.run(_plain_affine)(x), _plain_affine(x))  # made after
    assert C["replays"] == r0 + 1
