"""Arrays of random draws made inside a compiled function are traced
(src/trace/loop_rewrite.c routes Generator / RandomState drawing methods
through numdyn/_rng_calls.py; _C._trace_fresh makes the fresh result a
traced value). NumPy draws at the call, so values and the generator's state
afterwards are NumPy's; what the function computes from the draws is
captured instead of running op by op in NumPy, untraced and unreported."""
import numpy as np
import pytest

import numdyn
from oracle import check


def walk(seed, walkers, steps):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, size=(walkers, steps)) * 2 - 1
    pos = np.cumsum(s, axis=1)
    return pos[:, -1].mean(), np.abs(pos).max(axis=1), (np.abs(pos) >= 5).any(axis=1)


def monte_carlo_pi(rng, n):
    x = rng.random(n)
    y = rng.uniform(-1.0, 1.0, size=n)
    inside = (x * x + y * y) <= 1.0
    return 2.0 * inside.mean(), rng.normal(size=3) * 0


def legacy(seed, n):
    rs = np.random.RandomState(seed)
    a = rs.randn(n, 2) + rs.rand(n, 2)
    b = rs.randint(0, 10, size=n)
    return a.sum(axis=1) * b


def picks(rng, x):
    p = rng.permutation(x)
    c = rng.choice(x, size=4)
    return p * 2, c - 1


def graphs_of(fn, *args):
    cf = numdyn.compile(fn, options={"floor": False})
    cf(*args)
    text = str(numdyn.explain(cf)(*args))
    return int(text.splitlines()[0].split(":")[1])


def test_draws_are_traced():
    assert graphs_of(walk, 3, 20, 30) >= 1
    assert graphs_of(monte_carlo_pi, np.random.default_rng(1), 100) >= 1
    assert graphs_of(legacy, 2, 5) >= 1


@pytest.mark.parametrize("backend", ["native", "eager"])
def test_values_and_generator_state_are_numpys(backend):
    check(walk, 3, 20, 30, backend=backend)
    check(monte_carlo_pi, np.random.default_rng(1), 1000, backend=backend)
    check(legacy, 2, 7, backend=backend)
    check(picks, np.random.default_rng(5), np.arange(10.0), backend=backend)


def test_warm_calls_draw_afresh():
    # the generator is outside state: every call draws anew, as NumPy does
    cf = numdyn.compile(monte_carlo_pi)
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(4):
        r1, r2 = monte_carlo_pi(g1, 500), cf(g2, 500)
        assert r1[0] == r2[0]
    assert g1.bit_generator.state == g2.bit_generator.state


def test_out_and_held_arrays_stay_the_callers():
    def fill(rng, buf):
        r = rng.random(out=buf)
        buf *= 2
        return r is buf, buf.sum()

    check(fill, np.random.default_rng(3), np.zeros(6))


class NotAGenerator:
    def __init__(self):
        self.calls = 0

    def integers(self, n):
        self.calls += 1
        return np.arange(n)


def test_same_named_methods_of_other_objects_are_called_as_they_are():
    def f(o, x):
        return o.integers(3) + x

    o = NotAGenerator()
    r = numdyn.compile(f)(o, np.ones(3))
    np.testing.assert_array_equal(r, np.arange(3) + 1.0)
    assert o.calls == 1
