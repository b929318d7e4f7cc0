"""The per-call work of a captured loop's runner (issue 17, session 24's
loops7): the frame and the outside-state structs are set field by field
instead of by memset, and a builtin read by its own name is looked up
once. What a call hands back must not change: the values, the errors'
messages (which read the frame's error fields), a builtin shadowed by a
global (Python runs the loop), arrays the loop makes (the frame's pool).
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

import test_loops_elements as elements
from test_loops_elements import cap_range_sum as counted


def squares_at(x, idx):
    # an element read at a given index: IndexError's message carries the
    # frame's err_a/err_b/err_c; `last` is unbound when the loop never runs
    s = 0.0
    for i in range(len(idx)):
        s += x[idx[i]] * x[idx[i]]
        last = i
    return s, last


def _runs():
    return utils.counters["loop_runs"], utils.counters["loop_fallbacks"]


def test_calls_repeat_values_and_errors_exactly():
    f = numdyn.compile(squares_at, options={"floor": False})
    x = np.arange(8.0)
    ok = np.array([0, 3, 7, 2], dtype=np.int64)
    r0, _ = _runs()
    for _ in range(3):
        got, want = f(x, ok), squares_at(x, ok)
        assert got == want
        assert [type(v) for v in got] == [type(v) for v in want]
    assert _runs()[0] - r0 >= 3   # the C loop ran each call
    bad = np.array([1, 9, 2], dtype=np.int64)
    with pytest.raises(IndexError) as want:
        squares_at(x, bad)
    for _ in range(2):   # the error fields of one call do not leak into the next
        with pytest.raises(IndexError) as got:
            f(x, bad)
        assert str(got.value) == str(want.value)
        assert f(x, ok) == squares_at(x, ok)
    neg = np.array([2, -9], dtype=np.int64)
    with pytest.raises(IndexError) as want:
        squares_at(x, neg)
    with pytest.raises(IndexError) as got:
        f(x, neg)
    assert str(got.value) == str(want.value)
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(UnboundLocalError) as want:
        squares_at(x, empty)
    with pytest.raises(UnboundLocalError) as got:
        f(x, empty)
    assert str(got.value) == str(want.value)
    assert f(x, ok) == squares_at(x, ok)


def test_a_builtin_shadowed_by_a_global_runs_in_python(monkeypatch):
    f = numdyn.compile(counted, options={"floor": False})
    x = np.arange(6.0)
    assert f(x) == 15.0
    r0, fb0 = _runs()
    assert f(x) == 15.0
    assert _runs()[0] > r0
    # a global len() that is not the builtin: the loop is Python's
    monkeypatch.setitem(elements.__dict__, "len", lambda a: 2)
    fb1 = _runs()[1]
    assert f(x) == counted(x) == 1.0
    assert _runs()[1] > fb1
    monkeypatch.undo()
    assert f(x) == 15.0


def running_copies(u, k):
    # arrays the loop makes (the frame's pool) handed back after the loop
    acc = u.copy()
    for j in range(k):
        t = acc.copy()
        for i in range(1, t.shape[0]):
            t[i] += acc[i - 1]
        acc = t
    return acc


def test_arrays_the_loop_makes_come_back_each_call():
    f = numdyn.compile(running_copies, options={"floor": False})
    u = np.arange(5.0)
    for k in (0, 1, 3, 3):
        got, want = f(u, k), running_copies(u, k)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got is not u
