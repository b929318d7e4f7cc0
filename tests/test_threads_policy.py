"""The runtime's per-kernel choice between a kernel's OpenMP team and the
calling thread alone (src/runtime/par.h, numdyn.config.adaptive_threads).

Another library's thread pool (OpenBLAS spinning after a matmul) holding the
cores is not reproducible on demand, so the tests stand it in with the
runtime's test hook `_threads_test_delay(team_s, alone_s)`, which adds those
seconds to each timed run of a way: the choice must follow the measured
times, be visible in the counters and numdyn.explain, and both ways must
give the same values, bit for bit, as each other and NumPy's."""
import numpy as np
import pytest

import numdyn
from numdyn import _C, utils

NOFLOOR = {"floor": False}
N = 1 << 17  # 131072 float64 elements: far above the team's threshold


@pytest.fixture
def delay():
    def set_(team, alone):
        _C._threads_test_delay(team, alone)
    yield set_
    _C._threads_test_delay(0.0, 0.0)


def _alone():
    return utils.counters["kernel_runs_alone"]


def _calls(cf, args, n):
    out = None
    for _ in range(n):
        out = cf(*args)
    return out


def _choices(cf, args):
    _C._threads_log(True)
    try:
        cf(*args)
    finally:
        log = _C._threads_log(False)
    return log


def poly(x):
    return ((x * 2.0 + 1.0) * x - 3.0) * np.sqrt(x + 0.5)


def test_team_held_elsewhere_runs_alone(delay):
    x = np.random.default_rng(0).random(N)
    cf = numdyn.compile(poly, options=NOFLOOR)
    want = poly(x)
    np.testing.assert_allclose(cf(x), want, rtol=1e-12)
    delay(0.02, 0.0)  # every team run waits 20 ms for a core
    a0 = _alone()
    _calls(cf, (x,), 12)
    log = _choices(cf, (x,))
    assert [k["choice"] for k in log] == ["alone"]
    assert log[0]["alone_runs"] == 1 and log[0]["team_runs"] == 0
    assert log[0]["team_s"] > log[0]["alone_s"]
    assert _alone() - a0 >= 8
    # the calls that ran alone gave NumPy's values
    np.testing.assert_allclose(cf(x), want, rtol=1e-12)


def exp_mix(x):
    return np.exp(-x) * x + 1.0


def test_free_cores_keep_the_team(delay):
    x = np.random.default_rng(1).random(N)
    cf = numdyn.compile(exp_mix, options=NOFLOOR)
    cf(x)
    delay(0.0, 0.05)  # running alone is what is slow
    a0 = _alone()
    _calls(cf, (x,), 12)
    log = _choices(cf, (x,))
    assert [k["choice"] for k in log] == ["team"]
    assert log[0]["team_runs"] == 1
    # measuring tried alone only until it was slower: once when 4x slower
    # (50 ms against well under 1 ms), at most 4 times (ND_PAR_NSAMP) when
    # the team's runs varied under load
    assert 1 <= _alone() - a0 <= 4


def lsq_like(X, y):
    # matmuls (NumPy's BLAS) between kernels above the team's threshold,
    # and column reductions in row chunks
    G = X.T @ X
    r = y - X @ np.linalg.solve(G, X.T @ y)
    s = np.tanh(X * 0.5) * r[:, None]
    return s.sum(axis=0), (r * r).sum(), s.mean(axis=1)


@pytest.mark.parametrize("way", ["team", "alone"])
def test_both_ways_give_the_same_bits(delay, way):
    r = np.random.default_rng(2)
    X, y = r.standard_normal((20000, 10)), r.standard_normal(20000)
    cf = numdyn.compile(lsq_like, options=NOFLOOR)
    want = lsq_like(X, y)
    first = cf(X, y)
    delay(0.02, 0.0) if way == "alone" else delay(0.0, 0.05)
    got = _calls(cf, (X, y), 12)
    log = _choices(cf, (X, y))
    assert log and all(k["choice"] == way for k in log)
    for g, f, w in zip(got, first, want):
        np.testing.assert_array_equal(g, f)  # the same bits whichever way ran
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        assert g.dtype == w.dtype and np.shape(g) == np.shape(w)


def sq_plus(x):
    return x * x + 2.0


def test_off_switch(delay):
    x = np.random.default_rng(3).random(N)
    cf = numdyn.compile(sq_plus, options=NOFLOOR)
    cf(x)
    numdyn.config.adaptive_threads = False
    try:
        delay(0.02, 0.0)
        a0 = _alone()
        _calls(cf, (x,), 10)
        assert _alone() == a0
        assert _choices(cf, (x,)) == []  # nothing timed, nothing chosen
    finally:
        numdyn.config.adaptive_threads = True
    np.testing.assert_array_equal(cf(x), sq_plus(x))


def small(x):
    return x * 3.0 - 1.0


def test_small_kernels_are_not_timed(delay):
    # below the team's threshold a kernel runs alone anyway: no measuring
    x = np.random.default_rng(4).random(1000)
    cf = numdyn.compile(small, options=NOFLOOR)
    delay(0.02, 0.0)
    _calls(cf, (x,), 5)
    assert _choices(cf, (x,)) == []


def cubic(x):
    return x * x * x - x


def test_new_size_measures_again(delay):
    cf = numdyn.compile(cubic, options=NOFLOOR)
    x = np.random.default_rng(5).random(N)
    cf(x)
    delay(0.02, 0.0)
    _calls(cf, (x,), 12)
    assert _choices(cf, (x,))[0]["choice"] == "alone"
    # 16x the elements, one program (sizes are run-time values): the team's
    # speedup depends on size, so the choice is measured again
    delay(0.0, 0.05)
    big = np.random.default_rng(6).random(16 * N)
    _calls(cf, (big,), 12)
    assert _choices(cf, (big,))[0]["choice"] == "team"
    np.testing.assert_array_equal(cf(big), cubic(big))


def test_explain_reports_the_choice(delay):
    x = np.random.default_rng(7).random(N)

    def f(x):
        return np.log1p(x) * 3.0 + x

    cf = numdyn.compile(f, options=NOFLOOR)
    cf(x)
    delay(0.02, 0.0)
    _calls(cf, (x,), 12)
    out = numdyn.explain(cf)(x)
    assert len(out.threads) == 1 and out.threads[0]["choice"] == "alone"
    text = str(out)
    assert "Threads: 1 kernels big enough for the OpenMP team: 0 run with the team, 1 alone" in text
    np.testing.assert_allclose(out.result, f(x), rtol=1e-12)


def test_test_hook_checks_its_arguments():
    with pytest.raises(ValueError):
        _C._threads_test_delay(-1.0, 0.0)
    with pytest.raises(TypeError):
        _C._threads_test_delay("a", 0.0)


def test_every_parallel_loop_asks_the_runtime(caplog):
    # every OpenMP region of generated code -- pointwise tasks, row tasks of
    # a tall narrow array, chunked column reductions, row kernels -- is
    # guarded by ND_TEAM(E), the runtime's team/alone bit
    import logging

    def kernels(x, t):
        return np.exp(x) * 2.0, (t - t.mean(0)) / 3.0, t.sum(0), np.exp(t - t.max(1, keepdims=True)).sum(1)

    r = np.random.default_rng(8)
    x, t = r.random(N), r.random((50000, 8))
    cf = numdyn.compile(kernels, options=NOFLOOR)
    numdyn.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            got = cf(x, t)
    finally:
        numdyn.set_logs(output_code=False)
    text = caplog.text
    regions = text.count("#pragma omp parallel")
    assert regions >= 3
    assert text.count("ND_TEAM(E)") == regions
    for g, w in zip(got, kernels(x, t)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
