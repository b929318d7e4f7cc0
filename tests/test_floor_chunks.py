"""Issue 13 point 2: a long run of lazy statements (no value read in between)
is flushed in chunks, so the graph a flush schedules and compiles stays
bounded whatever the trip count; identical chunks reuse one program, and a
replayed call runs the chunks as steps of its entry. Results, warnings and
argument state stay NumPy's."""
import warnings

import numpy as np

import numdyn
from numdyn import utils

# chunks of 256 nodes here (8192 by default): 4 nodes an iteration (two
# operations, their scalars), so N iterations make 4 chunks
OPTS = {"floor": False, "chunk_nodes": 256}
N = 250
# the chunking and its replay do not depend on the backend: the tests that
# need no compiled kernel run on the eager one (no compiler in CI time)
EAGER = dict(backend="eager", options=OPTS)


def _step(v, a):
    return v * a + 0.1


def _lazy(x, n):
    for _ in range(n):
        x = _step(x, 0.999)
    return x


def _lazy_index(x, n):
    for i in range(n):
        x = x * (1.0 + i * 1e-7) - 1e-4   # the scalars change every iteration
    return x


def _lazy_inplace(x, n):
    try:                            # not replayable: traced on every call
        for _ in range(n):
            x *= 0.999              # in place into the caller's array
            x += 0.001
    finally:
        pass
    return x.sum()


def _ctr():
    return dict(utils.counters)


def _delta(c0, *names):
    c = utils.counters
    return {k: c[k] - c0.get(k, 0) for k in names}


def test_chunks_bound_the_graph_and_replay_as_steps():
    x0 = np.linspace(-1.0, 1.0, 16)
    want = _lazy(x0, N)
    cf = numdyn.compile(_lazy, options=OPTS)
    c0 = _ctr()
    got = cf(x0, N)
    d = _delta(c0, "chunk_flushes", "flushes", "flush_nodes", "graph_cache_hits", "replays")
    assert np.array_equal(got, want) and got.dtype == want.dtype
    assert d["chunk_flushes"] >= 2
    # no flush scheduled more than a chunk (plus the last iteration's nodes)
    # (two walks a flush: its ancestors and its extraction)
    assert d["flush_nodes"] <= d["flushes"] * 2 * (256 + 64)
    # identical chunks: one program, found in the graph cache after the first
    assert d["graph_cache_hits"] >= d["chunk_flushes"] - 1
    x1 = np.linspace(-2.0, 0.5, 16)
    assert np.array_equal(cf(x1, N), _lazy(x1, N))  # recorded for replay
    keyed = []
    for _ in range(2):  # replayed: the chunks run as steps, nothing is traced
        c0 = _ctr()
        got = cf(x1, N)
        d = _delta(c0, "replays", "chunk_flushes", "graphs", "key_nodes")
        assert (d["replays"], d["chunk_flushes"], d["graphs"]) == (1, 0, 0)
        keyed.append(d["key_nodes"])
        assert np.array_equal(got, _lazy(x1, N))
    # each step's program key is hashed once, not on every run of it
    assert keyed[-1] == 0


def test_chunks_whose_scalars_differ_replay_exactly():
    x0 = np.linspace(0.0, 1.0, 8, dtype=np.float32)
    cf = numdyn.compile(_lazy_index, **EAGER)
    for _ in range(3):  # trace, replay, replay: every chunk's own scalars
        got = cf(x0, N)
        want = _lazy_index(x0, N)
        assert got.dtype == want.dtype == np.float32
        assert np.array_equal(got, want)
    assert utils.counters["replays"] >= 1


def test_chunks_write_the_callers_array_as_numpy_did():
    x0 = np.linspace(-1.0, 1.0, 12)
    a, b = x0.copy(), x0.copy()
    cf = numdyn.compile(_lazy_inplace, **EAGER)
    c0 = _ctr()
    r = cf(b, N)
    assert _delta(c0, "chunk_flushes")["chunk_flushes"] >= 2
    want = _lazy_inplace(a, N)
    assert type(r) is type(want) and r == want
    assert np.array_equal(a, b)


def test_chunk_warnings_are_numpys():
    def f(x, n):
        for _ in range(n):
            x = np.sqrt(x - 0.5) + 0.25   # nan from the first iteration on
        return x

    x0 = np.linspace(0.0, 1.0, 4)
    with warnings.catch_warnings(record=True) as wn:
        warnings.simplefilter("always")
        want = f(x0, 150)
    cf = numdyn.compile(f, **EAGER)
    for _ in range(2):
        with warnings.catch_warnings(record=True) as wd:
            warnings.simplefilter("always")
            got = cf(x0, 150)
        assert np.array_equal(got, want, equal_nan=True)
        assert [(w.category, str(w.message)) for w in wd] == [(w.category, str(w.message)) for w in wn]
