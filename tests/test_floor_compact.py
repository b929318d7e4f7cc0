"""Compaction by a lazy boolean mask (issue 13, Mandelbrot compacting):
`z = z[live]`, `out[gi[m], gj[m]] = z[m]`. A masked read whose value must be
compacted (an index, a value stored at other positions) is a gather by the
mask's positions: only the mask is computed (one flush for every read
through it, its nonzero() shared), the values stay lazy, and a key or a
value made of masked reads indexes as those gathers instead of handing
NumPy objects it reads through the buffer protocol (a break each)."""
import numpy as np

import numdyn
from numdyn import utils

NOFLOOR = {"floor": False}


def scatter_escaped(z, c, gi, gj, out):
    # one step of an escape-time loop: compute, scatter the escaped points
    # into `out` by their grid positions, keep the live ones
    z = z * z + c
    esc = np.abs(z) > 2.0
    out[gi[esc], gj[esc]] = z[esc]
    live = ~esc
    return z[live], c[live], gi[live], gj[live], out


def _args():
    rng = np.random.default_rng(3)
    n = 24
    gi, gj = np.divmod(np.arange(n * n), n)
    c = rng.standard_normal(n * n) * 1.5 + 1j * rng.standard_normal(n * n)
    return np.zeros(n * n, complex), c, gi, gj, np.zeros((n, n), complex)


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_compaction_is_one_break_per_mask():
    args = _args()
    want = scatter_escaped(*(a.copy() for a in args))
    cf = numdyn.compile(scatter_escaped, options=NOFLOOR)
    _check(cf(*(a.copy() for a in args)), want)
    e = numdyn.explain(cf)(*(a.copy() for a in args))
    _check(e.result, want)
    reasons = [r.reason for r in e.break_reasons]
    # the escaped mask's positions (once for gi[esc], gj[esc], z[esc]) and
    # the live mask's: no buffer-protocol reads of masked keys or values,
    # no NumPy setitem of a masked value
    assert len(reasons) == 2, reasons
    assert all("boolean mask indexing" in r for r in reasons), reasons


def test_compaction_flushes_and_copies():
    args = _args()
    cf = numdyn.compile(scatter_escaped, options=NOFLOOR)
    for _ in range(3):
        cf(*(a.copy() for a in args))
    fresh = [a.copy() for a in args]
    c0 = dict(utils.counters)
    got = cf(*fresh)
    c1 = dict(utils.counters)
    _check(got, scatter_escaped(*(a.copy() for a in args)))
    # the two masks' positions and the return: the reads through one mask
    # share its flush (they flushed once each)
    assert c1["flushes"] - c0["flushes"] <= 3
    # the positions are read as they are: no snapshot copy of an index
    # array numdyn made itself
    assert c1["foreign_snapshot_bytes"] == c0["foreign_snapshot_bytes"]


def test_masked_keys_of_several_masks_and_the_loop():
    # particles leaving a box: each step records the step at which the
    # particles that left did, by their ids, and keeps the others
    def exits(x, v, steps):
        ids = np.arange(len(x))
        when = np.full(len(x), -1)
        where = np.zeros(len(x))
        for s in range(steps):
            x = x + v
            gone = (x < 0.0) | (x > 1.0)
            when[ids[gone]] = s
            where[ids[gone]] = x[gone]
            stay = ~gone
            x, v, ids = x[stay], v[stay], ids[stay]
            if len(x) == 0:
                break
        return when, where, ids
    rng = np.random.default_rng(4)
    x, v = rng.uniform(0, 1, 300), rng.standard_normal(300) * 0.05
    want = exits(x, v, 12)
    cf = numdyn.compile(exits, options=NOFLOOR)
    for _ in range(2):
        _check(cf(x, v, 12), want)


def test_count_of_a_complement_needs_no_flush():
    # len(x[~m]) once m is computed (its positions read x[m]) is the size
    # less m's count: no flush and no break of its own
    def split(x, v):
        x = x + v
        gone = (x < 0.0) | (x > 1.0)
        out = np.sort(x[gone])
        stay = ~gone
        return len(x[stay]), out, x[stay]
    rng = np.random.default_rng(5)
    x, v = rng.uniform(0, 1, 300), rng.standard_normal(300) * 0.3
    want = split(x, v)
    cf = numdyn.compile(split, options=NOFLOOR)
    cf(x, v)
    e = numdyn.explain(cf)(x, v)
    assert e.result[0] == want[0] and type(e.result[0]) is int
    _check(e.result[1:], want[1:])
    reasons = [r.reason for r in e.break_reasons]
    assert len(reasons) == 2 and not any("count" in r for r in reasons), reasons
