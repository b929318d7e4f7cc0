"""Chains of NumPy unsigned-integer additions and multiplications by
constants in a captured loop (issue 17: the cellular automaton's
idx = 4 * h[i - 1] + 2 * h[i] + h[i + 1] of uint8 h): the C loop tests the
chain's exact value once instead of each operation (codegen_loop.c wide()),
and must still wrap and warn as NumPy does at each operation that
overflows -- values, the warnings (categories, one per overflowing
operation under "always"), np.errstate(over="raise") stopping at the same
element with the output as NumPy leaves it. Plain Python/NumPy is the
oracle; one compile per dtype serves every case."""
import warnings

import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def rule_lookup(h, rule, out):
    for i in range(1, h.shape[0] - 1):
        idx = 4 * h[i - 1] + 2 * h[i] + h[i + 1]
        out[i] = idx
        out[i] += rule[idx % 8]
    return out


def overflow_messages(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fn(*args)
    return r, [str(w.message) for w in caught]


@pytest.mark.parametrize("dt", [np.uint8, np.uint16])
def test_unsigned_chain_wraps_and_warns_as_numpy(dt):
    top = np.iinfo(dt).max
    rng = np.random.default_rng(5)
    rule = np.arange(8, dtype=dt)
    small = rng.integers(0, 2, 40).astype(dt)              # the automaton's cells
    mid = rng.integers(0, top // 7, 40).astype(dt)         # no operation overflows
    big = mid.copy()
    big[[7, 20, 33]] = [top // 3, top, top // 2 + 1]       # 4*x, the sums overflow there
    sets = [(h, rule, np.zeros(40, dtype=dt)) for h in (small, mid, big)]
    check_calls(rule_lookup, *sets)

    f = numdyn.compile(rule_lookup)
    before = numdyn.utils.counters["loop_runs"]
    for h, r, o in sets:
        overflow_messages(f, h, r, o.copy())      # a first call may run Python while the C compiles
        numdyn.utils.wait_compiles()
        want, wmsg = overflow_messages(rule_lookup, h, r, o.copy())
        got, gmsg = overflow_messages(f, h, r, o.copy())
        np.testing.assert_array_equal(got, want)
        assert gmsg == wmsg          # each overflowing operation's own warning, in order
    assert numdyn.utils.counters["loop_runs"] > before

    # np.errstate(over="raise"): FloatingPointError at the same element
    h = sets[2][0]
    want_out, got_out = np.zeros(40, dtype=dt), np.zeros(40, dtype=dt)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError) as we:
            rule_lookup(h, rule, want_out)
        with pytest.raises(FloatingPointError) as ge:
            f(h, rule, got_out)
    assert str(ge.value) == str(we.value)
    np.testing.assert_array_equal(got_out, want_out)
