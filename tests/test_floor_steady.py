"""The speed floor decides on warm calls only (issue 13 point 1): a call of
numdyn's path that compiled, loaded or waited for kernels -- or ran graphs
around a compile still pending -- is no sample of its cost, and once a
compile lands the own path is timed again at once (src/runtime/runtime_floor.c).
"""
import numpy as np
import pytest

import numdyn
from numdyn import utils

FLOOR = {"floor": True}


def _chain(x, k):
    # memory-bound: one fused kernel against NumPy's 2 + 2k passes over
    # 16 MB temporaries; k changes the graph's structure (a scalar value
    # would not: it is a kernel parameter), so a new k compiles new kernels
    y = x * 0.5
    for _ in range(k):
        y = y * 1.0001 + 0.25
    return (y - x) * (x + 0.125)


def test_calls_that_compile_are_not_samples():
    x = np.linspace(0.0, 1.0, 2_000_000)
    cf = numdyn.compile(_chain, options=FLOOR)
    for _ in range(2):  # the untimed first calls
        cf(x, 3)
    c0 = dict(utils.counters)
    # every call a new structure: each of numdyn's calls waits for its
    # compiler (the suite's budget is unbounded) -- 0.1-1 s against NumPy's
    # few ms, which sent the function to NumPy after two such calls (four
    # such calls, twice the early decision's two samples, show it)
    for k in range(4, 8):
        np.testing.assert_allclose(cf(x, k), _chain(x, k), rtol=1e-12)
    c1 = dict(utils.counters)
    assert c1["kernels_compiled"] + c1["disk_cache_hits"] > \
        c0["kernels_compiled"] + c0["disk_cache_hits"], (c0, c1)
    info = cf._floor_info_for(x, 3)
    assert info["numdyn_samples"] == 0, info
    assert info["path"] == "measuring", info
    # warm calls (kernels built): numdyn's one kernel wins and is chosen
    for _ in range(30):
        np.testing.assert_allclose(cf(x, 5), _chain(x, 5), rtol=1e-12)
        info = cf._floor_info_for(x, 5)
        if info["path"] != "measuring":
            break
    assert info["path"] == "numdyn", info
    assert info["numdyn_s"] < info["numpy_s"], info


def test_set_aside_calls_are_bounded():
    # a program that compiles on every call pays that on every call: after
    # 16 such calls they are its samples
    x = np.linspace(0.0, 1.0, 1001)
    cf = numdyn.compile(_chain, options=FLOOR)
    for k in range(1, 40):
        cf(x, k)
        info = cf._floor_info_for(x, k)
        if info["numdyn_samples"]:
            break
    assert info["numdyn_samples"] >= 1, info


def _shift(y):
    return y + 1.0


def _slow_then(x, n, k):
    # n graph breaks on 3 elements: numdyn's path far slower than NumPy's
    # (the call of a Python function keeps the loop from loop capture); k
    # structures the tail graph (new k: new kernels)
    acc = 0.0
    for i in range(n):
        acc += float(_shift(x * (i + 1)).sum())
    z = x
    for _ in range(k):
        z = np.sqrt(z + 1.0)
    return acc + float(z.sum())


def test_own_path_is_retimed_once_its_compile_lands(background_compiles, monkeypatch):
    # (loop capture runs this loop as C since session 26, its helper taking
    # a 1-D array inlined: this test is of the tracer's graph breaks and the floor's timing)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    x = np.arange(3.0)
    cf = numdyn.compile(_slow_then, options=FLOOR)
    cf(x, 40, 1)
    utils.wait_compiles()
    for _ in range(60):
        cf(x, 40, 1)
        info = cf._floor_info_for(x, 40, 1)
        if info["path"] != "measuring":
            break
    assert info["path"] in ("numpy", "original"), info
    # up to numdyn's probe: NumPy runs
    while info["calls"] + 1 < info["probes"]["numdyn"]:
        cf(x, 40, 1)
        info = cf._floor_info_for(x, 40, 1)
    # the probe finds a new tail graph: it compiles in the background, NumPy
    # runs that graph; the calls after it run the function itself
    c0 = dict(utils.counters)
    assert cf(x, 40, 2) == _slow_then(x, 40, 2)
    c1 = dict(utils.counters)
    assert c1["compiling_runs"] > c0["compiling_runs"], (c0, c1)
    assert cf(x, 40, 2) == _slow_then(x, 40, 2)
    c2 = dict(utils.counters)
    assert c2["floor_numpy_calls"] == c1["floor_numpy_calls"] + 1
    utils.wait_compiles()
    # the compile landed: numdyn's path runs on the very next call (it loads
    # the kernels: set aside) and the one after (a sample), not a doubled
    # gap of hundreds of calls later
    before = cf._floor_info_for(x, 40, 2)["numdyn_samples"]
    for _ in range(2):
        k0 = utils.counters["kernel_runs"]
        n0 = utils.counters["floor_numpy_calls"]
        assert cf(x, 40, 2) == _slow_then(x, 40, 2)
        assert utils.counters["kernel_runs"] > k0
        assert utils.counters["floor_numpy_calls"] == n0
    assert cf._floor_info_for(x, 40, 2)["numdyn_samples"] == before + 1


def _compile_ends_inside(a):
    b = np.sin(a) * 2.0 + 1.0
    s = float(b.sum())       # runs with NumPy: its kernels still compile
    utils.wait_compiles()    # and their compile ends within this same call
    return s


def test_a_compile_that_ended_within_the_call_is_not_pending_forever():
    # the slot was marked "kernels still compiling" at the call's end, to be
    # cleared by the next compile to end; none was left to end, and every
    # later call ran with NumPy (its kernels never loaded)
    old = numdyn.config.compile_budget
    numdyn.config.compile_budget = 0.0
    try:
        cf = numdyn.compile(_compile_ends_inside, options=FLOOR)
        x = np.linspace(0.0, 1.0, 1000)
        k0 = utils.counters["kernel_runs"]
        for _ in range(12):
            assert cf(x) == pytest.approx(_compile_ends_inside(x), rel=1e-12)
        assert utils.counters["kernel_runs"] > k0
    finally:
        numdyn.config.compile_budget = old
