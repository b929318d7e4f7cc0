"""The cost of a flush in a loop the tracer runs (not captured: it calls a
helper) does not grow with the loop's trip count (issue 13, point 1).

Each iteration's element read flushes and writes the argument back; the
write-back looked for old contents still read by scanning every node the
capture had made so far, so the loop was quadratic (8000 iterations: 10-18
us an iteration against ~1 us at 2000). Counters, not timings, say it.
"""
import numpy as np

import numdyn


def _step(v, a):
    return v * a + 0.1


def _branchy(x):
    for i in range(1, len(x)):
        v = _step(x[i - 1], 0.5)   # a helper call: traced, not captured
        if v > 0.3:                # an element read: a flush
            x[i] = v + x[i]        # a write to the argument: a write-back
    return x


def _walked(cf, x):
    C = numdyn.utils.counters
    w0, f0 = C["writeback_nodes"], C["flushes"]
    want = _branchy(x.copy())
    got = cf(x)
    assert got is x and np.array_equal(want, x)
    return (C["writeback_nodes"] - w0) / max(1, C["flushes"] - f0)


def test_write_back_walk_does_not_grow_with_the_trip_count():
    cf = numdyn.compile(_branchy, options={"floor": False})
    rng = np.random.default_rng(1)
    small = _walked(cf, rng.standard_normal(300))
    big = _walked(cf, rng.standard_normal(2400))
    # per flush: the live values (x, a few lazy scalars), whatever the length
    assert big <= small + 4 and big < 32


def _lazy(x, n):
    for i in range(n):
        x = _step(x, 0.999)        # lazy: one graph of 2n nodes
    return x


def test_identical_kernels_are_named_without_their_text():
    # a long lazy loop schedules one kernel per stretch of iterations, all
    # the same computation at other node ids: one text, then lookups
    cf = numdyn.compile(_lazy, options={"floor": False})
    C = numdyn.utils.counters
    x = np.linspace(-1.0, 1.0, 16)
    t0, r0 = C["kernel_texts"], C["kernel_runs"]
    got = cf(x, 700)
    np.testing.assert_allclose(got, _lazy(x, 700), rtol=1e-13)
    runs, texts = C["kernel_runs"] - r0, C["kernel_texts"] - t0
    # (1400 nodes: 6 kernels of up to 256 nodes since session 28, 22 of 64
    # before; every stretch the same text)
    assert runs >= 5 and texts <= 4, (runs, texts)
    # another dtype is another kernel (the key holds dtypes): right answers
    got32 = cf(x.astype(np.float32), 100)
    want32 = _lazy(x.astype(np.float32), 100)
    assert got32.dtype == want32.dtype
    np.testing.assert_allclose(got32, want32, rtol=1e-5)


def _backtrack(M):
    # seam carving's second loop: an element read (a flush) a row, a row of
    # M read each time, M held by Python for the whole loop
    h = M.shape[0]
    seam = np.zeros(h, dtype=np.int64)
    seam[h - 1] = np.argmin(M[h - 1])
    for i in range(h - 2, -1, -1):
        j = seam[i + 1]
        lo = max(j - 1, 0)
        seam[i] = lo + np.argmin(M[i, lo:j + 2])
    return seam


def _walked_per_flush(cf, M):
    C = numdyn.utils.counters
    w0, f0 = C["flush_nodes"], C["flushes"]
    np.testing.assert_array_equal(cf(M), _backtrack(M))
    return (C["flush_nodes"] - w0) / max(1, C["flushes"] - f0)


def test_flush_walks_do_not_grow_when_a_held_value_is_read():
    # each flush asked whether it may give M's memory to the run by walking
    # every node made since M (up to 4096 a flush); M is what Python holds
    cf = numdyn.compile(_backtrack, options={"floor": False})
    rng = np.random.default_rng(2)
    small = _walked_per_flush(cf, 1.0 + rng.random((40, 12)))
    big = _walked_per_flush(cf, 1.0 + rng.random((200, 12)))
    assert big <= small + 8 and big < 64, (small, big)
