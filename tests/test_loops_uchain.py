"""Chains of NumPy unsigned-integer additions and multiplications by
constants in a captured loop (issue 17: the cellular automaton's
idx = 4 * h[i - 1] + 2 * h[i] + h[i + 1] of uint8 h): the C loop tests the
chain's exact value once instead of each operation (codegen_loop.c wide()),
and must still wrap and warn as NumPy does at each operation that
overflows -- values, the warnings (categories, one per overflowing
operation under "always"), np.errstate(over="raise") stopping at the same
element with the output as NumPy leaves it. Plain Python/NumPy is the
oracle; one compile serves every case."""
import warnings

import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def rule_lookup(h, rule, out, h2, rule2, out2):
    for i in range(1, h.shape[0] - 1):
        idx = 4 * h[i - 1] + 2 * h[i] + h[i + 1]
        out[i] = idx
        out[i] += rule[idx % 8]
        idx2 = 4 * h2[i - 1] + 2 * h2[i] + h2[i + 1]     # the same in uint16
        out2[i] = idx2
        out2[i] += rule2[idx2 % 8]
    return out, out2


def overflow_messages(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fn(*args)
    return r, [str(w.message) for w in caught]


def data(dt):
    top = np.iinfo(dt).max
    rng = np.random.default_rng(5)
    small = rng.integers(0, 2, 40).astype(dt)              # the automaton's cells
    mid = rng.integers(0, top // 7, 40).astype(dt)         # no operation overflows
    big = mid.copy()
    big[[7, 20, 33]] = [top // 3, top, top // 2 + 1]       # 4*x, the sums overflow there
    return [(h, np.arange(8, dtype=dt), np.zeros(40, dtype=dt)) for h in (small, mid, big)]


def test_unsigned_chain_wraps_and_warns_as_numpy():
    # one compile: uint8 and uint16 chains in one loop; the overflows of
    # the uint16 data come where the uint8 data's do not
    sets = [a + b for a, b in zip(data(np.uint8), data(np.uint16)[::-1])]
    check_calls(rule_lookup, *sets)

    f = numdyn.compile(rule_lookup)
    before = numdyn.utils.counters["loop_runs"]
    for args in sets:
        fresh = [x.copy() for x in args]
        overflow_messages(f, *fresh)     # a first call may run Python while the C compiles
        numdyn.utils.wait_compiles()
        want, wmsg = overflow_messages(rule_lookup, *[x.copy() for x in args])
        got, gmsg = overflow_messages(f, *[x.copy() for x in args])
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
        assert gmsg == wmsg          # each overflowing operation's own warning, in order
    assert numdyn.utils.counters["loop_runs"] > before

    # np.errstate(over="raise"): FloatingPointError at the same element,
    # the outputs as NumPy leaves them
    for args in (sets[2], sets[0]):
        want_args, got_args = [x.copy() for x in args], [x.copy() for x in args]
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError) as we:
                rule_lookup(*want_args)
            with pytest.raises(FloatingPointError) as ge:
                f(*got_args)
        assert str(ge.value) == str(we.value)
        for w, g in zip(want_args, got_args):
            np.testing.assert_array_equal(g, w)
