"""The generated CUDA run twice: on the host and, where there is one, on a GPU.

host: g++ compiles numdyn.cuda.source's kernels after tests/cuda_host_emu.h,
which makes each CUDA thread of a block a fiber and __syncthreads / warp
shuffles barriers (tests/cuda_host_emu_rt.cpp). This checks the generator's logic -- indexing,
grid-stride loops over several blocks, block and warp reductions, argmax's
first occurrence and NaN rules, float16 rounding, integer division by zero
-- on any machine, not a GPU's arithmetic or timing.

gpu: the same kernel text, compiled by NVRTC through CuPy's RawModule and
launched on the device with the same P/I/S/E arguments (independent of
numdyn's own CUDA runtime, so a generator bug and a runtime bug are told
apart). Runs only where CuPy sees a CUDA device; on a machine without one
those cases are skipped, which CI (no GPU) reports as skips."""
import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import numdyn.cuda as ndc

HERE = os.path.dirname(os.path.abspath(__file__))
CXX = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
GRID, BLOCK = 3, 64   # several blocks (grid-stride loops) of two warps
GPU_BLOCK = 256       # ND_THREADS: the kernels' __launch_bounds__


def _cupy_device():
    try:
        import cupy
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # no CuPy, no driver, no device: the gpu cases skip
        return None


@pytest.fixture(autouse=True, params=["host", "gpu"])
def executor(request):
    global _EXEC
    if request.param == "host" and CXX is None:
        pytest.skip("no C++ compiler (g++) to build the host emulation")
    if request.param == "gpu" and _cupy_device() is None:
        pytest.skip("no CUDA device visible to CuPy")
    _EXEC = request.param
    yield request.param


_EXEC = "host"


_BUILT = {}
_EMU = []


def _emu():
    """(the emulation's runtime library, a folder with cuda_emu_nd.h: the
    emulation header and numdyn's CUDA prelude precompiled), built once: a
    unit is then its kernels alone (g++ parses neither again)"""
    if not _EMU:
        d = tempfile.mkdtemp(prefix="nd_cuda_emu_rt_")
        rt = os.path.join(d, "libnd_emu_rt.so")
        r = subprocess.run([CXX, "-std=c++20", "-O1", "-fPIC", "-shared", "-I", HERE,
                            os.path.join(HERE, "cuda_host_emu_rt.cpp"), "-o", rt],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        with open(os.path.join(HERE, "cuda_host_emu.h")) as f:
            head = f.read()
        with open(os.path.join(d, "cuda_emu_nd.h"), "w") as f:
            f.write(head + ndc._C._cuda_prelude())
        # a failed precompile leaves g++ reading cuda_emu_nd.h itself
        subprocess.run([CXX, "-std=c++20", "-O1", "-fPIC", "-w", "-x", "c++-header",
                        os.path.join(d, "cuda_emu_nd.h"), "-o", os.path.join(d, "cuda_emu_nd.h.gch")],
                       capture_output=True, timeout=300)
        # global: the units' undefined names (threadIdx, the barriers) are its
        _EMU.extend([ctypes.CDLL(rt, mode=ctypes.RTLD_GLOBAL), d])
    return _EMU


def build(src):
    if src in _BUILT:  # one g++ run per kernel text (shapes travel in I)
        return _BUILT[src]
    rt, inc = _emu()
    pre = ndc._C._cuda_prelude()
    assert src.startswith(pre)
    d = tempfile.mkdtemp(prefix="nd_cuda_emu_")
    cu = os.path.join(d, "k.cpp")
    with open(cu, "w") as f:
        f.write('#include "cuda_emu_nd.h"\n' + src[len(pre):])
    so = os.path.join(d, "k.so")
    r = subprocess.run([CXX, "-std=c++20", "-O1", "-fPIC", "-shared", "-w", "-I", inc, cu, "-o", so],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    _BUILT[src] = ctypes.CDLL(so)
    return _BUILT[src]


def run(fn, args, outs, strides, edit=None):
    """Run fn's only kernel on the host. args: the input arrays (kernel
    operand order); outs: output arrays to fill; strides: per operand, its
    element strides along the kernel dims; edit: a change of the kernel's
    text first (a test's probe). Returns the error word."""
    ks = ndc.kernels(fn, *args)
    assert len(ks) == 1, [k for k, _ in ks]
    text = ks[0][1] if edit is None else edit(ks[0][1])
    name = re.search(r"(nd_cuda_[0-9a-f]{16})\(", text).group(1)
    R = len(re.findall(r"const int64_t n\d+ = I\[\d+\];", text))
    nops = len(re.findall(r"\*const B\d+ = ", text))
    assert nops == len(args) + len(outs) == len(strides)
    assert "S[" not in text  # these tests pass no scalar parameters
    arrays = list(args) + list(outs)
    if _EXEC == "gpu":
        return run_gpu(ndc._C._cuda_prelude() + "\n" + text, name, args, outs, strides, R, text)
    lib = build(ndc._C._cuda_prelude() + "\n" + text)
    shape = [int(x) for x in fn_shape(arrays, strides, R)]
    I = np.array(shape + [s for st in strides for s in st], dtype=np.int64)
    ptrs = [a.ctypes.data for a in arrays]
    if "lo%d = P[" % len(args) in text:  # store-check mode: each output's bounds
        for o in outs:
            ptrs += [o.ctypes.data, o.ctypes.data + o.nbytes]
    # a split reduction's scratch (codegen_cuda.h): partials, zeroed row counters
    part, cnt = np.zeros(16 * 8 * GRID, np.uint8), np.zeros(GRID, np.int32)
    ptrs += [0] * (3 * nops - len(ptrs)) + [part.ctypes.data, cnt.ctypes.data]
    P = (ctypes.c_void_p * len(ptrs))(*ptrs)
    E = ctypes.c_int(0)
    _emu()[0].nd_emu_launch(ctypes.c_void_p(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value),
                      P, I.ctypes.data_as(ctypes.c_void_p), None, ctypes.byref(E), GRID, BLOCK)
    assert not cnt.any()  # left zero for the next launch
    return E.value


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def run_gpu(src, name, args, outs, strides, R, text):
    """run() on the GPU: every operand's whole root buffer goes to the
    device (so strided views keep their strides and offsets), the kernel
    runs there, the outputs' roots come back."""
    cp = _cupy_device()
    kern = cp.RawModule(code=src, options=("-std=c++17", "--fmad=false")).get_function(name)
    arrays = list(args) + list(outs)
    roots, dev = {}, {}
    for a in arrays:
        r = _root(a)
        assert r.flags.c_contiguous
        if id(r) not in roots:
            roots[id(r)] = r
            dev[id(r)] = cp.asarray(r.reshape(-1).view(np.uint8))

    def dptr(a):
        return dev[id(_root(a))].data.ptr + (a.ctypes.data - _root(a).ctypes.data)
    shape = [int(x) for x in fn_shape(arrays, strides, R)]
    I = cp.asarray(np.array(shape + [s for st in strides for s in st], dtype=np.int64))
    ptrs = [dptr(a) for a in arrays]
    if "lo%d = P[" % len(args) in text:
        for o in outs:
            ptrs += [dptr(o), dptr(o) + o.nbytes]
    part, cnt = cp.zeros(16 * 8 * GRID, cp.uint8), cp.zeros(GRID, cp.int32)
    ptrs += [0] * (3 * len(arrays) - len(ptrs)) + [part.data.ptr, cnt.data.ptr]
    P = cp.asarray(np.array(ptrs, dtype=np.uint64))
    E = cp.zeros(1, dtype=np.int32)
    kern((GRID,), (GPU_BLOCK,), (P, I, np.uint64(0), E))
    cp.cuda.runtime.deviceSynchronize()
    assert not cnt.get().any()
    for o in outs:
        r = _root(o)
        r.reshape(-1).view(np.uint8)[:] = cp.asnumpy(dev[id(r)])
    return int(E.get()[0])


def fn_shape(arrays, strides, R):
    """the kernel dims' sizes: the largest extent any operand has along each"""
    dims = [1] * R
    for a in arrays:
        if a.ndim == R:
            dims = [max(x, y) for x, y in zip(dims, a.shape)]
    return dims


def c_strides(a, R):
    return [s // a.itemsize for s in a.strides] if a.ndim == R else None


@pytest.mark.parametrize("dt", ["float64", "float32", "int32", "uint8"])
def test_sum_rows(dt):
    x = (np.random.default_rng(0).standard_normal((37, 1000)) * 10).astype(dt)
    out = np.zeros(37, dtype=x.sum(axis=1).dtype)
    run(lambda a: a.sum(axis=1), [x], [out], [[1000, 1], [1, 0]])
    tol = 1e-4 if dt == "float32" else 1e-12
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=tol)


def test_sum_all_and_columns():
    x = np.random.default_rng(1).standard_normal((37, 130))
    out = np.zeros((), dtype=np.float64)
    run(lambda a: a.sum(), [x], [out], [[130, 1], [0, 0]])
    np.testing.assert_allclose(out, x.sum(), rtol=1e-12)
    col = np.zeros(130)
    run(lambda a: a.sum(axis=0), [x], [col], [[130, 1], [0, 1]])
    np.testing.assert_allclose(col, x.sum(axis=0), rtol=1e-12)


def test_argmax_argmin_first_occurrence_and_nan():
    x = np.random.default_rng(2).integers(0, 5, (20, 300)).astype(np.float64)
    x[3, 100] = np.nan
    x[3, 200] = np.nan      # the first NaN wins
    x[7, 299] = np.nan
    for f, ref in ((lambda a: np.argmax(a, axis=1), np.argmax), (lambda a: np.argmin(a, axis=1), np.argmin)):
        out = np.zeros(20, dtype=np.int64)
        run(f, [x], [out], [[300, 1], [1, 0]])
        np.testing.assert_array_equal(out, ref(x, axis=1))
    xi = np.random.default_rng(3).integers(-3, 3, (20, 300)).astype(np.int32)   # many ties
    out = np.zeros(20, dtype=np.int64)
    run(lambda a: np.argmax(a, axis=1), [xi], [out], [[300, 1], [1, 0]])
    np.testing.assert_array_equal(out, np.argmax(xi, axis=1))


def test_max_min_propagate_nan():
    x = np.random.default_rng(4).standard_normal((10, 500))
    x[2, 499] = np.nan
    x[5, 0] = np.nan
    for f in (lambda a: a.max(axis=1), lambda a: a.min(axis=1)):
        out = np.zeros(10)
        run(f, [x], [out], [[500, 1], [1, 0]])
        np.testing.assert_array_equal(out, f(x))


def test_integer_division_by_zero():
    a = np.arange(-50, 50, dtype=np.int64)
    b = np.resize(np.array([3, 0, -7, 1, 0], dtype=np.int64), 100)
    outq, outr = np.zeros(100, np.int64), np.zeros(100, np.int64)
    E = run(lambda x, y: (x // y, x % y), [a, b], [outq, outr], [[1]] * 4)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(outq, a // b)
        np.testing.assert_array_equal(outr, a % b)
    assert E & 1  # ND_ERR_DIVZERO: NumPy's "divide by zero" warning


def test_float16_rounds_after_each_op():
    rng = np.random.default_rng(5)
    a = rng.standard_normal(999).astype(np.float16)
    b = rng.standard_normal(999).astype(np.float16)
    out = np.zeros(999, np.float16)
    run(lambda x, y: (x + y) * x - y, [a, b], [out], [[1]] * 3)
    np.testing.assert_array_equal(out.view(np.uint16), ((a + b) * a - b).view(np.uint16))


def test_broadcast_and_strided_pointwise():
    x = np.random.default_rng(6).standard_normal((40, 60))
    xs = x[::2, ::3]                    # 20 x 20, strided
    y = np.arange(20.0)                 # broadcast along rows
    out = np.zeros((20, 20))
    run(lambda a, b: a * b - a, [xs, y], [out], [[120, 3], [0, 1], [20, 1]])
    np.testing.assert_array_equal(out, xs * y - xs)


def test_softmax_row_kernel():
    x = np.random.default_rng(7).standard_normal((33, 300))
    out = np.zeros_like(x)

    def softmax(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    run(softmax, [x], [out], [[300, 1], [300, 1]])
    np.testing.assert_allclose(out, softmax(x), rtol=1e-13)


def test_cumsum_scan():
    x = np.random.default_rng(8).integers(-100, 100, (7, 333)).astype(np.int32)
    out = np.zeros((7, 333), np.int64)
    run(lambda a: np.cumsum(a, axis=1, dtype=np.int64), [x], [out], [[333, 1], [333, 1]])
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=np.int64))


def test_complex_pointwise():
    rng = np.random.default_rng(9)
    a = rng.standard_normal(257) + 1j * rng.standard_normal(257)
    b = rng.standard_normal(257) + 1j * rng.standard_normal(257)
    out = np.zeros(257, np.complex128)
    run(lambda x, y: x * y / (x - y), [a, b], [out], [[1]] * 3)
    np.testing.assert_allclose(out, a * b / (a - b), rtol=1e-14)


def _softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _cached_branch(text):
    """the register-row branch of a row kernel: its text up to its `else`"""
    assert "kc0_[" in text, "no register-row form"
    return text.split("if (nred_ <= (int64_t)", 1)[1].split("} else {", 1)[0]


@pytest.mark.parametrize("dt,width", [("float64", 300), ("float64", 2000), ("float32", 1000), ("float32", 3000)])
def test_softmax_rows_read_once(dt, width):
    """rows that fit the block's registers are read from memory once (the
    threads load their elements by vectors of 4 before the max/sum/divide
    passes, which read them there); wider rows take the three-read loop.
    At 64 threads a block (the emulation's) float64 rows fit up to 8 * 64
    and float32 rows up to 16 * 64 elements: both branches run."""
    x = np.random.default_rng(10).standard_normal((9, width)).astype(dt)
    out = np.zeros_like(x)
    text = ndc.kernels(_softmax, x)[0][1]
    assert len(re.findall(r"B0\[", _cached_branch(text))) == 1   # one read of the row
    run(_softmax, [x], [out], [[width, 1], [width, 1]])
    np.testing.assert_allclose(out, _softmax(x), rtol=1e-5 if dt == "float32" else 1e-13)


def _aligned(shape, dt, align=64):
    """an array of this shape whose data starts at a multiple of align bytes"""
    n = int(np.prod(shape)) * np.dtype(dt).itemsize
    buf = np.zeros(n + align, np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + n].view(dt).reshape(shape)


def _no_fallback(text):
    """the kernel with its three-read row loop removed: a row the register
    form does not take stays unwritten"""
    head, tail = text.split("if (nred_ <= (int64_t)", 1)
    assert "} else {" in tail
    return head + "if (nred_ <= (int64_t)" + tail.replace("} else {", "} else if (0) {", 1)


@pytest.mark.parametrize("dt,width,how", [
    ("float32", 1024, "aligned"), ("float64", 300, "aligned"), ("float32", 20, "aligned"),
    ("float32", 1002, "odd width"), ("float32", 1024, "misaligned"), ("float32", 1024, "strided"),
    ("float64", 300, "odd row stride")])
def test_row_registers_by_vectors_or_not_at_all(dt, width, how):
    """The register form of a row kernel moves 4 elements by one vector
    load/store (scalar loads at runtime strides held a register per address:
    126 a thread for softmax, 27% of an H100's copy bandwidth; vectors 94%).
    It runs only where every cached operand and output has element stride 1
    along the row, rows a multiple of 4 elements apart and addresses aligned
    to 4 elements (checked when the kernel runs); every other row takes the
    three-read loop. With that loop removed, the rows it would take stay
    unwritten: the test sees which branch ran."""
    if _EXEC == "gpu":
        pytest.skip("host addresses: run_gpu's device copies change the alignment")
    rows = 9
    if how == "aligned" or how == "odd width":
        x = _aligned((rows, width), dt)
    elif how == "misaligned":
        x = _aligned((rows, width + 4), dt)[:, 1:width + 1]
    elif how == "strided":
        x = _aligned((rows, 2 * width), dt)[:, ::2]
    else:   # rows 302 elements apart: not a multiple of 4
        x = _aligned((rows, width + 2), dt)[:, :width]
    x[...] = np.random.default_rng(14).standard_normal(x.shape)
    rs, cs = x.strides[0] // x.itemsize, x.strides[1] // x.itemsize
    want = _softmax(x)
    out = _aligned((rows, width), dt)
    run(_softmax, [x], [out], [[rs, cs], [width, 1]])
    np.testing.assert_allclose(out, want, rtol=1e-5 if dt == "float32" else 1e-13)
    out[...] = 0
    run(_softmax, [x], [out], [[rs, cs], [width, 1]], edit=_no_fallback)
    if how == "aligned":
        np.testing.assert_allclose(out, want, rtol=1e-5 if dt == "float32" else 1e-13)
    else:
        assert not out.any()


def _lse(a):
    m = a.max(axis=-1)
    return m + np.log(np.exp(a - m[:, None]).sum(axis=-1))


def _scaled_softmax(a, w):
    return _softmax(a * w)


def test_logsumexp_and_two_operand_rows_read_once():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((13, 700))
    out = np.zeros(13)
    text = ndc.kernels(_lse, x)[0][1]
    assert len(re.findall(r"B0\[", _cached_branch(text))) == 1
    run(_lse, [x], [out], [[700, 1], [1, 0]])
    np.testing.assert_allclose(out, _lse(x), rtol=1e-13)
    x = x[:, :500]   # two float64 operands: 4 elements a thread, wider rows than 256 read thrice
    w = rng.standard_normal((1, 500))
    out2 = np.zeros_like(x)
    ks = ndc.kernels(_scaled_softmax, x, w)
    text = ks[0][1]
    cached = _cached_branch(text)
    assert len(re.findall(r"B0\[", cached)) == 1 and len(re.findall(r"B1\[", cached)) == 1
    run(_scaled_softmax, [x, w], [out2], [[700, 1], [0, 1], [500, 1]])
    np.testing.assert_allclose(out2, _scaled_softmax(x, w), rtol=1e-13)


@pytest.mark.parametrize("dt", ["float32", "complex128", "int64"])
def test_full_reductions_split_over_blocks(dt):
    """a reduction with fewer rows than half the grid is split over the
    blocks (each folds its share, the row's last block folds the partials in
    order): the full sum and max of one array in one kernel, every block of
    the emulation's grid taking part"""
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(20000) * 100).astype(dt) if dt != "complex128" else \
        np.exp(1j * rng.uniform(-np.pi, np.pi, 20000))   # a product of modulus 1
    fn = (lambda a: (a.sum(), a.prod())) if dt == "complex128" else (lambda a: (a.sum(), a.max()))
    text = ndc.kernels(fn, x)[0][1]
    assert "atomicAdd(cnt_" in text
    ref = fn(x)
    outs = [np.zeros((), np.asarray(r).dtype) for r in ref]
    run(fn, [x], outs, [[1], [0], [0]])
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o, r, rtol=1e-4 if dt == "float32" else 1e-9)


def test_narrow_reductions_a_thread_per_row():
    """rows of at most ND_NARROW (16) elements: a thread per row, in order --
    k-means' argmin over 16 distances (first minimum, NaN first), max (NaN
    propagates) and sum over rows of 13"""
    rng = np.random.default_rng(13)
    d = rng.integers(0, 4, (16, 999)).astype(np.float64)
    d[5, 7] = np.nan
    out = np.zeros(999, np.int64)
    run(lambda a: np.argmin(a, axis=0), [d], [out], [[999, 1], [0, 1]])
    np.testing.assert_array_equal(out, np.argmin(d, axis=0))
    x = rng.standard_normal((700, 13))
    x[3, 4] = np.nan
    mx = np.zeros(700)
    ks = ndc.kernels(lambda a: a.max(axis=1), x)
    assert [k for k, _ in ks] == ["reduce"] and "if (nred_ <= ND_NARROW)" in ks[0][1]
    run(lambda a: a.max(axis=1), [x], [mx], [[13, 1], [1, 0]])
    np.testing.assert_array_equal(mx, x.max(axis=1))
    xi = rng.integers(-9, 9, (700, 13)).astype(np.int32)
    si = np.zeros(700, np.int64)
    run(lambda a: a.sum(axis=1), [xi], [si], [[13, 1], [1, 0]])
    np.testing.assert_array_equal(si, xi.sum(axis=1))


@pytest.mark.parametrize("dt", ["float32", "int64"])  # 16- and 32-byte vectors
def test_pointwise_vector_lanes(dt):
    """one-dimensional pointwise kernels move 4 elements a thread by vector
    loads and stores when every operand has element stride 1 from an
    aligned address (the tail and every other case element by element):
    aligned, misaligned (a[1:]) and strided (a[::2]) operands, a broadcast
    operand, odd lengths"""
    rng = np.random.default_rng(14)
    base = (rng.standard_normal(2 * 1003 + 2) * 20).astype(dt)
    y = (rng.standard_normal(1003) * 20).astype(dt)
    one = np.asarray((rng.standard_normal((1,)) * 3).astype(dt))

    def fn(a, b, c):
        return a * b - c, (a + c).astype(np.float64)
    text = ndc.kernels(fn, base[:1003], y, one)[0][1]
    assert "nd_v4<" in text
    for x, st in ((base[:1003], 1), (base[1:1004], 1), (base[::2][:1003], 2)):
        o1, o2 = np.zeros(1003, dt), np.zeros(1003)
        with np.errstate(all="ignore"):
            run(fn, [x, y, one], [o1, o2], [[st], [1], [0], [1], [1]])
            w1, w2 = fn(x, y, one)
        np.testing.assert_array_equal(o1, w1)
        np.testing.assert_array_equal(o2, w2)


def test_narrow_row_kernels_a_thread_per_row():
    """softmax over 10 and 16 classes: a thread per row (rows of at most 16
    elements), every pass in order"""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((300, 10)) * 4
    text = ndc.kernels(_softmax, x)[0][1]
    assert "if (nred_ <= ND_NARROW)" in text
    out = np.zeros_like(x)
    run(_softmax, [x], [out], [[10, 1], [10, 1]])
    np.testing.assert_allclose(out, _softmax(x), rtol=1e-13)
    y = rng.standard_normal((300, 16)).astype(np.float32)
    o2 = np.zeros_like(y)
    run(_softmax, [y], [o2], [[16, 1], [16, 1]])
    np.testing.assert_allclose(o2, _softmax(y), rtol=1e-6)


def _vec_only(text):
    """the reduction with its element-by-element block form removed: a row
    the vector form does not take stays unwritten"""
    key = "} else\n{\nfor (int64_t row_ = blockIdx.x;"
    assert text.count(key) == 1, text
    return text.replace(key, "} else if (0)\n{\nfor (int64_t row_ = blockIdx.x;")


@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "float16", "uint8"])
def test_block_reductions_read_rows_by_vectors(dt):
    """A block-per-row reduction whose rows run with stride 1 from aligned
    addresses reads 4 elements by one vector load (sums of (16384, 4096)
    float32 rows: 118-164 us element by element on an H200, torch 68):
    sum, max with NaN, argmax's first occurrence through the vector form
    alone; an odd width or a strided row leaves it (the element loop)."""
    rng = np.random.default_rng(7)
    x = _aligned((7, 1000), dt)
    x[...] = (rng.standard_normal((7, 1000)) * 8).astype(dt)
    if dt in ("float32", "float64", "float16"):
        x[2, 517] = np.nan
        x[2, 900] = np.nan
    x[4, 3] = x[4].max()   # a tie: the first occurrence wins
    for f in (lambda a: a.sum(axis=1), lambda a: a.max(axis=1), lambda a: np.argmax(a, axis=1)):
        want = f(x)
        out = np.zeros(7, dtype=want.dtype)
        run(f, [x], [out], [[1000, 1], [1, 0]], edit=_vec_only)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(out, want, rtol={"float16": 2e-3, "float32": 1e-5}.get(dt, 1e-12))
        else:
            np.testing.assert_array_equal(out, want)
    for shape, view in (((7, 1002), lambda b: b), ((7, 2000), lambda b: b[:, ::2])):
        y = _aligned(shape, dt)
        y[...] = 1
        y = view(y)
        out = np.zeros(7, dtype=y.sum(axis=1).dtype)
        run(lambda a: a.sum(axis=1), [y], [out], [c_strides(y, 2), [1, 0]], edit=_vec_only)
        assert not out.any()   # the vector form did not take it
        run(lambda a: a.sum(axis=1), [y], [out], [c_strides(y, 2), [1, 0]])
        np.testing.assert_array_equal(out, y.sum(axis=1))
