"""Tall narrow arrays (issue 19: standardize, mean/std, min-max scale of a
(500000, 8) array). Column reductions of such an array run as chunks of
rows in parallel -- the moments of var/std too: each chunk folds its rows
with its own shift, and the chunks' (count, shift, shifted sum, M2) merge
by Chan's update in chunk order, so results do not depend on the thread
count. Their pointwise consumer ((X - mu) / sd) runs as tasks of blocks of
rows, not one task per 8-element row.

NumPy is the oracle over dtypes, layouts (C, F, strided views, reversed),
NaN/inf, sizes at the chunking thresholds (4096 rows, a kept dim of 512);
the counters pin one kernel and one pass for mean+std, two for
standardize. Accuracy: NumPy sums axis 0 of a C array row by row
(sequentially, no pairwise blocks), so its float32 results drift far from
the exact value on tall arrays; numdyn's chunked sums stay close to the
float64 value, which these tests check instead of NumPy there.
"""
import numpy as np
import pytest

import numdyn
from fusion_counts import passes
from oracle import check

FLOATS = ["float64", "float32"]


def data(shape, dt, seed=0, loc=0.0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return (loc + rng.standard_normal(shape)).astype(dt)
    return rng.integers(-50, 50, size=shape).astype(dt)


def mean_and_std(x):
    return x.mean(0), x.std(0)


def moments(x):
    return x.mean(0), x.var(0), x.std(0, ddof=1), x.sum(0), x.var(0, keepdims=True)


def standardize(x):
    return (x - x.mean(0)) / x.std(0)


def minmax_scale(x):
    lo = x.min(0)
    return (x - lo) / (x.max(0) - lo)


def views(shape, dt, seed=0, loc=0.0):
    yield "C", data(shape, dt, seed, loc)
    yield "F", np.asfortranarray(data(shape, dt, seed, loc))
    yield "strided", data((2 * shape[0], shape[1] + 3), dt, seed + 1, loc)[::2, 1:shape[1] + 1]
    yield "reversed", data(shape, dt, seed + 2, loc)[::-1]


# ------------------------------------------------------------ the oracle
@pytest.mark.parametrize("dt", ["float64", "int64", "int32"])
@pytest.mark.parametrize("fn", [moments, standardize, minmax_scale], ids=lambda f: f.__name__)
def test_tall_values(backend, fn, dt):
    for _, x in views((20_000, 8), dt):
        if fn is minmax_scale and dt != "float64":
            x = x.astype("float64")
        check(fn, x, backend=backend)


def moments_and_standardize(x):
    # both programs' values in one compile per layout
    return moments(x) + (standardize(x),)


def test_tall_float32_against_exact():
    # NumPy's float32 column sums of 20000 rows drift (sequential adds);
    # numdyn's chunked ones stay within float32 rounding of the exact value
    fn = moments_and_standardize
    for _, x in views((20_000, 8), "float32", loc=3.0):
        got = numdyn.compile(fn)(x)
        exact = fn(x.astype(np.float64))
        got = got if isinstance(got, tuple) else (got,)
        exact = exact if isinstance(exact, tuple) else (exact,)
        for g, e in zip(got, exact):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(4095, 8), (4096, 8), (4097, 3), (4096, 1), (9000, 512), (9000, 513),
                                   (70_001, 2), (5000, 33)])
def test_tall_sizes_at_the_thresholds(backend, shape):
    # 4096 rows and a kept dim of 512 decide between chunks in parallel and
    # one serial walk; 16 chunks of unequal row counts
    x = data(shape, "float64", loc=5.0)
    check(moments, x, backend=backend)
    check(standardize, x, backend=backend, atol=1e-9)


def test_tall_far_from_zero(backend):
    # chunks shifted by their first row: a mean of 1e8 and unit spread
    # keeps every digit NumPy's two-pass variance keeps
    x = data((40_000, 6), "float64", loc=1e8)
    check(moments, x, backend=backend)
    got = numdyn.compile(mean_and_std)(x)[1]
    np.testing.assert_allclose(got, x.std(0), rtol=1e-7)
    # a step between chunks: chunk shifts far apart
    y = data((40_000, 4), "float64")
    y[20_000:] += 1e6
    check(moments, y, backend=backend)


def test_tall_nan_inf(backend):
    x = data((30_000, 5), "float64")
    x[17, 0] = np.nan          # in the first chunk (its shift row is fine)
    x[0, 1] = np.nan           # the first chunk's shift itself
    x[25_000, 2] = np.inf      # a later chunk
    x[25_001, 3] = -np.inf
    x[10_000, 4] = np.inf
    x[29_999, 4] = -np.inf     # inf - inf: NaN
    with np.errstate(invalid="ignore"):
        check(moments, x, backend=backend)
        check(standardize, x, backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_tall_results_do_not_depend_on_threads(dt):
    x = data((50_000, 8), dt, loc=2.0)
    f = numdyn.compile(moments)
    first = f(x)
    for _ in range(3):
        for a, b in zip(first, f(x)):
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ pointwise tasks
@pytest.mark.parametrize("shape", [(20_000, 8), (3, 5000, 7), (2, 3, 4100, 5), (5000, 1), (1, 4097), (6, 4096)])
def test_pointwise_row_blocks(backend, shape):
    # a short inner dim: tasks are blocks of rows of the dim before it
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    mu = rng.standard_normal(shape[-1])
    sd = rng.uniform(0.5, 2.0, shape[-1])

    def f(x, mu, sd):
        return (x - mu) / sd, x * 2.0

    check(f, x, mu, sd, backend=backend)
    check(f, np.asfortranarray(x), mu, sd, backend=backend)
    check(f, x[..., ::-1], mu[::-1], sd, backend=backend)


# ------------------------------------------------------------ counters
def test_tall_passes():
    x = data((50_000, 8), "float64")
    assert passes(mean_and_std, x) == (1, 1.0)
    assert passes(moments, x) == (1, 1.0)
    assert passes(standardize, x) == (2, 2.0)
    assert passes(minmax_scale, x) == (2, 2.0)


# Another library's OpenMP region on the process's one pool: each thread
# takes sqrt(-1), which leaves FE_INVALID set on that pool thread
POOL_FLAGGER = r"""
#include <math.h>
double nd_test_flag_pool_threads(double x)
{
    double s = 0.0;
#pragma omp parallel reduction(+ : s)
    {
        volatile double v = x;
        s += sqrt(v);
    }
    return s;
}
"""


def test_flags_left_on_pool_threads_are_not_the_kernels(tmp_path):
    # torch.compile's kernels run their parallel regions on the process's
    # one OpenMP pool (libgomp): an invalid operation there leaves the flag
    # set on the worker threads, and a numdyn kernel's task on such a thread
    # took it for its own -- every call ran again with NumPy to report it
    # (errstate_reruns): standardize 6x slower next to torch.compile. The
    # region here is a C library's built with -fopenmp, as torch.compile's
    # kernels are (torch.compile itself cost this test ~30 s of CPU in CI,
    # dynamo and inductor's, for the same state of the pool's threads).
    import ctypes
    import os
    import subprocess
    src = tmp_path / "flagger.c"
    src.write_text(POOL_FLAGGER)
    so = tmp_path / "flagger.so"
    cc = os.environ.get("CC", "cc").split()
    r = subprocess.run(cc + ["-O2", "-fopenmp", "-fPIC", "-shared", str(src), "-o", str(so), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    flag_pool = ctypes.CDLL(str(so)).nd_test_flag_pool_threads
    flag_pool.restype = ctypes.c_double
    flag_pool.argtypes = [ctypes.c_double]
    x = data((200_000, 8), "float64")
    f = numdyn.compile(standardize)
    expect = standardize(x)
    f(x)
    c = numdyn.utils.counters
    r0 = c["errstate_reruns"]
    for _ in range(4):
        assert np.isnan(flag_pool(-1.0))
        np.testing.assert_allclose(f(x), expect, rtol=1e-12, atol=1e-12)
    assert c["errstate_reruns"] == r0


# ------------------------------------------------------------ covariance
def covariance(x):
    xc = x - x.mean(0)
    return xc.T @ xc / (x.shape[0] - 1)


@pytest.mark.parametrize("dt", ["float64", "float32", "int64"])
def test_covariance_values(backend, dt):
    for _, x in views((9000, 6), dt):
        check(covariance, x, backend=backend)


def test_covariance_passes():
    # the view xc.T is NumPy's view of xc's buffer, not a kernel's copy:
    # the mean's pass, the centring pass and the division of the (8, 8)
    # result; NumPy's matmul sees one buffer (syrk)
    x = data((50_000, 8), "float64")
    assert passes(covariance, x) == (3, 2.0)


def test_view_for_numpy_then_base_written(backend):
    # the view handed to NumPy shares its base's memory: a later write
    # into the base may not run first, nor in place before the view's reader
    def f(x):
        y = x * 2.0
        z = y.T @ y
        y[0] = 5.0
        w = y[::-1].T @ y
        y[1] += 1.0
        return z, w, y

    def h(x):
        y = x - 1.0
        z = np.sort(y.T[::-1], axis=1)   # NumPy reads y only through the views
        y[0] = 7.0
        return z, y

    def g(x):
        y = x + 1.0
        v = y.T[::-1]            # a view of a view
        z = np.linalg.norm(v, axis=1) + (v @ y).sum(1)
        return z, y.T.copy()     # a kernel reads y.T too

    for _, x in views((300, 4), "float64"):
        check(f, x, backend=backend)
        check(g, x, backend=backend)
        check(h, x, backend=backend)
