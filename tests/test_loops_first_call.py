"""First calls of captured loops (issue 13 point 3, issue 17): a captured
loop whose C is still compiling in the background runs as the user wrote it,
in Python on the real arrays, instead of stalling the call past
numdyn.config.compile_budget; the call that finds it built runs the C.

The compiler is held at a gate (test_first_call's gated compiler), so "the
compile has not finished" is a fact of the test, not a timing.
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils
from test_first_call import gated, _starts  # noqa: F401  (gated is a fixture)


# the bench program itself (bench/programs_loops.py), not a copy of it
from programs_loops import edit_distance  # noqa: E402


def scan_after_lazy(x, limit):
    # a lazy array made before the loop, written by it, used after it; a
    # local first bound inside the loop; an early exit
    y = x * 2.0 + 1.0
    total = 0.0
    for i in range(y.shape[0]):
        if total > limit:
            last = i
            break
        total += y[i]
        y[i] = total
    return y.sum() + total, y, last


def writes_then_fails(v, k):
    for i in range(k):
        v[i] = v[i] * 3 + 1
    return v


def _counts():
    c = utils.counters
    return c["loop_pending_runs"], c["loop_runs"]


def test_a_loop_runs_in_python_while_its_c_compiles_then_runs_compiled(gated):
    gate, log = gated
    f = numdyn.compile(edit_distance, options={"floor": False})
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 9), rng.integers(0, 4, 11)
    want = edit_distance(a, b)
    p0, r0 = _counts()
    got = f(a, b)
    p1, r1 = _counts()
    # the compilers are still held: the call did not wait for them
    assert not gate.exists()
    assert len(_starts(log)) >= 1
    assert got[0] == want[0] and type(got[0]) is type(want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == want[1].dtype
    assert p1 - p0 == 3 and r1 == r0       # its three loops ran in Python
    gate.touch()
    assert utils.wait_compiles() is None
    got = f(a, b)
    p2, r2 = _counts()
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
    assert p2 == p1 and r2 - r1 == 3       # found built: C ran them


def test_locals_and_lazy_arrays_while_compiling(gated):
    gate, _ = gated
    f = numdyn.compile(scan_after_lazy, options={"floor": False})
    x = np.linspace(0.0, 1.0, 40)
    want = scan_after_lazy(x, 9.0)
    p0, _ = _counts()
    for _ in range(2):   # still compiling on the second call too
        got = f(x, 9.0)
        assert got[0] == want[0] and got[2] == want[2] and type(got[2]) is int
        np.testing.assert_array_equal(got[1], want[1])
    assert _counts()[0] - p0 == 2
    assert not gate.exists()
    gate.touch()
    utils.wait_compiles()
    got = f(x, 9.0)
    assert got[0] == want[0] and got[2] == want[2]
    np.testing.assert_array_equal(got[1], want[1])


def test_index_error_at_the_same_iteration_while_compiling(gated):
    gate, _ = gated
    f = numdyn.compile(writes_then_fails, options={"floor": False})
    v_ref, v = np.arange(5), np.arange(5)
    with pytest.raises(IndexError) as want:
        writes_then_fails(v_ref, 7)
    p0, _ = _counts()
    with pytest.raises(IndexError) as got:
        f(v, 7)
    assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(v, v_ref)    # written up to the failing index
    assert not gate.exists()
    # the traceback names the loop's own line in this file
    assert any(fr.name == "writes_then_fails" and fr.filename == __file__ for fr in
               __import__("traceback").extract_tb(got.value.__traceback__))
    gate.touch()
    utils.wait_compiles()
    v2 = np.arange(5)
    f(v2, 5)
    np.testing.assert_array_equal(v2, np.arange(5) * 3 + 1)
    assert _counts()[0] - p0 == 1


def test_with_the_floor_the_function_itself_runs_until_the_compile_ends(gated):
    gate, _ = gated
    f = numdyn.compile(writes_then_fails, options={"floor": True})
    c0 = dict(utils.counters)
    outs = []
    for _ in range(3):
        v = np.arange(6)
        f(v, 6)
        outs.append(v)
    c1 = dict(utils.counters)
    for v in outs:
        np.testing.assert_array_equal(v, np.arange(6) * 3 + 1)
    # the first call ran the loop's Python copy; the calls after it ran the
    # function untraced (no compile ended in between): its loop's Python
    # copy again, the C not being built
    assert c1["loop_pending_runs"] - c0["loop_pending_runs"] == 3
    assert c1["floor_numpy_calls"] - c0["floor_numpy_calls"] == 2
    assert c1["loop_runs"] == c0["loop_runs"]
    gate.touch()
    utils.wait_compiles()
    v = np.arange(6)
    f(v, 6)
    np.testing.assert_array_equal(v, np.arange(6) * 3 + 1)
    assert utils.counters["loop_runs"] > c1["loop_runs"]


def test_frozen_mode_still_runs_python_without_starting_a_compile(gated):
    gate, log = gated
    f = numdyn.compile(writes_then_fails, options={"floor": False})
    v = np.arange(4)
    with numdyn.run():
        f(v, 4)
    np.testing.assert_array_equal(v, np.arange(4) * 3 + 1)
    assert _starts(log) == []
