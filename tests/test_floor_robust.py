"""The speed floor's statistics (src/runtime/runtime_floor.c): each path's
cost is the median of its recent interleaved timed calls, a close call waits
for more samples, and a decided floor measures the paths again side by side
before it switches on samples taken far apart.

Least squares 20000x10 (bench/programs_real.py) ran at 0.90x NumPy in a quiet
run because the floor judged each path by the second least of five calls:
NumPy's threaded OpenBLAS has lucky calls (1 ms) far below its typical one
(2 ms, its second thread waiting for a core), numdyn's one-thread path is a
steady 1 ms, and the lucky calls chose NumPy.

The times here come from the test hook `_floor_test_times(numdyn, numpy,
original)`: each timed call of a path counts as the next value of its
sequence instead of the clock's reading, so every decision below is the same
on an idle machine and under any load."""
import numpy as np
import pytest

import numdyn
from numdyn import _C

FLOOR = {"floor": True}
MS = 1e-3


@pytest.fixture
def times(floor_times):
    return floor_times


def affine(x):
    return (x * 2.0 + 1.0).sum()


X = np.arange(8.0)


def until_decided(cf, limit=60):
    for _ in range(limit):
        assert cf(X) == affine(X)
        info = cf._floor_info_for(X)
        if info["path"] != "measuring":
            return info
    raise AssertionError(f"floor undecided after {limit} calls: {cf._floor_info()}")


def until_measured(cf, limit=60):
    for _ in range(limit):
        assert cf(X) == affine(X)
        info = cf._floor_info_for(X)
        if not info["remeasuring"]:
            return info
    raise AssertionError(f"floor still measuring again after {limit} calls: {cf._floor_info()}")


def test_a_path_is_judged_by_its_typical_call_not_its_lucky_ones(times):
    # NumPy's path: two lucky calls in five (its second least is 1 ms, its
    # typical call 3 ms); numdyn's a steady 1.2 ms
    times(numdyn_s=[1.2 * MS], numpy_s=[1 * MS, 3 * MS, 3 * MS, 1 * MS, 3 * MS])
    cf = numdyn.compile(affine, options=FLOOR)
    info = until_decided(cf)
    assert info["path"] == "numdyn", info
    assert info["numpy_s"] == pytest.approx(3 * MS) and info["numdyn_s"] == pytest.approx(1.2 * MS)


@pytest.mark.parametrize("spiked", ["numdyn", "numpy"])
def test_a_load_spike_on_two_calls_does_not_move_the_decision(times, spiked):
    # the faster path's calls hit by a spike twice in five (40 ms against
    # 1 ms): its median stays its cost, and it is chosen
    spikes = [1 * MS, 40 * MS, 1 * MS, 40 * MS, 1 * MS]
    steady = [2 * MS]
    if spiked == "numdyn":
        times(numdyn_s=spikes, numpy_s=steady)
    else:
        times(numdyn_s=steady, numpy_s=spikes)
    cf = numdyn.compile(affine, options=FLOOR)
    info = until_decided(cf)
    assert info["path"] == spiked, info
    assert info[spiked + "_s"] == pytest.approx(1 * MS), info


def test_close_paths_wait_for_more_samples(times):
    # within 10%: nine samples of each before the decision, not five
    times(numdyn_s=[1.0 * MS], numpy_s=[1.05 * MS])
    cf = numdyn.compile(affine, options=FLOOR)
    info = until_decided(cf)
    assert (info["numdyn_samples"], info["numpy_samples"]) == (9, 9), info
    assert info["decided_at"] == 2 + 2 * 9, info
    assert info["path"] == "numdyn", info


def test_clear_paths_decide_on_five_samples(times):
    times(numdyn_s=[1.0 * MS], numpy_s=[1.5 * MS])
    cf = numdyn.compile(affine, options=FLOOR)
    info = until_decided(cf)
    assert (info["numdyn_samples"], info["numpy_samples"]) == (5, 5), info
    assert info["decided_at"] == 2 + 2 * 5 and info["path"] == "numdyn", info


def _to_probe(cf, path):
    """Calls up to (not including) the next probe of path; its info."""
    info = cf._floor_info_for(X)
    while info["calls"] + 1 < info["probes"][path]:
        assert cf(X) == affine(X)
        info = cf._floor_info_for(X)
    return info


def test_a_lucky_probe_measures_again_and_keeps_the_decision(times):
    times(numdyn_s=[3 * MS], numpy_s=[1 * MS])
    cf = numdyn.compile(affine, options=FLOOR)
    info = until_decided(cf)
    assert info["path"] == "numpy", info
    before = _to_probe(cf, "numdyn")
    # numdyn's probe is one lucky call; its calls after it are 3 ms again
    times(numdyn_s=[0.5 * MS] + [3 * MS] * 20, numpy_s=[1 * MS])
    cf(X)
    info = cf._floor_info_for(X)
    # the decision stands while the paths are measured again
    assert info["remeasuring"] and info["path"] == "numpy", info
    after = until_measured(cf)
    assert after["path"] == "numpy" and after["decided_at"] > info["decided_at"], after
    # measured again side by side: fresh samples of both paths
    assert after["numdyn_samples"] - before["numdyn_samples"] >= 2, (before, after)
    assert after["numpy_samples"] - before["numpy_samples"] >= 2, (before, after)
    assert after["numdyn_s"] == pytest.approx(3 * MS), after


def test_a_path_that_became_faster_wins_after_measuring_again(times):
    times(numdyn_s=[3 * MS], numpy_s=[1 * MS])
    cf = numdyn.compile(affine, options=FLOOR)
    assert until_decided(cf)["path"] == "numpy"
    _to_probe(cf, "numdyn")
    times(numdyn_s=[0.5 * MS], numpy_s=[1 * MS])
    cf(X)
    assert cf._floor_info_for(X)["remeasuring"]
    after = until_measured(cf)
    assert after["path"] == "numdyn", after
    assert after["numdyn_s"] == pytest.approx(0.5 * MS) and after["numpy_s"] == pytest.approx(1 * MS)


def test_test_times_are_checked():
    with pytest.raises(ValueError):
        _C._floor_test_times([-1.0], [], [])
    with pytest.raises(ValueError):
        _C._floor_test_times([0.001] * 65, [], [])
    with pytest.raises(TypeError):
        _C._floor_test_times(1.0, [], [])
    _C._floor_test_times([], [], [])
