"""The speed floor (numdyn.config.floor, src/floor.h): per argument signature a
compiled function times its warm numdyn calls against plain NumPy calls of the
original function and runs the faster one. The suite runs with the floor off
(conftest.py); these tests turn it on per function."""
import os

import numpy as np
import pytest

import numdyn
from numdyn import utils

from cc_wrap import failing_cc

FLOOR = {"floor": True}


def _shift(y):
    return y + 1.0


def tiny_steps(x, n):
    # n graph breaks on 3-element arrays: capture costs far more than NumPy's
    # own ~1 us per call, so plain NumPy must win by a wide margin (the call
    # of a Python function keeps the loop from loop capture, which would
    # compile it to C and win)
    acc = 0.0
    for i in range(n):
        y = _shift(x * (i + 1))
        acc += float(y.sum())
    return acc


def fused(x):
    # one fused kernel over 2e6 elements against NumPy's eight passes over
    # 16 MB temporaries (memory-bound: no transcendental functions, whose
    # speed depends on SLEEF being installed and on NumPy's own SIMD loops)
    return (((x * 2.0 + 1.0) * x - 3.0) * 0.5 + x) * (x + 0.25) - 1.5


# the paths that run the function untraced: NumPy's (its captured loops as
# C, its helpers' calls reaching their captured copies) and the original
# function as written (test_floor_original.py)
PLAIN = ("numpy", "original")


def plain_s(info):
    return min(t for t in (info["numpy_s"], info["original_s"]) if t is not None)


def samples(info):
    return info["numdyn_samples"] + info["numpy_samples"] + info["original_samples"]


def calls_until_decided(cf, args, limit=40):
    for i in range(limit):
        cf(*args)
        info = cf._floor_info_for(*args)
        if info and info["path"] != "measuring":
            return info
    raise AssertionError(f"floor undecided after {limit} calls: {cf._floor_info()}")


def test_slow_capture_runs_as_numpy():
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    before = utils.counters["floor_numpy_calls"]
    info = calls_until_decided(cf, (x, 200))
    assert info["path"] in PLAIN, info
    assert info["numdyn_s"] > plain_s(info)
    assert "numpy.float64[3]" in info["signature"]
    for _ in range(5):
        assert cf(x, 200) == tiny_steps(x, 200)
    assert utils.counters["floor_numpy_calls"] > before


def test_lengths_of_one_size_class_share_a_decision():
    # ragged data: the function is called on segments of 48 lengths (16..63
    # elements, one size class). Signatures keyed by exact length never
    # decided (8 slots for 48 lengths: every call ran numdyn's capture, 0.44x
    # NumPy); by size class the lengths share one slot, which goes to NumPy
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    segs = [np.arange(float(n)) for n in range(16, 64)]
    before = utils.counters["floor_numpy_calls"]
    for i in range(240):
        s = segs[(i * 7) % len(segs)]
        assert cf(s, 30) == tiny_steps(s, 30)
    info = cf._floor_info()
    assert len(info) == 1 and info[0]["path"] in PLAIN, info
    assert utils.counters["floor_numpy_calls"] - before > 150, info
    # another size class and another dtype are measured apart
    cf(np.arange(300.0), 30)
    cf(np.arange(20, dtype=np.float32), 30)
    assert len(cf._floor_info()) == 3, cf._floor_info()


def sum_parts(parts):
    acc = 0.0
    for p in parts:
        acc += float(_shift(p * 2.0).sum())
    return acc


def test_list_lengths_of_one_class_share_a_decision():
    # a list of 16..63 small arrays (the pieces of ragged data): one slot
    cf = numdyn.compile(sum_parts, options=FLOOR)
    pieces = [np.arange(3.0) + k for k in range(64)]
    before = utils.counters["floor_numpy_calls"]
    for i in range(240):
        parts = pieces[:16 + (i * 7) % 48]
        assert cf(parts) == sum_parts(parts)
    info = cf._floor_info()
    assert len(info) == 1 and info[0]["path"] in PLAIN, info
    assert utils.counters["floor_numpy_calls"] - before > 150, info


def test_fast_kernels_stay_compiled():
    x = np.linspace(0.0, 1.0, 2_000_000)
    cf = numdyn.compile(fused, options=FLOOR)
    info = calls_until_decided(cf, (x,))
    assert info["path"] == "numdyn", info
    np.testing.assert_allclose(cf(x), fused(x), rtol=1e-13)


def test_both_paths_give_numpys_answer_and_mutate_once():
    def update(u, c):
        # in place: each call must run exactly once, whichever path runs it
        for _ in range(30):
            u[1:-1] += c * (u[2:] - 2 * u[1:-1] + u[:-2])
            if float(u.max()) > 1e6:
                break
        return u.sum()

    cf = numdyn.compile(update, options=FLOOR)
    u_nd = np.linspace(0.0, 1.0, 8) ** 2
    u_np = u_nd.copy()
    for _ in range(20):
        r_nd = cf(u_nd, 0.1)
        r_np = update(u_np, 0.1)
        assert type(r_nd) is type(r_np)
        np.testing.assert_allclose(r_nd, r_np, rtol=1e-12)
        np.testing.assert_allclose(u_nd, u_np, rtol=1e-12)
    paths = {e["path"] for e in cf._floor_info()}
    assert paths <= {"numpy", "original", "numdyn"} and paths, cf._floor_info()


def test_signatures_are_measured_apart():
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    a, b = np.arange(3.0), np.arange(4, dtype=np.float32)
    for _ in range(4):
        cf(a, 5)
        cf(b, 5)
    sigs = sorted(e["signature"] for e in cf._floor_info())
    assert len(sigs) == 2 and any("float32[4]" in s for s in sigs), sigs
    assert all(e["calls"] == 4 for e in cf._floor_info())


def test_exceptions_are_numpys_on_both_paths():
    def bad(x, n):
        acc = 0.0
        for i in range(n):
            acc += float(x[i])
        return acc

    cf = numdyn.compile(bad, options=FLOOR)
    x = np.arange(3.0)
    for _ in range(12):  # through warm-up, measuring and the decided path
        assert cf(x, 3) == bad(x, 3)
        with pytest.raises(IndexError, match="index 3 is out of bounds"):
            cf(x, 4)


def test_explain_reports_the_choice():
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    assert numdyn.explain(cf)(x, 50).floor is None  # never called with these yet
    info = calls_until_decided(cf, (x, 50))
    out = numdyn.explain(cf)(x, 50)
    # which path wins at 50 steps is the machine's call (a recorded call
    # replays its element reads: the own path can win); explain says which
    assert out.floor["path"] == info["path"] in ("numpy", "original", "numdyn")
    text = str(out)
    what = {"numpy": "runs as plain NumPy", "original": "runs as the original function",
            "numdyn": "runs under numdyn"}[info["path"]]
    assert what in text and "Speed Floor: " in text and "numpy.float64[3]" in text


def test_floor_off_by_option_and_config(monkeypatch):
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options={"floor": False})
    for _ in range(10):
        cf(x, 20)
    assert cf._floor_info() == [] and cf._floor_info_for(x, 20) is None
    monkeypatch.setattr(numdyn.config, "floor", True)
    on = numdyn.compile(tiny_steps)
    monkeypatch.setattr(numdyn.config, "floor", False)
    off = numdyn.compile(tiny_steps)
    on(x, 3)
    off(x, 3)
    assert len(on._floor_info()) == 1 and off._floor_info() == []


def test_custom_backend_has_no_floor():
    cf = numdyn.compile(tiny_steps, backend=lambda graph, example_inputs: None,
                        options=FLOOR)
    assert cf._floor_info() == []


def test_reset_forgets_measurements():
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    calls_until_decided(cf, (x, 100))
    numdyn.reset()
    cf(x, 100)
    (entry,) = cf._floor_info()
    assert entry["calls"] == 1 and entry["path"] == "measuring"


# ------------------------------------------- the floor's cost model (issue 13)

def test_decision_sets_a_probe_gap_that_bounds_the_probes_cost():
    # a capture several times slower than NumPy: once decided, the path not
    # chosen is probed after max(64, (numdyn/numpy - 1) / 2%) calls, so its
    # probes cost at most ~2% of the time; between probes numdyn never runs
    # (no flush, no graph), the calls are NumPy's
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    info = calls_until_decided(cf, (x, 200))
    assert info["path"] in PLAIN, info
    assert info["decided_at"] == info["calls"]
    # every call after the 2 untimed warm-up calls was timed on one path
    assert samples(info) == info["calls"] - 2
    assert info["numdyn_samples"] >= 2 and info[info["path"] + "_samples"] >= 2
    # each path not chosen gets its own gap
    chosen = info[info["path"] + "_s"]
    for p in ("numdyn",) + PLAIN:
        if p == info["path"] or info[p + "_s"] is None:
            continue
        want = (info[p + "_s"] / chosen - 1.0) / 0.02
        gap = int(want) + 1 if want > 64 else 64
        assert info["probes"][p] - info["decided_at"] == gap, (p, info)
    assert info["next_probe"] == min(v for v in info["probes"].values() if v), info
    gap = info["probes"]["numdyn"] - info["decided_at"]
    before = dict(utils.counters)
    quiet = min(gap - 1, 100)
    for _ in range(quiet):
        assert cf(x, 200) == tiny_steps(x, 200)
    after = dict(utils.counters)
    # numdyn runs only as a timed sample: NumPy's path and the original
    # function cost about the same here (tiny_steps' loop is captured), so
    # noise may ask for a re-measure, which times numdyn's path again when
    # its estimate is within 10% of the best (runtime_floor.c remeasure)
    ran = quiet - (after["floor_numpy_calls"] - before["floor_numpy_calls"])
    now = cf._floor_info_for(x, 200)
    assert ran == now["numdyn_samples"] - info["numdyn_samples"], (ran, info, now)
    if ran == 0:
        assert after["flushes"] == before["flushes"] and after["graphs"] == before["graphs"]


def test_probe_call_runs_numdyn_and_gap_doubles():
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    info = calls_until_decided(cf, (x, 200))
    assert info["path"] in PLAIN, info
    # up to numdyn's probe (a probe of the other plain path may switch the
    # choice between the two and set the gaps anew: read it on each call)
    cur = info
    # (nor while the paths are measured again: no probes then)
    while cur["remeasuring"] or cur["calls"] + 1 < cur["probes"]["numdyn"]:
        cf(x, 200)
        cur = cf._floor_info_for(x, 200)
    first = cur["probes"]["numdyn"]
    f0 = utils.counters["flushes"]
    assert cf(x, 200) == tiny_steps(x, 200)  # the probe: numdyn's own path
    assert utils.counters["flushes"] > f0
    after = cf._floor_info_for(x, 200)
    assert after["numdyn_samples"] == cur["numdyn_samples"] + 1
    if after["path"] == cur["path"] == info["path"] and first == info["probes"]["numdyn"]:
        assert after["probes"]["numdyn"] == first + (first - info["decided_at"])


def test_explain_reports_when_and_on_what_the_floor_decided():
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    info = calls_until_decided(cf, (x, 50))
    text = str(numdyn.explain(cf)(x, 50))
    assert f"decided at call {info['decided_at']}" in text
    assert f"probed next at call {info['next_probe']}" in text


def _iterated(x, n):
    # one flush per iteration (float(...)); x is read by every iteration, so
    # a flush's ancestors reach back to the capture's first node
    acc = 0.0
    y = x
    for i in range(n):
        y = y * 0.5 + x
        acc += float(y.sum())
    return acc


def test_flush_cost_does_not_grow_with_the_capture(monkeypatch):
    # (loop capture runs this loop as C since session 26, float() of an
    # array a step: this test is of the tracer's flushes)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    # the flushes' ancestor walks visit what each flush needs: the same per
    # flush after 50 or 400 iterations (a sweep down to x's node grew with
    # the capture: quadratic in the trip count)
    per_flush = []
    x = np.arange(3.0)
    for n in (50, 400):
        cf = numdyn.compile(_iterated, options={"floor": False})
        cf(x, n)
        before = dict(utils.counters)
        assert cf(x, n) == _iterated(x, n)
        after = dict(utils.counters)
        flushes = after["flushes"] - before["flushes"]
        assert n <= flushes <= n + 1  # one per iteration, and the return's
        per_flush.append((after["flush_nodes"] - before["flush_nodes"]) / flushes)
    assert per_flush[1] <= per_flush[0] * 1.05, per_flush


def test_long_capture_with_caller_writes_gives_numpys_answer():
    # caller arrays written inside a long flushing loop: the write log and
    # write-backs stay exact when most flushes have no pending caller write
    def f(a, b, n):
        s = 0.0
        for i in range(n):
            t = b * (i + 1)
            s += float(t[i % 3])
            if i % 7 == 0:
                a[i % 4] = s
        return s

    cf = numdyn.compile(f, options={"floor": False})
    for n in (10, 60):
        a1, a2 = np.zeros(4), np.zeros(4)
        b = np.arange(3.0) + 0.5
        assert cf(a1, b, n) == f(a2, b, n)
        np.testing.assert_array_equal(a1, a2)


def _shifted_updates(a, s, n):
    # slice bounds and a scalar that change every iteration
    for k in range(1, n):
        a[k:] = a[k:] * s + a[:-k] * (1.0 / k)
    return a


def test_changed_slice_bounds_and_scalars_reuse_kernels():
    a = np.linspace(0.0, 1.0, 64)
    cf = numdyn.compile(_shifted_updates, options={"floor": False})
    got = cf(a.copy(), 0.5, 40)
    np.testing.assert_allclose(got, _shifted_updates(a.copy(), 0.5, 40), rtol=1e-12)
    before = dict(utils.counters)
    for s, n in ((0.25, 40), (0.75, 30), (1.5, 50)):
        got = cf(a.copy(), s, n)
        np.testing.assert_allclose(got, _shifted_updates(a.copy(), s, n), rtol=1e-12)
    after = dict(utils.counters)
    # new bounds and scalars are parameters of the kernels already built
    assert after["kernels_compiled"] == before["kernels_compiled"], (before, after)


# ------------------------------------- background compiles (first calls)

# (conftest.py background_compiles: a private cache, no compile budget)

def _first_call_program(a, s):
    return np.arctan(np.cosh(a * s) + 0.25) * np.log1p(np.abs(a)) - s


def test_first_call_waits_for_no_compiler(background_compiles):
    a = np.linspace(-1.0, 1.0, 1001)
    cf = numdyn.compile(_first_call_program, options={"floor": False})
    c0 = dict(utils.counters)
    r1 = cf(a, 0.5)  # NumPy runs the graph; the compiler runs meanwhile
    c1 = dict(utils.counters)
    np.testing.assert_allclose(r1, _first_call_program(a, 0.5), rtol=1e-13)
    assert c1["compiling_runs"] - c0["compiling_runs"] >= 1
    assert c1["kernels_compiled"] == c0["kernels_compiled"]
    assert c1["kernel_runs"] == c0["kernel_runs"]
    utils.wait_compiles()
    r2 = cf(a, 0.75)  # finds its kernels built: runs compiled
    c2 = dict(utils.counters)
    np.testing.assert_allclose(r2, _first_call_program(a, 0.75), rtol=1e-13)
    assert c2["kernels_compiled"] > c1["kernels_compiled"]
    assert c2["kernel_runs"] > c1["kernel_runs"]
    assert c2["compiling_runs"] == c1["compiling_runs"]
    r3 = cf(a, 2.0)
    np.testing.assert_allclose(r3, _first_call_program(a, 2.0), rtol=1e-13)
    assert dict(utils.counters)["kernels_compiled"] == c2["kernels_compiled"]


def test_background_compile_error_raises_on_the_call_that_finds_it(background_compiles, tmp_path,
                                                                    monkeypatch):
    # several times in one process: a compiler that fails at once ended
    # before the first call noted the compile count, and the graph then
    # looked still compiling forever (NumPy ran it, the CompileError never
    # came: 28 of 30 rounds before the fix)
    import warnings
    for k in range(5):
        monkeypatch.setenv("CC", failing_cc(tmp_path, name=f"badcc{k}"))
        monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / f"cache{k}"))
        utils.reset()
        f = numdyn.compile(lambda a: np.tan(a) * 3.25 + 2.0, options={"floor": False})
        a = np.arange(4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "no SLEEF" from the fake compiler
            np.testing.assert_allclose(f(a), np.tan(a) * 3.25 + 2.0, rtol=1e-13)
            utils.wait_compiles()
            with pytest.raises(utils.CompileError, match="the compiler says no"):
                f(a)

def test_floor_does_not_time_calls_that_ran_while_compiling(background_compiles):
    a = np.linspace(0.0, 1.0, 257)
    cf = numdyn.compile(_first_call_program, options=FLOOR)
    c0 = utils.counters["compiling_runs"]
    n0 = utils.counters["floor_numpy_calls"]
    for _ in range(4):  # microseconds each: the compiler (a process) is still running
        np.testing.assert_allclose(cf(a, 1.5), _first_call_program(a, 1.5), rtol=1e-13)
    # the first call ran its graphs with NumPy; the next ones, finding the
    # kernels still compiling, run the function itself (not its graphs op
    # by op, up to 100x slower for scalar work)
    assert utils.counters["compiling_runs"] - c0 == 1
    assert utils.counters["floor_numpy_calls"] - n0 == 3
    info = cf._floor_info_for(a, 1.5)
    # NumPy ran numdyn's graphs: no call was a sample of numdyn's cost
    assert info["path"] == "measuring" and info["numdyn_samples"] == 0, info
    utils.wait_compiles()
    # the call that first runs the built kernels is a warm-up (it loads
    # them); the ones after it are samples
    for _ in range(4):
        np.testing.assert_allclose(cf(a, 1.5), _first_call_program(a, 1.5), rtol=1e-13)
    info = cf._floor_info_for(a, 1.5)
    assert info["numdyn_samples"] + info["numpy_samples"] == 3, info


def test_wait_compiles_builds_queued_units_too(background_compiles, monkeypatch):
    # more units than compilers at once (one per core): the others wait
    # their turn, and wait_compiles() returns only when every one is built.
    # (the lambdas' helper _chain is numdyn's: with loop capture its loop
    # would be one more region compiling, counted by the first call)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    a = np.linspace(0.1, 0.9, 300)
    # a distinct structure per function: a chain of its own length
    fns = [numdyn.compile(lambda x, n=n: _chain(x, n), options={"floor": False}) for n in range(1, 6)]
    c0 = dict(utils.counters)
    for n, f in enumerate(fns, 1):
        np.testing.assert_allclose(f(a), _chain(a, n), rtol=1e-13)
    c1 = dict(utils.counters)
    assert c1["compiling_runs"] - c0["compiling_runs"] == len(fns)
    utils.wait_compiles()
    for n, f in enumerate(fns, 1):
        np.testing.assert_allclose(f(a), _chain(a, n), rtol=1e-13)
    c2 = dict(utils.counters)
    assert c2["compiling_runs"] == c1["compiling_runs"], (c1, c2)
    assert c2["kernels_compiled"] - c1["kernels_compiled"] >= len(fns)


def _chain(x, n):
    y = np.sin(x)
    for _ in range(n):
        y = np.sqrt(y * y + 0.5)
    return y


def test_decided_calls_are_sampled_not_all_timed():
    # once decided, the chosen path's cost is followed on one call in 8:
    # timing every call cost a third of a warm call of a small function
    # (which path wins is not this test's business: tiny_steps' traced path
    # now costs within ~20% of NumPy's, so a decision may be revisited when
    # a background compile lands or load moves a sample -- CI saw the path
    # flip once; the samples of both paths are counted)
    x = np.arange(3.0)
    cf = numdyn.compile(tiny_steps, options=FLOOR)
    info = calls_until_decided(cf, (x, 200))
    path = info["path"]
    n0 = samples(info)
    before = utils.counters["floor_numpy_calls"]
    for _ in range(32):
        assert cf(x, 200) == tiny_steps(x, 200)
    after = cf._floor_info_for(x, 200)
    taken = samples(after) - n0
    assert 2 <= taken <= 8, (info, after)   # one call in 8, a probe or two: not 32
    if path in PLAIN and after["path"] in PLAIN and \
            after["numdyn_samples"] == info["numdyn_samples"]:
        # untimed calls still count as NumPy's
        assert utils.counters["floor_numpy_calls"] - before == 32


def test_a_call_signs_its_arguments_once(floor_times):
    # admission (which program) and the floor (which path) key on one pass
    # over the arguments (guards' nd_callsig): a call the floor runs as NumPy
    # signed them twice, and a call run as numdyn's path does not sign them
    # again either
    floor_times(numdyn_s=[5e-3], numpy_s=[1e-3])
    x = np.arange(6.0).reshape(2, 3)
    args = (x, [x, 2.0], "s", True, None, 3)
    def f(a, pair, tag, flag, nothing, k):
        return a * k + pair[1] if flag else a
    cf = numdyn.compile(f, options=FLOOR)
    for _ in range(16):
        np.testing.assert_array_equal(cf(*args), f(*args))
    assert cf._floor_info_for(*args)["path"] == "numpy"
    before = dict(utils.counters)
    for _ in range(10):
        np.testing.assert_array_equal(cf(*args), f(*args))
    after = dict(utils.counters)
    assert after["arg_signatures"] - before["arg_signatures"] == 10, (before, after)
    assert after["floor_numpy_calls"] - before["floor_numpy_calls"] >= 9


def test_cost_key_classes_sizes_and_keeps_values_that_pick_code(floor_times):
    # the floor's key from the shared pass: sizes by class (a factor of 4),
    # strings and bools by value, other scalars by type
    floor_times(numdyn_s=[5e-3], numpy_s=[1e-3])
    def g(a, mode, s):
        return a * s if mode == "mul" else a + s
    cf = numdyn.compile(g, options=FLOOR)
    a, b, c = np.ones(100), np.ones(120), np.ones(1000)
    for _ in range(16):
        cf(a, "mul", 2.0)
    info = cf._floor_info_for(a, "mul", 2.0)
    assert info["path"] == "numpy", info
    assert cf._floor_info_for(b, "mul", 7.5) == {**info, "signature": info["signature"]}
    assert cf._floor_info_for(c, "mul", 2.0) is None      # another size class
    assert cf._floor_info_for(a, "add", 2.0) is None      # another string
    assert cf._floor_info_for(a, "mul", 2) is None        # another type
    np.testing.assert_array_equal(cf(b, "add", 1.0), g(b, "add", 1.0))
