"""A loop whose NumPy float events deoptimize it (Python reruns it from its
start, for NumPy's warnings) copies the arrays it stores into before it runs
-- unless the rerun is sure to store again everything the C run stored
(loop_run.c rerun_safe): the loop reads no element of an array it stores
into, no such array shares memory with one it reads, and NumPy's run cannot
stop at the event (np.errstate 'ignore'/'warn'/'print', no warnings filter
'error'). These compare the warnings, exceptions, results and the arrays
after the call with plain NumPy, on the speed floor's untraced path (where
the copy is skipped) and the traced one, and count the bytes copied
(counter loop_snapshot_bytes)."""
import warnings

import numpy as np
import pytest

import numdyn
from numdyn import utils


def biquad_out(x, y, b0, a1):
    x1 = y1 = 0.0
    for i in range(x.shape[0]):
        yi = b0 * x[i] + 0.5 * x1 - a1 * y1
        y[i] = yi
        x1 = x[i]
        y1 = yi
    return y1


def recursive_out(x, y, a):
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + x[i]        # reads what it stores: copies
    return y


def snap_bytes():
    return utils.counters["loop_snapshot_bytes"]


def run_both(fn, make, calls=16):
    """fn compiled (floor on: both paths run) and plain, on fresh arguments
    each call: the warnings (category, message, line), the exception, the
    result and the arrays after the call must be NumPy's"""
    cf = numdyn.compile(fn, options={"floor": True})
    for k in range(calls):
        out = []
        for f in (fn, cf):
            args = make()
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    r, e = f(*args), None
                except Exception as ex:   # the same exception, then
                    r, e = None, ex
            out.append((r, type(e), str(e) if e else None,
                        [(x.category, str(x.message), x.lineno) for x in w],
                        [a.copy() for a in args if isinstance(a, np.ndarray)]))
        (r0, e0, m0, w0, a0), (r1, e1, m1, w1, a1) = out
        assert e0 is e1 and m0 == m1, (k, e0, e1, m0, m1)
        assert w0 == w1, (k, w0, w1)
        if e0 is None:
            np.testing.assert_array_equal(np.asarray(r0), np.asarray(r1))
            assert type(r0) is type(r1)
        for p, q in zip(a0, a1):
            np.testing.assert_array_equal(p, q)
    return cf


def quiet_args(n=64):
    x = np.random.default_rng(1).standard_normal(n)
    return x, np.zeros(n), 0.2, -0.3


def loud_args(n=64):
    x = np.random.default_rng(1).standard_normal(n)
    x[n // 2] = 1e308                     # overflows there, and inf - inf after
    return x, np.full(n, 7.0), 10.0, -0.3


def per_path_copies(cf, make, calls=20):
    """bytes copied by the calls the speed floor ran untraced, and by the others
    (the floor interleaves both paths while it measures)"""
    untraced, traced, n_untraced = 0, 0, 0
    for _ in range(calls):
        args = make()
        c0, r0, b0 = utils.counters["floor_numpy_calls"], utils.counters["loop_runs"], snap_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cf(*args)
        # (the floor's other plain path, the original function, runs no C loop)
        if utils.counters["floor_numpy_calls"] > c0 and utils.counters["loop_runs"] > r0:
            untraced += snap_bytes() - b0
            n_untraced += 1
        else:
            traced += snap_bytes() - b0
    assert n_untraced > 0
    return untraced, traced


def test_no_copy_when_the_rerun_rewrites_everything():
    cf = run_both(biquad_out, quiet_args)
    untraced, _ = per_path_copies(numdyn.compile(biquad_out, options={"floor": True}), quiet_args)
    assert untraced == 0
    untraced, _ = per_path_copies(cf, quiet_args)
    assert untraced == 0


def test_events_still_warn_at_numpys_line_without_the_copy():
    run_both(biquad_out, loud_args)


def test_errstate_raise_keeps_the_copy_and_numpys_partial_state():
    def make():
        return loud_args()
    with np.errstate(over="raise", invalid="raise"):
        run_both(biquad_out, make)
        untraced, _ = per_path_copies(numdyn.compile(biquad_out, options={"floor": True}), quiet_args)
        assert untraced > 0   # NumPy's run may stop at the event: copied
    old = np.seterrcall(lambda kind, flag: None)
    try:
        with np.errstate(over="call", invalid="call"):
            run_both(biquad_out, make)
    finally:
        np.seterrcall(old)


def test_warnings_as_errors_keep_numpys_partial_state():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        cf = numdyn.compile(biquad_out, options={"floor": True})
        for _ in range(12):
            x, y, b0, a1 = loud_args()
            with pytest.raises(RuntimeWarning):
                biquad_out(x, y, b0, a1)
            x2, y2, _, _ = loud_args()
            with pytest.raises(RuntimeWarning):
                cf(x2, y2, b0, a1)
            np.testing.assert_array_equal(y, y2)


def test_aliased_output_keeps_the_copy():
    def make(big=1e308):
        buf = np.random.default_rng(2).standard_normal(65)
        buf[40] = big
        return buf[1:], buf[:-1], 0.2, -0.3   # y[i] is x[i - 1]'s memory
    cf = run_both(biquad_out, make)
    # (no event: the C loop runs on every call of its path, after the copy)
    untraced, _ = per_path_copies(numdyn.compile(biquad_out, options={"floor": True}), lambda: make(1.0))
    assert untraced > 0


def test_reading_what_it_stores_keeps_the_copy():
    def make(big=1e308):
        x = np.random.default_rng(3).standard_normal(64)
        x[30] = big
        return x, np.zeros(64), 0.5
    run_both(recursive_out, make)
    untraced, _ = per_path_copies(numdyn.compile(recursive_out, options={"floor": True}), lambda: make(1.0))
    assert untraced > 0
