"""GPU differential suite (issue 16, point 5): skipped where
numdyn.cuda.is_available() is False (CI has no GPU).

1. numdyn's cuBLAS/cuFFT externs (src/runtime/cuda_blas.c, cuda_fft.c) on
   device memory -- CuPy's (or torch's) allocations, the same primary
   context -- against NumPy over dtypes, shapes, batches, transposed and
   strided operands, n/axis/norm.
2. The CPU suite's differential program generator (tests/fuzz_gen.py) run
   with backend="cuda" against NumPy within the dtypes' tolerances, once
   the cuda backend is registered.
"""
import math
import os

import numpy as np
import pytest

import numdyn
import numdyn.cuda
from numdyn import _C

import cuda_lib_cases as cases
from cuda_lib_cases import FFT_CALLS, LAYOUTS, layout

pytestmark = pytest.mark.skipif(not numdyn.cuda.is_available(),
                                reason="no CUDA device: " + str(numdyn.cuda.unavailable_reason()))

RNG = np.random.default_rng(16)


# ---------------------------------------------------------- device memory

class Dev:
    """Device buffers through CuPy, else torch (whichever is installed)."""

    def __init__(self):
        self.keep = []
        try:
            import cupy
            self.cp, self.torch = cupy, None
        except ImportError:
            self.cp = None
            try:
                import torch
            except ImportError:
                pytest.skip("neither CuPy nor torch to allocate device memory")
            if not torch.cuda.is_available():
                pytest.skip("torch sees no CUDA device")
            self.torch = torch

    def stream(self):
        if self.cp is not None:
            return self.cp.cuda.get_current_stream().ptr
        return self.torch.cuda.current_stream().cuda_stream

    def _raw(self, nbytes, host=None):
        if self.cp is not None:
            d = self.cp.zeros(max(nbytes, 1), self.cp.uint8) if host is None else self.cp.asarray(host)
            ptr = d.data.ptr
        else:
            t = self.torch
            d = (t.zeros(max(nbytes, 1), dtype=t.uint8, device="cuda") if host is None
                 else t.from_numpy(host.copy()).cuda())
            ptr = d.data_ptr()
        self.keep.append(d)
        return d, ptr

    def upload(self, x):
        """(view tuple of x's layout on the device) for a host array x."""
        owner = x
        while owner.base is not None and isinstance(owner.base, np.ndarray):
            owner = owner.base
        mem = owner.T if owner.flags.f_contiguous and not owner.flags.c_contiguous else owner
        assert mem.flags.c_contiguous
        raw = mem.reshape(-1).view(np.uint8)
        _, ptr = self._raw(raw.size, raw)
        off = x.__array_interface__["data"][0] - mem.__array_interface__["data"][0]
        return (ptr + off, x.dtype.num, x.shape, x.strides)

    def empty(self, shape, dtype):
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) * dt.itemsize
        d, ptr = self._raw(n)
        strides = tuple(int(np.prod(shape[i + 1:])) * dt.itemsize for i in range(len(shape)))
        return d, (ptr, dt.num, tuple(shape), strides)

    def download(self, d, shape, dtype):
        if self.cp is not None:
            host = self.cp.asnumpy(d)
        else:
            host = d.cpu().numpy()
        return host.view(np.uint8)[:int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape)


@pytest.fixture
def dev():
    d = Dev()
    yield d
    d.keep.clear()


# ----------------------------------------------------------- layouts

def rand(shape, dtype):
    return cases.rand(RNG, shape, dtype)


EPS = {"float16": 2.0 ** -10, "float32": 2.0 ** -23, "float64": 2.0 ** -52,
       "complex64": 2.0 ** -23, "complex128": 2.0 ** -52}


def close_prod(got, a, b, want, dtype, dot=False):
    """Elementwise error bound of a sum of k products: both NumPy's and the
    GPU's result are within k * eps_acc * (|a| @ |b|) + eps_out * |result|
    of the exact value (float16 accumulates in float32, rounds once)."""
    f = np.dot if dot else np.matmul
    ab = np.abs(f(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)))
    k = a.shape[-1]
    acc = 2.0 ** -24 if dtype in ("float16", "float32", "complex64") else 2.0 ** -53
    out = 2.0 ** -11 if dtype == "float16" else acc
    w = np.abs(np.asarray(want).astype(np.complex128))
    bound = 4 * (2 * k * acc * ab + 2 * out * w) + 1e-300
    err = np.abs(got.astype(np.complex128) - np.asarray(want).astype(np.complex128))
    bad = err > bound
    return not bad.any(), (float(err.max(initial=0)), float(bound.min(initial=0)))


# ------------------------------------------------------------ matmul

GEMM_DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((64, 128), (128, 33)), ((7,), (7, 3)),
          ((3, 7), (7,)), ((9,), (9,)), ((5, 3, 4), (4, 2)), ((2, 1, 3, 4), (1, 6, 4, 2)),
          ((4, 3, 0), (4, 0, 2)), ((0, 3), (3, 2)), ((2, 0, 3), (3, 4)), ((257, 300), (300, 129)),
          ((3, 2, 2, 5, 6), (2, 1, 6, 7))]


@pytest.mark.parametrize("dtype", GEMM_DTYPES)
def test_matmul_cublas(dev, dtype):
    for a_shape, b_shape in SHAPES:
        a0, b0 = rand(a_shape, dtype), rand(b_shape, dtype)
        want = np.matmul(a0, b0)
        for la, lb in [("C", "C"), ("T", "C"), ("C", "F"), ("step", "rowstep"), ("F", "T")]:
            a, b = layout(a0, la), layout(b0, lb)
            d, ov = dev.empty(want.shape, dtype)
            rc = _C._cuda_lib_matmul(False, dev.upload(a), dev.upload(b), ov, dev.stream())
            if rc == 1:
                assert (la, lb) != ("C", "C")
                continue
            got = dev.download(d, want.shape, dtype)
            assert got.dtype == want.dtype
            ok, detail = close_prod(got, a0, b0, want, dtype)
            assert ok, (dtype, a_shape, la, b_shape, lb, detail)


def test_matmul_float16_accumulates_in_float32(dev):
    # NumPy's half matmul sums in float and rounds once: equal to the
    # float32 product rounded, not to a float16 running sum
    a = (RNG.standard_normal((16, 2048)) * 0.5).astype(np.float16)
    b = (RNG.standard_normal((2048, 8)) * 0.5).astype(np.float16)
    want = np.matmul(a, b)
    d, ov = dev.empty(want.shape, "float16")
    _C._cuda_lib_matmul(False, dev.upload(a), dev.upload(b), ov, dev.stream())
    got = dev.download(d, want.shape, "float16").astype(np.float64)
    ref32 = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    # within one float16 ulp of the float32-accumulated sum
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(got - ref32) <= ulp + 1e-3), np.abs(got - ref32).max()


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_dot_nd_cublas(dev, dtype):
    for a_shape, b_shape in [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
                             ((2, 3, 4), (6, 4, 5)), ((4,), (3, 4, 2)), ((2, 3, 4), (4,))]:
        a0, b0 = rand(a_shape, dtype), rand(b_shape, dtype)
        want = np.dot(a0, b0)
        d, ov = dev.empty(want.shape, dtype)
        assert _C._cuda_lib_matmul(True, dev.upload(a0), dev.upload(b0), ov, dev.stream()) == 0
        ok, detail = close_prod(dev.download(d, want.shape, dtype), a0, b0, want, dtype, dot=True)
        assert ok, (a_shape, b_shape, detail)


def test_matmul_nan_inf_propagate(dev):
    a = np.array([[np.inf, 1.0], [np.nan, 2.0]])
    b = np.array([[1.0, 0.0], [0.0, 1.0]])
    want = a @ b
    d, ov = dev.empty(want.shape, "float64")
    _C._cuda_lib_matmul(False, dev.upload(a), dev.upload(b), ov, dev.stream())
    got = dev.download(d, want.shape, "float64")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


# --------------------------------------------------------------- fft

KINDS = {"fft": 0, "ifft": 1, "rfft": 2, "irfft": 3}
NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


def fft_case(dev, kind, x, n, axis, norm, fct_dtype):
    want = getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm)
    nn = n if n is not None else (2 * (x.shape[axis] - 1) if kind == "irfft" else x.shape[axis])
    d, ov = dev.empty(want.shape, want.dtype)
    _C._cuda_lib_fft(KINDS[kind], nn, axis, NORMS[norm], np.dtype(fct_dtype).num,
                     dev.upload(np.ascontiguousarray(x)), ov, dev.stream())
    got = dev.download(d, want.shape, want.dtype)
    eps = EPS[want.dtype.name]
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    err = float(np.abs(got - want).max(initial=0))
    assert err <= 64 * eps * max(1, math.log2(max(nn, 2))) * scale * math.sqrt(max(nn, 1)), \
        (kind, x.dtype, x.shape, n, axis, norm, err)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("prec", ["32", "64"])
def test_fft_cufft(dev, kind, prec):
    cdt, rdt = ("complex64", "float32") if prec == "32" else ("complex128", "float64")
    for shape, axis in [((16,), 0), ((8, 12), 1), ((8, 12), 0), ((3, 10, 5), 1), ((30, 7, 2), 1),
                        ((2, 7, 30), 1), ((1000,), 0), ((4, 1), 1), ((0, 5), 1)]:
        for n in [None, 1, 5, 16, 23]:
            if kind == "irfft" and n is None and shape[axis] == 1:
                continue
            for norm in [None, "ortho", "forward"]:
                x = rand(shape, rdt if kind == "rfft" else cdt)
                fft_case(dev, kind, x, n, axis, norm, rdt)


def test_irfft_ignores_imag_of_dc_and_nyquist(dev):
    x = np.array([[1 + 5j, 2 + 1j, 3 - 7j], [0.5 + 1e30j, 1j, 2 + np.nan * 1j]], np.complex128)
    want = np.fft.irfft(x)
    d, ov = dev.empty(want.shape, "float64")
    _C._cuda_lib_fft(3, 4, 1, 0, np.dtype("float64").num, dev.upload(x), ov, dev.stream())
    np.testing.assert_allclose(dev.download(d, want.shape, "float64"), want, rtol=1e-13, atol=1e-13)


def test_fft_float16_norm_factor(dev):
    # float16 input: NumPy's factor is a float16; the transform runs in complex64
    x = rand((6, 10), "float16")
    for norm in ["ortho", "forward"]:
        want = np.fft.fft(x, norm=norm)
        d, ov = dev.empty(want.shape, "complex64")
        _C._cuda_lib_fft(0, 10, 1, NORMS[norm], np.dtype("float16").num,
                         dev.upload(x.astype(np.complex64)), ov, dev.stream())
        np.testing.assert_allclose(dev.download(d, want.shape, "complex64"), want, rtol=2e-6,
                                   atol=2e-6)


# ------------------------------------------------- the differential suite

def _cuda_backend():
    if "cuda" not in numdyn.list_backends():
        pytest.skip("the cuda backend is not registered in this build")
    return "cuda"


# programs per mode (NUMDYN_GPU_FUZZ_SCALE multiplies them: a GPU session's
# minutes are few, and every batch is an NVRTC compile)
_SCALE = float(os.environ.get("NUMDYN_GPU_FUZZ_SCALE", "1"))
CASES = [(m, max(1, int(n * _SCALE))) for m, n in
         [("arith", 120), ("reduce", 100), ("all", 120), ("rows", 60)]]


@pytest.mark.parametrize("mode,n", CASES, ids=[m for m, _ in CASES])
def test_fuzz_programs_cuda(mode, n):
    backend = _cuda_backend()
    import fuzz_gen as fg
    report = fg.Report(backend, batch_size=16)
    for prog in fg.collect_programs(mode, n, variants=1):
        report.check(prog)
    report.flush()
    report.assert_ok()
    assert report.ran > 0


def test_device_context_runs_on_gpu():
    _cuda_backend()

    def f(x, y):
        return np.tanh(x * y + 1.0).sum(axis=0), x @ y.T, np.fft.rfft(x, axis=1)

    x, y = rand((64, 32), "float32"), rand((64, 32), "float32")
    want = f(x, y)
    got = numdyn.compile(f, backend="cuda")(x, y)
    for g_, w in zip(got, want):
        assert isinstance(g_, np.ndarray) and g_.dtype == w.dtype and g_.shape == w.shape
        np.testing.assert_allclose(g_, w, rtol=2e-4, atol=2e-4)


# ------------------------------------ the backend hands externs to cuBLAS/cuFFT


def _run_on_gpu(f, *args):
    """f compiled for the cuda backend, called through numdyn.explain: (its
    result, how many externs a GPU library computed, the extern steps the
    host ran -- with the backend's reason)."""
    ex = numdyn.explain(numdyn.compile(f, backend="cuda"))(*args)
    dev = [e for e in ex.gpu if e.get("event") == "device_extern"]
    host = [e for e in ex.gpu if e.get("event") == "host_step" and e.get("op") == "extern"]
    return ex.result, len(dev), host


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"),
                                   ("int32", "float32"), ("float16", "float16"),
                                   ("complex64", "complex64"), ("float64", "complex128")])
def test_backend_matmul_on_device(da, db):
    _cuda_backend()

    def f(a, b, c):
        return a @ b, np.dot(a, c.T), (a.T @ a)[:2]

    a = (rand((48, 40), "float64") * 2).astype(da)
    b = (rand((40, 24), "float64") * 2).astype(db)
    c = (rand((24, 40), "float64") * 2).astype(db)
    want = f(a, b, c)
    got, on_dev, host = _run_on_gpu(f, a, b, c)
    assert on_dev == 3 and not host, (on_dev, host)
    for g_, w, (x, y) in zip(got, want, [(a, b), (a, c.T), (a.T[:2], a)]):
        assert g_.dtype == w.dtype and g_.shape == w.shape
        ok, detail = close_prod(g_, x, y, w, w.dtype.name)
        assert ok, (da, db, detail)


@pytest.mark.parametrize("da,db", [("int64", "int64"), ("int8", "int8"), ("uint8", "int16"),
                                   ("bool", "bool"), ("bool", "int32"), ("uint64", "uint64")])
def test_backend_integer_matmul_on_device(da, db):
    # numdyn's integer gemm kernel: NumPy's wraparound, bool's OR of ANDs
    _cuda_backend()

    def f(a, b):
        return a @ b, np.dot(a.T, b.T), np.stack([a, a]) @ b

    a = RNG.integers(-100, 100, (33, 20)).astype(da)
    b = RNG.integers(-100, 100, (20, 33)).astype(db)
    want = f(a, b)
    got, on_dev, host = _run_on_gpu(f, a, b)
    assert on_dev == 3 and not host, (on_dev, host)
    for g_, w in zip(got, want):
        assert g_.dtype == w.dtype and g_.shape == w.shape
        np.testing.assert_array_equal(g_, w)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32", "bool"])
def test_integer_matmul_kernel(dev, dtype):
    for a_shape, b_shape in SHAPES:
        a0 = RNG.integers(-50, 50, a_shape).astype(dtype)
        b0 = RNG.integers(-50, 50, b_shape).astype(dtype)
        want = np.matmul(a0, b0)
        for la, lb in [("C", "C"), ("T", "F"), ("step", "rowstep")]:
            a, b = layout(a0, la), layout(b0, lb)
            d, ov = dev.empty(want.shape, dtype)
            if _C._cuda_lib_matmul(False, dev.upload(a), dev.upload(b), ov, dev.stream()) == 1:
                continue
            np.testing.assert_array_equal(dev.download(d, want.shape, dtype), want,
                                          err_msg=f"{dtype} {a_shape} {la} @ {b_shape} {lb}")


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "complex64", "int16"])
def test_backend_fft_on_device(dt):
    _cuda_backend()

    def f(x):
        out = [np.fft.fft(x), np.fft.ifft(x, n=7, axis=0, norm="ortho")]
        if not np.iscomplexobj(x):
            out.append(np.fft.rfft(x, n=12, norm="forward"))
        out.append(np.fft.irfft(x, axis=1))
        return out

    x = (rand((6, 10), "complex128" if dt.startswith("complex") else "float64") * 3).astype(dt)
    want = f(x)
    got, on_dev, host = _run_on_gpu(f, x)
    assert on_dev == len(want) and not host, (on_dev, host)
    for g_, w in zip(got, want):
        assert g_.dtype == w.dtype and g_.shape == w.shape, (dt, g_.dtype, w.dtype)
        eps = np.finfo(w.dtype).eps
        scale = max(1.0, float(np.abs(w).max()))
        assert float(np.abs(g_ - w).max()) <= 64 * eps * scale, (dt, float(np.abs(g_ - w).max()))


@pytest.mark.parametrize("dt", ["complex128", "complex64", "float16"])
@pytest.mark.parametrize("label,fn", FFT_CALLS, ids=[c[0] for c in FFT_CALLS])
def test_backend_fft_nd_on_device(label, fn, dt):
    # n-d and Hermitian transforms: cuFFT 1-d transforms one after another
    _cuda_backend()
    x = cases.rand(RNG, (3, 5, 6), "complex128") * 2
    x = x.astype(dt) if dt.startswith("complex") else x.real.astype(dt)
    want = fn(x)
    got, on_dev, host = _run_on_gpu(fn, x)
    assert on_dev == 1 and not host, (on_dev, host)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    eps = np.finfo(want.dtype).eps
    scale = max(1.0, float(np.abs(want).max()))
    assert float(np.abs(got - want).max()) <= 64 * eps * scale, float(np.abs(got - want).max())
