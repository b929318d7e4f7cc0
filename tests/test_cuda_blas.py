"""The CUDA backend's cuBLAS/cuFFT externs, host side (no GPU needed).

- the libraries' lookup and the CudaError that names what to install;
- the gemm plan of matmul/dot (the row-major trick, transposed and strided
  operands, batch broadcasting, merged batch dims, loops of calls) run here
  by a column-major gemm written with NumPy that reads memory exactly as
  cuBLAS does, against np.matmul / np.dot;
- the cuFFT plan of fft/ifft/rfft/irfft (n padding/cropping, axis,
  batching) run by a NumPy model of cuFFT's advanced layout, and its norm
  factor bit for bit as NumPy computes it;
- which EXTERN nodes the backend hands to the libraries, and in which
  dtypes (NumPy's loops: matmul in the result dtype, float16 matmul in
  float16 storage, irfft of float16 written as float32).
tests/test_cuda_gpu_diff.py runs the same calls on a GPU.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import numdyn
from numdyn import _C, _cuda_libs

import cuda_lib_cases as cases
from cuda_lib_cases import FFT_CALLS, LAYOUTS, layout

RNG = np.random.default_rng(20261126)


def _nvrtc_here():
    try:
        numdyn.cuda.nvrtc_version()
        return True
    except numdyn.cuda.CudaError:
        return False


# ------------------------------------------------------------- lookup

def test_candidates_order(monkeypatch):
    monkeypatch.setenv("NUMDYN_CUBLAS", "/opt/mine/libcublas.so.12")
    c = _cuda_libs.candidates("cublas")
    assert c[0] == "/opt/mine/libcublas.so.12"
    assert "libcublas.so.13" in c and "libcublas.so.12" in c
    assert c.index("libcublas.so.13") < c.index("libcublas.so.12") < c.index("libcublas.so")
    assert len(set(c)) == len(c)
    monkeypatch.setenv("NUMDYN_CUFFT", "/x/libcufft.so.12")
    f = _cuda_libs.candidates("cufft")
    assert f[0] == "/x/libcufft.so.12" and "libcufft.so.12" in f
    assert _cuda_libs.candidates("cuda")[-2:] == ["libcuda.so.1", "libcuda.so"]


def _fresh(code):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_missing_library_names_what_to_install():
    # controlled candidates in a fresh process (nothing loaded yet): a path
    # that does not exist, and a real library that is not cuBLAS
    out = _fresh(
        "import numdyn, numdyn.cuda\n"
        "from numdyn import _C, _cuda_libs\n"
        "try:\n"
        "    _cuda_libs._load_from('cublas', ['/nonexistent/libcublas.so.12', 'libm.so.6'])\n"
        "except numdyn.cuda.CudaError as e:\n"
        "    print('ERR', e)\n")
    assert out.startswith("ERR numdyn.cuda: cuBLAS (libcublas) not found")
    assert "pip install nvidia-cublas-cu12" in out and "NUMDYN_CUBLAS" in out
    assert "/nonexistent/libcublas.so.12" in out
    assert "libm.so.6: not the library asked for" in out


def test_missing_cufft_message():
    out = _fresh(
        "import numdyn, numdyn.cuda\n"
        "from numdyn import _C, _cuda_libs\n"
        "try:\n"
        "    _cuda_libs._load_from('cufft', ['/nonexistent/libcufft.so.12'])\n"
        "except numdyn.cuda.CudaError as e:\n"
        "    print('ERR', e)\n")
    assert "cuFFT (libcufft) not found" in out and "pip install nvidia-cufft-cu12" in out
    assert isinstance(numdyn.cuda.CudaError(), RuntimeError)


@pytest.mark.skipif(numdyn.cuda.is_available(), reason="a GPU machine may have cuBLAS installed")
def test_no_cublas_here_raises_cudaerror():
    # this machine: no cuBLAS anywhere -> the real lookup raises, and says what to do
    if any(os.path.exists(p) for p in _cuda_libs.candidates("cublas") if os.path.isabs(p)):
        pytest.skip("cuBLAS is installed on this machine")
    r = _fresh("import numdyn, numdyn.cuda\nfrom numdyn import _cuda_libs\n"
               "try:\n    _cuda_libs.load('cublas')\n"
               "except numdyn.cuda.CudaError as e:\n    print('ERR', str(e).splitlines()[0])\n")
    if "ERR" not in r:
        pytest.skip("libcublas is on the loader's path")
    assert "pip install nvidia-cublas-cu12" in r


# --------------------------------------------------------- gemm plans

def view(a, base):
    """(ptr 0, typenum, shape, strides) of a relative to base's element 0."""
    return (0, a.dtype.num, a.shape, a.strides)


def run_plan(p, a, b, out_shape, dtype, dot):
    """Execute a gemm plan the way cuBLAS reads memory (column-major, ld,
    strided batches, loops) on the operands' own memory."""
    es = np.dtype(dtype).itemsize
    out = np.zeros(out_shape, dtype)
    if p is None:
        return None
    if p["empty"]:
        return out
    if p["zero"]:
        return out
    # flat element views of each operand's memory, from its element [0..0]
    def flat(x):
        lo = sum(min(0, (s // es) * (n - 1)) for s, n in zip(x.strides, x.shape))
        hi = sum(max(0, (s // es) * (n - 1)) for s, n in zip(x.strides, x.shape)) + 1
        assert lo == 0
        return np.lib.stride_tricks.as_strided(x, shape=(hi,), strides=(es,))
    A, B, C = flat(a), flat(b), out.reshape(-1)
    m, n, k = p["m"], p["n"], p["k"]
    i = np.arange(m)[:, None, None]
    j = np.arange(n)[None, :, None]
    l = np.arange(k)[None, None, :]
    # op(X1) is m x k read from B's memory; op(X2) is k x n from A's
    x1 = (i + l * p["ld1"]) if p["op1"] == "N" else (l + i * p["ld1"])
    x2 = (l + j * p["ld2"]) if p["op2"] == "N" else (j + l * p["ld2"])
    loops = p["loops"]
    idx = [0] * len(loops)
    while True:
        o1 = sum(t * L[1] for t, L in zip(idx, loops))
        o2 = sum(t * L[2] for t, L in zip(idx, loops))
        oc = sum(t * L[3] for t, L in zip(idx, loops))
        for q in range(p["batch"]):
            v1 = B[o1 + q * p["bs1"] + x1]          # (m, 1, k)
            v2 = A[o2 + q * p["bs2"] + x2]          # (1, n, k)
            cm = (v1 * v2).sum(-1)                  # (m, n) = C^T
            C[oc + q * p["bsc"] + np.arange(m)[:, None] + np.arange(n)[None, :] * p["ldc"]] = cm
        d = len(loops) - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < loops[d][0]:
                break
            idx[d] = 0
            d -= 1
        if d < 0:
            break
    return out


def rand(shape, dtype):
    return cases.rand(RNG, shape, dtype)


def matmul_cases(n):
    out = []
    for _ in range(n):
        nb = RNG.integers(0, 4)
        batch = tuple(int(v) for v in RNG.integers(1, 4, nb))
        ba = tuple(1 if RNG.random() < 0.3 else s for s in batch)[RNG.integers(0, nb + 1):]
        bb = tuple(1 if RNG.random() < 0.3 else s for s in batch)[RNG.integers(0, nb + 1):]
        n_, k, m = (int(v) for v in RNG.integers(0, 6, 3))
        a_shape = ba + (n_, k) if RNG.random() > 0.15 else (k,)
        b_shape = bb + (k, m) if RNG.random() > 0.15 else (k,)
        out.append((a_shape, b_shape))
    return out


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_gemm_plan_matmul_random(dtype):
    ran = refused = 0
    for a_shape, b_shape in matmul_cases(300):
        a0, b0 = rand(a_shape, dtype), rand(b_shape, dtype)
        want = np.matmul(a0, b0)
        for la, lb in [("C", "C"), (LAYOUTS[RNG.integers(5)], LAYOUTS[RNG.integers(5)])]:
            a, b = layout(a0, la), layout(b0, lb)
            o = np.empty(want.shape, dtype)
            p = _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))
            if p is None:
                refused += 1
                assert (la, lb) != ("C", "C"), (a_shape, b_shape)
                continue
            got = run_plan(p, a, b, want.shape, dtype, False)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{a_shape} {la} @ {b_shape} {lb}: {p}")
            ran += 1
    assert ran > 400 and refused < ran // 4, (ran, refused)


def test_gemm_plan_dot_nd():
    cases = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (6, 4, 5)),
             ((4,), (3, 4, 2)), ((2, 3, 4), (4,)), ((5,), (5,)), ((2, 2, 3, 4), (3, 4, 2)),
             ((3, 0), (0, 2)), ((0, 4), (2, 4, 3)), ((3, 4), (0, 4, 2))]
    for a_shape, b_shape in cases:
        for la, lb in [("C", "C"), ("F", "T"), ("step", "C"), ("T", "rowstep")]:
            a0, b0 = rand(a_shape, "float64"), rand(b_shape, "float64")
            a, b = layout(a0, la), layout(b0, lb)
            want = np.dot(a0, b0)
            o = np.empty(np.shape(want))
            p = _C._cuda_gemm_plan(True, view(a, a), view(b, b), view(o, o))
            if p is None:
                assert (la, lb) != ("C", "C")
                continue
            got = run_plan(p, a, b, np.shape(want), "float64", True)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                       err_msg=f"dot {a_shape} {la}, {b_shape} {lb}: {p}")


def test_gemm_plan_shapes_of_the_call():
    f = np.float32
    a, b = np.ones((8, 3, 4), f), np.ones((4, 5), f)
    o = np.empty((8, 3, 5), f)
    p = _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))
    # row-major trick: cuBLAS computes C^T (5 x 3) = B^T A^T, B's memory first
    assert (p["m"], p["n"], p["k"]) == (5, 3, 4)
    assert (p["op1"], p["op2"], p["ld1"], p["ld2"], p["ldc"]) == ("N", "N", 5, 4, 5)
    # the batch of a contiguous stack is one strided call; B broadcast: stride 0
    assert (p["batch"], p["bs1"], p["bs2"], p["bsc"], p["loops"]) == (8, 0, 12, 15, [])
    # (2, 3) batch dims of a contiguous stack merge into one batch of 6
    a = np.ones((2, 3, 4, 4), f)
    o = np.empty((2, 3, 4, 4), f)
    p = _C._cuda_gemm_plan(False, view(a, a), view(a, a), view(o, o))
    assert p["batch"] == 6 and p["loops"] == []
    # a transposed operand is read in place (op T), not copied
    at = np.ones((4, 3), f).T
    o = np.empty((3, 5), f)
    p = _C._cuda_gemm_plan(False, view(at, at), view(b, b), view(o, o))
    assert p["op2"] == "T" and p["ld2"] == 3
    # broadcasting (3, 1) x (1, 4) batches: one dim batched, the other looped
    a, b = np.ones((3, 1, 2, 2), f), np.ones((1, 4, 2, 2), f)
    o = np.empty((3, 4, 2, 2), f)
    p = _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))
    assert p["batch"] == 4 and len(p["loops"]) == 1 and p["loops"][0][0] == 3
    # k == 0: zeros without a gemm; an empty result: nothing
    a, b = np.ones((3, 0), f), np.ones((0, 2), f)
    o = np.empty((3, 2), f)
    assert _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))["zero"]
    a = np.ones((0, 3), f)
    b = np.ones((3, 2), f)
    o = np.empty((0, 2), f)
    assert _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))["empty"]


def test_gemm_plan_refuses():
    f = np.float64
    # neither matrix dim unit-strided: the caller must pass a copy
    a = np.ones((6, 8))[::2, ::2]
    b = np.ones((4, 2))
    o = np.empty((3, 2))
    assert _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o)) is None
    # mixed dtypes are not one gemm (the caller casts first)
    ai = np.ones((2, 2), np.int64)
    with pytest.raises(NotImplementedError, match="operands of the output's dtype"):
        _C._cuda_gemm_plan(False, view(ai, ai), view(ai, ai), view(np.ones((2, 2)), None))
    assert _C._cuda_gemm_plan(False, view(ai, ai), view(ai, ai), view(ai, ai))["dtype"] == ai.dtype.num
    a32 = np.ones((2, 2), np.float32)
    with pytest.raises(NotImplementedError):
        _C._cuda_gemm_plan(False, view(a32, a32), view(b, b), view(o, o))


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64"])
def test_gemm_plan_dtypes(dtype):
    a, b = np.ones((2, 3), dtype), np.ones((3, 4), dtype)
    o = np.empty((2, 4), dtype)
    assert _C._cuda_gemm_plan(False, view(a, a), view(b, b), view(o, o))["dtype"] == np.dtype(dtype).num


# ---------------------------------------------------------- fft plans

KINDS = {"fft": 0, "ifft": 1, "rfft": 2, "irfft": 3}
NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


def run_fft_plan(p, kind, x, axis):
    """cuFFT's advanced layout (unnormalized transforms) on x, from the plan."""
    outer, L, inner = p["outer"], p["len_in"], p["inner"]
    src = np.ascontiguousarray(x).reshape(outer, L, inner)
    if p["pad"]:
        s = np.zeros((outer, p["pad_len"], inner), src.dtype)
        s[:, :p["nin"]] = src[:, :p["nin"]]
        if kind == "irfft":
            s[:, 0].imag = 0
            if p["n"] % 2 == 0 and p["nin"] == p["pad_len"]:
                s[:, -1].imag = 0
        src = s
    src = src.reshape(-1)
    n, lo = p["n"], p["len_out"]
    pts = n // 2 + 1 if kind == "irfft" else n
    odt = np.float64 if kind == "irfft" else np.complex128
    lo_mem = p["opad_len"] if p["opad"] else lo   # rows of the memory written
    out = np.zeros(outer * lo_mem * inner, odt)
    for i in range(p["nloop"]):
        for q in range(p["batch"]):
            xi = src[i * p["loop_in"] + q * p["idist"] + np.arange(pts) * p["istride"]]
            if kind == "fft":
                y = np.fft.fft(xi, n)
            elif kind == "ifft":
                y = np.fft.ifft(xi, n) * n
            elif kind == "rfft":
                y = np.fft.rfft(xi, n)
            else:
                y = np.fft.irfft(xi, n) * n
            out[i * p["loop_out"] + q * p["odist"] + np.arange(lo) * p["ostride"]] = y
    out = out.reshape(outer, lo_mem, inner)[:, :lo] * p["scale"]
    shape = list(x.shape)
    shape[axis] = lo
    return out.reshape(shape)


@pytest.mark.parametrize("kind", list(KINDS))
def test_fft_plan_random(kind):
    for _ in range(120):
        nd = int(RNG.integers(1, 4))
        shape = tuple(int(v) for v in RNG.integers(1, 7, nd))
        axis = int(RNG.integers(0, nd))
        n = None if RNG.random() < 0.3 else int(RNG.integers(1, 13))
        norm = [None, "backward", "ortho", "forward"][RNG.integers(4)]
        x = rand(shape, "complex128" if kind != "rfft" else "float64")
        if kind == "irfft" and n is None and shape[axis] == 1:
            continue   # NumPy: n = 0 points
        want = getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm)
        nn = n if n is not None else (2 * (shape[axis] - 1) if kind == "irfft" else shape[axis])
        p = _C._cuda_fft_plan(KINDS[kind], nn, axis, NORMS[norm], np.dtype("float64").num, shape)
        got = run_fft_plan(p, kind, x, axis)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{kind} {shape} n={n} axis={axis} {norm}: {p}")


def test_fft_plan_real_blocks_aligned():
    """cuFFT wants a real array at an address aligned to its complex type
    (GPU run 1: CUFFT_INVALID_VALUE for rfft/irfft along a middle axis):
    every exec's real block starts at an even element offset (the
    transforms inside one plan are cuFFT's to place)."""
    for kind in (2, 3):
        for shape in [(3, 10, 5), (3, 7, 5), (5, 9, 3), (2, 7, 30), (30, 7, 3), (4, 3, 1)]:
            for n in [1, 2, 3, 5, 7, 16, 23]:
                p = _C._cuda_fft_plan(kind, n, 1, 0, 12, shape)
                if kind == 2:
                    real_offsets = [i * p["loop_in"] for i in range(p["nloop"])]
                else:
                    real_offsets = [i * p["loop_out"] for i in range(p["nloop"])]
                assert all(o % 2 == 0 for o in real_offsets) or p["nloop"] == 1, (kind, shape, n, p)


def test_fft_plan_layouts():
    # last axis: one plan over all rows; a middle axis: a loop over the
    # smaller of outer/inner
    p = _C._cuda_fft_plan(0, 8, 1, 0, 12, (5, 8))
    assert (p["batch"], p["istride"], p["idist"], p["nloop"], p["pad"]) == (5, 1, 8, 1, False)
    p = _C._cuda_fft_plan(0, 8, 1, 0, 12, (2, 8, 50))
    assert (p["batch"], p["istride"], p["idist"], p["nloop"]) == (50, 50, 1, 2)
    p = _C._cuda_fft_plan(0, 8, 1, 0, 12, (50, 8, 2))
    assert (p["batch"], p["istride"], p["idist"], p["nloop"]) == (50, 2, 16, 2)
    # n past the input pads through a scratch copy; n short of it crops in place
    assert _C._cuda_fft_plan(0, 12, 0, 0, 12, (8,))["pad"]
    p = _C._cuda_fft_plan(0, 4, 0, 0, 12, (8,))
    assert not p["pad"] and p["nin"] == 4 and p["idist"] == 8
    # irfft always reads a copy (cuFFT's c2r overwrites its input)
    p = _C._cuda_fft_plan(3, 8, 0, 0, 12, (5,))
    assert p["pad"] and p["pad_len"] == 5 and p["len_out"] == 8
    assert _C._cuda_fft_plan(2, 8, 0, 0, 12, (8,))["len_out"] == 5
    with pytest.raises(ValueError):
        _C._cuda_fft_plan(0, 0, 0, 0, 12, (8,))


@pytest.mark.parametrize("rd", ["float16", "float32", "float64"])
def test_fft_norm_factor_as_numpy(rd):
    """The factor NumPy computes in the input's real dtype (pocketfft.py):
    np.reciprocal(np.sqrt(n, dtype=rd)) and np.reciprocal(n, dtype=rd)."""
    import warnings
    for n in [1, 2, 3, 7, 10, 100, 1000, 4097, 65519, 65520, 100000, 2 ** 20 + 1]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ortho = float(np.reciprocal(np.sqrt(n, dtype=rd)))
            fwd = float(np.reciprocal(n, dtype=rd))
        num = np.dtype(rd).num
        assert _C._cuda_fft_plan(0, n, 0, 0, num, (n,))["scale"] == 1.0
        assert _C._cuda_fft_plan(0, n, 0, 1, num, (n,))["scale"] == ortho, (n, rd)
        assert _C._cuda_fft_plan(0, n, 0, 2, num, (n,))["scale"] == fwd, (n, rd)
        assert _C._cuda_fft_plan(1, n, 0, 0, num, (n,))["scale"] == fwd, (n, rd)
        assert _C._cuda_fft_plan(1, n, 0, 2, num, (n,))["scale"] == 1.0
        assert _C._cuda_fft_plan(3, n, 0, 1, num, (n // 2 + 1,))["scale"] == ortho


# ------------------------------------------------ nodes and their dtypes

def nodes_of(fn, *args):
    """[(node id, kind, input dtypes, output dtype)] of fn's EXTERN nodes."""
    out = []
    for g in numdyn.cuda._graphs_of(fn, args, {}):
        for i in range(len(str(g).splitlines())):
            line = str(g).splitlines()[i]
            if " = extern " not in line:
                continue
            nid = int(line.split()[0][1:])
            kind, ins, od = _C._cuda_lib_node(g, nid)
            out.append((nid, kind, ins, od))
    return out


_BY_NUM = {np.dtype(d).num: np.dtype(d).name
           for d in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128"]}


def name(num):
    return _BY_NUM[int(num)]


def names(t):
    return tuple(name(d) for d in t)


def test_nodes_matmul_dtypes():
    f32, f64 = np.ones((3, 4), np.float32), np.ones((4, 5))
    r = nodes_of(lambda a, b: (a @ b, np.dot(a, b), np.matmul(a.astype(np.float16), b.astype(np.float16))), f32, f64)
    assert [k for _, k, _, _ in r] == ["matmul", "dot", "matmul"]
    assert names(r[0][2]) == ("float64", "float64") and name(r[0][3]) == "float64"
    assert names(r[2][2]) == ("float16", "float16") and name(r[2][3]) == "float16"
    c = np.ones((2, 2), np.complex64)
    r = nodes_of(lambda a: a @ a, c)
    assert names(r[0][2]) == ("complex64", "complex64")


def test_nodes_integer_matmul_dtypes():
    # integer and bool matmul: numdyn's own kernel in the result's dtype
    a = np.ones((3, 3), np.int64)
    r = nodes_of(lambda x, y: (x @ x, y @ y, np.dot(x.astype(np.int8), y)), a, a.astype(bool))
    got = [(k, names(i), name(o)) for _, k, i, o in r]
    assert got == [("matmul", ("int64", "int64"), "int64"), ("matmul", ("bool", "bool"), "bool"),
                   ("dot", ("int8", "int8"), "int8")]


@pytest.mark.skipif(not _nvrtc_here(), reason="NVRTC is not installed")
def test_integer_gemm_kernels_compile():
    texts = []
    for d in ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]:
        nm, text = _C._cuda_igemm_source(np.dtype(d).num)
        assert nm in text
        texts.append(text)
    with pytest.raises(NotImplementedError):
        _C._cuda_igemm_source(np.dtype("float32").num)
    assert _C._cuda_compile(_C._cuda_prelude() + "\n" + "\n".join(texts), "sm_90")[1] > 0


def test_nodes_fft_dtypes():
    x16, x32, xi = np.ones((4, 6), np.float16), np.ones((4, 6), np.float32), np.ones(6, np.int32)
    r = nodes_of(lambda a, b, c: (np.fft.fft(a), np.fft.irfft(a, axis=0), np.fft.rfft(b, n=9),
                                  np.fft.ifft(c, norm="ortho"), np.fft.irfft(b.astype(np.complex64))),
                 x16, x32, xi)
    got = [(k, names(i), name(o)) for _, k, i, o in r]
    assert got == [("fft", ("complex64",), "complex64"),
                   ("fft", ("complex64",), "float32"),     # float16 irfft: float32, cast after
                   ("fft", ("float32",), "complex64"),
                   ("fft", ("complex128",), "complex128"),
                   ("fft", ("complex64",), "float32")]


def test_nodes_not_library_externs():
    x = np.ones((4, 4))
    r = nodes_of(lambda a: (np.sort(a), np.fft.fft2(a)), x)
    assert [k for _, k, _, _ in r] == ["none", "fft"]


def _extern_ids(g):
    return [int(line.split()[0][1:]) for line in str(g).splitlines() if " = extern " in line]




@pytest.mark.parametrize("label,fn", FFT_CALLS, ids=[c[0] for c in FFT_CALLS])
def test_fft_steps_replay_numpy(label, fn):
    """The 1-d transforms the GPU makes of an n-d / Hermitian numpy.fft call,
    run here with NumPy's 1-d functions, give NumPy's n-d result."""
    x = cases.rand(RNG, (3, 5, 6), "complex128")
    g = numdyn.cuda._graphs_of(fn, (x,), {})[0]
    (nid,) = _extern_ids(g)
    steps = _C._cuda_fft_steps(g, nid)
    assert steps, label
    want = fn(x)
    a = x.real if label.startswith(("ihfft", "rfft")) else x
    one = {0: np.fft.fft, 1: np.fft.ifft, 2: np.fft.rfft, 3: np.fft.irfft}
    norms = {0: "backward", 1: "ortho", 2: "forward"}
    for kind, n, axis, norm, conj_in, conj_out in steps:
        if conj_in:
            a = np.conjugate(a)
        a = one[kind](a, n=n, axis=axis, norm=norms[norm])
        if conj_out:
            a = np.conjugate(a)
    assert a.shape == want.shape and a.dtype == want.dtype
    np.testing.assert_allclose(a, want, rtol=1e-12, atol=1e-12)
    kind, ins, od = _C._cuda_lib_node(g, nid)
    assert kind == "fft"
    assert name(od) == ("float64" if want.dtype.kind == "f" else "complex128")


def test_accepts_layouts():
    a, b = np.ones((3, 4)), np.ones((4, 5))
    gs = numdyn.cuda._graphs_of(lambda x, y: x @ y, (a, b), {})
    g = gs[0]
    nid = [int(line.split()[0][1:]) for line in str(g).splitlines() if " = extern " in line][0]
    assert _C._cuda_lib_accepts(g, nid, 0, view(a, a))
    at = np.ones((4, 3)).T
    assert _C._cuda_lib_accepts(g, nid, 0, view(at, at))
    s = np.ones((6, 8))[::2, ::2]
    assert not _C._cuda_lib_accepts(g, nid, 0, view(s, s))
    v = np.ones(8)[::2]
    gs = numdyn.cuda._graphs_of(lambda x: np.fft.fft(x), (np.ones(4),), {})
    g = gs[0]
    nid = [int(line.split()[0][1:]) for line in str(g).splitlines() if " = extern " in line][0]
    c = np.ones(4, np.complex128)
    assert _C._cuda_lib_accepts(g, nid, 0, view(c, c))
    cv = np.ones(8, np.complex128)[::2]
    assert not _C._cuda_lib_accepts(g, nid, 0, view(cv, cv))
    assert v.size == 4


# ------------------------------------------------------ device casts

@pytest.mark.skipif(not _nvrtc_here(), reason="NVRTC is not installed")
def test_cast_kernels_compile():
    """The kernels that bring an extern's operands to its loop dtype (int64 @
    float32 -> a float64 gemm, fft of float64 -> complex128, irfft of
    float16 -> float32 then float16) compile with NVRTC for sm_90."""
    srcs = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
            "float16", "float32", "float64", "complex64", "complex128"]
    tos = ["float16", "float32", "float64", "complex64", "complex128"]
    texts, names_ = [], set()
    for f in srcs:
        for t in tos:
            if f.startswith("complex") and not t.startswith("complex"):
                with pytest.raises(NotImplementedError):
                    _C._cuda_lib_cast_source(np.dtype(f).num, np.dtype(t).num)
                continue
            name_, text = _C._cuda_lib_cast_source(np.dtype(f).num, np.dtype(t).num)
            assert name_ in text and name_ not in names_
            names_.add(name_)
            texts.append(text)
    _log, size = _C._cuda_compile(_C._cuda_prelude() + "\n" + "\n".join(texts), "sm_90")
    assert size > 0 and len(texts) == len(srcs) * len(tos) - 2 * 3
