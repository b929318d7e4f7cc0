#!/usr/bin/env python3
"""Why numdyn's row kernels are not bandwidth-bound: one short GPU run.

Issue 16: softmax/logsumexp rows (16384, 4096) float32 and a full sum
(2^26) reached 63% / 49% / 62% of the H200's copy bandwidth in
bench_cuda.py (GPU run 9), while torch.compile and CuPy's CUB did better.
This script separates the causes:

* the kernel alone: numdyn's generated kernel (numdyn.cuda.kernels) launched
  through CuPy's RawModule with the P/I/S/E arguments numdyn's runtime
  passes and numdyn's grid rule (runtime/backend_cuda.c grid_for), timed by
  CUDA events over back-to-back launches -- against the same call through
  numdyn.cuda.on_device (its host path and stream sync per call included);
* variants of the same kernel text, each changing one thing: the element
  loop's unroll (ND_RED_UNROLL, nd_cuda.h: loads in flight a warp), a
  minimum of resident blocks (__launch_bounds__: registers), the grid
  (one block a row), NumPy's error checks and NaN-exact max removed and a
  fast exp (what the arithmetic costs: measurement only, not NumPy's
  semantics);
* references: hand-written kernels (4 float4 loads a thread, vector
  stores, block per row), torch's and CuPy's own kernels (torch.compile's
  figures are bench_cuda.py's: its compiles would take most of a minute).

Needs a GPU and CuPy (torch optional). Run with the extension built:
    PYTHONPATH=/tmp/ndb python3 bench/cuda_rows_probe.py [--quick]
Prints a markdown table (medians of event-timed batches; % of the copy
bandwidth measured in the same run: bytes read + written / time).
"""
import os
import re
import statistics
import sys
import time

import numpy as np

import numdyn
import numdyn.cuda as ndc

COMPILE_ONLY = "--compile-only" in sys.argv  # no GPU: NVRTC compiles the probe's units
cupy = torch = None
if not COMPILE_ONLY:
    try:
        import cupy
    except ImportError:  # pragma: no cover - the probe needs a GPU
        sys.exit("cuda_rows_probe: needs CuPy with a CUDA device (or --compile-only)")
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None

QUICK = "--quick" in sys.argv or COMPILE_ONLY
R, C = (2048, 4096) if QUICK else (16384, 4096)
N = R * C
THREADS = 256


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def logsumexp(x):
    m = x.max(axis=-1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=-1))


def row_sum(x):
    return x.sum(axis=-1)


def full_sum(a):
    return a.sum()


# one kernel each; (fn, input shape, output shape, kernel strides of the
# input and the output in elements along the kernel's dims, bytes moved)
CASES = [
    ("softmax", softmax, (R, C), (R, C), [[C, 1], [C, 1]], 2 * N * 4),
    ("logsumexp", logsumexp, (R, C), (R,), [[C, 1], [1, 0]], N * 4 + R * 4),
    ("row sum", row_sum, (R, C), (R,), [[C, 1], [1, 0]], N * 4 + R * 4),
    ("full sum", full_sum, (N,), (), [[1], [0]], N * 4),
]

# (label, text before the kernel, text after it, launch-bounds minimum
# blocks, grid rule); every variant is the generated text with one change
VARIANTS = [
    ("generated", "", "", None, "numdyn"),
    ("ND_RED_UNROLL=1", "#undef ND_RED_UNROLL\n#define ND_RED_UNROLL 1\n",
     "#undef ND_RED_UNROLL\n#define ND_RED_UNROLL 8\n", None, "numdyn"),
    ("ND_RED_UNROLL=4", "#undef ND_RED_UNROLL\n#define ND_RED_UNROLL 4\n",
     "#undef ND_RED_UNROLL\n#define ND_RED_UNROLL 8\n", None, "numdyn"),
    ("__launch_bounds__(256, 6)", "", "", 6, "numdyn"),
    ("__launch_bounds__(256, 8)", "", "", 8, "numdyn"),
    ("grid: a block a row", "", "", None, "rows"),
    ("grid: 8 blocks an SM", "", "", None, "sm8"),
    ("no error checks", "#define nd_ckgt_f(x, r, l, e) (r)\n#define nd_ckat_f(x, r, a, e) (r)\n",
     "#undef nd_ckgt_f\n#undef nd_ckat_f\n", None, "numdyn"),
    ("fmaxf (NaN not exact)", "#define nd_max_f(a, b) fmaxf(a, b)\n#define nd_rmax_f(a, b) fmaxf(a, b)\n",
     "#undef nd_max_f\n#undef nd_rmax_f\n", None, "numdyn"),
    ("__expf + no checks + fmaxf", "#define nd_expf(x) __expf(x)\n#define nd_ckgt_f(x, r, l, e) (r)\n"
     "#define nd_ckat_f(x, r, a, e) (r)\n#define nd_max_f(a, b) fmaxf(a, b)\n#define nd_rmax_f(a, b) fmaxf(a, b)\n",
     "#undef nd_expf\n#undef nd_ckgt_f\n#undef nd_ckat_f\n#undef nd_max_f\n#undef nd_rmax_f\n", None, "numdyn"),
]

HAND = r"""
__device__ __forceinline__ float ref_bmax(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = sh[0];
    for (int w = 1; w < 8; w++) v = fmaxf(v, sh[w]);
    return v;
}
__device__ __forceinline__ float ref_bsum(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = sh[0];
    for (int w = 1; w < 8; w++) v += sh[w];
    return v;
}
/* rows of exactly 4096 float32, 256 threads: 4 float4 loads a thread */
extern "C" __global__ void __launch_bounds__(256) ref_softmax(const float *__restrict__ x,
    float *__restrict__ y, long long rows, int lse)
{
    __shared__ float s0[8], s1[8];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float4 *xr = (const float4 *)(x + r * 4096);
        float4 v[4];
#pragma unroll
        for (int w = 0; w < 4; w++) v[w] = xr[threadIdx.x + w * 256];
        float m = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; w++) m = fmaxf(m, fmaxf(fmaxf(v[w].x, v[w].y), fmaxf(v[w].z, v[w].w)));
        m = ref_bmax(m, s0);
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            v[w].x = expf(v[w].x - m); v[w].y = expf(v[w].y - m);
            v[w].z = expf(v[w].z - m); v[w].w = expf(v[w].w - m);
            s += v[w].x + v[w].y + v[w].z + v[w].w;
        }
        s = ref_bsum(s, s1);
        if (lse) {
            if (threadIdx.x == 0) y[r] = m + logf(s);
        } else {
            float4 *yr = (float4 *)(y + r * 4096);
#pragma unroll
            for (int w = 0; w < 4; w++)
                yr[threadIdx.x + w * 256] = make_float4(v[w].x / s, v[w].y / s, v[w].z / s, v[w].w / s);
        }
        __syncthreads();
    }
}
"""


def sm_count():
    return cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]


def grid_numdyn(text, rows, nred):
    """runtime/backend_cuda.c grid_for for a reduction or row kernel"""
    cap = sm_count() * 16
    if nred <= 16:
        return min((rows + THREADS - 1) // THREADS, cap), 0
    if "scr_" in text and 2 * rows <= cap:
        per = (nred + 8 * THREADS - 1) // (8 * THREADS)
        bpr = min(per, cap // rows)
        if bpr >= 2:
            return rows * bpr, rows
    return min(rows, cap), 0


def regs(k):
    return f"{getattr(k, 'num_regs', '?')} regs, {getattr(k, 'local_size_bytes', '?')} B local"


def events_time(launch, n=20, reps=7):
    launch()
    cupy.cuda.Device().synchronize()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    out = []
    for _ in range(reps):
        s.record()
        for _ in range(n):
            launch()
        e.record()
        e.synchronize()
        out.append(cupy.cuda.get_elapsed_time(s, e) * 1e-3 / n)
    return statistics.median(out)


def wall_time(call, n=50, reps=7):
    """per call, host path included: batches between synchronizations"""
    call()
    cupy.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        cupy.cuda.Device().synchronize()
        if torch is not None:
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out)


def copy_bw():
    a = cupy.ones(1 << 28, cupy.float32)
    b = cupy.empty_like(a)
    t = events_time(lambda: b.data.copy_from_device_async(a.data, a.nbytes), n=10, reps=5)
    return 2 * a.nbytes / t


def close(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return bool(np.allclose(got, want, rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(want).max()))))


def unit(fn, xh):
    """(the generated kernel's text, its name, the probe's translation unit:
    the prelude, every variant of the kernel, the hand-written kernels)"""
    ks = ndc.kernels(fn, xh)
    if len(ks) != 1:
        raise RuntimeError(f"{len(ks)} kernels ({[k for k, _ in ks]}): not probed")
    text = ks[0][1]
    kname = re.search(r"(nd_cuda_[0-9a-f]{16})\(", text).group(1)
    src = [ndc._C._cuda_prelude()]
    for i, (label, pre, post, lb, _g) in enumerate(VARIANTS):
        t = text.replace(kname, f"{kname}_v{i}")
        if lb:
            t = t.replace("__launch_bounds__(ND_THREADS)", f"__launch_bounds__(ND_THREADS, {lb})")
        src.append(pre + t + post)
    src.append(HAND)
    return text, kname, "\n".join(src)


def probe_case(name, fn, ishape, oshape, strides, nbytes, bw, rows_out):
    rng = np.random.default_rng(0)
    xh = rng.standard_normal(ishape).astype(np.float32)
    want = fn(xh)
    text, kname, src = unit(fn, xh)
    nops = len(re.findall(r"\*const B\d+ = ", text))
    rows = 1 if not oshape else R   # the kernel's rows (softmax's output is the domain)
    nred = N // rows
    t0 = time.perf_counter()
    mod = cupy.RawModule(code=src, options=("-std=c++17", "--fmad=false"))
    ctime = time.perf_counter() - t0
    x = cupy.asarray(xh)
    y = cupy.empty(oshape, cupy.float32)
    I = cupy.asarray(np.array(([R, C] if len(ishape) == 2 else [N])
                              + [s for st in strides for s in st], dtype=np.int64))
    E = cupy.zeros(1, cupy.int32)
    # numdyn: on_device (its runtime, a stream sync and Python wrapping per call)
    try:
        od = ndc.on_device(fn)
        ok = close(cupy.asnumpy(od(x)), want)
        t_call = wall_time(lambda: od(x))
        rows_out.append((name, "numdyn.cuda.on_device (whole call, synced)", "", t_call,
                         nbytes / t_call / bw, "ok" if ok else "WRONG"))
    except Exception as e:  # noqa: BLE001 -- reported; the kernel alone still runs
        rows_out.append((name, f"numdyn.cuda.on_device failed: {type(e).__name__}: {str(e)[:120]}",
                         "", None, None, ""))
    for i, (label, pre, post, lb, g) in enumerate(VARIANTS):
        k = mod.get_function(f"{kname}_v{i}")
        grid, split_rows = grid_numdyn(text, rows, nred)
        if g == "rows" and not split_rows:
            grid = rows
        elif g == "sm8" and not split_rows:
            grid = min(rows, 8 * sm_count())
        elif g != "numdyn":
            continue
        scr = cupy.zeros(16 * 8 * max(grid, 1), cupy.uint8)
        cnt = cupy.zeros(max(split_rows, 1), cupy.int32)
        ptrs = [x.data.ptr, y.data.ptr]
        if f"lo{1} = P[" in text:
            ptrs += [y.data.ptr, y.data.ptr + y.nbytes]
        ptrs += [0] * (3 * nops - len(ptrs)) + [scr.data.ptr, cnt.data.ptr]
        P = cupy.asarray(np.array(ptrs, dtype=np.uint64))
        y.fill(np.nan)

        def launch(k=k, grid=grid, P=P):
            k((grid,), (THREADS,), (P, I, np.uint64(0), E))
        launch()
        ok = close(cupy.asnumpy(y), want)
        t = events_time(launch)
        rows_out.append((name, f"{label} (grid {grid}, {regs(k)})",
                         "", t, nbytes / t / bw, "ok" if ok else "WRONG"))
    if name in ("softmax", "logsumexp"):
        k = mod.get_function("ref_softmax")
        grid = min(R, sm_count() * 16)
        lse = int(name == "logsumexp")
        launch = (lambda: k((grid,), (THREADS,), (x, y, np.int64(R), np.int32(lse))))
        launch()
        ok = close(cupy.asnumpy(y), want)
        t = events_time(launch)
        rows_out.append((name, f"by hand: 4 float4 loads a thread (grid {grid}, {regs(k)})", "", t,
                         nbytes / t / bw, "ok" if ok else "WRONG"))
    if torch is not None:
        tx = torch.as_tensor(x, device="cuda")
        tfn = {"softmax": lambda a: torch.softmax(a, -1), "logsumexp": lambda a: torch.logsumexp(a, -1),
               "row sum": lambda a: a.sum(-1), "full sum": lambda a: a.sum()}[name]
        t = wall_time(lambda: tfn(tx))
        rows_out.append((name, "torch eager (its own kernel)", "", t, nbytes / t / bw, ""))
    if name in ("row sum", "full sum"):
        cfn = (lambda: x.sum(axis=-1)) if name == "row sum" else (lambda: x.sum())
        t = events_time(cfn)
        rows_out.append((name, "CuPy sum (CUB)", "", t, nbytes / t / bw, ""))
    rows_out.append((name, f"(NVRTC compile of the {len(VARIANTS)} variants: {ctime:.1f} s)", "", None, None, ""))


def small(x):
    return x * 2.0 + 1.0


def pointwise_calls(bw, rows_out):
    """compute-heavy pointwise kernels (bench_cuda.py's Black-Scholes, GELU)
    through numdyn.cuda.on_device, against torch eager on the same math"""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_cuda as bc
    n = N // 4
    rng = np.random.default_rng(1)
    S = rng.uniform(5, 30, n).astype(np.float32)
    K = rng.uniform(1, 100, n).astype(np.float32)
    T = rng.uniform(0.25, 10, n).astype(np.float32)
    xg = rng.standard_normal(N).astype(np.float32)
    for name, fn, args, nbytes in (("Black-Scholes f32", bc.black_scholes, (S, K, T), 5 * n * 4),
                                   ("GELU f32", bc.gelu, (xg,), 2 * N * 4)):
        want = fn(*args)
        dargs = [cupy.asarray(a) for a in args]
        wants = want if isinstance(want, tuple) else (want,)
        # NUMDYN_CUDA_MIN_BLOCKS (codegen_cuda.c): the kernel compiled with
        # __launch_bounds__(256, N) -- registers against resident blocks
        for minb in ("", "4", "6"):
            os.environ["NUMDYN_CUDA_MIN_BLOCKS"] = minb
            ndc._C._cuda_clear_programs()   # generated again, with the knob
            g = dict(fn.__globals__)
            f2 = type(fn)(fn.__code__, g, fn.__name__)   # a fresh function: compiled again
            od = ndc.on_device(f2)
            got = od(*dargs)
            got = got if isinstance(got, tuple) else (got,)
            ok = all(close(cupy.asnumpy(x), w) for x, w in zip(got, wants))
            t = wall_time(lambda: od(*dargs))
            rows_out.append((name, "numdyn.cuda.on_device (whole call, synced)" +
                             (f", __launch_bounds__(256, {minb})" if minb else ""), "", t,
                             nbytes / t / bw, "ok" if ok else "WRONG"))
        os.environ.pop("NUMDYN_CUDA_MIN_BLOCKS", None)
        if torch is not None:
            targs = [torch.as_tensor(a, device="cuda") for a in dargs]
            tf = bc.with_np(fn, torch)
            t = wall_time(lambda: tf(*targs))
            rows_out.append((name, "torch eager (one kernel an op)", "", t, nbytes / t / bw, ""))


def call_floor(rows_out):
    """the per-call floor: what a launch and a stream synchronization cost
    alone (an empty kernel through CuPy), against numdyn's warm calls of
    small(x) on 8 float32 (issue 16: <= 10 us)"""
    k = cupy.RawKernel(r'extern "C" __global__ void nd_probe_empty(float *p) {}', "nd_probe_empty")
    xs = cupy.arange(8, dtype=cupy.float32)
    stream = cupy.cuda.get_current_stream()

    def launch_sync():
        k((1,), (32,), (xs,))
        stream.synchronize()
    calls = [("CuPy: empty kernel launch, no sync", lambda: k((1,), (32,), (xs,))),
             ("CuPy: empty kernel launch + stream sync", launch_sync),
             ("CuPy: small(x) (2 kernels, no sync)", lambda: small(xs))]
    od = ndc.on_device(small)
    calls.append(("numdyn.cuda.on_device(small)(CuPy)", lambda: od(xs)))
    wn = numdyn.wrap_numpy(small)
    tx = numdyn.tensor(np.arange(8, dtype=np.float32), device="cuda")
    calls.append(("numdyn.wrap_numpy(small)(CUDA Tensor)", lambda: wn(tx)))
    for label, f in calls:
        for _ in range(100):
            f()
        rows_out.append(("call overhead", label, "", wall_time(f, n=2000, reps=5), None, ""))


def main():
    t0 = time.perf_counter()
    if COMPILE_ONLY:
        for name, fn, ishape, *_ in CASES:
            _t, _k, src = unit(fn, np.ones(ishape, np.float32))
            log, size = ndc._C._cuda_compile(src, "compute_90")
            print(f"{name}: {len(VARIANTS)} variants + references compile ({size} bytes of PTX)")
        return
    props = cupy.cuda.runtime.getDeviceProperties(0)
    bw = copy_bw()
    print(f"device: {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}, "
          f"{sm_count()} SMs; copy bandwidth (read + write) {bw / 1e9:.0f} GB/s; "
          f"shapes ({R}, {C}) float32{' (--quick)' if QUICK else ''}")
    rows = []
    for case in CASES:
        try:
            probe_case(*case, bw, rows)
        except Exception as e:  # noqa: BLE001 -- one case's failure is a row
            rows.append((case[0], f"probe failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                         "", None, None, ""))
    try:
        pointwise_calls(bw, rows)
    except Exception as e:  # noqa: BLE001
        rows.append(("pointwise", f"probe failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                     "", None, None, ""))
    try:
        call_floor(rows)
    except Exception as e:  # noqa: BLE001
        rows.append(("call overhead", f"probe failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                     "", None, None, ""))
    print("\n| case | variant | time | % of copy BW | check |\n|---|---|---:|---:|---|")
    for name, label, _x, t, frac, ok in [r + ("",) * (6 - len(r)) for r in rows]:
        ts = f"{t * 1e6:.1f} us" if t else ""
        fs = f"{100 * frac:.0f}%" if frac else ""
        print(f"| {name} | {label} | {ts} | {fs} | {ok} |")
    print(f"\n(probe: {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
