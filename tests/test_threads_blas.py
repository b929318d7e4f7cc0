"""Matrix products of a program: OpenBLAS on its own threads or on one,
whichever the timed runs show faster (src/runtime/par.h, "BLAS steps").

On a small loaded machine OpenBLAS's second thread waits for a core (a
(512,256) @ (256,10) product took 23 ms on two threads and 0.04 ms on one)
and its spinning worker slows the OpenMP team after it. As for kernels,
the runtime's test hook `_threads_test_delay(team_s, alone_s)` stands in
for that load: the choice must follow it and the thread count must be given back after
each product. OpenBLAS's threaded and one-thread paths may round
differently (NumPy's own products move so with OPENBLAS_NUM_THREADS): the
threaded way gives NumPy's bits, the one-thread way NumPy's values to
rounding."""
import numpy as np
import pytest

import numdyn
from numdyn import _C, utils

pytestmark = pytest.mark.skipif(
    (_C._blas_threads() or 0) < 2,
    reason="no OpenBLAS with two or more threads loaded: nothing to choose")

NOFLOOR = {"floor": False}


def layer(a, b, c):
    # two products (the second of a transposed view) with kernels between
    p = a @ b
    h = np.tanh(p + 1.0)
    return p, h.T @ c, h.sum()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((192, 160))
    b = rng.standard_normal((160, 128))
    c = rng.standard_normal((192, 96))
    return a, b, c


@pytest.fixture(autouse=True)
def quiet():
    # the measured choice is what these tests check: the machine's load
    # average (which sends every product to one thread) is not read
    _C._threads_test_load(0.0)
    yield
    _C._threads_test_load(-1.0)


@pytest.fixture
def delay():
    yield _C._threads_test_delay
    _C._threads_test_delay(0.0, 0.0)


def _blas_log(cf, args):
    _C._threads_log(True)
    try:
        out = cf(*args)
    finally:
        log = _C._threads_log(False)
    return out, [e for e in log if e["kind"] == "blas"]


@pytest.mark.parametrize("team, alone, want", [(0.03, 0.0, "alone"), (0.0, 0.05, "team")])
def test_products_follow_the_measured_times(data, delay, team, alone, want):
    cf = numdyn.compile(layer, options=NOFLOOR)
    ref = layer(*data)
    threads = _C._blas_threads()
    delay(team, alone)
    one0 = utils.counters["blas_runs_one_thread"]
    for _ in range(14):
        cf(*data)
    out, log = _blas_log(cf, data)
    # both products are timed, each with its own choice
    assert len(log) == 2
    assert [e["choice"] for e in log] == [want, want]
    for e in log:
        # both ways were timed; one thread won by the 1.5x it must show
        assert e["team_s"] is not None and e["alone_s"] is not None
        if want == "alone":
            assert e["team_s"] > 1.5 * e["alone_s"]
    ones = utils.counters["blas_runs_one_thread"] - one0
    assert (ones >= 20) if want == "alone" else (ones <= 8)
    # every product gave the thread count back
    assert _C._blas_threads() == threads
    if want == "team":
        np.testing.assert_array_equal(out[0], ref[0])
    for u, v in zip(out, ref):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12 * np.abs(v).max())


def test_small_products_and_the_off_switch(data, delay):
    small = numdyn.compile(lambda a, b: np.tanh(a @ b), options=NOFLOOR)
    a, b = data[0][:32, :32], data[1][:32, :32]  # 32^3 multiply-adds: OpenBLAS's own one thread
    delay(0.01, 0.0)
    for _ in range(4):
        small(a, b)
    assert _blas_log(small, (a, b))[1] == []
    was = numdyn.config.adaptive_threads
    numdyn.config.adaptive_threads = False
    try:
        big = numdyn.compile(lambda a, b: np.tanh(a @ b) * 2.0, options=NOFLOOR)
        one0 = utils.counters["blas_runs_one_thread"]
        for _ in range(6):
            big(*data[:2])
        out, log = _blas_log(big, data[:2])
        assert log == [] and utils.counters["blas_runs_one_thread"] == one0
        np.testing.assert_allclose(out, np.tanh(data[0] @ data[1]) * 2.0, rtol=1e-14)
    finally:
        numdyn.config.adaptive_threads = was


def test_loaded_machine_runs_products_on_one_thread(data, delay):
    """at a load average of twice the cores or more no second thread finds a
    core: every product takes one thread, untimed (nothing measured at that
    load), and the thread count is given back"""
    cf = numdyn.compile(layer, options=NOFLOOR)
    ref = layer(*data)
    threads = _C._blas_threads()
    delay(0.0, 0.05)  # measured alone, one thread would lose: the load decides
    _C._threads_test_load(1e6)
    one0 = utils.counters["blas_runs_one_thread"]
    for _ in range(5):
        out, log = _blas_log(cf, data)
        assert log == []
    assert utils.counters["blas_runs_one_thread"] - one0 == 10
    assert _C._blas_threads() == threads
    for u, v in zip(out, ref):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12 * np.abs(v).max())


def normal_step(X, y, w):
    # least squares' gradient: two matrix-vector products (NumPy calls gemv)
    r = X @ w - y
    return X.T @ r * 0.5


def test_matrix_vector_products_are_blas_steps(data, delay):
    """OpenBLAS threads a gemv from a matrix of 9216 elements, far below the
    2^18 multiply-adds of its gemm threshold: such products are timed and,
    on a loaded machine, run on one thread like the others (they ran
    threaded and untimed); a smaller matrix is OpenBLAS's one thread anyway"""
    rng = np.random.default_rng(1)
    X, y, w = rng.standard_normal((2000, 11)), rng.standard_normal(2000), rng.standard_normal(11)
    cf = numdyn.compile(normal_step, options=NOFLOOR)
    ref = normal_step(X, y, w)
    threads = _C._blas_threads()
    for _ in range(3):
        cf(X, y, w)
    out, log = _blas_log(cf, (X, y, w))
    assert len(log) == 2  # both gemv products, timed
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    _C._threads_test_load(1e6)
    one0 = utils.counters["blas_runs_one_thread"]
    out, log = _blas_log(cf, (X, y, w))
    assert log == [] and utils.counters["blas_runs_one_thread"] - one0 == 2
    assert _C._blas_threads() == threads
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    small = (X[:800], y[:800], w)  # 8800 elements: under OpenBLAS's threshold
    one0 = utils.counters["blas_runs_one_thread"]
    out = cf(*small)
    assert utils.counters["blas_runs_one_thread"] == one0
    np.testing.assert_allclose(out, normal_step(*small), rtol=1e-12)
