"""The CUDA backend on a GPU, against NumPy (issue 16).

Skipped where numdyn.cuda.is_available() is False (CI has no GPU); on a
machine without one, tests/test_cuda_emulated_device.py runs this file
against a fake driver whose kernels run on the host (tests/
cuda_fake_driver.cpp), which checks everything but a GPU's arithmetic.

Every case compiles with backend="cuda" (or runs inside
numdyn.device("cuda")) and compares with NumPy: dtype, shape, values
within the dtype's tolerance, exceptions and warnings, and the counters
that show where the work ran (cuda_launches on the GPU, cuda_host_steps on
the host).
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import numdyn
from numdyn import _C

pytestmark = pytest.mark.skipif(not numdyn.cuda.is_available(),
                                reason="no CUDA GPU: " + str(numdyn.cuda.unavailable_reason()))

EMULATED = numdyn.cuda.is_available() and \
    numdyn.cuda.get_device_properties(0).name == "numdyn fake GPU"

TOL = {np.float16: (2e-3, 1e-3), np.float32: (2e-5, 1e-6), np.float64: (1e-11, 1e-13),
       np.complex64: (2e-5, 1e-6), np.complex128: (1e-11, 1e-13)}


def ctr(name):
    return numdyn.utils.counters[name]


def same(got, want, rtol=None, atol=None):
    """got equals NumPy's want: type, dtype, shape, values (NaN where NaN)"""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol, atol)
        return
    assert type(got) is type(want), (type(got), type(want))
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc":
        r, a = TOL[want.dtype.type]
        np.testing.assert_allclose(got, want, rtol=rtol or r, atol=atol or a, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def on_gpu(fn, *args, rtol=None, atol=None, **kw):
    """fn(*args) with backend="cuda" equals NumPy's; it launched kernels"""
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    before = ctr("cuda_launches")
    got = numdyn.compile(fn, backend="cuda")(*args)
    same(got, want, rtol, atol)
    return ctr("cuda_launches") - before


@pytest.fixture(autouse=True)
def _budget():
    numdyn.config.compile_budget = float("inf")
    yield


rng = np.random.default_rng(0)


def rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, dtype=dt)
    x = rng.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


# ------------------------------------------------------------ the device

def test_device_properties():
    p = numdyn.cuda.get_device_properties(0)
    assert p.name and p.major >= 3 and p.multi_processor_count > 0 and p.total_memory > 0
    assert p.arch == f"sm_{p.major}{p.minor}"
    assert numdyn.cuda.device_count() >= 1
    free, total = numdyn.cuda.mem_get_info()
    assert 0 < free <= total
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        t = torch.cuda.get_device_properties(0)
        assert (p.name, p.major, p.minor, p.multi_processor_count) == \
            (t.name, t.major, t.minor, t.multi_processor_count)
        assert p.total_memory == t.total_memory


def test_target_is_the_devices_architecture():
    p = numdyn.cuda.get_device_properties(0)
    assert _C._cuda_target() in (p.arch, ) or _C._cuda_target().startswith("compute_")


def test_device_rejects_other_names():
    with pytest.raises(ValueError, match="unknown device"):
        numdyn.device("tpu")
    with pytest.raises(ValueError, match="does not exist"):
        numdyn.cuda.set_device(99)


# ------------------------------------------------------------ pointwise

@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.complex64, np.complex128,
                                np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_arithmetic_chain(dt):
    a, b = rand((33, 65), dt), rand((33, 65), dt)
    assert on_gpu(lambda a, b: (a * b + a) - b * 3, a, b) >= 1


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_transcendental_chain(dt):
    a, b = rand(4099, dt), rand(4099, dt)
    with np.errstate(all="ignore"):
        on_gpu(lambda a, b: np.exp(-a * a) * np.sqrt(np.abs(b)) + np.tanh(a) - np.log1p(np.abs(b)),
               a, b)


def test_float16_rounds_after_every_operation():
    a, b, c = (rand(10000, np.float16) * 4 for _ in range(3))
    want = (a * b + c) * a - b
    got = numdyn.compile(lambda a, b, c: (a * b + c) * a - b, backend="cuda")(a, b, c)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_complex_functions():
    a = rand(1000, np.complex128)
    on_gpu(lambda a: np.abs(a) + (a * np.conj(a)).real - a.imag, a)
    on_gpu(lambda a: a * a - 2j * a + (1 + 1j), a)


def test_bool_logic_and_where():
    a, b = rand(5000, np.float64), rand(5000, np.float64)
    on_gpu(lambda a, b: np.where((a > 0) & ~(b > 0.5) | (a < -1), a, b * 2), a, b)
    on_gpu(lambda a: np.clip(a, -0.5, 0.5) * 2, a)


def test_broadcast_and_strided_inputs():
    a = rand((64, 48), np.float64)
    b = rand(48, np.float64)
    on_gpu(lambda a, b: a * b + 1, a, b)
    on_gpu(lambda a, b: a * b + 1, a[::2, ::-3], b[::-3])
    on_gpu(lambda a: a.T * 2 - a.T ** 2, a)


def test_fortran_order_kept_as_numpy():
    a = np.asfortranarray(rand((40, 30), np.float32))
    fn = numdyn.compile(lambda a: a * 2 + 1, backend="cuda")
    got, want = fn(a), a * 2 + 1
    same(got, want)
    assert got.flags.f_contiguous == want.flags.f_contiguous
    assert got.flags.c_contiguous == want.flags.c_contiguous


def test_scalars_vary_between_calls():
    fn = numdyn.compile(lambda a, s, t: a * s + t, backend="cuda")
    a = rand(1000, np.float64)
    for s, t in [(1.5, 2), (-3.25, 7), (0.0, -1)]:
        same(fn(a, s, t), a * s + t)


def test_empty_arrays():
    a = np.zeros((0, 5))
    on_gpu(lambda a: a * 2 + 1, a)
    same(numdyn.compile(lambda a: a.sum(axis=0), backend="cuda")(a), a.sum(axis=0))


def test_large_pointwise_and_sum():
    a = rand(1 << 22, np.float32)
    on_gpu(lambda a: a * 3 - 1, a)
    same(numdyn.compile(lambda a: (a * a).sum(), backend="cuda")(a), (a * a).sum(), rtol=1e-4)


# ------------------------------------------------------------ casts

@pytest.mark.parametrize("src,dst", [(np.float64, np.int32), (np.int64, np.float32),
                                     (np.float32, np.float16), (np.bool_, np.float64),
                                     (np.int16, np.uint8), (np.float64, np.complex64),
                                     (np.uint8, np.int8), (np.float16, np.float64)])
def test_casts(src, dst):
    a = rand(3000, src)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        a = (a * 50).astype(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's own: int16 -> uint8 wraps
        on_gpu(lambda a: a.astype(dst) + dst(1) if np.dtype(dst).kind != "b" else a.astype(dst), a)


# ------------------------------------------------------------ reductions

AXES = [None, 0, 1, 2, (0, 1), (0, 2), (1, 2)]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dt", [np.float64, np.int64, np.float32])
def test_reductions_over_each_axis_set(axis, dt):
    a = rand((5, 6, 7), dt)
    rt = 1e-5 if dt == np.float32 else None
    on_gpu(lambda a: a.sum(axis=axis), a, rtol=rt)
    on_gpu(lambda a: a.max(axis=axis) - a.min(axis=axis), a)
    on_gpu(lambda a: a.mean(axis=axis, keepdims=True), a, rtol=rt)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_any_all_std(axis):
    a = rand((40, 50), np.float64) * 0.1 + 1
    on_gpu(lambda a: a.prod(axis=axis), a)
    on_gpu(lambda a: (a > 1).any(axis=axis), a)
    on_gpu(lambda a: (a > 0.9).all(axis=axis), a)
    on_gpu(lambda a: a.std(axis=axis), a)
    on_gpu(lambda a: a.var(axis=axis, ddof=1), a)


def test_max_min_propagate_nan():
    a = rand((20, 30), np.float64)
    a[3, 4] = np.nan
    a[7, :] = np.nan
    for axis in (None, 0, 1):
        on_gpu(lambda a: a.max(axis=axis), a)
        on_gpu(lambda a: a.min(axis=axis), a)
    on_gpu(lambda a: np.fmax.reduce(a, axis=1), a)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_argmin_first_occurrence_and_nan(axis):
    a = rng.integers(0, 4, size=(33, 47)).astype(np.float64)  # many ties
    on_gpu(lambda a: np.argmax(a, axis=axis), a)
    on_gpu(lambda a: np.argmin(a, axis=axis), a)
    a[5, 9] = np.nan
    a[5, 20] = np.nan
    a[30, 1] = np.nan
    on_gpu(lambda a: np.argmax(a, axis=axis), a)
    on_gpu(lambda a: np.argmin(a, axis=axis), a)


def test_integer_reductions_wrap_as_numpy():
    a = np.full(1000, 200, dtype=np.uint8)
    on_gpu(lambda a: a.sum(dtype=np.uint8), a)
    b = np.full((4, 300), 2 ** 40, dtype=np.int64)
    on_gpu(lambda b: b.prod(axis=1), b)


def test_float16_sum():
    a = rand(5000, np.float16)
    on_gpu(lambda a: a.sum(), a, rtol=1e-2, atol=1e-1)


# ------------------------------------------------------------ row kernels

@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_and_logsumexp(dt):
    x = rand((64, 1000), dt) * 5

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def logsumexp(x):
        m = x.max(axis=-1, keepdims=True)
        return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[:, 0]

    rt = 1e-5 if dt == np.float32 else 1e-11
    on_gpu(softmax, x, rtol=rt)
    on_gpu(logsumexp, x, rtol=rt)


@pytest.mark.parametrize("width", [10, 4096, 10000])
def test_softmax_wide_rows(width):
    """float32 rows of at most 16 elements: a thread per row; up to 32 * 256
    elements: read once into registers; wider: the strided loop"""
    x = rand((8, width), np.float32) * 5

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    on_gpu(softmax, x, rtol=1e-5)


def _cnd(d):
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
    return np.where(d < 0, 1.0 - w, w)


def black_scholes(S, K, T):
    r, v = 0.02, 0.30
    sqt = np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * v * v) * T) / (v * sqt)
    d2 = d1 - v * sqt
    disc = np.exp(-r * T)
    return S * _cnd(d1) - K * disc * _cnd(d2), K * disc * _cnd(-d2) - S * _cnd(-d1)


def test_black_scholes_one_kernel():
    """a big multi-output pointwise program is one GPU kernel writing both
    outputs (the CPU schedule cuts it at 64 nodes: three kernels and three
    intermediate arrays)"""
    S = rand(5000, np.float32) + 20
    K, T = S * 1.1, np.abs(rand(5000, np.float32)) + 0.5
    assert on_gpu(black_scholes, S, K, T, rtol=1e-4, atol=1e-4) == 1


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int8, np.float64])
def test_pointwise_vector_lanes(dt):
    """4 elements a thread by vector loads/stores where every operand is
    contiguous and aligned, element by element for the tail, a misaligned
    view and a strided one"""
    base = rand(2 * 5003 + 2, dt)
    y = rand(5003, dt)
    f = lambda a, b: (a * b + a, a - b)
    for x in (base[:5003], base[1:5004], base[::2][:5003]):
        on_gpu(f, x, y)


def test_split_full_reductions():
    """few long rows: each row split over several blocks (partials, the
    last block folds them; counter cuda_split_reductions), repeated calls
    reuse the zeroed row counters"""
    a = rand(1 << 18, np.float32) * 4
    z = rand(1 << 17, np.complex128)
    i = rand((2, 50000), np.int64)
    before = ctr("cuda_split_reductions")
    f = numdyn.compile(lambda a: (a.sum(), a.max(), a.mean()), backend="cuda")
    for _ in range(2):
        same(f(a), (a.sum(), a.max(), a.mean()), rtol=1e-4)
    on_gpu(lambda z: z.sum(), z)
    on_gpu(lambda i: (i.sum(axis=1), i.min(axis=1)), i)
    assert ctr("cuda_split_reductions") - before >= 4


def test_narrow_reductions_a_thread_per_row():
    """rows of at most 16 elements: a thread per row (k-means' argmin over
    the means, var's two passes over short rows)"""
    d = rand((16, 5000), np.float64)
    d[3, 17] = np.nan
    on_gpu(lambda d: np.argmin(d, axis=0), d)
    x = rand((3000, 13), np.float64)
    on_gpu(lambda x: (x.var(axis=1), x.sum(axis=1), np.argmax(x, axis=1)), x)
    X, means = rand((5000, 8), np.float32), rand((16, 8), np.float32)
    on_gpu(lambda X, m: np.argmin(np.linalg.norm(X - m[:, None], axis=2), axis=0), X, means)


def test_layer_norm_row():
    x = rand((128, 257), np.float64)
    on_gpu(lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), x)


# ------------------------------------------------------------ scans

@pytest.mark.parametrize("dt", [np.int32, np.float64, np.float16])
@pytest.mark.parametrize("axis", [0, 1])
def test_scans(dt, axis):
    a = rand((30, 40), dt)
    if dt == np.float16:
        a = (a * 0.1).astype(dt)
    on_gpu(lambda a: np.cumsum(a, axis=axis), a, rtol=5e-3 if dt == np.float16 else None,
           atol=5e-2 if dt == np.float16 else None)
    if dt != np.float16:
        on_gpu(lambda a: np.cumprod(a % 3 + 1 if a.dtype.kind == "i" else a * 0.1 + 1, axis=axis), a)


# ------------------------------------------------------------ stencils

def test_stencils():
    u = rand(10000, np.float64)
    on_gpu(lambda u: u[1:-1] + 0.5 * (u[:-2] - 2 * u[1:-1] + u[2:]), u)
    g = rand((200, 300), np.float32)
    on_gpu(lambda g: g[1:-1, 1:-1] * 4 - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:], g)


def test_stencil_update_in_place():
    def step(u):
        u[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
        return u.sum()

    u = rand(5000, np.float64)
    want_u = u.copy()
    want = step(want_u)
    got = numdyn.compile(step, backend="cuda")(u)
    same(got, want)
    same(u, want_u)


# ------------------------------------------------------------ gathers, errors

def test_gather_and_out_of_range_index():
    a = rand(100, np.float64)
    fn = numdyn.compile(lambda a, i: a[i] * 2 + 1, backend="cuda")
    i = np.array([0, 5, 99, -1])
    same(fn(a, i), a[i] * 2 + 1)
    bad = np.array([0, 100])
    with pytest.raises(IndexError) as e:
        fn(a, bad)
    with pytest.raises(IndexError) as w:
        a[bad] * 2 + 1
    assert str(e.value) == str(w.value)


def test_integer_division_by_zero_warns_as_numpy():
    a = np.arange(-5, 5, dtype=np.int64)
    b = np.array([1, 0, 2, 0, 3, -1, 0, 4, 5, 0], dtype=np.int64)
    fn = numdyn.compile(lambda a, b: a // b + a % b, backend="cuda")
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        want = a // b + a % b
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = fn(a, b)
    same(got, want)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            fn(a, b)
    with np.errstate(divide="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same(fn(a, b), want)


def test_float_conditions_warn_and_raise_as_numpy():
    """a GPU has no floating-point flags: a non-finite result from finite
    operands lets NumPy run the graph again, so its warnings are NumPy's"""
    a = np.array([1.0, 0.0, 2.0, -3.0, 1000.0])
    fn = numdyn.compile(lambda a: np.log(np.abs(a)) + 1.0 / a, backend="cuda")
    with warnings.catch_warnings(record=True) as want_w:
        warnings.simplefilter("always")
        want = np.log(np.abs(a)) + 1.0 / a
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = fn(a)
    same(got, want)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in want_w]
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            fn(a)
    ov = numdyn.compile(lambda a: np.exp(a) * 2, backend="cuda")
    with pytest.warns(RuntimeWarning, match="overflow encountered in exp"):
        same(ov(a), np.exp(a) * 2)
    with np.errstate(all="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same(ov(a), np.exp(a) * 2)


def test_nan_data_costs_no_rerun():
    a = rand(1000, np.float64)
    a[::3] = np.nan
    a[1::7] = np.inf
    fn = numdyn.compile(lambda a: a * 2 + 1, backend="cuda")
    same(fn(a), a * 2 + 1)
    before = ctr("errstate_reruns")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(fn(a), a * 2 + 1)
    assert ctr("errstate_reruns") == before


def test_errstate_ignored_float_division():
    a = rand(100, np.float64)
    a[::7] = 0
    with np.errstate(all="ignore"):
        on_gpu(lambda a: 1.0 / a + np.log(np.abs(a)), a)


# ------------------------------------------------------------ host steps

def test_extern_step_runs_on_host_and_is_reported():
    a = rand(1000, np.float64)
    b = rand(1000, np.float64)
    fn = numdyn.compile(lambda a, b: np.sort(a * 2) + b, backend="cuda")
    before = ctr("cuda_host_steps")
    same(fn(a, b), np.sort(a * 2) + b)
    assert ctr("cuda_host_steps") > before
    out = numdyn.explain(fn)(a, b)
    assert any(e["event"] == "host_step" and "sort" in e["op"] for e in out.gpu), out.gpu
    assert "ran on the host" in str(out)


def test_matmul_program():
    a = rand((64, 32), np.float64)
    b = rand((32, 16), np.float64)
    on_gpu(lambda a, b: np.tanh(a @ b) * 2 + 1, a, b)


# ------------------------------------------------------------ caching, context

def test_repeated_calls_hit_the_caches():
    fn = numdyn.compile(lambda a, b: np.exp(a) * b - a.sum(), backend="cuda")
    a, b = rand(3000, np.float64), rand(3000, np.float64)
    same(fn(a, b), np.exp(a) * b - a.sum())
    compiles, kc = ctr("cuda_compiles"), ctr("kernels_compiled")
    hits, launches = ctr("cuda_graph_cache_hits"), ctr("cuda_launches")
    alloc_hits = numdyn.cuda.memory_stats()["cache_hits"]
    for k in range(3):
        a2 = a + k
        same(fn(a2, b), np.exp(a2) * b - a2.sum())
    assert ctr("cuda_compiles") == compiles and ctr("kernels_compiled") == kc
    assert ctr("cuda_graph_cache_hits") >= hits + 3
    assert ctr("cuda_launches") > launches
    assert numdyn.cuda.memory_stats()["cache_hits"] > alloc_hits  # blocks reused


def test_device_context_runs_compiled_functions_on_the_gpu():
    fn = numdyn.compile(lambda a: np.sin(a) * 2 + a.max())
    a = rand(2000, np.float64)
    before = ctr("cuda_launches")
    same(fn(a), np.sin(a) * 2 + a.max())
    assert ctr("cuda_launches") == before  # native, on the CPU
    with numdyn.device("cuda"):
        same(fn(a), np.sin(a) * 2 + a.max())
        assert ctr("cuda_launches") > before
        with numdyn.device("cpu"):
            mid = ctr("cuda_launches")
            same(fn(a + 1), np.sin(a + 1) * 2 + (a + 1).max())
            assert ctr("cuda_launches") == mid
    after = ctr("cuda_launches")
    same(fn(a), np.sin(a) * 2 + a.max())
    assert ctr("cuda_launches") == after


def test_memory_stats_and_empty_cache():
    fn = numdyn.compile(lambda a: a * 2 + 1, backend="cuda")
    fn(rand(100000, np.float64))
    st = numdyn.cuda.memory_stats()
    # nothing held after a call but the programs' launch arguments
    assert st["allocated_bytes"] == st["kept_argument_bytes"] < 65536
    assert st["reserved_bytes"] > 0 and st["peak_allocated_bytes"] >= 800000
    numdyn.cuda.empty_cache()
    st = numdyn.cuda.memory_stats()
    assert st["reserved_bytes"] == 0 and st["blocks_cached"] == 0
    assert st["kept_argument_bytes"] == 0
    same(fn(np.arange(4.0)), np.arange(4.0) * 2 + 1)   # kept anew


def test_cubins_come_from_the_disk_cache_in_a_new_process(tmp_path):
    code = ("import numpy as np, numdyn\n"
            "numdyn.config.compile_budget = float('inf')\n"
            "f = numdyn.compile(lambda a: np.cos(a) * 3 + 0.125, backend='cuda')\n"
            "a = np.linspace(0, 1, 777)\n"
            "assert np.allclose(f(a), np.cos(a) * 3 + 0.125)\n"
            "c = numdyn.utils.counters\n"
            "print(c['cuda_compiles'], c['cuda_disk_hits'])\n")
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    env = dict(os.environ, NUMDYN_CACHE_DIR=str(d))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first = [int(x) for x in runs[0].stdout.split()]
    second = [int(x) for x in runs[1].stdout.split()]
    assert first[0] >= 1 and second == [0, first[0]]


# ------------------------------------------------------------ device-resident calls

def _no_transfers(fn, *args):
    """fn(*args) moves no array bytes between host and device"""
    h, d = ctr("cuda_h2d_bytes"), ctr("cuda_d2h_bytes")
    out = fn(*args)
    assert (ctr("cuda_h2d_bytes"), ctr("cuda_d2h_bytes")) == (h, d)
    return out


def test_on_device_reads_and_leaves_arrays_on_the_gpu():
    up = numdyn.cuda.on_device(lambda a: a + 0)
    x, y = rand(5000, np.float64), rand(5000, np.float64)
    dx, dy = up(x), up(y)
    assert isinstance(dx, numdyn.cuda.DeviceBuffer) and dx.shape == (5000,)
    assert dx.__cuda_array_interface__["version"] == 3
    f = numdyn.cuda.on_device(lambda a, b: (np.sin(a) * b + 1, (a * b).sum(), a.max()))
    want = (np.sin(x) * y + 1, (x * y).sum(), x.max())
    for g, w in zip(f(dx, dy), want):
        np.testing.assert_allclose(g.get(), w, rtol=1e-12)
    got = _no_transfers(f, dx, dy)  # warm: the device memory is read in place
    np.testing.assert_allclose(got[0].get(), want[0], rtol=1e-12)
    t = numdyn.cuda.on_device(lambda a: np.cumsum(a.reshape(50, 100), axis=1).T)(dx)
    np.testing.assert_allclose(t.get(), np.cumsum(x.reshape(50, 100), axis=1).T, rtol=1e-12)


class _Foreign:
    """another library's CUDA array: a DeviceBuffer's memory under a CUDA
    Array Interface with the given stream entry (absent: version 2)"""

    def __init__(self, buf, stream=...):
        cai = dict(buf.__cuda_array_interface__)
        if stream is ...:
            del cai["stream"]
            cai["version"] = 2
        else:
            cai["stream"] = stream
        self.__cuda_array_interface__ = cai
        self.buf = buf


def _fake_driver_counts():
    """(context syncs, stream waits) of the fake driver; None on a GPU"""
    if not EMULATED:
        return None
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    lib.nd_fake_ctx_syncs.restype = lib.nd_fake_stream_waits.restype = ctypes.c_longlong
    return lib.nd_fake_ctx_syncs(), lib.nd_fake_stream_waits()


def test_on_device_orders_by_the_arrays_streams():
    """a call waits for an argument's producer by its CUDA Array Interface
    stream on the device (cuStreamWaitEvent; the host does not block), not
    for the whole device; numdyn's own results need no wait (stream None);
    an array without a stream entry (interface version 2) waits for every
    stream of the device"""
    x = rand(3000, np.float64)
    dx = numdyn.cuda.on_device(lambda a: a + 0)(x)
    assert dx.__cuda_array_interface__["stream"] is None
    f = numdyn.cuda.on_device(lambda a: a * 3 - 1)
    for arg, syncs, waits in ((dx, 0, 0), (_Foreign(dx, 1), 0, 1), (_Foreign(dx, 2), 0, 1),
                              (_Foreign(dx, None), 0, 0), (_Foreign(dx), 1, 0)):
        f(arg)   # captured (its first call copies to the host)
        before = _fake_driver_counts()
        np.testing.assert_array_equal(numdyn.cuda.DeviceBuffer.get(f(arg)), x * 3 - 1)
        after = _fake_driver_counts()
        if before is not None:
            assert (after[0] - before[0], after[1] - before[1]) == (syncs, waits), arg


_HANDOVER_PROBE = r"""
import ctypes, sys
import numpy as np
import numdyn
sys.path.insert(0, {here!r})
from test_cuda_device import _Foreign, EMULATED
rng = np.random.default_rng(3)
x = rng.standard_normal((64, 512)).astype(np.float32)
dx = numdyn.cuda.on_device(lambda a: a + 0)(x)
lib = ctypes.CDLL("libcuda.so.1") if EMULATED else None


def counts():
    if lib is None:
        return None
    lib.nd_fake_calls.restype = lib.nd_fake_handovers.restype = ctypes.c_longlong
    return lib.nd_fake_calls(b"cuStreamSynchronize"), lib.nd_fake_handovers()


def softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


quiet = numdyn.cuda.on_device(softmax)              # no error word: no check can fail
loud = numdyn.cuda.on_device(lambda a: a * 3 - 1)   # float-condition checks
for name, f, arg, want, expect in (
        ("quiet, stream 1", quiet, _Foreign(dx, 1), softmax(x), (0, 1)),
        ("quiet, stream 2", quiet, _Foreign(dx, 2), softmax(x), (0, 1)),
        ("quiet, numdyn's own", quiet, dx, softmax(x), (1, 0)),
        ("quiet, no stream entry", quiet, _Foreign(dx), softmax(x), (1, 0)),
        ("loud, stream 1", loud, _Foreign(dx, 1), x * 3 - 1, (1, 0))):
    f(arg)   # captured
    numdyn.cuda.synchronize()
    before = counts()
    got = f(arg)
    after = counts()
    if before is not None:
        d = (after[0] - before[0], after[1] - before[1])
        assert d == expect, (name, d, expect)
    np.testing.assert_allclose(numdyn.cuda.DeviceBuffer.get(got), want, rtol=2e-6, atol=1e-7)
print("ok")
"""


def test_on_device_quiet_kernels_hand_results_over_without_a_wait():
    """A call whose kernels cannot set an error word (no check emitted:
    softmax) does not wait for them on the host: its arguments' producer
    streams (CUDA Array Interface v3 `stream`) wait for numdyn's stream on
    the device instead (cuEventRecord + cuStreamWaitEvent), so that their
    later work -- using the results, writing or freeing the arguments --
    comes after numdyn's kernels. Arguments without a known stream
    (numdyn's own, interface version 2) and kernels with checks (NumPy's
    warnings and errors are decided before the call returns) still wait.
    Run without the suite's store checks (each one a check that can fail)."""
    import subprocess
    env = dict(os.environ, NUMDYN_CHECK_STORES="0")
    r = subprocess.run([sys.executable, "-c", _HANDOVER_PROBE.format(here=os.path.dirname(__file__))],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_on_device_refuses_breaks_and_writes():
    dx = numdyn.cuda.on_device(lambda a: a + 0)(rand(100, np.float64))
    with pytest.raises(numdyn.GraphBreakError):
        numdyn.cuda.on_device(lambda a: a if a.sum() > 0 else -a)(dx)

    def writes(a):
        a[0] = 5
        return a * 2
    with pytest.raises(NotImplementedError, match="writes into an argument"):
        numdyn.cuda.on_device(writes)(dx)


def test_on_device_memory_is_released():
    numdyn.cuda.synchronize()

    def held():   # but the programs' launch arguments (memory_stats' doc)
        st = numdyn.cuda.memory_stats()
        return st["allocated_bytes"] - st["kept_argument_bytes"]
    base = held()
    f = numdyn.cuda.on_device(lambda a: np.sin(a) * 2)
    r = f(numdyn.cuda.on_device(lambda a: a + 0)(rand(20000, np.float64)))
    assert held() > base
    del r
    assert held() == base


def test_on_device_with_cupy():
    cp = pytest.importorskip("cupy")
    if EMULATED:
        pytest.skip("CuPy needs a real GPU")
    x = cp.asarray(rand((256, 1000), np.float32))

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    f = numdyn.cuda.on_device(softmax)
    got = f(x)
    assert isinstance(got, cp.ndarray) and got.dtype == cp.float32
    np.testing.assert_allclose(cp.asnumpy(got), softmax(cp.asnumpy(x)), rtol=2e-5, atol=1e-7)
    got = _no_transfers(f, x)
    np.testing.assert_allclose(cp.asnumpy(got), softmax(cp.asnumpy(x)), rtol=2e-5, atol=1e-7)


def test_on_device_with_torch():
    torch = pytest.importorskip("torch")
    if EMULATED or not torch.cuda.is_available():
        pytest.skip("torch CUDA needs a real GPU")
    a = torch.randn(1000, 300, device="cuda", dtype=torch.float64)
    b = torch.randn(300, device="cuda", dtype=torch.float64)
    f = numdyn.cuda.on_device(lambda a, b: np.tanh(a * b + 1).sum(axis=0))
    got = f(a, b)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == torch.float64
    want = np.tanh(a.cpu().numpy() * b.cpu().numpy() + 1).sum(axis=0)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-11)
    got = _no_transfers(f, a, b)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-11)


# ------------------------------------------- numdyn.Tensor on CUDA (issue 16)
# Each distinct operation signature is one kernel (a g++ run of the fake
# driver): these tests share a few shapes and operations.

def _ptr(t):
    return t.__cuda_array_interface__["data"][0]


def _moved():
    return ctr("cuda_h2d_bytes"), ctr("cuda_d2h_bytes")


def test_tensor_on_cuda_runs_numpy_semantics_on_the_device():
    x = rand((6, 40), np.float64)
    t = numdyn.tensor(x, device="cuda")
    assert isinstance(t, numdyn.Tensor) and t.device.startswith("cuda")
    assert (t.shape, t.dtype, t.ndim, t.size) == (x.shape, x.dtype, 2, x.size)
    assert numdyn.cuda.memory_stats()["allocated_bytes"] >= x.nbytes
    h = t.numpy()   # a copy on the host
    assert isinstance(h, np.ndarray) and h is not t.numpy()
    np.testing.assert_array_equal(h, x)
    for r in (t.cpu(), t.to("cpu")):
        assert type(r) is numdyn.Tensor and r.device == "cpu"
        np.testing.assert_array_equal(r.numpy(), x)
    assert t.cuda() is t and numdyn.tensor(x).cuda().device == t.device
    with pytest.raises(TypeError, match="not converted to a NumPy array implicitly"):
        np.asarray(t)
    with pytest.raises(RuntimeError, match="same device"):
        t + numdyn.tensor(x)

    # NumPy's semantics, computed by kernels over the device memory in place
    def f(a):
        return np.exp(a * 0.5) - a
    f(t).numpy()   # captured (the first call of a signature reads the operands once)
    before, launches = _moved(), ctr("cuda_launches")
    u = f(t)   # every later call: no copies, kernels only (deferred: run by synchronize)
    numdyn.cuda.synchronize()
    assert _moved() == before and ctr("cuda_launches") > launches
    assert u.device == t.device
    same(u.numpy(), f(x))
    s = np.exp(t * 0.5).sum(axis=1)
    same(s.numpy(), np.exp(x * 0.5).sum(axis=1))
    m = t.sum()   # a NumPy scalar: a 0-d Tensor on the device
    assert m.shape == () and m.device == t.device
    assert abs(float(m) - x.sum()) < 1e-12 * abs(x).sum() and abs(m.item() - x.sum()) < 1e-9

    # views NumPy makes are views of the device memory (no kernel, no copy)
    before = ctr("cuda_launches")
    tt, row = t.T, t[2]
    assert ctr("cuda_launches") == before
    assert _ptr(row) == _ptr(t) + 2 * 40 * 8 and _ptr(tt) == _ptr(t)
    assert tt.__cuda_array_interface__["strides"] == (8, 320)
    same(tt.numpy(), x.T)
    same(row.numpy(), x[2])
    same(f(tt).numpy(), f(x.T))   # a strided operand read in place

    # in-place writes land in the Tensor's own memory
    p = _ptr(t)
    t += 1.0
    t[1, :5] = -2.0
    x = x + 1.0
    x[1, :5] = -2.0
    assert _ptr(t) == p
    same(t.numpy(), x)
    same(row.numpy(), x[2])   # the view sees the write
    z = numdyn.tensor(np.array([0.0, 2.0]), device="cuda")
    for _ in range(2):   # NumPy's warning once a call, the first (capturing) one too
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            same((1.0 / z).numpy(), np.array([np.inf, 0.5]))
        assert [str(x.message) for x in w] == ["divide by zero encountered in divide"]
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        1.0 / z
    sel = t[t < 0]   # a data-dependent shape: a host step, reported
    same(sel.numpy(), x[x < 0])
    assert sel.device == t.device
    assert "device='cuda" in repr(t)


def test_tensor_chain_on_cuda_fuses_into_one_kernel():
    """a chain of elementwise CUDA Tensor operations is deferred and runs as
    one device program (one kernel) when something reads it"""
    x, y = rand((6, 40), np.float64), rand((6, 40), np.float64)
    t, u = numdyn.tensor(x, device="cuda"), numdyn.tensor(y, device="cuda")

    def chain(a, b):
        return (np.exp(-(a * 0.5 + 1.0)) * b - a) / 3.0
    for _ in range(2):   # the first run compiles the chain's program, the second reuses it
        before = ctr("cuda_launches")
        e = chain(t, u)   # five operations, recorded
        assert ctr("cuda_launches") == before and (e.shape, e.dtype) == ((6, 40), np.float64)
        same(e.numpy(), chain(x, y))
        assert ctr("cuda_launches") == before + 1
    # NumPy's dtypes (NEP 50 scalars), shapes, errors at the operation
    i = numdyn.tensor(np.arange(5, dtype=np.int32), device="cuda")
    k = np.arange(5, dtype=np.int32)
    for got, want in ((i * 2 + 1, k * 2 + 1), (i / 2, k / 2), (i * 2.5, k * 2.5), (i < 3, k < 3),
                      (-i, -k), (np.sqrt(i), np.sqrt(k)), (i.astype(np.float32) * 2, k.astype(np.float32) * 2)):
        assert got.dtype == want.dtype and got.shape == want.shape
        same(got.numpy(), want)
    with pytest.raises(ValueError, match="could not be broadcast"):
        t + numdyn.tensor(np.ones(3), device="cuda")
    # a live intermediate is an output of the same program; a write runs what reads first
    c = t * 2.0
    d = c + u
    t += 1.0
    same(c.numpy(), x * 2.0)
    same(d.numpy(), x * 2.0 + y)
    x = x + 1.0
    same(t.numpy(), x)
    # a reduction of a chain, a view of a chain, warnings when the chain runs
    same((t * u).sum(axis=0).numpy(), (x * y).sum(axis=0))
    same((t - 1.0)[2:4].numpy(), (x - 1.0)[2:4])
    z = numdyn.tensor(np.array([0.0, 2.0]), device="cuda")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        same((1.0 / z + 1.0).numpy(), np.array([np.inf, 1.5]))
    assert [str(m.message) for m in w] == ["divide by zero encountered in divide"]
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        1.0 / z   # raise mode: at the operation, as NumPy
    # memory handed to another library is read at once (it may write it later)
    s = numdyn.tensor(x, device="cuda")
    s.__dlpack__()
    before = ctr("cuda_launches")
    s * 2.0
    assert ctr("cuda_launches") == before + 1


def test_tensor_chain_on_cuda_that_fails_raises_at_every_read(monkeypatch):
    """a deferred chain whose device program fails leaves Tensors without
    memory: the read that ran it raises the error, later reads of those
    Tensors raise RuntimeError naming it (never a read of no memory)"""
    from numdyn import _cuda_tensor
    t = numdyn.tensor(rand((4, 8), np.float64), device="cuda")
    real = _cuda_tensor.apply

    def failing(kind, func, args, kwargs, lazy=True):
        if getattr(func, "__name__", "") == "_cuda_chain":
            raise MemoryError("device full (simulated)")
        return real(kind, func, args, kwargs, lazy)
    monkeypatch.setattr(_cuda_tensor, "apply", failing)
    y = t * 2.0
    with pytest.raises(MemoryError, match="simulated"):
        y.numpy()
    monkeypatch.setattr(_cuda_tensor, "apply", real)
    for read in (y.numpy, lambda: y.sum(), lambda: y + 1.0 and (y + 1.0).numpy(), lambda: repr(y)):
        with pytest.raises(RuntimeError, match="deferred CUDA operation .* failed: MemoryError"):
            read()
    same((t * 3.0).numpy(), t.numpy() * 3.0)   # the others are unaffected
    del y
    same((t - 1.0).numpy(), t.numpy() - 1.0)


class _Producer:
    """another library's kDLCUDA array, exchanged through DLPack only"""

    def __init__(self, t):
        self.t, self.kw = t, None

    def __dlpack__(self, **kw):
        self.kw = kw
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_tensor_dlpack_on_cuda_both_ways():
    x = rand((7, 9), np.float32)
    t = numdyn.tensor(x, device="cuda")
    dev = numdyn.cuda.current_device()
    assert t.__dlpack_device__() == (2, dev)
    # stream per the array API standard: None, -1, 1, 2, a handle; 0 is ambiguous
    for s in (None, -1, 1, 2):
        assert type(t.__dlpack__(stream=s)).__name__ == "PyCapsule"
    with pytest.raises(ValueError, match="ambiguous"):
        t.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="x")
    with pytest.raises(BufferError, match="unsupported device"):
        t.__dlpack__(dl_device=(2, dev + 1))
    host = np.from_dlpack(_HostCopy(t))   # dl_device=(1, 0): the producer copies down
    np.testing.assert_array_equal(host, x)
    # a kDLCUDA producer comes in without a copy; numdyn passes its stream
    p = _Producer(t)
    u = numdyn.from_dlpack(p)
    assert u.device == t.device and _ptr(u) == _ptr(t)
    assert p.kw["stream"] not in (None, 0) and p.kw["max_version"] == (1, 0)
    same((u * 2.0).numpy(), x * np.float32(2.0))
    del t
    same(u.numpy(), x)   # the producer's memory is held by the import
    c = numdyn.from_dlpack(p, copy=True)
    assert _ptr(c) != _ptr(u)
    same(c.numpy(), x)
    cpu = numdyn.from_dlpack(p, device="cpu")
    assert cpu.device == "cpu"
    same(cpu.numpy(), x)
    with pytest.raises(BufferError, match="needs a copy"):
        numdyn.from_dlpack(p, device="cpu", copy=False)
    try:
        import torch
    except ImportError:
        return
    if not EMULATED and torch.cuda.is_available():
        tt = torch.from_dlpack(u)   # torch reads numdyn's memory, and numdyn torch's
        assert tt.is_cuda and tt.data_ptr() == _ptr(u)
        back = numdyn.from_dlpack(tt)
        assert _ptr(back) == tt.data_ptr()


class _HostCopy:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        kw["dl_device"] = (1, 0)
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return (1, 0)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_wrap_numpy_of_cuda_tensors_stays_on_the_device():
    x = rand((16, 40), np.float64)
    t = numdyn.tensor(x, device="cuda")
    f = numdyn.wrap_numpy(_softmax)
    r = f(t)
    assert isinstance(r, numdyn.Tensor) and r.device == t.device
    same(r.numpy(), _softmax(x))
    before, host, launches = _moved(), ctr("cuda_host_steps"), ctr("cuda_launches")
    r = f(t)   # warm: one device program over the argument's memory
    assert _moved() == before and ctr("cuda_host_steps") == host
    assert ctr("cuda_launches") > launches

    @numdyn.wrap_numpy
    def breaks(a):   # Python needs a value: the call runs on the host, reported
        return a * 2 if float(a.sum()) > 0 else -a
    host = ctr("cuda_host_steps")
    got = breaks(t)
    assert got.device == t.device and ctr("cuda_host_steps") == host + 1
    same(got.numpy(), breaks.__wrapped__(x))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and not EMULATED and torch.cuda.is_available():
        a = torch.from_numpy(x).cuda()
        f(a)
        before = _moved()
        got = f(a)   # torch CUDA in -> torch CUDA out, no copies
        assert isinstance(got, torch.Tensor) and got.is_cuda and _moved() == before
        np.testing.assert_allclose(got.cpu().numpy(), _softmax(x), rtol=1e-12)
        with pytest.raises(NotImplementedError, match="requires grad"):
            f(a.clone().requires_grad_(True))   # the torch bridge is the CPU's only
        with torch.no_grad():
            f(a.clone().requires_grad_(True))
    try:
        import cupy
    except ImportError:
        return
    if not EMULATED:
        a = cupy.asarray(x)
        got = f(a)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(got), _softmax(x), rtol=1e-12)


def test_gradients_of_cuda_tensors_run_on_the_gpu():
    """backward() of a CUDA Tensor: the tape's program differentiated by
    numdyn's autodiff, forward and backward one graph run by backend "cuda"
    over the tape's device memory (a warm backward reads nothing back);
    .grad on the device, equal to the CPU Tensor's gradients"""
    x = rand((16, 40), np.float64)
    w0, b0 = rand(40, np.float64), rand(40, np.float64)
    units = set(os.listdir(os.environ["NUMDYN_EMU_TMP"])) if EMULATED else set()

    def loss_of(t, w, b):
        return (np.tanh(t * w + b) ** 2).mean()
    grads = []
    for dev in ("cuda", None):
        t = numdyn.tensor(x, device=dev)
        w = numdyn.tensor(w0, device=dev, requires_grad=True)
        b = numdyn.tensor(b0, device=dev, requires_grad=True)
        loss = loss_of(t, w, b)
        assert loss.requires_grad and loss.grad_fn is not None
        launches = ctr("cuda_launches")
        loss.backward()
        if dev:
            assert ctr("cuda_launches") > launches   # the backward graph ran on the GPU
            again = loss_of(t, numdyn.tensor(w0, device=dev, requires_grad=True),
                            numdyn.tensor(b0, device=dev, requires_grad=True))
            before, host = _moved(), ctr("cuda_host_steps")
            again.backward()   # warm: only the seed cotangent (8 bytes) goes up
            assert ctr("cuda_d2h_bytes") == before[1] and ctr("cuda_h2d_bytes") - before[0] <= 8
            assert ctr("cuda_host_steps") == host
            assert w.grad.device == t.device and b.grad.device == t.device
            with numdyn.no_grad():   # an SGD step on the device
                w -= 0.5 * w.grad
            same(w.numpy(), w0 - 0.5 * w.grad.numpy())
            # wrap_numpy on CUDA Tensors that require grad is on the tape too
            v = numdyn.tensor(w0, device=dev, requires_grad=True)
            numdyn.wrap_numpy(loss_of)(t, v, b.detach()).backward()
            wrapped = v.grad.numpy()
            u = numdyn.tensor(w0, device=dev, requires_grad=True)
            np.tanh(t * u).backward(numdyn.tensor(x * 0.5, device=dev))   # backward(grad)
            seeded = u.grad.numpy()
        grads.append((w.grad.numpy(), b.grad.numpy()))
    same(grads[0], grads[1])
    same(wrapped, grads[1][0])
    same(seeded, ((1 - np.tanh(x * w0) ** 2) * x * x * 0.5).sum(axis=0))
    if EMULATED:   # the units the backward compiled, for NVRTC (test_cuda_emulated_device.py)
        import shutil
        keep = os.path.join(os.environ["NUMDYN_EMU_TMP"], "backward")
        os.makedirs(keep, exist_ok=True)
        for u in set(os.listdir(os.environ["NUMDYN_EMU_TMP"])) - units:
            if u.endswith(".cpp"):
                shutil.copy(os.path.join(os.environ["NUMDYN_EMU_TMP"], u), keep)


def test_backward_inputs_create_graph_and_retain_grad_of_cuda_tensors():
    """backward(inputs=...), backward(create_graph=True) and retain_grad()
    of CUDA Tensors as on the CPU (tests/test_tensor_backward_graph.py
    holds the CPU Tensor to torch's): the same program on both devices,
    every .grad equal (None where None), the gradients CUDA Tensors; the
    float programs run on the device (no host steps); create_graph's
    gradients have a graph, differentiated again (second derivatives, a
    Hessian-vector product, a gradient Tensor that requires grad)"""
    X = np.array([0.3, -1.2, 2.0, 0.7, -0.4, 1.1])
    Z = np.array([0.3 + 0.5j, -1.2 + 0.1j, 2.0 - 0.7j])
    V = np.linspace(0.5, -0.5, 6)

    def prog(dev, x, z, c):
        keep = []
        h = x * 3.0
        y = np.sin(h) * h * z
        y.sum().backward(inputs=[h, x])          # z keeps None; h a non-leaf
        keep += [x.grad, h.grad, z.grad]
        x.grad = h.grad = None
        u = x * z
        u.retain_grad()
        (u * u).sum().backward()                 # retain_grad: u's .grad too
        keep += [x.grad, z.grad, u.grad]
        x.grad = z.grad = None
        (np.sin(x) * x).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        x.grad = None
        (g * g).sum().backward()                 # a second derivative
        keep.append(x.grad)
        x.grad = None
        f = (np.tanh(x * z) ** 2).sum() + (x * x * x).sum()
        f.backward(create_graph=True, inputs=[x])
        g = x.grad
        x.grad = None
        (g * numdyn.tensor(V, device=dev)).sum().backward(inputs=[x])   # HVP
        keep += [x.grad, z.grad]
        x.grad = None
        (np.sin(x) * x).backward(c, create_graph=True)   # c requires grad: reached again
        g = x.grad
        x.grad = None
        (g * g).sum().backward()
        keep += [x.grad, c.grad]
        x.grad = None
        h = x.astype(np.float32) * 2.0                   # float32, a non-leaf input
        (np.tanh(h) * 3.0).sum().backward(create_graph=True, inputs=[h])
        keep.append(h.grad)
        (h.grad * h.grad).sum().backward(inputs=[x])
        keep.append(x.grad)
        return keep

    def complex_prog(dev, w):
        h = w * 2.0
        # .real/.imag of a complex Tensor: float views of its memory
        same(w.real.numpy(), Z.real)
        same(h.imag.numpy(), (Z * 2.0).imag)
        y = (np.sin(h) * h.conj()).real.sum() + np.abs(h * h).sum()
        y.backward(create_graph=True, inputs=[w, h])
        keep = [w.grad, h.grad]
        g = w.grad
        w.grad = None
        (g.real * g.imag).sum().backward(inputs=[w])
        return keep + [w.grad]

    results = []
    for dev in ("cuda", None):
        mk = lambda a: numdyn.tensor(a.copy(), device=dev, requires_grad=True)   # noqa: E731
        host = ctr("cuda_host_steps")
        got = prog(dev, mk(X), mk(X[::-1]), mk(np.linspace(1.0, 2.0, 6)))
        # prog's last gradient is float64 but flows through the float32 h:
        # float32's precision (the GPU's float32 tanh is not the CPU's)
        f32_chain = len(got) - 1
        if dev:
            assert ctr("cuda_host_steps") == host   # every float backward ran on the device
        got += complex_prog(dev, mk(Z))
        if dev:
            assert all(g is None or g.device == numdyn.tensor(X, device=dev).device for g in got)
        results.append([None if g is None else g.numpy() for g in got])
    for i, (a, b) in enumerate(zip(*results)):
        assert (a is None) == (b is None), i
        if a is not None:
            f32 = a.dtype == np.float32 or i == f32_chain
            same(a, b, rtol=1e-5 if f32 else 1e-10, atol=1e-5 if f32 else 1e-6)


def _driver_calls():
    """the fake driver's calls so far, by entry point"""
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    lib.nd_fake_calls.restype = ctypes.c_longlong
    lib.nd_fake_calls.argtypes = [ctypes.c_char_p]
    names = ("cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemsetD32Async", "cuLaunchKernel",
             "cuStreamSynchronize", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemHostAlloc")
    return {n: lib.nd_fake_calls(n.encode()) for n in names}


def _calls_of(fn):
    a = _driver_calls()
    fn()
    b = _driver_calls()
    return {k: b[k] - a[k] for k in b if b[k] != a[k]}


@pytest.mark.skipif(not EMULATED, reason="counts the fake driver's calls")
def test_warm_call_driver_work():
    """what a warm call asks of the driver: the kernels' error words are
    mapped host memory (no memset, no copy back), the launch arguments stay
    on the device while they do not change (no upload), one stream
    synchronization (none of its own where the results come down); values,
    the arguments' re-upload when they change, and errors as before"""
    x8 = np.arange(8, dtype=np.float32)
    t, u = numdyn.tensor(x8, device="cuda"), numdyn.tensor(x8 * 3, device="cuda")
    f = numdyn.wrap_numpy(lambda x: x * 2 + 1)
    for _ in range(2):   # each result dropped before the next call, as in a loop
        f(t)
    assert _calls_of(lambda: f(t)) == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1}
    kept = [f(t)]   # the result held over the next call: two blocks in turn,
    for _ in range(2):   # each call's output pointer a new argument
        kept[0] = f(t)
    assert _calls_of(lambda: kept.__setitem__(0, f(t))) == {
        "cuLaunchKernel": 1, "cuStreamSynchronize": 1, "cuMemcpyHtoDAsync_v2": 1}
    same(kept[0].numpy(), x8 * 2 + 1)
    same(f(u).numpy(), x8 * 6 + 1)   # another operand: re-uploaded, its values
    same(f(t).numpy(), x8 * 2 + 1)
    g = numdyn.compile(lambda x: x * 2 + 1, backend="cuda")
    for _ in range(2):
        g(x8)
    n = _calls_of(lambda: same(g(x8), x8 * 2 + 1))
    assert n == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1, "cuMemcpyHtoDAsync_v2": 1,
                 "cuMemcpyDtoHAsync_v2": 1}, n   # the argument up, the result down
    # the error words still decide: integer division by zero warns as NumPy, every call
    d = numdyn.compile(lambda a, b: a // b, backend="cuda")
    a, b = np.arange(6), np.array([1, 2, 0, 3, 1, 2])
    for _ in range(2):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            same(d(a, b), np.array([0, 0, 0, 1, 4, 2]))
        assert [str(m.message) for m in w] == ["divide by zero encountered in floor_divide"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same(d(a, b + 1), a // (b + 1))


@pytest.mark.skipif(not EMULATED, reason="counts the fake driver's calls")
def test_error_words_in_device_memory_when_asked():
    """NUMDYN_CUDA_DEVICE_ERRWORDS=1: the error words in device memory (the
    form before mapped host memory, kept for where mapping is unavailable
    and to compare on a GPU): zeroed and copied back each call, same
    warnings"""
    code = ("import warnings, numpy as np, numdyn\n"
            "numdyn.config.compile_budget = float('inf')\n"
            "import tests.test_cuda_device as t\n"
            "d = numdyn.compile(lambda a, b: a // b, backend='cuda')\n"
            "a, b = np.arange(6), np.array([1, 2, 0, 3, 1, 2])\n"
            "d(a, b + 1)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    n = t._calls_of(lambda: d(a, b))\n"
            "print(sorted(n.items()), [str(m.message) for m in w])\n")
    env = dict(os.environ, NUMDYN_CUDA_DEVICE_ERRWORDS="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr
    assert "('cuMemsetD32Async', 1)" in r.stdout and "('cuMemcpyDtoHAsync_v2', " in r.stdout, r.stdout
    assert "['divide by zero encountered in floor_divide']" in r.stdout, r.stdout
