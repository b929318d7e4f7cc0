"""Native-backend benchmarks: NumPy vs numdyn (and numexpr / numba when
installed), interleaved in one process, median seconds per call.

    python bench/bench_native.py [--quick] [--only NAME]

Each numdyn result is checked against NumPy before it is timed.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

try:
    import numexpr as ne
except ImportError:
    ne = None
try:
    import numba
except ImportError:
    numba = None


def _close(a, b, rtol, strict=True):
    a, b = np.asarray(a), np.asarray(b)
    if (strict and a.dtype != b.dtype) or a.shape != b.shape:
        raise AssertionError("dtype/shape %s%s vs %s%s" % (a.dtype, a.shape, b.dtype, b.shape))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def _check(ref, got, rtol, strict=True):
    if isinstance(ref, tuple):
        for r, g in zip(ref, got):
            _close(r, g, rtol, strict)
    else:
        _close(ref, got, rtol, strict)


def _row(name, fns, args, rtol, repeat, note=None):
    ref = fns["numpy"](*args)
    for k, f in fns.items():
        if k != "numpy":
            # numdyn must match NumPy's dtypes; others only its values
            _check(ref, f(*args), rtol, strict=(k == "numdyn"))
    t = timeit_interleaved(fns, args, repeat=repeat, warmup=2)
    row = {"benchmark": name, **t}
    if note:
        row["note"] = note
    return row


# ---------------------------------------------------------------- softmax
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------- Black-Scholes
RSQRT2PI = 0.39894228040143267793994605993438
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429


def cnd(d):
    K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret = RSQRT2PI * np.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    return np.where(d > 0, 1.0 - ret, ret)


def black_scholes(S, X, T, R, V):
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    cndd1 = cnd(d1)
    cndd2 = cnd(d2)
    expRT = np.exp(-R * T)
    call = S * cndd1 - X * expRT * cndd2
    put = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1)
    return call, put


# ---------------------------------------------------- great-circle distance
def great_circle(lat1, lon1, lat2, lon2):
    dlat = np.radians(lat2 - lat1)
    dlon = np.radians(lon2 - lon1)
    a = np.sin(dlat / 2) ** 2 + np.cos(np.radians(lat1)) * np.cos(np.radians(lat2)) * np.sin(dlon / 2) ** 2
    return 6371.0 * 2 * np.arcsin(np.sqrt(a))


# ------------------------------------------------------------------- GELU
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)))


# -------------------------------------------------------------- logsumexp
def logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]


# ------------------------------------------------------ pairwise distances
def pairwise(a, b):
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1))


# ------------------------------------------------------------ tiny function
def tiny(a, b):
    c = a * b + 1.0
    d = c - a / 2.0
    e = d * d + b
    f = e - 3.0
    return f * 0.5 + a - b


# ------------------------------------------------------ bandwidth: copy/chain
def chain5(x):
    return (((x * 1.5 + 2.0) * x - 0.5) * 0.25) + x


def _numba_versions():
    if numba is None:
        return {}
    nj = numba.njit(parallel=True, fastmath=False, cache=False)

    @nj
    def nb_gelu(x):
        out = np.empty_like(x)
        for i in numba.prange(x.size):
            v = x[i]
            out[i] = 0.5 * v * (1.0 + np.tanh(np.float32(0.7978845608) * (v + np.float32(0.044715) * v * v * v)))
        return out

    @nj
    def nb_softmax(x):
        x2 = x.reshape(-1, x.shape[-1])
        out = np.empty_like(x2)
        for r in numba.prange(x2.shape[0]):
            m = x2[r].max()
            s = np.float32(0)
            for j in range(x2.shape[1]):
                e = np.exp(x2[r, j] - m)
                out[r, j] = e
                s += e
            for j in range(x2.shape[1]):
                out[r, j] /= s
        return out.reshape(x.shape)

    @nj
    def nb_logsumexp(x):
        out = np.empty(x.shape[0])
        for r in numba.prange(x.shape[0]):
            m = x[r].max()
            s = 0.0
            for j in range(x.shape[1]):
                s += np.exp(x[r, j] - m)
            out[r] = np.log(s) + m
        return out

    @nj
    def nb_great_circle(lat1, lon1, lat2, lon2):
        out = np.empty_like(lat1)
        for i in numba.prange(lat1.size):
            dlat = np.radians(lat2[i] - lat1[i])
            dlon = np.radians(lon2[i] - lon1[i])
            a = np.sin(dlat / 2) ** 2 + np.cos(np.radians(lat1[i])) * np.cos(np.radians(lat2[i])) * np.sin(dlon / 2) ** 2
            out[i] = 6371.0 * 2 * np.arcsin(np.sqrt(a))
        return out

    @nj
    def nb_pairwise(a, b):
        out = np.empty((a.shape[0], b.shape[0]))
        for i in numba.prange(a.shape[0]):
            for j in range(b.shape[0]):
                s = 0.0
                for k in range(a.shape[1]):
                    d = a[i, k] - b[j, k]
                    s += d * d
                out[i, j] = np.sqrt(s)
        return out

    return {"gelu": nb_gelu, "softmax": nb_softmax, "logsumexp": nb_logsumexp,
            "great_circle": nb_great_circle, "pairwise": nb_pairwise}


def run(quick=False, only=None):
    rng = np.random.default_rng(0)
    rows = []
    rep = 7 if quick else 15
    scale = 10 if quick else 1
    nb = _numba_versions()
    comp = lambda f: numdyn.compile(f, backend="native")  # noqa: E731

    def want(name):
        return only is None or only in name

    if want("softmax"):
        x = rng.standard_normal((16, 16, 128 // scale, 256)).astype(np.float32)
        fns = {"numpy": softmax, "numdyn": comp(softmax)}
        if "softmax" in nb:
            fns["numba"] = nb["softmax"]
        rows.append(_row("softmax f32 (16,16,%d,256) axis=-1" % (128 // scale), fns, (x,), 1e-5, rep))

    if want("black"):
        n = 2_000_000 // scale
        S = rng.uniform(5.0, 30.0, n)
        X = rng.uniform(1.0, 100.0, n)
        T = rng.uniform(0.25, 10.0, n)
        args = (S, X, T, 0.02, 0.30)
        fns = {"numpy": black_scholes, "numdyn": comp(black_scholes)}
        if ne is not None:
            def ne_bs(S, X, T, R, V):
                sqrtT = ne.evaluate("sqrt(T)")
                d1 = ne.evaluate("(log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)")
                d2 = ne.evaluate("d1 - V * sqrtT")
                c = "RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))"
                env = dict(RSQRT2PI=RSQRT2PI, A1=A1, A2=A2, A3=A3, A4=A4, A5=A5)
                cn = []
                for d in (d1, d2):
                    K = ne.evaluate("1.0 / (1.0 + 0.2316419 * abs(d))")
                    r = ne.evaluate(c, local_dict=dict(env, d=d, K=K))
                    cn.append(ne.evaluate("where(d > 0, 1.0 - r, r)"))
                cndd1, cndd2 = cn
                call = ne.evaluate("S * cndd1 - X * exp(-R * T) * cndd2")
                put = ne.evaluate("X * exp(-R * T) * (1.0 - cndd2) - S * (1.0 - cndd1)")
                return call, put
            fns["numexpr"] = ne_bs
        rows.append(_row("Black-Scholes f64 n=%d" % n, fns, args, 1e-9, rep))

    if want("great"):
        n = 2_000_000 // scale
        args = tuple(rng.uniform(-80, 80, n) for _ in range(4))
        fns = {"numpy": great_circle, "numdyn": comp(great_circle)}
        if ne is not None:
            fns["numexpr"] = lambda la1, lo1, la2, lo2: ne.evaluate(
                "6371.0 * 2 * arcsin(sqrt(sin((la2 - la1) * 0.017453292519943295 / 2) ** 2 + "
                "cos(la1 * 0.017453292519943295) * cos(la2 * 0.017453292519943295) * "
                "sin((lo2 - lo1) * 0.017453292519943295 / 2) ** 2))")
        if "great_circle" in nb:
            fns["numba"] = nb["great_circle"]
        rows.append(_row("great-circle f64 n=%d" % n, fns, args, 1e-9, rep))

    if want("gelu"):
        n = 8_000_000 // scale
        x = rng.standard_normal(n).astype(np.float32)
        fns = {"numpy": gelu, "numdyn": comp(gelu)}
        if ne is not None:
            fns["numexpr"] = lambda x: ne.evaluate(
                "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))")
        if "gelu" in nb:
            fns["numba"] = nb["gelu"]
        rows.append(_row("tanh-GELU f32 n=%d" % n, fns, (x,), 1e-5, rep))

    if want("logsumexp"):
        m = 2000 // (3 if quick else 1)
        x = rng.standard_normal((m, 2000))
        fns = {"numpy": logsumexp, "numdyn": comp(logsumexp)}
        if "logsumexp" in nb:
            fns["numba"] = nb["logsumexp"]
        rows.append(_row("logsumexp f64 (%d,2000) axis=1" % m, fns, (x,), 1e-9, rep))

    if want("pairwise"):
        a = rng.standard_normal((1000, 3))
        b = rng.standard_normal((800, 3))
        fns = {"numpy": pairwise, "numdyn": comp(pairwise)}
        if ne is not None:
            fns["numexpr"] = lambda a, b: ne.evaluate(
                "sqrt((a0 - b0) ** 2 + (a1 - b1) ** 2 + (a2 - b2) ** 2)",
                local_dict=dict(a0=a[:, 0:1], a1=a[:, 1:2], a2=a[:, 2:3],
                                b0=b[None, :, 0], b1=b[None, :, 1], b2=b[None, :, 2]))
        if "pairwise" in nb:
            fns["numba"] = nb["pairwise"]
        rows.append(_row("pairwise dist (1000,3)x(800,3)", fns, (a, b), 1e-9, rep))

    if want("tiny"):
        a = rng.standard_normal(100)
        b = rng.standard_normal(100)
        fns = {"numpy": tiny, "numdyn": comp(tiny)}
        rows.append(_row("10-op function, 100 elements", fns, (a, b), 1e-12, rep))

    if want("stream") or want("chain"):
        n = 100_000_000 // (20 if quick else 1)
        x = rng.standard_normal(n)
        dst = np.empty_like(x)
        t_copy = timeit_interleaved({"copyto": lambda: np.copyto(dst, x)}, (), repeat=5, warmup=1)["copyto"]
        cf = comp(chain5)
        _check(chain5(x[:1000]), cf(x[:1000]), 1e-12)
        t = timeit_interleaved({"numpy": chain5, "numdyn": cf}, (x,), repeat=5, warmup=1)
        gbs = lambda s: 2 * 8 * n / s / 1e9  # noqa: E731 (read + write)
        rows.append({"benchmark": "STREAM copy (np.copyto) n=%d" % n, "numpy": t_copy,
                     "note": "%.1f GB/s" % gbs(t_copy)})
        rows.append({"benchmark": "5-op fused chain f64 n=%d" % n, **t,
                     "note": "numdyn %.1f GB/s = %.0f%% of copy" % (gbs(t["numdyn"]), 100 * t_copy / t["numdyn"])})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    a = ap.parse_args()
    report(run(quick=a.quick, only=a.only))
