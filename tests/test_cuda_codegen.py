"""The CUDA generator (issue 16) without a GPU: numdyn.cuda.source(fn, *args)
gives the CUDA C numdyn generates for a call, and NVRTC (PyPI's
nvidia-cuda-nvrtc-cu12, installed by CI) compiles it -- for every kernel kind
(pointwise, reductions, scans), every dtype and layouts the CPU backend
handles, and the differential generator's programs (tests/fuzz_gen.py,
fixed seed). What runs on a GPU is not checked here (no device)."""
import re
import sys
import os

import numpy as np
import pytest

import numdyn
import numdyn.cuda as ndc

try:
    ndc.nvrtc_path()
    NVRTC = None
except ndc.CudaError as e:
    NVRTC = str(e)
pytestmark = [pytest.mark.skipif(NVRTC is not None, reason=f"NVRTC not found: {NVRTC}"),
              # the calls run with NumPy to capture: its warnings on the data are not the point
              pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

ARCHS = ("compute_80", "sm_90")
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX


def arr(dt, shape=(5, 7), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 5
    if np.dtype(dt).kind == "c":
        return (x + 1j * rng.standard_normal(shape)).astype(dt)
    if dt == "bool":
        return x > 0
    if np.dtype(dt).kind == "u":
        return np.abs(x).astype(dt)
    return x.astype(dt)


def check(fn, *args, kinds=None, arch="compute_80"):
    """fn's CUDA compiles with NVRTC; returns (source, [kinds])."""
    ks = ndc.kernels(fn, *args)
    assert ks, "the call made no kernel"
    src = ndc.source(fn, *args)
    log = ndc.compile_check(fn, *args, arch=arch)
    assert log.strip() == "", log  # not even a warning
    got = [k for k, _ in ks]
    if kinds is not None:
        assert sorted(set(got)) == sorted(kinds), got
    # one extern "C" __global__ function a kernel, named from its text
    assert len(re.findall(r'extern "C" __global__', src)) == len(ks)
    return src, got


# ------------------------------------------------------------ pointwise
def pw_arith(a, b):
    return a + b * a - b, a == b, np.where(a > b, a, b)


@pytest.mark.parametrize("dt", [d for d in ALL if d != "bool"])
def test_pointwise_arith_every_dtype(dt):
    check(pw_arith, arr(dt), arr(dt, seed=1), kinds=["pointwise"])


def pw_int(a, b):
    return a // b, a % b, np.left_shift(a, b & 7), a >> (b & 3), np.abs(a), a ** 2, np.gcd(a, b)


@pytest.mark.parametrize("dt", INTS)
def test_pointwise_integer_edges(dt):
    """floor division and remainder by zero, shifts: NumPy's rules as device helpers"""
    src, _ = check(pw_int, arr(dt), arr(dt, seed=1))
    sfx = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
           "uint32": "u32", "int64": "i64", "uint64": "u64"}[dt]
    for helper in ("nd_fdiv_", "nd_irem_", "nd_lshift_", "nd_rshift_"):
        assert helper + sfx + "(" in src.split('extern "C"', 1)[1]


def pw_float(a, b):
    return (np.exp(a) + np.log(np.abs(b) + 1) * np.sin(a) - np.tanh(b), np.arctan2(a, b),
            np.floor_divide(a, b), np.remainder(a, b), np.maximum(a, b), np.fmin(a, b),
            np.isnan(a), np.sign(b), np.power(a, b), np.logaddexp(a, b), np.hypot(a, b),
            np.spacing(a) if a.dtype != np.float16 else a)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("arch", ARCHS)
def test_pointwise_float_math(dt, arch):
    src, _ = check(pw_float, arr(dt), arr(dt, seed=1), arch=arch)
    if dt == "float16":
        assert "nd_rh(" in src.split('extern "C"', 1)[1]  # rounded to half after each op


def pw_complex(a, b):
    return (a * b / (a - b), np.exp(a), np.log(a), np.sqrt(b), np.abs(a), np.conj(a) + a.real,
            np.sin(a), np.tanh(b), np.arcsin(a), np.arccosh(b), a ** b, a > b, np.sign(a))


@pytest.mark.parametrize("dt", COMPLEX)
def test_pointwise_complex(dt):
    src, _ = check(pw_complex, arr(dt), arr(dt, seed=1))
    body = src.split('extern "C"', 1)[1]
    assert "__real__" not in body and "__imag__" not in body  # GNU C rewritten


@pytest.mark.parametrize("src_dt", ALL)
def test_casts_between_every_dtype(src_dt):
    def casts(a):
        return tuple(a.astype(t) for t in ALL if t != src_dt)
    check(casts, arr(src_dt), kinds=["pointwise"])


def test_float_to_int_casts_use_numpys_rule():
    src, _ = check(lambda a: (a * 2).astype(np.int64), arr("float64"))
    assert "nd_d2i64e(" in src.split('extern "C"', 1)[1]  # with the cast warning


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.T,
    "strided": lambda x: x[::2, ::3],
    "broadcast_row": lambda x: x[:1],
    "reversed": lambda x: x[::-1],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_pointwise_layouts(layout):
    a = LAYOUTS[layout](arr("float64", (6, 9)))
    b = arr("float32", a.shape[1:])
    check(lambda x, y: np.sqrt(x * x + y) - x.mean(), a, b)


def test_broadcast_3d_and_scalars():
    a, b = arr("float32", (3, 1, 5)), arr("float32", (4, 1))
    check(lambda x, y: (x + y) * 2.5 - 1, a, b, kinds=["pointwise"])


# ----------------------------------------------------------- reductions
RED_FNS = {
    "sum": lambda a, ax: a.sum(axis=ax),
    "prod": lambda a, ax: a.prod(axis=ax),
    "max": lambda a, ax: a.max(axis=ax),
    "min": lambda a, ax: a.min(axis=ax),
    "any": lambda a, ax: (a > 0).any(axis=ax),
    "all": lambda a, ax: (a > 0).all(axis=ax),
}


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)], ids=str)
@pytest.mark.parametrize("name", sorted(RED_FNS))
@pytest.mark.parametrize("dt", ["int8", "uint32", "int64", "float16", "float32", "float64"])
def test_reductions(name, dt, axis):
    f = RED_FNS[name]
    src, kinds = check(lambda a: f(a * 1, axis), arr(dt, (4, 35, 3)))
    if dt == "float16" and name in ("sum", "prod") and axis is not None:
        # over axes not innermost in memory NumPy rounds to float16 at every
        # step: numdyn runs NumPy's code there (tests/test_wrong_answers_probe4.py),
        # no reduction kernel (values: that file and tests/test_cuda_emulated.py)
        assert "reduce" not in kinds
        return
    assert "reduce" in kinds
    assert "__shfl_down_sync" in src


@pytest.mark.parametrize("dt", COMPLEX + ["bool"])
def test_sum_prod_complex_bool(dt):
    _, kinds = check(lambda a: (a.sum(axis=0), a.prod(axis=1), a.sum()), arr(dt, (40, 33)))
    assert "reduce" in kinds


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dt", ["int16", "uint64", "float16", "float64"])
def test_argmin_argmax(dt, axis):
    src, kinds = check(lambda a: (np.argmax(a * 1, axis=axis), np.argmin(a + 1, axis=axis)),
                       arr(dt, (37, 41)))
    assert "reduce" in kinds


def test_bitwise_reductions():
    check(lambda a: (np.bitwise_and.reduce(a, axis=1), np.bitwise_or.reduce(a, axis=0),
                     np.bitwise_xor.reduce(a * 3, axis=1)), arr("int32", (40, 33)))


def test_nan_rules_max_min():
    src, _ = check(lambda a: (np.max(a * 2, axis=1), np.fmax.reduce(a, axis=0),
                              np.nanmax(a, axis=1)), arr("float64", (40, 33)))
    body = src.split('extern "C"', 1)[1]
    assert "nd_max_d(" in body and "nd_fmax_d(" in body


def test_fused_reductions_and_moments():
    """horizontal fusion (sum and sum of squares in one kernel) and the
    moments of var/std (a second pass from the mean)"""
    a = arr("float64", (64, 300))
    check(lambda x: (x.sum(axis=1), (x * x).sum(axis=1), x.min(axis=1), x.max(axis=1)), a)
    check(lambda x: (x.var(axis=0), x.std(axis=0), x.mean(axis=0)), a)
    check(lambda x: (x.var(), x.std(axis=1, keepdims=True)), a.astype(np.float32))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
@pytest.mark.parametrize("fn", [softmax, logsumexp, lambda x: (x - x.mean(axis=1, keepdims=True)) /
                                x.std(axis=1, keepdims=True)], ids=["softmax", "logsumexp", "standardize"])
def test_row_kernels(fn, dt):
    """reductions fused with their row's consumers: one block per row"""
    _, kinds = check(fn, arr(dt, (33, 300)))
    assert "row" in kinds


SHORT = [(r, d) for r in ("sum", "max", "argmin", "prod", "any")
         for d in ("int16", "float16", "float64", "complex64")
         if not (d == "complex64" and r in ("max", "argmin"))]  # NumPy orders complex: eager


@pytest.mark.parametrize("red,dt", SHORT)
def test_short_reductions_inlined(red, dt):
    """a reduction over a short axis (<= 16): unrolled inside its consumer
    (a frame) where the scheduler chooses so"""
    f = {"sum": lambda x: x.sum(axis=2) * 2, "max": lambda x: x.max(axis=1) + 1,
         "argmin": lambda x: np.argmin(x, axis=2) + 1, "prod": lambda x: x.prod(axis=2) - 1,
         "any": lambda x: (x != 0).any(axis=2) | (x.sum(axis=2) > 0)}[red]
    src, kinds = check(f, arr(dt, (20, 3, 4)))
    if dt in ("int16", "float64"):
        assert kinds == ["pointwise"]  # the reduction lives in the consumer's kernel


def test_reduce_with_epilogue_and_initial():
    a = arr("float32", (50, 60))
    check(lambda x: np.sqrt((x * x).sum(axis=1)) + 1, a)
    check(lambda x: np.sum(x, axis=0, initial=3.0), a)


# ---------------------------------------------------------------- scans
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("dt", ["int32", "uint8", "float16", "float64", "complex64"])
def test_scans(dt, axis):
    src, kinds = check(lambda a: (np.cumsum(a * 1, axis=axis), np.cumprod(a + 1, axis=axis)),
                       arr(dt, (23, 19)))
    assert "scan" in kinds


# ----------------------------------------------------------- the program
def test_source_is_one_unit_with_the_prelude():
    src = ndc.source(lambda a: (a + 1).sum(), np.ones(3))
    assert src.startswith(numdyn._C._cuda_prelude())
    assert "nd_cuda_" in src


@pytest.mark.parametrize("header, defines, fn, dtypes", [
    ("nd_f2i.h", "nd_d2i64(double", "nd_d2i64", ("float64", np.int64)),
    ("nd_f16.h", "nd_d2h(double", "nd_d2h", ("float64", np.float16)),
])
def test_prelude_shares_the_c_kernels_conversions(header, defines, fn, dtypes):
    """float -> int (nd_f2i.h, issue 11) and float16 (nd_f16.h) conversions
    are one text each that the C and CUDA preludes both include; NVRTC gets
    it spliced in"""
    kdir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
    with open(os.path.join(kdir, header)) as f:
        shared = f.read()
    pre = numdyn._C._cuda_prelude()
    assert shared in pre and '#include "nd_' not in pre
    for h in ("nd_cuda.h", "nd_kernel.h"):
        with open(os.path.join(kdir, h)) as f:
            text = f.read()
        assert '#include "%s"' % header in text and defines not in text
    src, _ = check(lambda a: (a * 3.5).astype(dtypes[1]) + (a * 2).astype(np.uint32), arr(dtypes[0], (7,)))
    assert fn in src[len(pre):]


def test_compile_check_raises_the_log(monkeypatch):
    """a kernel NVRTC rejects is a CudaError carrying NVRTC's log"""
    real = numdyn._C._cuda_prelude
    monkeypatch.setattr(numdyn._C, "_cuda_prelude", lambda: real().replace("nd_fdiv_", "nd_nodiv_"))
    # the wrapper module reads _C through its own reference
    with pytest.raises(ndc.CudaError, match=r'identifier "nd_fdiv_i64" is undefined'):
        ndc.compile_check(lambda a: a // 3, np.arange(5))


# -------------------------------------------- the differential generator
sys.path.insert(0, os.path.dirname(__file__))
FUZZ_CASES = [("arith", 160), ("reduce", 120), ("all", 160), ("rows", 80)]


def _kernel_texts(src):
    """the kernels of a source (after the prelude), by name"""
    body = src[len(ndc._C._cuda_prelude()):]
    out = {}
    for part in body.split('extern "C" __global__')[1:]:
        text = 'extern "C" __global__' + part
        name = text.split("nd_cuda_", 1)[1][:16]
        out[name] = text
    return out


@pytest.mark.parametrize("mode,n", FUZZ_CASES, ids=[m for m, _ in FUZZ_CASES])
def test_fuzz_programs_compile(mode, n):
    """Every generated program's CUDA compiles with NVRTC (fixed seed; the
    programs the GPU differential test runs, tests/test_cuda_gpu_diff.py); a
    program NumPy itself rejects is left out (it makes no kernels). All
    kernels go through NVRTC as one unit; when it fails, each program's
    unit alone names the culprits."""
    import fuzz_gen as fg
    progs = [p for p in fg.collect_programs(mode, n, variants=1) if not p.raises]
    srcs, kernels = [], {}
    for p in progs:
        fn = p.function()
        try:
            with fg.quiet():
                src = ndc.source(fn, *p.fresh_args())
        except (TypeError, ValueError, ArithmeticError, IndexError) as e:
            # NumPy rejects these argument values (the generator did not
            # mark it): no kernel to compile
            with fg.quiet():
                with pytest.raises(type(e)):
                    p.function()(*p.fresh_args())
            continue
        srcs.append((p, src))
        kernels.update(_kernel_texts(src))
    assert len(srcs) >= len(progs) * 0.9 and kernels
    unit = ndc._C._cuda_prelude() + "\n" + "\n".join(kernels.values())
    try:
        log, _ = numdyn._C._cuda_compile(unit, "compute_80")
        assert "error" not in log
        return
    except ndc.CudaError:
        pass
    fails = []
    for p, src in srcs:
        try:
            numdyn._C._cuda_compile(src, "compute_80")
        except ndc.CudaError as e:
            fails.append(f"{p.source()}\n{str(e)[:2000]}")
    assert not fails, f"{len(fails)} of {len(srcs)} programs:\n" + "\n\n".join(fails[:3])


def test_softmax_rows_register_budget():
    """ptxas's resource report (NVRTC --ptxas-options=-v) of the softmax
    row kernel for sm_90: at most 64 registers a thread, so that four
    256-thread blocks fit an SM (GPU run 6: 126 registers, two blocks, 28%
    of copy bandwidth; the vector-load register form, 3b7f049: 48)"""
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x = np.ones((64, 4096), np.float32)
    assert [k for k, _ in ndc.kernels(softmax, x)] == ["row"]
    log, size = numdyn._C._cuda_compile(ndc.source(softmax, x), "sm_90", True)
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", log)]
    assert size > 0 and len(regs) == 1, log
    assert regs[0] <= 64, log
    spill = [int(n) for n in re.findall(r"(\d+) bytes spill stores", log)]
    assert spill and spill[0] <= 16, log


def test_runtime_compiles_the_prelude_as_a_precompiled_header():
    """numdyn's runtime hands NVRTC its kernels with the prelude as an
    included header (nd_cuda_nvrtc_compile_pre; NVRTC 12.8+ keeps it
    precompiled, -pch: parsed once a process, not once a unit): the same
    PTX as the one-text unit, and every kernel in it"""
    def f(a, b):
        return np.sin(a) * b + 1, (a * b).sum()
    a = np.linspace(0, 1, 100, dtype=np.float32)
    src = ndc.source(f, a, a)
    pre = ndc._C._cuda_prelude()
    assert src.startswith(pre)
    _log, size, ptx = numdyn._C._cuda_compile(src[len(pre):], "compute_80", False, pre)
    _log2, size2 = numdyn._C._cuda_compile(src, "compute_80")
    assert size == size2 and len(ptx) == size
    names = re.findall(r"(nd_cuda_[0-9a-f]{16})\(", src)
    assert len(names) == 2 and all(n.encode() in ptx for n in names)
    _log, size, cubin = numdyn._C._cuda_compile(src[len(pre):], "sm_90", False, pre)
    assert size > 0 and cubin[:4] == b"\x7fELF"


def test_row_and_reduction_kernels_wait_less_per_row():
    """A row's block combine takes one barrier (each warp's result through
    shared memory, then every thread folds the warps' results in warp
    order), not three and a second shuffle tree in warp 0: softmax's two
    combines and the row's end, 3 barriers a row in each of its two block
    forms (14 before). The strided element loops of reductions are
    unrolled (ND_RED_UNROLL, 8: several loads in flight a warp; a full
    sum's loop waited for each load before its add: 119 -> 70 us on an
    H200, session 27)."""
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x = np.ones((64, 4096), np.float32)
    (kind, text), = ndc.kernels(softmax, x)
    assert kind == "row"
    assert text.count("__syncthreads()") == 6, text
    assert "#define ND_RED_UNROLL 8" in ndc._C._cuda_prelude()

    def total(a):
        return a.sum()
    (kind, text), = ndc.kernels(total, np.ones(1 << 20, np.float32))
    loops = re.findall(r"(#pragma unroll ND_RED_UNROLL\n)?for \(int64_t e_ = [^;]*; e_ < nred_; e_ \+= (\w+)", text)
    strided = [u for u, step in loops if step != "1"]
    assert strided and all(strided), loops


def test_pointwise_tests_scalar_parameters_once_a_kernel():
    """A pointwise kernel's per-element test for NumPy's float conditions
    (an element whose operands are finite and whose result is not) reads
    whether the scalar parameters are finite from one value computed once a
    kernel (nd_sfin_): Black-Scholes' 56 scalars were tested again for every
    element (2039 PTX lines of its vector loop -> 1164)."""
    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * d * d) * (k * (0.31938153 + k * -0.356563782))
        return np.where(d < 0, 1.0 - w, w)

    def bs(S, K, T):
        d1 = (np.log(S / K) + 0.065 * T) / (0.3 * np.sqrt(T))
        return S * cnd(d1) - K * np.exp(-0.02 * T) * cnd(d1 - 0.3 * np.sqrt(T))
    a, b, c = (np.linspace(1, 2, 64, dtype=np.float32) + i for i in range(3))
    (kind, text), = ndc.kernels(bs, a, b, c)
    assert kind == "pointwise"
    nscal = len(re.findall(r"= \(float\)S\[\d+\]", text))
    assert nscal >= 10, text
    assert text.count("const bool nd_sfin_ = (1") == 1
    tests = [ln for ln in text.splitlines() if "nd_err |= ND_ERR_FPE_DIV | ND_ERR_FPE_OVER" in ln]
    assert tests and all(ln.count("isfinite(") == 4 and "nd_sfin_" in ln for ln in tests), tests
    numdyn._C._cuda_compile(ndc.source(bs, a, b, c), "compute_80")


def test_black_scholes_register_budget():
    """bench_cuda.py's Black-Scholes (float32, one kernel of 56 scalar
    parameters) within 64 registers a thread for sm_90 (four 256-thread
    blocks an SM): its float-condition checks are predicated ORs, not
    multiplied flags (with the scalars tested once a kernel, the multiplied
    form took 80 registers, three blocks)"""
    from test_cuda_device import black_scholes   # the GPU tests' own (bench_cuda.py's form)
    S, K, T = (np.linspace(1, 2, 64, dtype=np.float32) + i for i in range(3))
    assert [k for k, _ in ndc.kernels(black_scholes, S, K, T)] == ["pointwise"]
    log, size = numdyn._C._cuda_compile(ndc.source(black_scholes, S, K, T), "sm_90", True)
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", log)]
    assert size > 0 and len(regs) == 1 and regs[0] <= 64, log


def test_float32_max_reductions_fold_by_one_nan_propagating_instruction():
    """a float32 max/min reduction folds with PTX max.NaN / min.NaN (one
    instruction from sm_80, NaN-propagating as NumPy's maximum.reduce), not
    two compares and a select: softmax's and logsumexp's row max cost 15 us
    of 164 / 105 on an H200 (bench/cuda_rows_probe.py). float64 keeps the
    compare form (no max.NaN.f64)."""
    def lse(x):
        m = x.max(axis=-1)
        return m + np.log(np.exp(x - m[:, None]).sum(axis=-1)), x.min(axis=0)
    x = np.ones((64, 4096), np.float32)
    k32 = "".join(t for _k, t in ndc.kernels(lse, x))
    assert "nd_rmax_f(acc" in k32 and "nd_rmin_f(acc" in k32 and "nd_max_f(acc" not in k32
    log, size = numdyn._C._cuda_compile(ndc.source(lse, x), "compute_80")
    assert size > 0
    k64 = "".join(t for _k, t in ndc.kernels(lse, x.astype(np.float64)))
    assert "nd_rmax" not in k64 and "nd_max_d(acc" in k64
