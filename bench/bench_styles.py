"""NumPy programs in styles the other program benchmarks do not use
(bench/programs_styles.py): NumPy vs numdyn, warm and first call, with
bench_programs.py's harness (results checked against NumPy first, NumPy and
numdyn interleaved in one process, medians). numba is left out unless
--numba is given (most of these styles are outside numba's subset, and its
compiles dominate the run time).

    python bench/bench_styles.py [--quick] [--only NAME] [--output FILE.md] [--numba]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_programs as BP  # noqa: E402  (sets a fresh NUMDYN_CACHE_DIR first)

import numpy as np  # noqa: E402

import programs_styles as S  # noqa: E402


def style_cases(quick=False):
    rng = np.random.default_rng(20261127)
    Q = quick
    table = []   # (name, fn, make_args, rtol, category): bench_programs.Case's fields
    add = lambda *row: table.append(row)  # noqa: E731

    sizes = ((24, 200),) if Q else ((32, 1000), (1000, 1000000))   # (side, elements)
    for side, _ in sizes:
        img = rng.random((side, side))
        add(f"box blur np.pad r=2 {side}x{side}", S.box_blur_pad, lambda a=img: (a, 2), 1e-9, "image")
        add(f"Sobel magnitude {side}x{side}", S.sobel_magnitude, lambda a=img: (a,), 1e-9, "image")
        k = rng.random((5, 5))
        add(f"conv2d shifted sums 5x5 {side}x{side}", S.conv2d_shifted, lambda a=img, k=k: (a, k),
            1e-9, "image")
        u8 = (rng.random((side, side)) ** 2 * 255).astype(np.uint8)
        add(f"Otsu threshold {side}x{side}", S.otsu_threshold, lambda a=u8: (a,), 1e-9, "image")
    for n, m in (((30, 40),) if Q else ((40, 50), (1500, 1000))):
        X, Y = rng.standard_normal((n, 3)), rng.standard_normal((m, 3))
        add(f"pairwise nearest broadcast {n}x{m}", S.pairwise_nearest, lambda X=X, Y=Y: (X, Y),
            1e-9, "distances")
    for n in ((40,) if Q else (50, 1000)):
        X = rng.standard_normal((n, 8))
        add(f"RBF Gram matrix {n}x8", S.pairwise_gram, lambda X=X: (X,), 1e-8, "distances")
    for r, c in (((20, 10),) if Q else ((20, 30), (1000, 1000))):
        x = rng.standard_normal((r, c)) * 3
        add(f"log-softmax axis 0 {r}x{c}", S.log_softmax_axis0, lambda x=x: (x,), 1e-9, "softmax")
    for n, d in (((16, 8),) if Q else ((16, 8), (512, 64))):
        q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        mask = np.tril(np.ones((n, n), dtype=bool))
        add(f"masked attention weights {n}x{d}", S.attention_weights,
            lambda q=q, k=k, m=mask: (q, k, m), 1e-9, "softmax")
    for _, n in sizes:
        p = 100.0 * np.exp(np.cumsum(rng.standard_normal(n) * 0.01))
        add(f"drawdown cumulative stats n={n}", S.drawdown_stats, lambda p=p: (p,), 1e-8, "cumulative")
    for _, n in sizes:
        keys = rng.integers(0, 50, n)
        vals = rng.standard_normal(n)
        add(f"group-by bincount/maximum.at n={n}", S.groupby_stats,
            lambda k=keys, v=vals: (k, v, 50), 1e-9, "group-by")
        nn = max(n // 10, 10)
        rows, cols = rng.integers(0, nn, n), rng.integers(0, nn, n)
        data, xv = rng.standard_normal(n), rng.standard_normal(nn)
        add(f"COO mat-vec np.add.at nnz={n}", S.scatter_add_at,
            lambda r=rows, c=cols, d=data, x=xv, nn=nn: (r, c, d, x, nn), 1e-9, "group-by")
        x = rng.standard_normal(n)
        edges = np.linspace(-3, 3, 25)
        add(f"ranks/searchsorted/unique n={n}", S.rank_and_bins, lambda x=x, e=edges: (x, e),
            1e-12, "sorting")
    for n in ((200,) if Q else (1000, 100000)):
        x = rng.standard_normal(n)
        add(f"running median by sort w=7 n={n}", S.median_filter_sorted, lambda x=x: (x, 7),
            1e-12, "sorting")
    for _, n in sizes:
        u = np.sin(np.linspace(0, 20, n)) + 0.01 * rng.standard_normal(n)
        add(f"np.gradient/np.diff/np.roll n={n}", S.diffusion_gradient, lambda u=u: (u, 0.01),
            1e-8, "finite differences")
        t = np.linspace(0, 1, n)
        y = 3 * t ** 3 - t + 0.1 * rng.standard_normal(n)
        add(f"polynomial detrend deg=3 n={n}", S.poly_detrend, lambda t=t, y=y: (t, y, 3), 1e-7,
            "fitting")
    for paths, steps in (((100, 20),) if Q else ((200, 50), (10000, 100))):
        add(f"Asian option Monte Carlo {paths}x{steps}", S.mc_asian_option,
            lambda p=paths, s=steps: (7, p, s, 100.0, 0.03, 0.2, 100.0, 1.0), 1e-9, "monte carlo")
    for n, d in (((100, 5),) if Q else ((100, 5), (100000, 10))):
        X = rng.standard_normal((n, d)) * 4
        X[rng.random((n, d)) < 0.1] = np.nan
        add(f"NaN cleaning nanmean/where/clip {n}x{d}", S.clean_columns,
            lambda X=X: (X, -5.0, 5.0), 1e-9, "cleaning")
    for m in ((20,) if Q else (50, 1000)):
        A = rng.standard_normal((m, 3, 3)) + 3 * np.eye(3)
        b = rng.standard_normal((m, 3))
        add(f"3x3 np.linalg.solve loop m={m}", S.solve_3x3_loop, lambda A=A, b=b: (A, b), 1e-9,
            "small linalg")
        P2, ang = rng.standard_normal((m, 2)), rng.random(m) * 6.28
        add(f"2x2 rotations in a loop m={m}", S.rotate_points_loop, lambda P=P2, a=ang: (P, a),
            1e-9, "small linalg")
    for n, d in (((50, 10),) if Q else ((100, 20), (100000, 20))):
        X = rng.standard_normal((n, d)) * rng.random(d) + rng.random(d)
        add(f"normalize columns loop {n}x{d}", S.normalize_columns, lambda X=X: (X,), 1e-9, "columns")
    for n, d in (((50, 20),) if Q else ((100, 50), (20000, 200))):
        X = rng.standard_normal((n, d))
        add(f"exp smoothing over columns {n}x{d}", S.cumulative_columns, lambda X=X: (X, 0.9),
            1e-9, "columns")
    q, r = rng.standard_normal(4), rng.standard_normal(4)
    add("quaternion product (4-vectors)", S.quat_mul, lambda q=q, r=r: (q, r), 1e-12, "call overhead")
    for n in ((100,) if Q else (100, 1000000)):
        v, m = rng.standard_normal((n, 3)), rng.random(n)
        add(f"kinetic energy n={n}", S.kinetic_energy, lambda v=v, m=m: (v, m), 1e-9, "call overhead")
    for n in ((200,) if Q else (200, 1000000)):
        t = np.sort(rng.random(n)) * 10
        y = np.sin(t)
        tq = np.linspace(-1, 11, n)
        add(f"np.interp resample n={n}", S.interp_resample, lambda t=t, y=y, q=tq: (t, y, q), 1e-12,
            "call overhead")
    return [BP.Case(*row) for row in table]


if __name__ == "__main__":
    if "--numba" in sys.argv:
        sys.argv.remove("--numba")
    else:
        BP.numba = None
    BP.main(style_cases, "NumPy programs in new styles: NumPy vs numdyn (bench/bench_styles.py)")
