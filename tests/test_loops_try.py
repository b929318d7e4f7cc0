"""Loops inside try statements are captured (issue 17): when the loop raises,
the names it assigned come back as Python left them at the exception, the
arrays as NumPy left them, and the user's handler (or finally) runs with
them; the exception is the one Python raises, with its message."""
import numpy as np
import pytest

import numdyn
from numdyn import utils
from test_first_call import gated  # noqa: F401  (a fixture)


def scan_until_out_of_range(a, k):
    s = 0.0
    try:
        for i in range(k):
            s += a[i]
            a[i] = s
    except IndexError as e:
        return "caught", s, i, str(e)
    return "done", s, i, ""


def nested_division(a, b):
    acc = 0.0
    try:
        for i in range(a.shape[0]):
            for j in range(b.shape[0]):
                acc += 1.0 / float(a[i] - b[j])
                last = i * 10 + j
    except ZeroDivisionError as e:
        return "caught", acc, last, i, j, str(e)
    return "done", acc, last, i, j, ""


def finally_counts(a):
    out = 0
    try:
        for i in range(a.shape[0]):
            out += int(a[i])
    finally:
        out += 1
    return out


def loop_in_handler(a):
    try:
        t = a[a.shape[0]]
    except IndexError:
        t = 0
        for i in range(a.shape[0]):
            t = t * 3 + int(a[i])
    return t


def raises_through_finally(a, k):
    n = 0
    try:
        for i in range(k):
            a[i] = a[i] * 2
            n += 1
    finally:
        seen = n
    return seen


CASES = [
    (scan_until_out_of_range, lambda: (np.arange(5.0), 3)),
    (scan_until_out_of_range, lambda: (np.arange(5.0), 9)),
    (nested_division, lambda: (np.array([1.0, 2.0, 3.0]), np.array([0.5, 3.0]))),
    (nested_division, lambda: (np.array([1.0, 2.0]), np.array([0.5, 4.0]))),
    (finally_counts, lambda: (np.arange(7),)),
    (loop_in_handler, lambda: (np.arange(4),)),
]


def _same(x, y):
    if isinstance(x, tuple):
        assert isinstance(y, tuple) and len(x) == len(y)
        for p, q in zip(x, y):
            _same(p, q)
    elif isinstance(x, np.ndarray):
        np.testing.assert_array_equal(x, y)
    else:
        assert x == y and type(x) is type(y), (x, y)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_loop_in_try_is_captured_and_matches_python(k):
    fn, make = CASES[k]
    ref_args, args = make(), make()
    want = fn(*ref_args)
    f = numdyn.compile(fn, options={"floor": False})
    runs = utils.counters["loop_runs"]
    got = f(*args)
    _same(want, got)
    for r, a in zip(ref_args, args):
        _same(r, a)
    assert utils.counters["loop_runs"] > runs      # ran as C
    info = f._loop_info() if hasattr(f, "_loop_info") else None
    if info is not None:
        assert all(e["captured"] for e in info), info


def test_an_exception_leaves_through_finally_with_the_arrays_as_numpy_left_them():
    ref, a = np.arange(4), np.arange(4)
    with pytest.raises(IndexError) as want:
        raises_through_finally(ref, 6)
    f = numdyn.compile(raises_through_finally, options={"floor": False})
    runs = utils.counters["loop_runs"]
    with pytest.raises(IndexError) as got:
        f(a, 6)
    assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(a, ref)
    assert utils.counters["loop_runs"] > runs


def test_loop_in_try_while_its_c_compiles(gated):
    gate, _ = gated
    f = numdyn.compile(scan_until_out_of_range, options={"floor": False})
    ref, a = np.arange(5.0), np.arange(5.0)
    want = scan_until_out_of_range(ref, 9)
    pend = utils.counters["loop_pending_runs"]
    got = f(a, 9)
    _same(want, got)
    np.testing.assert_array_equal(a, ref)
    assert utils.counters["loop_pending_runs"] == pend + 1
    assert not gate.exists()
