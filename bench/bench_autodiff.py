"""Gradients (issue 14): forward + backward of a loss, side by side in one
process -- NumPy with a hand-written gradient, numdyn.value_and_grad of the
plain NumPy loss, JAX jax.jit(jax.value_and_grad) of the same math in
jax.numpy, and torch autograd (eager) when installed. Warm median seconds
per call (loss and gradients), ratios against the hand-written NumPy.

    python bench/bench_autodiff.py [--quick] [--only NAME] [--cpu] [--vjp] [--no-unrolled-jax]

--cpu also reports CPU seconds per call (time.process_time: every thread of
the process), a figure a machine shared with other work moves less than
wall time.

--vjp times numdyn.vjp instead (forward, then the pullback with cotangent
1.0: what a training framework calling numdyn as one layer does) and
reports what its forward saves for the backward: the bytes the min-cut
partition keeps, the bytes saving every forward value the backward reads
would keep, and JAX's residuals (jax.vjp's pullback leaves that are not
the primals themselves).

Every contender's loss and gradients are checked against the hand-written
NumPy ones before it is timed.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

try:
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except Exception:  # noqa: BLE001 -- no (working) JAX
    jax = jnp = None
try:
    import torch
except ImportError:
    torch = None

C0 = 0.7978845608028654  # sqrt(2/pi)


# ---------------------------------------------------------------- softmax CE

def ce_loss(xp):
    def loss(X, onehot):
        m = xp.max(X, axis=1, keepdims=True)
        lse = xp.log(xp.sum(xp.exp(X - m), axis=1)) + m[:, 0]
        return xp.mean(lse - xp.sum(X * onehot, axis=1))
    return loss


def ce_hand(X, onehot):
    m = X.max(axis=1, keepdims=True)
    e = np.exp(X - m)
    s = e.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - np.sum(X * onehot, axis=1))
    return loss, ((e / s - onehot) / X.shape[0],)


# ---------------------------------------------------------------- MLP

def mlp_loss(xp):
    def loss(W1, b1, W2, X, Y):
        h = xp.tanh(X @ W1 + b1)
        d = h @ W2 - Y
        return xp.mean(d * d)
    return loss


def mlp_hand(W1, b1, W2, X, Y):
    z = X @ W1 + b1
    h = np.tanh(z)
    d = h @ W2 - Y
    loss = np.mean(d * d)
    gd = d * (2.0 / d.size)
    gW2 = h.T @ gd
    gz = (gd @ W2.T) * (1 - h * h)
    return loss, (X.T @ gz, gz.sum(axis=0), gW2)


# ---------------------------------------------------------------- Black-Scholes

def bs_loss(xp):
    def cnd(x):
        return 0.5 * (1 + xp.tanh(C0 * (x + 0.044715 * x ** 3)))

    def loss(S, sigma, T, r, K):
        sq = sigma * xp.sqrt(T)
        d1 = (xp.log(S / K) + (r + 0.5 * sigma * sigma) * T) / sq
        d2 = d1 - sq
        price = S * cnd(d1) - K * xp.exp(-r * T) * cnd(d2)
        return xp.sum(price)
    return loss


def bs_hand(S, sigma, T, r, K):
    def cnd_and_pdf(x):
        t = np.tanh(C0 * (x + 0.044715 * x ** 3))
        return 0.5 * (1 + t), 0.5 * (1 - t * t) * C0 * (1 + 3 * 0.044715 * x * x)
    rT = np.sqrt(T)
    sq = sigma * rT
    d1 = (np.log(S / K) + (r + 0.5 * sigma * sigma) * T) / sq
    d2 = d1 - sq
    n1, p1 = cnd_and_pdf(d1)
    n2, p2 = cnd_and_pdf(d2)
    disc = K * np.exp(-r * T)
    price = S * n1 - disc * n2
    # d d1 / d(S, sigma, T, r); d2 = d1 - sigma sqrt(T)
    dd1_S = 1 / (S * sq)
    dd1_sig = (sigma * T * sq - (np.log(S / K) + (r + 0.5 * sigma * sigma) * T) * rT) / (sq * sq)
    dd1_T = ((r + 0.5 * sigma * sigma) * sq - (np.log(S / K) + (r + 0.5 * sigma * sigma) * T)
             * sigma * 0.5 / rT) / (sq * sq)
    dd1_r = T / sq
    delta = n1 + S * p1 * dd1_S - disc * p2 * dd1_S
    vega = S * p1 * dd1_sig - disc * p2 * (dd1_sig - rT)
    dT = S * p1 * dd1_T + r * disc * n2 - disc * p2 * (dd1_T - sigma * 0.5 / rT)
    rho = S * p1 * dd1_r + T * disc * n2 - disc * p2 * dd1_r
    return np.sum(price), (delta, vega, dT, rho)


# ---------------------------------------------------------------- mixture

def mix_loss(xp):
    def loss(mu, logsig, logits, x):
        logw = logits - xp.log(xp.sum(xp.exp(logits)))
        z = (x[:, None] - mu) / xp.exp(logsig)
        comp = logw - logsig - 0.5 * z * z - 0.9189385332046727
        m = xp.max(comp, axis=1, keepdims=True)
        ll = xp.log(xp.sum(xp.exp(comp - m), axis=1)) + m[:, 0]
        return -xp.sum(ll)
    return loss


def mix_hand(mu, logsig, logits, x):
    ew = np.exp(logits)
    w = ew / ew.sum()
    logw = np.log(w)
    sig = np.exp(logsig)
    z = (x[:, None] - mu) / sig
    comp = logw - logsig - 0.5 * z * z - 0.9189385332046727
    m = comp.max(axis=1, keepdims=True)
    e = np.exp(comp - m)
    s = e.sum(axis=1, keepdims=True)
    loss = -np.sum(np.log(s[:, 0]) + m[:, 0])
    R = e / s  # responsibilities; d loss / d comp = -R
    gmu = -np.sum(R * z / sig, axis=0)
    glogsig = -np.sum(R * (z * z - 1), axis=0)
    rs = R.sum(axis=0)
    glogits = -(rs - w * rs.sum())
    return loss, (gmu, glogsig, glogits)


# ---------------------------------------------------------------- spectral (FFT gradients)

def spec_loss(xp):
    def loss(x, w):
        X = xp.fft.rfft(x * w[0])
        return xp.sum(w[1, : X.shape[-1]] * xp.log1p(xp.abs(X) ** 2))
    return loss


def spec_hand(x, w):
    # dL/dx = Re(fft(pad(2 g conj(X)))) * window, g = w1 / (1 + |X|^2)
    xw = x * w[0]
    X = np.fft.rfft(xw)
    a2 = X.real ** 2 + X.imag ** 2
    m = X.shape[-1]
    loss = np.sum(w[1, :m] * np.log1p(a2))
    g = w[1, :m] / (1 + a2)
    gxw = np.fft.fft(2 * g * np.conj(X), n=x.shape[-1]).real
    gw = np.zeros_like(w)
    gw[0] = np.sum(gxw * x, axis=0)
    gw[1, :m] = np.sum(np.log1p(a2), axis=0)
    return loss, (gxw * w[0], gw)


# ---------------------------------------------------------------- stencil PDE (many time steps)

HEAT_T, HEAT_DT = 60, 0.2


def heat_loss(xp):
    """explicit 2-D diffusion with a diffusivity field k, HEAT_T steps of the
    5-point stencil (fixed boundary), then a squared misfit to a target"""
    def loss(u0, k, target):
        u = u0
        for _ in range(HEAT_T):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
            u = u + xp.pad(HEAT_DT * k[1:-1, 1:-1] * lap, 1)
        return xp.sum((u - target) ** 2)
    return loss


def heat_loss_fori(u0, k, target):
    def step(_, u):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        return u + jnp.pad(HEAT_DT * k[1:-1, 1:-1] * lap, 1)
    u = jax.lax.fori_loop(0, HEAT_T, step, u0)
    return jnp.sum((u - target) ** 2)


def heat_hand(u0, k, target):
    # the adjoint: the forward keeps every step's field, the backward walks
    # them in reverse applying the stencil's transpose
    ki = HEAT_DT * k[1:-1, 1:-1]
    us, u = [u0], u0
    for _ in range(HEAT_T):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += ki * lap
        us.append(u)
    r = u - target
    g = 2 * r
    gk = np.zeros_like(k)
    for t in range(HEAT_T - 1, -1, -1):
        ut, gi = us[t], g[1:-1, 1:-1]
        lap = ut[:-2, 1:-1] + ut[2:, 1:-1] + ut[1:-1, :-2] + ut[1:-1, 2:] - 4 * ut[1:-1, 1:-1]
        gk[1:-1, 1:-1] += HEAT_DT * lap * gi
        w = ki * gi
        g = g.copy()
        g[:-2, 1:-1] += w
        g[2:, 1:-1] += w
        g[1:-1, :-2] += w
        g[1:-1, 2:] += w
        g[1:-1, 1:-1] -= 4 * w
    return np.sum(r * r), (g, gk)


# ---------------------------------------------------------------- driver

def _cases(quick):
    rng = np.random.default_rng(0)
    n = 4 if quick else 1
    N, Cc = 2048 // n, 1000
    X = rng.standard_normal((N, Cc)).astype(np.float32)
    onehot = np.zeros((N, Cc), np.float32)
    onehot[np.arange(N), rng.integers(0, Cc, N)] = 1
    Xm = rng.standard_normal((512 // n, 784)).astype(np.float32)
    W1 = (rng.standard_normal((784, 256)) * 0.05).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    W2 = (rng.standard_normal((256, 10)) * 0.05).astype(np.float32)
    Y = rng.standard_normal((512 // n, 10)).astype(np.float32)
    M = 1_000_000 // n
    S = rng.uniform(50, 150, M)
    sig = rng.uniform(0.1, 0.5, M)
    T = rng.uniform(0.2, 2.0, M)
    r = rng.uniform(0.0, 0.05, M)
    K = rng.uniform(60, 140, M)
    mu = np.linspace(-3, 3, 16)
    logsig = np.full(16, -0.5)
    logits = np.zeros(16)
    x = rng.standard_normal(200_000 // n) * 2
    # small sizes: the per-call cost of a warm gradient call (recorded
    # forward+backward graph replayed, no tracing) dominates
    Xs = rng.standard_normal((64, 32))
    W1s = rng.standard_normal((32, 16)) * 0.2
    b1s = np.zeros(16)
    W2s = rng.standard_normal((16, 4)) * 0.2
    Ys = rng.standard_normal((64, 4))
    xs = rng.standard_normal(2000) * 2
    Nh = 256 // n
    u0 = rng.standard_normal((Nh, Nh))
    kh = rng.uniform(0.1, 1.0, (Nh, Nh))
    th = rng.standard_normal((Nh, Nh)) * 0.1
    xf = rng.standard_normal((256 // n, 4096))
    wf = np.stack([np.hanning(4096), rng.uniform(0.5, 1.5, 4096)])
    return [
        ("small 2-layer MLP f64 (64x32 -> 16 -> 4)", mlp_loss, mlp_hand, (W1s, b1s, W2s, Xs, Ys),
         (0, 1, 2), 1e-9),
        ("small mixture log-likelihood f64 (2k x 16)", mix_loss, mix_hand,
         (mu, logsig, logits, xs), (0, 1, 2), 1e-9),
        ("softmax cross-entropy f32 (2048,1000)", ce_loss, ce_hand, (X, onehot), (0,), 2e-3),
        ("2-layer MLP f32 (512x784 -> 256 -> 10)", mlp_loss, mlp_hand, (W1, b1, W2, Xm, Y),
         (0, 1, 2), 2e-3),
        ("Black-Scholes greeks f64 (1M options)", bs_loss, bs_hand, (S, sig, T, r, K),
         (0, 1, 2, 3), 1e-7),
        ("mixture log-likelihood f64 (200k x 16)", mix_loss, mix_hand, (mu, logsig, logits, x),
         (0, 1, 2), 1e-7),
        ("spectral loss f64 rfft (256 x 4096)", spec_loss, spec_hand, (xf, wf), (0, 1), 1e-7),
        (f"stencil PDE f64 ({Nh}x{Nh} heat, {HEAT_T} steps)", heat_loss, heat_hand, (u0, kh, th),
         (0, 1), 1e-9),
    ]


def _close(a, b, rtol):
    loss_a, ga = a
    loss_b, gb = b
    np.testing.assert_allclose(float(loss_a), float(loss_b), rtol=rtol)
    for u, v in zip(ga, gb):
        u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
        np.testing.assert_allclose(u, v, rtol=rtol, atol=rtol * (np.abs(v).max() + 1e-30))


def _cpu_medians(fns, args, rounds=9):
    """median CPU seconds (all threads) per call, interleaved"""
    import time
    out = {k: [] for k in fns}
    for f in fns.values():
        f(*args)
    numdyn.utils.wait_compiles()  # background compiles are not timed
    for _ in range(rounds):
        for k, f in fns.items():
            n, t0 = 0, time.process_time()
            while True:
                f(*args)
                n += 1
                dt = time.process_time() - t0
                if dt > 0.05 or n >= 50:
                    break
            out[k].append(dt / n)
    return {k: sorted(v)[len(v) // 2] for k, v in out.items()}


def run(quick=False, only=None, cpu=False, unrolled_jax=True):
    rows = []
    for name, make, hand, args, argnums, rtol in _cases(quick):
        if only and only not in name:
            continue
        fns = {"numpy": hand}
        vg = numdyn.value_and_grad(make(np), argnums=argnums)
        fns["numdyn"] = vg
        # a fresh value_and_grad per call has no recorded graph: what every
        # warm call cost before grad calls replayed (trace + autodiff each time)
        fns["numdyn traced every call"] = (
            lambda *a, f=make(np), n=argnums: numdyn.value_and_grad(f, argnums=n)(*a))
        note = []
        if jax is not None:
            jf = jax.jit(jax.value_and_grad(make(jnp), argnums=argnums))
            jargs = tuple(jnp.asarray(a) for a in args)

            def jrun(*_a, jf=jf, jargs=jargs):
                v, g = jf(*jargs)
                jax.block_until_ready(g)
                return v, g
            if make is not heat_loss or unrolled_jax:
                fns["jax.jit(value_and_grad)"] = jrun
            if make is heat_loss:
                # the unrolled loop is what the NumPy code says; a JAX user
                # would write the time loop as lax.fori_loop
                jl = jax.jit(jax.value_and_grad(heat_loss_fori, argnums=argnums))

                def jloop(*_a, jl=jl, jargs=jargs):
                    v, g = jl(*jargs)
                    jax.block_until_ready(g)
                    return v, g
                fns["jax.jit (lax.fori_loop)"] = jloop
        if torch is not None:
            tl = make(_TorchNP)

            def trun(*a, tl=tl, argnums=argnums):
                ts = [torch.from_numpy(v) for v in a]
                for k in argnums:
                    ts[k] = ts[k].detach().requires_grad_(True)
                loss = tl(*ts)
                gs = torch.autograd.grad(loss, [ts[k] for k in argnums])
                return loss.detach(), gs
            fns["torch (eager autograd)"] = trun
        ref = hand(*args)
        for k, f in list(fns.items()):
            try:
                _close(f(*args), ref, rtol)
            except Exception as e:  # noqa: BLE001 -- reported, not timed
                note.append(f"{k}: {type(e).__name__}")
                del fns[k]
        t = _cpu_medians(fns, args) if cpu else timeit_interleaved(fns, args, repeat=5 if quick else 11)
        row = {"benchmark": name + (" [CPU s]" if cpu else ""), **t}
        if note:
            row["note"] = "; ".join(note)
        rows.append(row)
    return rows


def _kb(n):
    return f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.2f} MB"


def run_vjp(quick=False, only=None):
    from numdyn import utils
    rows = []
    for name, make, hand, args, argnums, rtol in _cases(quick):
        if only and only not in name:
            continue
        f = make(np)

        def nd_vjp(*a, f=f, argnums=argnums):
            out, pull = numdyn.vjp(f, *a)
            gs = pull(np.ones((), dtype=np.asarray(out).dtype))
            return out, tuple(gs[k] for k in argnums)

        def nd_cold(*a, f=f, argnums=argnums):
            # a new function object each call: nothing recorded to replay
            return nd_vjp(*a, f=lambda *b: f(*b), argnums=argnums)
        fns = {"numpy": hand, "numdyn": nd_vjp, "numdyn vjp traced every call": nd_cold}
        ref = hand(*args)
        note = []
        for k, fn in list(fns.items()):
            try:
                _close(fn(*args), ref, rtol)
            except Exception as e:  # noqa: BLE001 -- reported, not timed
                note.append(f"{k}: {type(e).__name__}")
                del fns[k]
        c0 = dict(utils.counters)
        _, pull = numdyn.vjp(lambda *b: f(*b), *args)  # a traced call: the partition runs
        c1 = dict(utils.counters)
        t = timeit_interleaved(fns, args, repeat=5 if quick else 11)
        saved = [f"saved {_kb(pull.saved_nbytes)} (min-cut)",
                 f"{_kb(c1['ad_boundary_bytes'] - c0['ad_boundary_bytes'])} (all it reads)"]
        if jax is not None:
            jargs = tuple(jnp.asarray(a) for a in args)
            _, jp = jax.vjp(make(jnp), *jargs)
            res = [x for x in jax.tree_util.tree_leaves(jp)
                   if hasattr(x, "nbytes") and not any(x is a for a in jargs)]
            saved.append(f"jax residuals {_kb(sum(int(x.nbytes) for x in res))}")
        row = {"benchmark": "vjp: " + name, **t, "note": ", ".join(saved + note)}
        rows.append(row)
    return rows


class _TorchNP:
    """the few jax.numpy/NumPy names the losses use, on torch tensors"""
    tanh = staticmethod(lambda x: torch.tanh(x))
    exp = staticmethod(lambda x: torch.exp(x))
    log = staticmethod(lambda x: torch.log(x))
    sqrt = staticmethod(lambda x: torch.sqrt(x))
    sum = staticmethod(lambda x, axis=None: x.sum() if axis is None else x.sum(dim=axis))
    mean = staticmethod(lambda x: x.mean())
    max = staticmethod(lambda x, axis, keepdims: torch.amax(x, dim=axis, keepdim=keepdims))
    log1p = staticmethod(lambda x: torch.log1p(x))
    abs = staticmethod(lambda x: torch.abs(x))
    pad = staticmethod(lambda x, w: torch.nn.functional.pad(x, (w, w, w, w)))
    fft = torch.fft if torch is not None else None


def _blas_note():
    """which OpenBLAS kernels NumPy's products (and so numdyn's) run: the
    large MLP row is its sgemm against XLA's, and OPENBLAS_CORETYPE in the
    environment overrides OpenBLAS's own CPU detection (Haswell's AVX2
    kernels take ~2x the time of SkylakeX's AVX-512 ones on an AVX-512 CPU)"""
    import ctypes
    import glob
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    name = None
    for lib in libs:
        try:
            dll = ctypes.CDLL(lib)
        except OSError:
            continue
        for sym in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                    "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(dll, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                name = fn().decode()
                break
    env = os.environ.get("OPENBLAS_CORETYPE")
    return (f"OpenBLAS core: {name or 'not found'}"
            + (f" (OPENBLAS_CORETYPE={env} set in the environment)" if env else "")
            + f"; numdyn._C._blas_threads() = {numdyn._C._blas_threads()}")


def _print_ratios(rows):
    print("\nspeed-up over the hand-written NumPy gradient (higher is faster):")
    for r in rows:
        base = r["numpy"]
        parts = [f"{k} {base / v:.2f}x" for k, v in r.items()
                 if k not in ("benchmark", "numpy", "note") and isinstance(v, float) and v]
        print(f"  {r['benchmark']}: " + ", ".join(parts))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--vjp", action="store_true")
    # jax.jit of the stencil's unrolled 60-step loop compiles for minutes
    # (and runs 100x slower than its lax.fori_loop form): leave it out
    ap.add_argument("--no-unrolled-jax", action="store_true")
    a = ap.parse_args()
    print(_blas_note())
    rows = run_vjp(a.quick, a.only) if a.vjp else run(a.quick, a.only, a.cpu, not a.no_unrolled_jax)
    report(rows)
    _print_ratios(rows)
