"""The speed floor's NumPy path (numdyn.config.floor) runs the function
untraced -- its NumPy calls as they are -- with its captured loops still as
their C (trace/loop.h, nd_loop_plain): a loop-heavy function whose array
work is small no longer pays the tracer on every call. That path is the
function's copy with loop regions, as the last rewrite of its code made it:
it must give what the function gives (values, arrays after the call,
exceptions at the same iteration), and a function of the same code made
with other closure cells or defaults must not run another's copy. The floor
interleaves both paths while it measures (calls 3-12), so 20 calls run each
path several times."""
import numpy as np
import pytest

import numdyn
from numdyn import utils
from loop_gen import arr

CALLS = 20


def scaled_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * 2.0
    return s


def writes_then_overruns(v, n):
    for i in range(n):
        v[i] = v[i] * 3 + 1
    return v


def make_scaler(k):
    def scale(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = x[i] * k
        return out
    return scale


def with_default(x, c=2.0):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * c
    return s


def _delta(c0):
    c1 = utils.counters
    return {k: c1[k] - c0.get(k, 0) for k in ("floor_numpy_calls", "loop_runs", "loop_fallbacks")}


def test_the_numpy_path_runs_the_loops_as_c():
    # the floor's third path, the original function, runs the loop in
    # Python: timed here as far slower (its test hook), it runs on the two
    # calls that show it (test_floor_original.py)
    numdyn._C._floor_test_delay(0.0, 0.0, 0.05)
    try:
        f = numdyn.compile(scaled_sum, options={"floor": True})
        c0 = dict(utils.counters)
        for k in range(CALLS):
            x = arr("float64", 50, seed=k)
            assert f(x) == scaled_sum(x)
    finally:
        numdyn._C._floor_test_delay(0.0, 0.0, 0.0)
    d = _delta(c0)
    orig = f._floor_info_for(x)["original_samples"]
    # every other call ran the loop's C, on either path
    assert orig == 2 and d["floor_numpy_calls"] >= 5, (d, f._floor_info())
    assert d["loop_runs"] == CALLS - orig and d["loop_fallbacks"] == 0, d


def test_index_error_at_the_same_iteration_on_either_path():
    f = numdyn.compile(writes_then_overruns, options={"floor": True})
    c0 = dict(utils.counters)
    for k in range(CALLS):
        v, w = np.arange(5), np.arange(5)
        with pytest.raises(IndexError) as want:
            writes_then_overruns(w, 7)
        with pytest.raises(IndexError) as got:
            f(v, 7)
        assert str(got.value) == str(want.value)
        np.testing.assert_array_equal(v, w)
        v = np.arange(6)
        assert f(v, 6) is v
        np.testing.assert_array_equal(v, np.arange(6) * 3 + 1)
    assert _delta(c0)["floor_numpy_calls"] >= 5


def test_closures_of_one_code_keep_their_own_cells():
    f2, f3 = numdyn.compile(make_scaler(2.0), options={"floor": True}), numdyn.compile(make_scaler(3.0),
                                                                                        options={"floor": True})
    for k in range(CALLS):
        x = arr("float64", 9, seed=k)
        np.testing.assert_array_equal(f2(x), x * 2.0)
        np.testing.assert_array_equal(f3(x), x * 3.0)


def test_defaults_set_after_compiling():
    f = numdyn.compile(with_default, options={"floor": True})
    x = arr("float64", 30, seed=4)
    two = with_default(x)
    for _ in range(CALLS):
        assert f(x) == two
    saved = with_default.__defaults__
    try:
        with_default.__defaults__ = (5.0,)
        five = with_default(x)
        assert five != two
        for _ in range(CALLS):
            assert f(x) == five
    finally:
        with_default.__defaults__ = saved
