"""Real-program shapes that used to leave numdyn's graph (issue 13, what the
tracer captures): NumPy, numdyn's own path (floor off) and numdyn's default
(the floor on) timed interleaved in one run, each result checked against
NumPy first. Programs written for this file, in the styles real NumPy code
uses:

  cnn        conv2d / maxpool helpers that fill np.empty outputs window by
             window (helpers now see the shim as their np: no break per store)
  pairwise   an n-body step: inverse cubes through x[x > 0] = x[x > 0] ** -1.5
             (two masks of one expression: one where() in the graph)
  blur       a separable blur by per-row / per-column np.convolve(mode='valid')
             with a filter made by np.array([...]) (stencils, and a replayed call)
  smooth     moving averages of many short series with np.convolve
  binned     radial profile: the mean of the values in each radius bin,
             values[(r >= lo) & (r < hi)].mean() per bin (the masked mean
             stays in the graph: no break per bin)

    PYTHONPATH=<build> python3 bench/bench_realprograms.py [--quick]
"""
import statistics
import sys
import time

import numpy as np

import numdyn

numdyn.config.compile_budget = float("inf")   # no background compiles in the timings


# ---------------------------------------------------------------- programs

def window_conv(x, w):
    k = w.shape[0]
    ho, wo = x.shape[1] - k + 1, x.shape[2] - k + 1
    out = np.empty((x.shape[0], ho, wo, w.shape[3]), dtype=np.float32)
    for i in range(ho):
        for j in range(wo):
            out[:, i, j, :] = np.sum(x[:, i:i + k, j:j + k, :, np.newaxis] * w[np.newaxis], axis=(1, 2, 3))
    return out


def pool(x):
    out = np.empty((x.shape[0], x.shape[1] // 2, x.shape[2] // 2, x.shape[3]), dtype=x.dtype)
    for i in range(x.shape[1] // 2):
        for j in range(x.shape[2] // 2):
            out[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return out


def cnn(x, w1, w2, fc):
    y = pool(np.maximum(window_conv(x, w1), 0))
    y = pool(np.maximum(window_conv(y, w2), 0))
    return np.maximum(y.reshape(y.shape[0], -1) @ fc, 0)


def accel(pos, mass, soft):
    d = [pos[:, k:k + 1].T - pos[:, k:k + 1] for k in range(3)]
    r = d[0] ** 2 + d[1] ** 2 + d[2] ** 2 + soft ** 2
    r[r > 0] = r[r > 0] ** (-1.5)
    return np.hstack([(dk * r) @ mass for dk in d])


def pairwise(pos, vel, mass, dt, steps):
    a = accel(pos, mass, 0.1)
    for _ in range(steps):
        vel += a * dt / 2
        pos += vel * dt
        a = accel(pos, mass, 0.1)
        vel += a * dt / 2
    return pos, vel


def blur(img):
    img = img.astype(np.float32)
    f = np.array([1.0, 2.0, 1.0], dtype=np.float32) / 4.0
    rows = np.empty((img.shape[0], img.shape[1] - 2), dtype=np.float32)
    for y in range(rows.shape[0]):
        rows[y, :] = np.convolve(img[y, :], f, mode="valid")
    out = np.empty((rows.shape[0] - 2, rows.shape[1]), dtype=np.float32)
    for x in range(out.shape[1]):
        out[:, x] = np.convolve(rows[:, x], f, mode="valid")
    return np.clip(out, 0, 255).astype(np.uint8)


def smooth(series):
    taps = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    out = np.empty((series.shape[0], series.shape[1] - 4))
    for s in range(series.shape[0]):
        out[s] = np.convolve(series[s], taps, mode="valid")
    return out - out.mean(axis=1, keepdims=True)


def binned(values, radius, nbins):
    rmax = radius.max()
    out = np.zeros(nbins)
    for i in range(nbins):
        sel = (radius >= rmax * i / nbins) & (radius < rmax * (i + 1) / nbins)
        out[i] = values[sel].mean()
    return out


def programs(quick):
    rng = np.random.default_rng(0)
    n = 40 if quick else 100
    return [
        ("cnn", cnn, lambda: (rng.standard_normal((4, 20, 20, 1)).astype(np.float32),
                              rng.standard_normal((3, 3, 1, 6)).astype(np.float32),
                              rng.standard_normal((3, 3, 6, 8)).astype(np.float32),
                              rng.standard_normal((8 * 3 * 3, 10)).astype(np.float32))),
        ("pairwise", pairwise, lambda: (rng.standard_normal((n, 3)), rng.standard_normal((n, 3)),
                                        rng.random((n, 1)) + 0.5, 0.01, 10)),
        ("blur", blur, lambda: (rng.integers(0, 256, (96, 128), dtype=np.uint8),)),
        ("smooth", smooth, lambda: (rng.standard_normal((64, 200)),)),
        ("binned", binned, lambda: (rng.random(20000), rng.random(20000), 50)),
    ]


# ---------------------------------------------------------------- harness

def same(a, b):
    if isinstance(a, tuple):
        return all(same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5)


def main():
    quick = "--quick" in sys.argv
    reps = 5 if quick else 15
    print(f"{'program':10s} {'NumPy ms':>9s} {'own ms':>9s} {'default ms':>10s} {'own x':>7s} {'default x':>9s}")
    ratios = []
    for name, fn, make in programs(quick):
        args = make()
        own = numdyn.compile(fn, options={"floor": False})
        dflt = numdyn.compile(fn)
        ref = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        for f in (own, dflt):
            for _ in range(3):
                got = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            numdyn.utils.wait_compiles()
            assert same(got, ref), name
        t = {"numpy": [], "own": [], "default": []}
        for _ in range(reps):   # interleaved: load on the machine hits all three alike
            for key, f in (("numpy", fn), ("own", own), ("default", dflt)):
                a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                t0 = time.perf_counter()
                f(*a)
                t[key].append(time.perf_counter() - t0)
        m = {k: statistics.median(v) * 1e3 for k, v in t.items()}
        ratios.append((m["numpy"] / m["own"], m["numpy"] / m["default"]))
        print(f"{name:10s} {m['numpy']:9.3f} {m['own']:9.3f} {m['default']:10.3f} "
              f"{ratios[-1][0]:7.2f} {ratios[-1][1]:9.2f}")
    g = [statistics.geometric_mean(r[i] for r in ratios) for i in (0, 1)]
    print(f"geomean NumPy/numdyn: own path {g[0]:.2f}x, default {g[1]:.2f}x")


if __name__ == "__main__":
    main()
