"""The programs the speed floor ran as NumPy (issue 13, bench_programs' rows at
1.0x): numdyn's own path is made cheaper at the cause, measured here by
counters (kernels run, bytes read, copies), never by timings. Every case is
checked against NumPy: values, dtypes, and the arguments left as NumPy
leaves them."""
import os
import sys

import numpy as np
import pytest

import numdyn
from numdyn import utils

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import programs_real as R  # noqa: E402

OWN = {"floor": False}


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


def _delta(cf, args):
    c0 = dict(utils.counters)
    r = cf(*args)
    c1 = dict(utils.counters)
    return r, {k: c1[k] - c0.get(k, 0) for k in c1}


# ------------------------------------------------ X.T of an input into matmul
def test_transpose_of_input_into_matmul_is_not_copied(monkeypatch):
    # X.T @ err with X an argument: NumPy's matmul reads X transposed through
    # a view (BLAS gemv with the transposed flag); a kernel's copy of X.T
    # per iteration was the own path's largest cost (30% of its time), and
    # made it slower than NumPy. (Since session 28 the loop is captured --
    # np.mean of a 1-D float array is -- and runs as C: the traced replay
    # checked here is what runs with loop capture off.)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    rng = np.random.default_rng(1)
    n, d, iters = 500, 8, 12
    X = rng.standard_normal((n, d))
    y = (rng.standard_normal(n) > 0).astype(np.float64)
    X0, y0 = X.copy(), y.copy()
    cf = numdyn.compile(R.logistic_gd, options=OWN)
    want = R.logistic_gd(X, y, 0.5, iters)
    for _ in range(3):
        got, d_ = _delta(cf, (X, y, 0.5, iters))
        _same(got, want)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert d_["replays"] == 1, d_


def gradient_step(X, err):
    return X.T @ err


def test_transpose_of_input_into_matmul_runs_no_kernel():
    X = np.arange(20000.0).reshape(2000, 10) / 1000.0
    err = np.linspace(-1.0, 1.0, 2000)
    cf = numdyn.compile(gradient_step, options=OWN)
    for _ in range(3):
        got, d_ = _delta(cf, (X, err))
        _same(got, gradient_step(X, err))
    # NumPy's matmul on NumPy's view of X: no kernel copies X.T
    assert d_["kernel_runs"] == 0, d_
    assert d_["bytes_read"] == 0, d_


def transpose_into_own_result(X, v):
    # the extern's result is a new array: writing it must not touch X
    r = X.T @ v
    r[0] = -1.0
    return r, X.T.sum()


def test_transpose_view_feeding_matmul_never_aliases_the_argument():
    X = np.arange(12.0).reshape(4, 3)
    v = np.ones(4)
    X0 = X.copy()
    cf = numdyn.compile(transpose_into_own_result, options=OWN)
    for _ in range(3):
        _same(cf(X, v), transpose_into_own_result(X0.copy(), v))
        np.testing.assert_array_equal(X, X0)


def transpose_into_matmul_out(X, v, out):
    # matmul with out=: its result is `out` itself, so the view of X must not
    # be handed over as it is to something that could write through it
    np.matmul(X.T, v, out=out)
    return out * 2.0


def test_transpose_into_matmul_with_out():
    X = np.arange(12.0).reshape(4, 3)
    v = np.ones(4)
    out = np.zeros(3)
    out2 = np.zeros(3)
    cf = numdyn.compile(transpose_into_matmul_out, options=OWN)
    _same(cf(X, v, out), transpose_into_matmul_out(X, v, out2))
    np.testing.assert_array_equal(out, out2)


# ------------------------------------- flush cost independent of capture length
# the bench program itself (bench/programs_real.py), not a copy of it
jacobi_until_converged = R.jacobi_until_converged


def test_long_capture_of_flushes_gives_numpys_answer(monkeypatch):
    # a branch on data per iteration: one flush each, late ones in a capture
    # of tens of thousands of nodes. Each flush used to allocate and zero
    # four arrays of one entry per node of the whole capture (fresh pages
    # from the OS once past malloc's mmap threshold: on the bench's 40x40
    # row ~5300 page faults and 40% of the own path's CPU time a call); they
    # are the capture's scratch now, reset entry by entry (trace_flush.c,
    # nd_graph_extract_scratch): this checks the resets leave nothing behind
    u, f = np.zeros((24, 24)), np.ones((24, 24))
    u[0, :] = 1.0
    # loop capture now takes this loop whole (`u = new` is captured): traced
    # as written, it is the capture of many flushes this test is about
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    cf = numdyn.compile(jacobi_until_converged, options=OWN)
    for tol in (0.0, 1e-4, 1e-3):
        want = jacobi_until_converged(u, f, tol, 1500)
        for _ in range(2):
            got, d_ = _delta(cf, (u, f, tol, 1500))
            _same(got, want)
        assert d_["flushes"] >= want[1], d_


def many_flushes_with_errors(x, n):
    # flushes that raise inside one capture leave the scratch as they found
    # it: later flushes of the same capture still compute the right values
    acc = 0.0
    for i in range(n):
        y = x * (i + 1)
        try:
            with np.errstate(divide="raise"):
                if float((1.0 / (y - y)).sum()) > 0:
                    acc += 1.0
        except FloatingPointError:
            acc += float(y.sum())
    return acc


def test_flush_scratch_survives_failing_flushes():
    x = np.arange(5.0)
    cf = numdyn.compile(many_flushes_with_errors, options=OWN)
    for _ in range(2):
        assert cf(x, 200) == many_flushes_with_errors(x, 200)


# ------------------------------------------- log messages only for listeners
def _scaled(x, i):
    y = x
    for _ in range(1):   # a helper holding a loop is not inlined
        y = x * i
    return y


def breaks_each_iteration(x, n):
    # (the call of a Python function that loop capture does not inline
    # keeps the loop from it)
    acc = 0.0
    for i in range(n):
        if _scaled(x, i).sum() > 3.0:   # bool of a lazy value: a graph break
            acc += 1.0
    return acc


def test_breaks_and_flushes_format_no_message_nobody_reads(capsys):
    # the C layer used to call the Python log hook for every graph break and
    # flush -- finding the user's source line and formatting a message --
    # with no log kind, verbose flag or profiler listening (11% of a loop
    # that breaks every iteration); the hook is installed only while one is
    import numdyn as nd
    calls = []
    orig = nd._log_hook

    def spy(kind, message):
        calls.append(kind)
        orig(kind, message)

    x = np.arange(4.0)
    cf = nd.compile(breaks_each_iteration, options=OWN)
    old_kinds = set(nd._log_kinds)
    nd._log_hook = spy
    try:
        nd._log_kinds.clear()
        nd._sync_log_hook()
        b0 = utils.counters["graph_breaks"]
        assert cf(x, 20) == breaks_each_iteration(x, 20)
        assert utils.counters["graph_breaks"] - b0 >= 20
        assert calls == []
        # switched on at run time, config.verbose prints breaks again
        nd.config.verbose = True
        try:
            assert cf(x, 20) == breaks_each_iteration(x, 20)
        finally:
            nd.config.verbose = False
        assert "graph_breaks" in calls
        assert "graph break" in capsys.readouterr().out
        # and a profiler hears them too
        calls.clear()
        with nd.CompileProfiler() as prof:
            cf(x, 20)
        assert "graph_breaks" in calls and prof.graph_breaks
        calls.clear()
        cf(x, 20)
        assert calls == []
    finally:
        nd._log_hook = orig
        nd._log_kinds.update(old_kinds)
        nd._sync_log_hook()


# ------------------------------- a loop C rejected is run by Python, unflushed
def _rnn_args(rng, T=6, b=4, d=5, h=8):
    return (rng.standard_normal((T, b, d)), rng.standard_normal((d, h)) * 0.3,
            rng.standard_normal((h, h)) * 0.3, rng.standard_normal(h))


def test_rejected_loop_is_replayed_without_flushes():
    # bench's RNN: loop capture rejects its time loop (a name holding a 2-D
    # array given a view), but computed the tracer's lazy h and hs first --
    # a flush every call, and a flushed capture is never replayed (0.58x
    # NumPy). The rejection is remembered by its names' types, so later
    # calls fall back without computing them, and the capture replays.
    rng = np.random.default_rng(5)
    cf = numdyn.compile(R.rnn_forward, options=OWN)
    for _ in range(3):
        args = _rnn_args(rng)
        _same(cf(*args), R.rnn_forward(*args))
    assert any(e.get("last_fallback") for e in cf._loop_info()), cf._loop_info()
    for _ in range(3):
        args = _rnn_args(rng)
        keep = [a.copy() for a in args]
        r, d = _delta(cf, args)
        _same(r, R.rnn_forward(*keep))
        for a, k in zip(args, keep):
            assert np.array_equal(a, k)
        assert d["flushes"] == 0 and d["replays"] == 1 and d["loop_fallbacks"] == 0, d


def test_rejected_loop_with_other_types_gives_numpys_answer():
    # the remembered rejection is per type key: float32 arguments (another
    # key, another replay entry) and a lazy h of other rank are still right
    rng = np.random.default_rng(6)
    cf = numdyn.compile(R.rnn_forward, options=OWN)
    for dt in (np.float64, np.float32, np.float64, np.float32, np.float32):
        args = tuple(a.astype(dt) for a in _rnn_args(rng))
        got, want = cf(*args), R.rnn_forward(*args)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12)


def uses_locals(a, k):
    b = a * k
    names = locals()
    return b + len(names)


def test_locals_call_replays_with_new_values():
    # locals() (what a captured loop's region is called with) has no side
    # effect: a function calling it replays, with each call's own data
    rng = np.random.default_rng(7)
    cf = numdyn.compile(uses_locals, options=OWN)
    for i in range(4):
        a = rng.standard_normal(9)
        r, d = _delta(cf, (a, 1.5))
        _same(r, uses_locals(a, 1.5))
        if i >= 2:
            assert d["replays"] == 1 and d["flushes"] == 0, d


def scale_rows(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0 + 1.0
    return out


def test_loop_run_in_c_is_never_replayed_away():
    # a loop C runs computes outside the capture's graph: the call is not
    # recorded (a replay would skip the loop)
    rng = np.random.default_rng(8)
    cf = numdyn.compile(scale_rows, options=OWN)
    for _ in range(4):
        a = rng.standard_normal(20)
        out, want = np.zeros(20), np.zeros(20)
        r, d = _delta(cf, (a, out))
        assert r is out
        np.testing.assert_array_equal(out, scale_rows(a, want))
        assert d["replays"] == 0 and d["loop_runs"] == 1, d


# ------------------------- a flush's value written in place by the next flush
def test_lu_pivoting_writes_a_in_place(monkeypatch):
    # bench's LU with partial pivoting, traced (loop capture now runs its
    # loop as C: tests/test_floor_rowswap.py), flushes twice per column (the
    # pivot's `if p != k`); each flush's SETITEMs on A copied the whole of A
    # (the value of the flush before) before writing their regions: 43% of
    # the own path. A value nothing reads again is given to the run, which
    # writes into it: one copy per call (A.copy() itself) is left.
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    rng = np.random.default_rng(11)
    n = 12
    cf = numdyn.compile(R.lu_partial_pivot, options=OWN)
    for _ in range(2):
        A = rng.standard_normal((n, n))
        _same(cf(A), R.lu_partial_pivot(A))
    A = rng.standard_normal((n, n))
    keep = A.copy()
    r, d = _delta(cf, (A,))
    _same(r, R.lu_partial_pivot(keep))
    assert np.array_equal(A, keep)
    assert d["flushes"] >= n and d["base_copy_bytes"] <= A.nbytes, d


def swap_then_log(A, w):
    A = A.copy()
    for k in range(A.shape[0] - 1):
        p = k + np.argmax(w[k:])      # lazy: the swap is a scatter extern
        A[[k, p], :] = A[[p, k], :]   # written into A's buffer (ND_F_SCATTER)
        A[k, 1:3] = np.log(A[k, 1:3])
        if A[k, 0] > 1e300:           # a flush: the swap and the log
            break
    return A


def test_row_swap_in_place_is_undone_for_a_rerun():
    # the fancy-index swap writes into A's buffer (a value given to the run)
    # instead of copying A; a log of a negative entry warns in the same run,
    # so NumPy reruns the graph from its inputs: the swapped rows are put
    # back first, or the rerun would swap them again
    import warnings
    rng = np.random.default_rng(13)
    cf = numdyn.compile(swap_then_log, options=OWN)
    for i in range(3):
        A = np.abs(rng.standard_normal((8, 6))) + 0.1
        w = np.arange(8.0)         # every pivot is the last row: real swaps
        A[1, 1] = -1.0 - i         # row 2 after the third swap: log warns there
        keep = A.copy()
        with warnings.catch_warnings(record=True) as wn:
            warnings.simplefilter("always")
            want = swap_then_log(A, w)
        with warnings.catch_warnings(record=True) as wg:
            warnings.simplefilter("always")
            got, d = _delta(cf, (A, w))
        _same(got, want)
        assert [(w.category, str(w.message)) for w in wg] == \
               [(w.category, str(w.message)) for w in wn] and wn
        assert np.array_equal(A, keep)
        if i:
            assert d["errstate_reruns"] > 0 and d["base_copy_bytes"] <= 2 * A.nbytes, d


def div_then_log(A):
    A = A.copy()
    logs = []
    for k in range(A.shape[0] - 1):
        A[k + 1:, k] /= 2.0
        logs.append(np.log(A[k + 1:, k:k + 2]))
        if logs[-1].sum() + A[k + 1:, k].sum() > 1e300:
            break
    return A, logs


def test_rerun_for_warnings_sees_the_donated_array_as_given():
    # the log of negative entries warns: NumPy reruns that flush's graph to
    # warn where NumPy does, after its kernels wrote A's column in place.
    # The run restores the regions it wrote first, or the rerun would halve
    # the column twice.
    import warnings
    rng = np.random.default_rng(12)
    cf = numdyn.compile(div_then_log, options=OWN)
    for i in range(3):
        # one column holds negatives: the flushes of it and the column
        # before warn (and rerun), after writing their column
        A = np.abs(rng.standard_normal((9, 9))) + 0.1
        A[5:, 4] = -1.0 - i
        with warnings.catch_warnings(record=True) as wn:
            warnings.simplefilter("always")
            want = div_then_log(A)
        c0 = dict(utils.counters)
        with warnings.catch_warnings(record=True) as wg:
            warnings.simplefilter("always")
            got = cf(A)
        c1 = dict(utils.counters)
        _same(got[0], want[0])
        assert len(got[1]) == len(want[1])
        for g_, w_ in zip(got[1], want[1]):
            np.testing.assert_array_equal(g_, w_)
        assert [(w.category, str(w.message)) for w in wg] == \
               [(w.category, str(w.message)) for w in wn]
        assert len(wn) == 2
        if i:
            assert c1["errstate_reruns"] > c0["errstate_reruns"]
            assert c1["base_copy_bytes"] - c0["base_copy_bytes"] <= 2 * A.nbytes, (c0, c1)


def keeps_old_versions(A):
    A = A.copy()
    v = A[1:3]
    s = A.sum()
    olds = []
    w = A
    for i in range(4):
        A[i] *= 2.0
        if A[i, 0] > 1e300:
            break
        olds.append(A[i])
        w = A.copy()
        A[i + 1] -= w[i]
        B = A.T
        A[0, 0] += 1.0
    return A, v, s, olds, w, B


def test_values_still_read_are_not_written_in_place():
    # views, copies and lazy results of earlier versions of A stay NumPy's
    rng = np.random.default_rng(13)
    cf = numdyn.compile(keeps_old_versions, options=OWN)
    for _ in range(3):
        A = rng.standard_normal((6, 5))
        got, want = cf(A), keeps_old_versions(A)
        for g_, w_ in zip(got, want):
            if isinstance(w_, list):
                for x, y in zip(g_, w_):
                    np.testing.assert_array_equal(x, y)
            else:
                _same(g_, w_)


# ------------------------------- a node holds up to 8 dims (ND_MAXDIMS = 8)
def expand_sum(x):
    y = x[..., None, None] * 3.0   # 7-d -> 9-d
    return y.sum(axis=-1) + 1.0, (x * 2.0).sum()


def test_rank_above_node_dims_runs_with_numpy_as_a_break():
    # graph nodes hold 8 dims (a smaller node is a cheaper trace and flush):
    # a 9-d argument or value runs with NumPy, a recorded break naming the
    # rank, with NumPy's results; fullgraph=True refuses it
    rng = np.random.default_rng(14)
    x9 = rng.standard_normal((2,) * 9)
    e = numdyn.explain(numdyn.compile(lambda a: (a * 2.0 + 1.0).sum(axis=0), options=OWN), x9)
    np.testing.assert_array_equal(e.result, (x9 * 2.0 + 1.0).sum(axis=0))
    assert e.graph_break_count >= 1
    assert any("rank 9" in b.reason for b in e.break_reasons), e.break_reasons
    x7 = rng.standard_normal((2,) * 7)
    got = numdyn.compile(expand_sum, options=OWN)(x7)
    _same(got, expand_sum(x7))
    with pytest.raises(numdyn.GraphBreakError, match="rank above 8"):
        numdyn.compile(expand_sum, fullgraph=True, options=OWN)(x7)
