"""GPU benchmarks (issue 16, point 6), side by side on one GPU in one run:
numdyn's backend="cuda", torch.compile of the same NumPy-style code written
with torch ops (on CUDA tensors), CuPy running the very same NumPy source
(the function's `np` bound to cupy); NumPy on the CPU for reference.

    python bench/bench_cuda.py [--quick] [--only NAME[,NAME]] [--markdown] [--calls]

Rows: the device's copy bandwidth (a device-to-device copy, read + write
bytes over time), fused elementwise chains and softmax as a fraction of
it, Black-Scholes, GELU, logsumexp, a full sum (one row over the whole
grid), the seed's k-means step, the call
overhead of a small compiled function, and gradients of an MLP loss.

Timing: every contender is checked against NumPy first (a fast wrong
answer is not a result), warmed up (compiles), then timed in interleaved
rounds (each round one sample of each contender, rotating order), each
sample a batch of calls between two device synchronizations; the table
shows medians. numdyn runs two ways: "numdyn" as a compiled function is
called with ndarrays (backend="cuda": arguments copied to the device,
results back -- the "copies" column is what CuPy spends on exactly those
copies, cupy.asarray of the inputs and cupy.asnumpy of the outputs, the
floor of that way of calling), and "numdyn (device)" through
numdyn.cuda.on_device on CuPy arrays (read in place, results left on the
device) -- the figure comparable with CuPy and torch.compile, and the one
the bandwidth fractions are computed from; "numdyn (Tensor)" is
numdyn.wrap_numpy of the function called with numdyn.Tensors on CUDA (the
same device program plus the Tensor layer's per-call work; for the MLP,
Tensors that require grad and loss.backward()). A contender that cannot run a row shows
"not run" and why.
"""
import argparse
import math
import os
import statistics
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numdyn  # noqa: E402

try:
    import cupy
except Exception:  # noqa: BLE001 -- no (working) CuPy
    cupy = None
try:
    import torch
    if not torch.cuda.is_available():
        torch = None
except Exception:  # noqa: BLE001
    torch = None


# ------------------------------------------------------------ programs
# NumPy source (numdyn compiles it; CuPy runs it with np -> cupy), and the
# same math in torch ops for torch.compile.

def chain(a, b, c):
    return a * b + c * 0.5 - np.abs(a)


def t_chain(a, b, c):
    return a * b + c * 0.5 - torch.abs(a)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def t_softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def t_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def logsumexp(x):
    m = x.max(axis=-1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=-1))


def t_logsumexp(x):
    m = x.amax(dim=-1)
    return m + torch.log(torch.exp(x - m[:, None]).sum(dim=-1))


def full_sum(a):
    return a.sum()


def t_full_sum(a):
    return a.sum()


def _cnd(d):
    # cumulative normal distribution (Abramowitz-Stegun 26.2.17)
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978
                                                                          + k * 1.330274429))))
    w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
    return np.where(d < 0, 1.0 - w, w)


def black_scholes(S, K, T):
    r, v = 0.02, 0.30
    sqt = np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * v * v) * T) / (v * sqt)
    d2 = d1 - v * sqt
    disc = np.exp(-r * T)
    call = S * _cnd(d1) - K * disc * _cnd(d2)
    put = K * disc * _cnd(-d2) - S * _cnd(-d1)
    return call, put


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def t_kmeans_step(X, means):
    return torch.argmin(torch.linalg.norm(X - means[:, None], dim=2), dim=0)


def small(x):
    return x * 2.0 + 1.0


def t_small(x):
    return x * 2.0 + 1.0


def mlp_loss(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    d = h @ W2 - Y
    return np.mean(d * d)


def mlp_hand(W1, b1, W2, X, Y):
    # the hand-written gradient (CuPy's contender: CuPy has no autodiff)
    z = X @ W1 + b1
    h = np.tanh(z)
    d = h @ W2 - Y
    loss = np.mean(d * d)
    g = 2.0 * d / d.size
    gW2 = h.T @ g
    gz = (g @ W2.T) * (1.0 - h * h)
    return loss, (X.T @ gz, gz.sum(axis=0), gW2)


def t_mlp_loss(W1, b1, W2, X, Y):
    h = torch.tanh(X @ W1 + b1)
    d = h @ W2 - Y
    return torch.mean(d * d)


def with_np(fn, mod):
    """fn's code with its global `np` (and helpers') bound to mod."""
    g = dict(fn.__globals__)
    g["np"] = mod
    for name in ("_cnd",):
        if name in g:
            g[name] = types.FunctionType(g[name].__code__, g, name)
    return types.FunctionType(fn.__code__, g, fn.__name__)


# ------------------------------------------------------------- timing

def sync():
    if cupy is not None:
        cupy.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()
    if numdyn.cuda.is_available():
        numdyn.cuda.synchronize()


def time_interleaved(fns, repeat=11, target=0.05):
    """{name: median seconds per call}; each sample a batch of calls between
    two synchronizations, batches sized to ~target seconds, rounds rotated."""
    names = list(fns)
    number = {}
    for n in names:
        sync()
        t0 = time.perf_counter()
        fns[n]()
        sync()
        dt = max(time.perf_counter() - t0, 1e-7)
        number[n] = max(1, min(10000, int(target / dt)))
    samples = {n: [] for n in names}
    for r in range(repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            f, k = fns[n], number[n]
            sync()
            t0 = time.perf_counter()
            for _ in range(k):
                f()
            sync()
            samples[n].append((time.perf_counter() - t0) / k)
    return {n: statistics.median(v) for n, v in samples.items()}


def cpu_time(fn, args):
    """NumPy on the CPU, timed alone (its own scale): mean over >= 0.3 s (one
    call at least: the full sizes take seconds)"""
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < 0.3 or k < 1:
        fn(*args)
        k += 1
    return (time.perf_counter() - t0) / k


def check(name, got, want, rtol=2e-3, atol=2e-3):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    for g, w in zip(got, want):
        if torch is not None and isinstance(g, torch.Tensor):
            g = g.detach().cpu().numpy()
        if isinstance(g, numdyn.Tensor):
            g = g.numpy()
        if cupy is not None and isinstance(g, cupy.ndarray):
            g = cupy.asnumpy(g)
        g = np.asarray(g)
        w = np.asarray(w)
        if g.shape != w.shape:
            raise AssertionError(f"{name}: shape {g.shape} != {w.shape}")
        if w.dtype.kind in "iub":
            bad = float(np.mean(g != w))
            if bad > 1e-3:   # argmin ties under float32 rounding: a few flips allowed
                raise AssertionError(f"{name}: {bad:.2%} of the labels differ")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def fmt(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    return f"{t * 1e3:.3f} ms"


# ------------------------------------------------------------- rows

def to_cupy(args):
    return tuple(cupy.asarray(a) for a in args)


def to_torch(args):
    return tuple(torch.from_numpy(a).cuda() for a in args)


def copy_bandwidth(nbytes):
    """Device-to-device copy: (bytes read + written) / seconds, per library."""
    out = {}
    fns = {}
    if cupy is not None:
        a = cupy.ones(nbytes // 4, cupy.float32)
        b = cupy.empty_like(a)
        fns["cupy memcpy"] = lambda: b.data.copy_from_device_async(a.data, nbytes)
    if torch is not None:
        ta = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        tb = torch.empty_like(ta)
        fns["torch copy_"] = lambda: tb.copy_(ta)
    if not fns:
        return None, {}
    t = time_interleaved(fns, repeat=9)
    for k, v in t.items():
        out[k] = 2 * nbytes / v
    return max(out.values()), out


def bench_row(name, np_fn, t_fn, args, bytes_moved=None, rtol=2e-3, atol=2e-3, t_args=None):
    """One row: NumPy (CPU), numdyn backend='cuda' (ndarrays in/out), CuPy
    (the NumPy source on cupy arrays), torch.compile (torch ops, CUDA
    tensors), and what CuPy spends copying the arguments and results."""
    row = {"benchmark": name, "why": {}}
    want = np_fn(*args)
    fns = {}
    # numdyn
    try:
        nd = numdyn.compile(np_fn, backend="cuda")
        check(name + " numdyn", nd(*args), want, rtol, atol)
        numdyn.utils.wait_compiles()
        nd(*args)
        fns["numdyn"] = lambda: nd(*args)
    except Exception as e:  # noqa: BLE001 -- reported in the table
        row["why"]["numdyn"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    # numdyn on device arrays (no copies): numdyn.cuda.on_device(fn) reads
    # CuPy arrays (else torch CUDA tensors) in place and leaves its results
    # on the device; the result must come back on the device
    dev_why = []
    od = getattr(numdyn.cuda, "on_device", None)
    for label, conv, call in (
            ("CuPy arrays, numdyn.cuda.on_device", to_cupy if cupy is not None and od else None,
             lambda: od(np_fn)),
            ("torch CUDA tensors, numdyn.cuda.on_device",
             to_torch if torch is not None and od else None, lambda: od(np_fn))):
        if conv is None:
            continue
        try:
            dargs = conv(args)
            fn_d = call()
            res = fn_d(*dargs)
            first = res[0] if isinstance(res, (tuple, list)) else res
            if not hasattr(first, "__cuda_array_interface__") and not (
                    torch is not None and isinstance(first, torch.Tensor) and first.is_cuda):
                raise TypeError(f"the result came back as {type(first).__name__}, not on the device")
            check(name + " numdyn device", res, want, rtol, atol)
            numdyn.utils.wait_compiles()
            fns["numdyn (device)"] = (lambda f_=fn_d, a_=dargs: f_(*a_))
            row["device_how"] = label
            break
        except Exception as e:  # noqa: BLE001
            dev_why.append(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
                           if str(e) else f"{label}: {type(e).__name__}")
    if "numdyn (device)" not in fns:
        row["why"]["numdyn (device)"] = "; ".join(dev_why) or (
            "no CuPy or torch" if od else "numdyn.cuda.on_device missing")
    # numdyn.Tensor on CUDA through wrap_numpy: the same device program over
    # the Tensors' memory, plus the Tensor layer's per-call work
    try:
        wn = numdyn.wrap_numpy(np_fn)
        targs_nd = tuple(numdyn.tensor(a, device="cuda") for a in args)
        res = wn(*targs_nd)
        first = res[0] if isinstance(res, (tuple, list)) else res
        if not str(getattr(first, "device", "cpu")).startswith("cuda"):
            raise TypeError("the result came back off the device")
        check(name + " numdyn Tensor", res, want, rtol, atol)
        numdyn.utils.wait_compiles()
        fns["numdyn (Tensor)"] = lambda: wn(*targs_nd)
    except Exception as e:  # noqa: BLE001
        row["why"]["numdyn (Tensor)"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    # CuPy
    if cupy is not None:
        try:
            cp_fn = with_np(np_fn, cupy)
            cargs = to_cupy(args)
            check(name + " cupy", cp_fn(*cargs), want, rtol, atol)
            fns["cupy"] = lambda: cp_fn(*cargs)
            outs = want if isinstance(want, tuple) else (want,)
            couts = tuple(cupy.asarray(np.asarray(w)) for w in outs)

            def copies():
                to_cupy(args)
                for c in couts:
                    cupy.asnumpy(c)
            fns["copies"] = copies
        except Exception as e:  # noqa: BLE001
            row["why"]["cupy"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    else:
        row["why"]["cupy"] = "CuPy not installed"
    # torch.compile
    if torch is not None and t_fn is not None:
        try:
            targs = to_torch(t_args if t_args is not None else args)
            tc = torch.compile(t_fn, dynamic=False)
            check(name + " torch", tc(*targs), want, rtol, atol)
            fns["torch.compile"] = lambda: tc(*targs)
        except Exception as e:  # noqa: BLE001
            row["why"]["torch.compile"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    elif torch is None:
        row["why"]["torch.compile"] = "torch with CUDA not installed"
    t = time_interleaved(fns) if fns else {}
    row["numpy (CPU)"] = cpu_time(np_fn, args)
    row.update(t)
    row["bytes"] = bytes_moved
    return row


def mlp_row(quick):
    rng = np.random.default_rng(3)
    B, D, H, O = (1024, 256, 256, 16) if quick else (8192, 1024, 1024, 64)
    f = np.float32
    W1 = (rng.standard_normal((D, H)) / math.sqrt(D)).astype(f)
    b1 = np.zeros(H, f)
    W2 = (rng.standard_normal((H, O)) / math.sqrt(H)).astype(f)
    X = rng.standard_normal((B, D)).astype(f)
    Y = rng.standard_normal((B, O)).astype(f)
    args = (W1, b1, W2, X, Y)
    name = f"MLP loss + gradients f32 ({B}x{D} -> {H} -> {O})"
    row = {"benchmark": name, "why": {}}
    loss, grads = mlp_hand(*args)
    want = (loss,) + grads
    fns = {}
    try:
        vg = numdyn.value_and_grad(mlp_loss, argnums=(0, 1, 2))
        before = numdyn.utils.counters["cuda_launches"]
        with numdyn.device("cuda"):
            v, g = vg(*args)
        if numdyn.utils.counters["cuda_launches"] == before:
            raise RuntimeError("value_and_grad inside numdyn.device('cuda') launched no GPU kernel")
        check(name + " numdyn", (v,) + tuple(g), want, 1e-3, 1e-4)
        numdyn.utils.wait_compiles()

        def nd_call():
            with numdyn.device("cuda"):
                vg(*args)
        fns["numdyn"] = nd_call
    except Exception as e:  # noqa: BLE001
        row["why"]["numdyn"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    # numdyn.Tensor on CUDA that requires grad: the loss through wrap_numpy,
    # loss.backward() runs the autodiff graphs with backend "cuda"
    try:
        tW = [numdyn.tensor(a, device="cuda", requires_grad=True) for a in args[:3]]
        tXY = [numdyn.tensor(a, device="cuda") for a in args[3:]]
        wl = numdyn.wrap_numpy(mlp_loss)

        def nd_tensor_call():
            for t_ in tW:
                t_.grad = None
            loss_ = wl(*tW, *tXY)
            loss_.backward()
            return (loss_,) + tuple(t_.grad for t_ in tW)
        check(name + " numdyn Tensor", nd_tensor_call(), want, 1e-3, 1e-4)
        numdyn.utils.wait_compiles()
        fns["numdyn (Tensor)"] = nd_tensor_call
    except Exception as e:  # noqa: BLE001
        row["why"]["numdyn (Tensor)"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    if cupy is not None:
        cp_hand = with_np(mlp_hand, cupy)
        cargs = to_cupy(args)
        l_, g_ = cp_hand(*cargs)
        check(name + " cupy", (l_,) + tuple(g_), want, 1e-3, 1e-4)
        fns["cupy"] = lambda: cp_hand(*cargs)
    else:
        row["why"]["cupy"] = "CuPy not installed"
    if torch is None:
        row["why"]["torch.compile"] = "torch with CUDA not installed"
    else:
        try:
            targs = to_torch(args)
            for t_ in targs[:3]:
                t_.requires_grad_(True)
            tl = torch.compile(t_mlp_loss, dynamic=False)

            def t_call():
                for t_ in targs[:3]:
                    t_.grad = None
                loss_ = tl(*targs)
                loss_.backward()
                return loss_, targs[0].grad, targs[1].grad, targs[2].grad
            check(name + " torch", t_call(), want, 1e-3, 1e-4)
            fns["torch.compile"] = t_call
        except Exception as e:  # noqa: BLE001
            row["why"]["torch.compile"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    row.update(time_interleaved(fns) if fns else {})
    row["numpy (CPU)"] = cpu_time(mlp_hand, args)
    row["bytes"] = None
    return row


def run(quick=False, only=None):
    """bench/runner.py's form (run_all.py): "numpy" is NumPy on the CPU; the
    other keys are GPU contenders; [] without a GPU."""
    res = measure(quick, only)
    if not res:
        return []
    rows, _bw = res
    out = []
    for r in rows:
        d = {"benchmark": r["benchmark"]}
        if "numpy (CPU)" in r:
            d["numpy"] = r["numpy (CPU)"]
        for k in ("numdyn", "numdyn (device)", "numdyn (Tensor)", "torch.compile", "cupy", "copies"):
            if k in r:
                d[k] = r[k]
        notes = ([r["note"]] if r.get("note") else []) + [f"{k}: {v}" for k, v in
                                                           r.get("why", {}).items()]
        if notes:
            d["note"] = "; ".join(notes)
        out.append(d)
    return out


def tensor_chain_row(name, fn, args, nbytes):
    """fn's operations one by one on CUDA Tensors (no wrap_numpy): deferred
    into one device program (numdyn/_cuda_lazy.py, the default) against
    each operation its own kernel (_cuda_lazy.enabled = False), interleaved
    in one run; the kernels each form launched per call"""
    from numdyn import _cuda_lazy
    row = {"benchmark": name, "why": {}, "bytes": nbytes}
    ts = [numdyn.tensor(a, device="cuda") for a in args]
    want = fn(*args)
    fns, launches = {}, {}
    for label, on in (("numdyn (Tensor)", True), ("numdyn (device)", False)):
        def call(on=on):
            _cuda_lazy.enabled = on
            r = fn(*ts)
            numdyn.cuda.synchronize()   # runs a deferred chain
            return r
        check(name + " " + label, call().numpy(), want)
        numdyn.utils.wait_compiles()
        k0 = numdyn.utils.counters["cuda_launches"]
        call()
        launches[label] = numdyn.utils.counters["cuda_launches"] - k0
        fns[label] = call
    row.update(time_interleaved(fns))
    _cuda_lazy.enabled = True
    row["note"] = ("numdyn (Tensor): the chain deferred, %d kernel(s); numdyn (device): one "
                   "kernel per operation, %d" % (launches["numdyn (Tensor)"],
                                                  launches["numdyn (device)"]))
    return row


def measure(quick=False, only=None):
    """(rows, device copy bandwidth in bytes/s), or None without a GPU."""
    if not numdyn.cuda.is_available():
        print(f"bench_cuda: no GPU ({numdyn.cuda.unavailable_reason()}): nothing run")
        return None
    numdyn.config.compile_budget = float("inf")
    rng = np.random.default_rng(0)
    f = np.float32
    N = 1 << (22 if quick else 26)
    R, C = (2048, 1024) if quick else (16384, 4096)
    a, b, c = (rng.standard_normal(N).astype(f) for _ in range(3))
    x2 = rng.standard_normal((R, C)).astype(f)
    S = rng.uniform(5, 30, N // 4).astype(f)
    K = rng.uniform(1, 100, N // 4).astype(f)
    T = rng.uniform(0.25, 10, N // 4).astype(f)
    nK = 1 << (16 if quick else 20)
    X = rng.standard_normal((nK, 8)).astype(f)
    means = rng.standard_normal((16, 8)).astype(f)
    tiny = np.arange(8, dtype=f)
    rows = []
    specs = [
        ("chain", f"elementwise chain a*b + c*0.5 - abs(a) f32 ({N})", chain, t_chain, (a, b, c),
         4 * N * 4),
        ("softmax", f"softmax rows f32 ({R}, {C})", softmax, t_softmax, (x2,), 2 * R * C * 4),
        ("gelu", f"GELU (tanh) f32 ({N})", gelu, t_gelu, (a,), 2 * N * 4),
        ("logsumexp", f"logsumexp rows f32 ({R}, {C})", logsumexp, t_logsumexp, (x2,),
         R * C * 4 + R * 4),
        # torch: the NumPy source with np bound to torch (sqrt, log, exp,
        # abs, where are torch functions of the same names)
        ("blackscholes", f"Black-Scholes f32 ({N // 4})", black_scholes,
         with_np(black_scholes, torch) if torch is not None else None,
         (S, K, T), 5 * (N // 4) * 4),
        # one row split over the grid's blocks (two-stage: partials, then the last block)
        ("sum", f"full sum f32 ({N})", full_sum, t_full_sum, (a,), N * 4),
        ("kmeans", f"k-means step f32 X ({nK}, 8), 16 means", kmeans_step, t_kmeans_step,
         (X, means), None),
        ("overhead", "call overhead: x * 2 + 1, 8 elements", small, t_small, (tiny,), None),
    ]
    bw = None
    if not only or "copy" in only:
        # 1 GiB: far past the L2 cache (50 MiB on an H100/H200), which a
        # small copy would measure instead of the memory
        bw, per = copy_bandwidth(1 << 30)
        if bw:
            rows.append({"benchmark": "device copy bandwidth (1024 MiB)",
                         "note": ", ".join(f"{k} {v / 1e9:.0f} GB/s" for k, v in per.items())})
            print(f"device copy bandwidth (read + write): {bw / 1e9:.0f} GB/s "
                  f"({rows[-1]['note']})", flush=True)
    for key, name, fn, tfn, args, nbytes in specs:
        if only and key not in only:
            continue
        rows.append(bench_row(name, fn, tfn, args, nbytes))
        _progress(rows[-1], bw)
    if not only or "tchain" in only:
        rows.append(tensor_chain_row(f"Tensor ops a * b + c * 0.5 - np.abs(a) f32 ({N})", chain,
                                     (a, b, c), 4 * N * 4))
        _progress(rows[-1], bw)
    if not only or "mlp" in only:
        rows.append(mlp_row(quick))
        _progress(rows[-1], bw)
    return rows, bw


def _progress(row, bw):
    # each row as soon as it is measured (a run cut short keeps its rows)
    print("row: " + table([row], bw).splitlines()[1], flush=True)


def table(rows, bw, markdown=False):
    cols = ["numdyn", "numdyn (device)", "numdyn (Tensor)", "torch.compile", "cupy", "copies",
            "numpy (CPU)"]
    head = ["benchmark"] + cols + ["numdyn (device) % copy BW", "cupy % copy BW",
                                   "torch % copy BW", "note"]
    lines = []
    for r in rows:
        line = [r["benchmark"]]
        for c in cols:
            if c in r:
                line.append(fmt(r[c]))
            elif c in r.get("why", {}):
                line.append("not run")
            else:
                line.append("-")
        for c in ("numdyn (device)", "cupy", "torch.compile"):
            if bw and r.get("bytes") and r.get(c):
                line.append(f"{100 * r['bytes'] / r[c] / bw:.0f}%")
            else:
                line.append("-")
        notes = [f"{k}: {v}" for k, v in r.get("why", {}).items()]
        if r.get("device_how"):
            notes.insert(0, f"numdyn (device): {r['device_how']}")
        if r.get("note"):
            notes.insert(0, r["note"])
        line.append("; ".join(notes))
        lines.append(line)
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    w = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    out = ["  ".join(str(h).ljust(w[i]) for i, h in enumerate(head))]
    out += ["  ".join(str(x).ljust(w[i]) for i, x in enumerate(line)) for line in lines]
    return "\n".join(out)


def call_split(n=2000, rounds=7):
    """--calls: the per-call work of small(x) on 8 float32 elements by way
    of calling (no torch.compile, no copy bandwidth: seconds), medians of
    interleaved rounds of n warm calls between two synchronizations, in us
    a call. bench/gpu_check.sh runs it as is and with
    NUMDYN_CUDA_DEVICE_ERRWORDS=1 (the kernels' error words in device
    memory, zeroed and copied back each call: the form before session 26)."""
    if not numdyn.cuda.is_available():
        print(f"bench_cuda: no GPU ({numdyn.cuda.unavailable_reason()}): nothing run")
        return
    numdyn.config.compile_budget = float("inf")
    x = np.arange(8, dtype=np.float32)
    paths = {"numdyn.wrap_numpy(small)(CUDA Tensor)": (numdyn.wrap_numpy(small),
                                                       numdyn.tensor(x, device="cuda"))}
    if cupy is not None:
        paths["numdyn.cuda.on_device(small)(CuPy)"] = (numdyn.cuda.on_device(small),
                                                       cupy.asarray(x))
        paths["CuPy small(x) (no sync a call)"] = (small, cupy.asarray(x))
    for f, a in paths.values():
        for _ in range(50):
            f(a)
    times = {k: [] for k in paths}
    for _ in range(rounds):
        for name, (f, a) in paths.items():
            numdyn.cuda.synchronize()
            if cupy is not None:
                cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                f(a)
            numdyn.cuda.synchronize()
            if cupy is not None:
                cupy.cuda.Device().synchronize()
            times[name].append((time.perf_counter() - t0) / n * 1e6)
    errw = "device memory" if os.environ.get("NUMDYN_CUDA_DEVICE_ERRWORDS") else "mapped host memory"
    print(f"per-call us, error words in {errw} ({rounds} rounds of {n} calls):")
    print("| call | median us | min - max |\n|---|---:|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.1f} | {min(ts):.1f} - {max(ts):.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--calls", action="store_true", help="only the per-call work (call_split)")
    o = ap.parse_args()
    if o.calls:
        return call_split()
    only = set(o.only.split(",")) if o.only else None
    if numdyn.cuda.is_available():
        p = numdyn.cuda.get_device_properties(0)
        print(f"device: {p.name} ({p.arch}, {p.multi_processor_count} SMs, "
              f"{p.total_memory >> 30} GiB); driver {numdyn.cuda.driver_version()}; "
              f"numpy {np.__version__}; cupy {getattr(cupy, '__version__', '-')}; "
              f"torch {getattr(torch, '__version__', '-')}", flush=True)
    print("numdyn: ndarrays in/out (its time includes the copies; 'copies' is CuPy's time "
          "for those copies alone); numdyn (device), cupy, torch.compile: device arrays",
          flush=True)
    res = measure(o.quick, only)
    if not res:
        return
    rows, bw = res
    print(table(rows, bw, o.markdown))


if __name__ == "__main__":
    main()
