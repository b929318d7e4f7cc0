"""The speed floor's third path (src/runtime/runtime_floor.c): a function
with captured loops has, besides numdyn's path and NumPy's (the function
untraced, its captured loops as C), the original function itself. Back
substitution with 32 right-hand sides (bench/programs_real.py) was 0.84x
NumPy under the floor: its captured loop's row-times-matrix C (1.45 ms) lost
to NumPy's gemv calls (1.02 ms), and both paths the floor had ran that C.

The paths' costs here come from the floor's test hook
`_floor_test_delay(numdyn_s, numpy_s, original_s)`, which adds those
seconds to each timed call of a path, so the decisions do not depend on
this machine's load."""
import os
import sys

import numpy as np
import pytest

import numdyn
from numdyn import _C, utils

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from programs_real import back_subst_multi  # noqa: E402

FLOOR = {"floor": True}
SLOW = 0.05


@pytest.fixture
def delays():
    def set_(numdyn_s, numpy_s, original_s):
        _C._floor_test_delay(numdyn_s, numpy_s, original_s)
    yield set_
    _C._floor_test_delay(0.0, 0.0, 0.0)


def scale_rows(A, out):
    # a loop that loop capture compiles to C (in place into out)
    for i in range(A.shape[0]):
        out[i, :] = A[i, :] * 2.0 + out[i, :]
    return out.sum()


def no_loop(x):
    return (x * 2.0 + 1.0).sum()


def until_decided(cf, make_args, limit=40):
    for _ in range(limit):
        args = make_args()
        cf(*args)
        info = cf._floor_info_for(*args)
        if info["path"] != "measuring":
            return info
    raise AssertionError(f"floor undecided after {limit} calls: {cf._floor_info()}")


def _rows_args():
    A = np.arange(12.0).reshape(4, 3)
    return A, np.ones((4, 3))


def test_original_function_runs_when_captured_loops_lose(delays):
    delays(SLOW, SLOW, 0.0)
    cf = numdyn.compile(scale_rows, options=FLOOR)
    info = until_decided(cf, _rows_args)
    assert [l["captured"] for l in cf._loop_info()] == [True], cf._loop_info()
    assert info["path"] == "original", info
    assert info["original_samples"] >= 2 and info["original_s"] < info["numpy_s"], info
    # it is NumPy's own function: the same result and the same argument state
    before = utils.counters["floor_numpy_calls"]
    for _ in range(4):
        A, out = _rows_args()
        A2, out2 = _rows_args()
        r, want = cf(A, out), scale_rows(A2, out2)
        assert type(r) is type(want) and r == want
        np.testing.assert_array_equal(out, out2)
    assert utils.counters["floor_numpy_calls"] - before == 4
    assert cf._floor_info_for(*_rows_args())["path"] == "original"


@pytest.mark.parametrize("cost,path", [((0.0, SLOW, SLOW), "numdyn"),
                                       ((SLOW, 0.0, SLOW), "numpy")])
def test_each_of_three_paths_can_win(delays, cost, path):
    delays(*cost)
    cf = numdyn.compile(scale_rows, options=FLOOR)
    info = until_decided(cf, _rows_args)
    assert info["path"] == path, info
    # the two slow paths were dropped after two calls each, not five
    assert info["decided_at"] <= 2 + 3 * 2 + 1, info
    A, out = _rows_args()
    A2, out2 = _rows_args()
    assert cf(A, out) == scale_rows(A2, out2)
    np.testing.assert_array_equal(out, out2)


def test_function_without_captured_loops_has_two_paths(delays):
    # NumPy's path is the original function itself: no third one is timed
    delays(SLOW, 0.0, 0.0)
    cf = numdyn.compile(no_loop, options=FLOOR)
    x = np.arange(5.0)
    info = until_decided(cf, lambda: (x,))
    assert info["path"] == "numpy", info
    assert info["original_samples"] == 0 and info["original_s"] is None, info
    assert cf(x) == no_loop(x)


def test_all_paths_measured_when_close(delays):
    # equal costs, no path lopsided: a close call, so nine timed calls of
    # each before the decision (after two untimed first calls), not five
    delays(0.01, 0.01, 0.01)
    cf = numdyn.compile(scale_rows, options=FLOOR)
    info = until_decided(cf, _rows_args, limit=60)
    assert info["decided_at"] == 2 + 3 * 9, info
    assert (info["numdyn_samples"], info["numpy_samples"], info["original_samples"]) == (9, 9, 9)


def test_back_substitution_on_the_original_path_is_numpys_to_the_bit(delays):
    delays(SLOW, SLOW, 0.0)
    rng = np.random.default_rng(3)
    n, k = 40, 5
    U = np.triu(rng.random((n, n))) + n * np.eye(n)
    B = rng.random((n, k))
    cf = numdyn.compile(back_subst_multi, options=FLOOR)
    info = until_decided(cf, lambda: (U, B))
    assert info["path"] == "original", info
    np.testing.assert_array_equal(cf(U, B), back_subst_multi(U, B))


def test_explain_names_the_original_path(delays):
    delays(SLOW, SLOW, 0.0)
    cf = numdyn.compile(scale_rows, options=FLOOR)
    until_decided(cf, _rows_args)
    text = str(numdyn.explain(cf, *_rows_args()))
    assert "runs as the original function" in text, text
    assert "of the original" in text, text


def test_test_hook_checks_its_arguments():
    with pytest.raises(ValueError):
        _C._floor_test_delay(-1.0, 0.0, 0.0)
    with pytest.raises(TypeError):
        _C._floor_test_delay("a", 0.0, 0.0)



def test_measuring_again_leaves_a_far_slower_path_alone(floor_times):
    # numdyn's path 10x NumPy's; the original function about as fast as
    # NumPy's path. A lucky call of the original asks for a re-measure:
    # NumPy's path and the original's run again side by side, numdyn's
    # does not (each call of it would cost 9 ms more; such re-measures come
    # every 16, 32, 64... calls between two paths of equal cost)
    MS = 1e-3
    floor_times(numdyn_s=[10 * MS], numpy_s=[1 * MS], original_s=[1.5 * MS])
    cf = numdyn.compile(scale_rows, options=FLOOR)
    info = until_decided(cf, _rows_args)
    assert info["path"] == "numpy" and info["numdyn_samples"] == 2, info
    while info["calls"] + 1 < info["probes"]["original"]:
        cf(*_rows_args())
        info = cf._floor_info_for(*_rows_args())
    floor_times(numdyn_s=[10 * MS], numpy_s=[1 * MS], original_s=[0.5 * MS] + [1.5 * MS] * 20)
    cf(*_rows_args())
    before = cf._floor_info_for(*_rows_args())
    assert before["remeasuring"] and before["path"] == "numpy", before
    after = before
    for _ in range(40):
        if not after["remeasuring"]:
            break
        cf(*_rows_args())
        after = cf._floor_info_for(*_rows_args())
    assert not after["remeasuring"] and after["path"] == "numpy", after
    assert after["original_samples"] - before["original_samples"] >= 2, (before, after)
    assert after["numpy_samples"] - before["numpy_samples"] >= 2, (before, after)
    # numdyn's path was not run again; its estimate stands
    assert after["numdyn_samples"] == 2 and after["numdyn_s"] == pytest.approx(10 * MS), after
    A, out = _rows_args()
    A2, out2 = _rows_args()
    assert cf(A, out) == scale_rows(A2, out2)
    np.testing.assert_array_equal(out, out2)
