"""NumPy scalar float arithmetic in captured loops leaves its events to the
hardware flags (issue 17: no branch per operation on the hot path).

A float32/float64 + - * / that overflows, divides by zero or makes a NaN
from non-NaN operands raises FE_OVERFLOW/FE_DIVBYZERO/FE_INVALID, which is
what NumPy itself tests after a scalar operation. The compiled loop does
not test each result; the runner tests the flags once after the loop and,
when one was raised, restores the arrays and Python reruns the loop, so
NumPy warns or raises at the same iteration. Under np.errstate ignoring all
three events, nothing is tested and the loop stays compiled. Comparisons in
such loops are quiet (a NaN compared raises no flag), so NaN data alone does
not send the loop back to Python. Plain Python/NumPy is the oracle.
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def deopts():
    return numdyn.utils.counters["loop_deopts"]


def scale_sum(a, c):
    s = np.float64(0.0)
    for i in range(a.shape[0]):
        s = s + a[i] * c
    return s


def running_scaled_max(x, c):
    n = x.shape[0]
    out = np.zeros(n)
    hi = x[0] * c
    for i in range(n):
        v = x[i] * c
        if v > hi:
            hi = v
        out[i] = hi
    return out, hi


def event_then_bad_index(a, k):
    out = np.zeros(3)
    for i in range(a.shape[0]):
        out[i] = a[i] * 1e308          # overflows at the element 10.0
        out[i + k] = 1.0               # out of range at the last i
    return out


def event_then_vector_statement(a, b):
    s = np.float64(1.0)
    for i in range(a.shape[0]):
        s = a[i] * 1e308               # overflows before the vector statement
        b[:] = b * 0.5
    return s, b


def divide_each(a, d):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] / d[i]
    return out


def test_overflow_reruns_in_python_and_warns_as_numpy():
    a = np.array([1.0, 1e300, 1e300, 2.0])
    cf = numdyn.compile(scale_sum)
    ok = np.array([1.0, 2.0, 3.0, 4.0])
    assert cf(ok, 2.0) == scale_sum(ok, 2.0)
    before = deopts()
    with np.errstate(over="warn"):
        outs = check_calls(scale_sum, (a, 1e10), (ok, 3.0))
    assert deopts() > before        # the event was found by the flags, Python reran the loop
    assert outs[0].value == np.inf


@pytest.mark.parametrize("errs", ["raise", "warn"])
def test_division_by_zero_at_its_iteration(errs):
    a = np.array([1.0, 2.0, 3.0, 4.0])
    d = np.array([1.0, 2.0, 0.0, 4.0])
    with np.errstate(all=errs):
        outs = check_calls(divide_each, (a, d), (a, a))
    if errs == "raise":
        assert type(outs[0].exc) is FloatingPointError


def test_invalid_inf_minus_inf():
    a = np.array([np.inf, 1.0, 2.0])
    with np.errstate(all="warn"):
        check_calls(scale_sum, (a, -1.0), (np.array([1.0, np.inf]), 0.0))


def test_ignored_events_stay_compiled():
    a = np.array([1.0, 1e300, 1e300, 2.0])
    cf = numdyn.compile(scale_sum)
    with np.errstate(all="ignore"):
        cf(a, 1e10)
        before = deopts()
        r = cf(a, 1e10)
        assert deopts() == before
        assert r == scale_sum(a, 1e10) and type(r) is np.float64
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def test_nan_data_with_comparisons_stays_compiled():
    x = np.array([1.0, np.nan, 3.0, np.nan, 0.5, 7.0])
    cf = numdyn.compile(running_scaled_max)
    with np.errstate(all="warn"):
        check_calls(running_scaled_max, (x, 2.0), (x[::-1].copy(), -1.0))
        cf(x, 2.0)
        before = deopts()
        cf(x, 2.0)
        assert deopts() == before      # an ordered C comparison of a NaN would raise FE_INVALID


def test_warning_before_index_error():
    with np.errstate(all="warn"):
        outs = check_calls(event_then_bad_index, (np.array([1.0, 10.0, 2.0]), 1))
    assert type(outs[0].exc) is IndexError
    assert outs[0].categories == ("RuntimeWarning",)


def test_event_pending_across_a_vector_statement():
    with np.errstate(all="warn"):
        outs = check_calls(event_then_vector_statement, (np.array([1.0, 10.0, 0.5]), np.ones(4)))
    assert outs[0].categories == ("RuntimeWarning",)


def test_error_state_changes_between_calls():
    # the runner keeps what it read of NumPy's last error state object; each
    # np.errstate/np.seterr makes a new one, so every call sees its own
    a = np.array([1.0, 1e300, 1e300, 2.0])
    cf = numdyn.compile(scale_sum)
    with np.errstate(all="ignore"):
        assert cf(a, 1e10) == np.inf
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            cf(a, 1e10)
    with np.errstate(all="ignore"):
        assert cf(a, 1e10) == np.inf
    with np.errstate(under="warn"):   # the C code cannot report underflow: Python runs it
        assert cf(a, 2.0) == scale_sum(a, 2.0)
    info = cf._loop_info()
    assert "under" in (info[0].get("last_fallback") or ""), info
    old = np.seterr(over="raise")
    try:
        with pytest.raises(FloatingPointError):
            cf(a, 1e10)
    finally:
        np.seterr(**old)
    assert cf(np.array([1.0, 2.0]), 3.0) == 9.0
