"""Element loops: plain Python vs numdyn (warm and first call) vs numba,
issue 17 ("Loop capture: Python loops over elements").

    python bench/bench_loops.py [--quick] [--only NAME] [--output FILE.md]

The programs (bench/programs_loops.py) are plain Python loops over array
elements -- scalar reads and writes, branches on element values, index
arrays, early exits -- at sizes where the plain Python function takes about
1-200 ms (--quick: about 0.5-10 ms). The "numpy" column is that function
called as it is (what a NumPy user runs); "numdyn" is numdyn.compile of the
same function, "numba" numba.njit of the same function object. Columns,
checking, first-call measurement and reporting are those of
bench/bench_programs.py (see its docstring): every numdyn and numba result is
compared with the plain function's before timing, a numdyn answer that
differs is recorded as "WRONG ANSWER" and not timed.
"""
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_programs as H  # noqa: E402  (sets NUMDYN_CACHE_DIR before numdyn loads)
from bench_programs import Case  # noqa: E402

import numpy as np  # noqa: E402

import programs_loops as L  # noqa: E402


def loop_cases(quick=False):
    rng = np.random.default_rng(20261123)
    Q = quick
    cases = []

    def add(name, fn, make_args, rtol=1e-9, category="", **kw):
        cases.append(Case(name, fn, make_args, rtol, category, **kw))

    # ------------------------------------------------------ linear algebra
    n = 16 if Q else 50
    M = rng.standard_normal((n, n))
    A = M @ M.T + n * np.eye(n)
    add(f"Cholesky element loops n={n}", L.cholesky_loops, lambda A=A: (A,), 1e-9)
    n = 16 if Q else 40
    A = rng.random((n, n)) + n * np.eye(n)
    add(f"LU element loops n={n}", L.lu_loops, lambda A=A: (A,), 1e-9)
    n = 1000 if Q else 10000
    a, c = rng.random(n), rng.random(n)
    b, d = 4.0 + rng.random(n), rng.random(n)
    add(f"tridiagonal (Thomas) solve n={n}", L.thomas, lambda a=a, b=b, c=c, d=d: (a, b, c, d), 1e-9)
    n = 12 if Q else 32
    A, B = rng.random((n, n)), rng.random((n, n))
    add(f"matmul triple loop n={n}", L.matmul_loops, lambda A=A, B=B: (A, B), 1e-9)
    rows, per = (200, 5) if Q else (2000, 10)
    indptr = np.arange(0, rows * per + 1, per, dtype=np.int64)
    indices = rng.integers(0, rows, rows * per).astype(np.int64)
    data, x = rng.random(rows * per), rng.random(rows)
    add(f"CSR mat-vec rows={rows} nnz={rows * per}", L.csr_matvec,
        lambda p=indptr, i=indices, d=data, x=x: (p, i, d, x), 1e-9)
    add(f"CSR mat-vec by row slices rows={rows} nnz={rows * per}", L.csr_matvec_slices,
        lambda p=indptr, i=indices, d=data, x=x: (p, i, d, x), 1e-9)
    n, w = (20, 3) if Q else (400, 6)
    A, B = rng.random((n, 2 * w + 1)), rng.random((n, 2 * w + 1))
    add(f"band row products n={n} w={w} (chained slices)", L.band_row_products,
        lambda A=A, B=B, w=w: (A, B, w), 1e-9)
    n, sweeps = (12, 2) if Q else (40, 5)
    u, f = np.zeros((n, n)), rng.random((n, n))
    u[0, :] = 1.0
    add(f"Gauss-Seidel point sweeps {n}x{n} x{sweeps}", L.gauss_seidel_points,
        lambda u=u, f=f, s=sweeps: (u, f, s), 1e-9)

    n, steps = (10, 2) if Q else (24, 4)
    u = rng.random((n, n, n))
    add(f"3-D heat point stencil {n}^3 x{steps}", L.heat_3d_points, lambda u=u, s=steps: (u, s, 0.1), 1e-9)

    n, iters = (16, 40) if Q else (48, 300)
    u = np.zeros((n, n))
    u[0, :] = 1.0
    f = rng.random((n, n))
    add(f"Jacobi while-converged (swap) {n}x{n} <={iters} it", L.jacobi_until_converged_swap,
        lambda u=u, f=f, it=iters: (u, f, 1e-6, it), 1e-9)
    add(f"Jacobi while-converged (new grid) {n}x{n} <={iters} it", L.jacobi_until_converged_copy,
        lambda u=u, f=f, it=iters: (u, f, 1e-6, it), 1e-9)

    # ------------------------------------------------- dynamic programming
    n = 20 if Q else 60
    seq = rng.integers(0, 4, n).astype(np.int64)
    add(f"Nussinov RNA folding n={n}", L.nussinov, lambda s=seq: (s,), 0)
    n = 30 if Q else 150
    s1, s2 = rng.integers(0, 4, n), rng.integers(0, 4, n + 7)
    add(f"edit distance {n}x{n + 7}", L.edit_distance, lambda a=s1, b=s2: (a, b), 0)
    n = 12 if Q else 32
    D = rng.random((n, n)) * 10
    np.fill_diagonal(D, 0.0)
    add(f"Floyd-Warshall scalar loops n={n}", L.floyd_warshall_loops, lambda D=D: (D,), 1e-12)

    # --------------------------------------------- scans, bytes, counting
    n = 2000 if Q else 20000
    buf = rng.integers(0, 256, n, dtype=np.uint8)
    table = L.crc32_table()
    # the program must be a real CRC-32: check it once against zlib
    want = zlib.crc32(buf[:64].tobytes())
    if int(L.crc32(buf[:64], table)) != want:
        raise AssertionError("programs_loops.crc32 disagrees with zlib.crc32")
    add(f"CRC-32 uint8 n={n}", L.crc32, lambda b=buf, t=table: (b, t), 0)
    n = 2000 if Q else 20000
    x = rng.standard_normal(n) + np.where(np.arange(n) % 5000 > 4000, 1.5, 0.0)
    add(f"CUSUM scan with branch n={n}", L.cusum, lambda x=x: (x, 0.0, 0.5, 5.0), 1e-9)
    n = 2000 if Q else 20000
    x = rng.standard_normal(n)
    add(f"histogram by loop n={n} bins=50", L.histogram_loop, lambda x=x: (x, -3.0, 3.0, 50), 0)
    n = 2000 if Q else 50000
    add(f"sieve of Eratosthenes n={n}", L.sieve, lambda n=n: (n,), 0)

    # -------------------------------------------------------------- sorting
    n = 40 if Q else 250
    v = rng.random(n)
    add(f"insertion sort n={n}", L.insertion_sort, lambda v=v: (v,), 0)
    n = 30 if Q else 150
    v = rng.integers(0, 1000, n)
    add(f"bubble sort n={n} (int64)", L.bubble_sort, lambda v=v: (v,), 0)
    add(f"bubble sort, tuple swap n={n} (int64)", L.bubble_sort_swap, lambda v=v: (v,), 0)

    # ---------------------------------------------------- signal and cells
    n, steps = (40, 20) if Q else (200, 100)
    cells = np.zeros(n, dtype=np.uint8)
    cells[n // 2] = 1
    rule110 = np.array([(110 >> k) & 1 for k in range(8)], dtype=np.uint8)
    add(f"1-D cellular automaton rule 110 {n}x{steps}", L.cellular_automaton,
        lambda c=cells, r=rule110, s=steps: (c, r, s), 0)
    n, deg = (300, 8) if Q else (3000, 12)
    coefs, x = rng.standard_normal(deg), rng.uniform(-1.0, 1.0, n)
    add(f"Horner polynomial n={n} degree={deg - 1}", L.horner, lambda c=coefs, x=x: (c, x), 1e-9)
    n, w = (500, 5) if Q else (5000, 9)
    x = np.cumsum(rng.standard_normal(n))
    add(f"running max/min filter n={n} w={w}", L.running_minmax, lambda x=x, w=w: (x, w), 0)
    n = 2000 if Q else 20000
    x = rng.standard_normal(n)
    add(f"IIR biquad filter n={n}", L.biquad,
        lambda x=x: (x, 0.2066, 0.4131, 0.2066, -0.3695, 0.1958), 1e-9)
    h, w, it = (10, 15, 20) if Q else (30, 45, 50)
    cre, cim = np.linspace(-2.0, 0.6, w), np.linspace(-1.2, 1.2, h)
    add(f"Mandelbrot escape loop {h}x{w} x{it}", L.mandelbrot_points,
        lambda a=cre, b=cim, it=it: (a, b, it), 0)

    # ------------------------------------------ loops calling user helpers
    n = 2000 if Q else 20000
    x = rng.standard_normal(n)
    add(f"logistic by helper call n={n}", L.logistic_map, lambda x=x: (x, 2.5, 0.3), 1e-12)
    steps = 1000 if Q else 10000
    add(f"RK4 scalar ODE, helper derivative x{steps}", L.rk4_scalar,
        lambda s=steps: (1.0, 0.0, 0.001, s, 0.7), 1e-12)

    # ----------------------------------- small state vectors updated whole
    # (rows named 'state: ...': --only state runs them together)
    steps = 200 if Q else 2000
    A = rng.standard_normal((4, 4)) * 0.1
    add(f"state: RK4 on a 4-vector, y' = A y x{steps}", L.rk4_linear_system,
        lambda A=A, s=steps: (np.ones(4), A, 0.01, s), 1e-12)
    steps = 1000 if Q else 10000
    add(f"state: Euler steps of Lorenz (3-vector built per step) x{steps}", L.lorenz_euler,
        lambda s=steps: (np.ones(3), 0.001, s), 1e-12)
    steps = 300 if Q else 3000
    add(f"state: RK4 of Lorenz (3-vector rebound) x{steps}", L.lorenz_rk4_vector,
        lambda s=steps: (np.ones(3), 0.001, s), 1e-12)
    steps = 20 if Q else 200
    st = tuple(rng.standard_normal(5) for _ in range(6)) + (rng.random(5) + 0.5,)
    add(f"state: n-body, 5 bodies, six 1-D state arrays x{steps}", L.nbody_small,
        lambda st=st, s=steps: st + (0.001, s), 1e-12)
    # a 2-D state: covariance P (4x4) and gain K (4x2) recomputed every step
    steps = 50 if Q else 500
    dt = 0.1
    Fm = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    Hm = np.array([[1, 0, 0, 0], [0, 1, 0, 0.0]])
    zs = np.cumsum(rng.standard_normal((steps, 2)) * 0.1, axis=0)
    add(f"state: Kalman filter, 4 states 2 measurements x{steps}", L.kalman_filter,
        lambda Fm=Fm, Hm=Hm, zs=zs: (zs, Fm, Hm, np.eye(4) * 1e-3, np.eye(2) * 0.05, np.zeros(4), np.eye(4)),
        1e-9)
    # constructs captured since session 28 (np.flip, chained assignments,
    # np.linalg.norm, reversed(range()), np.mean, np.sign)
    rng28 = np.random.default_rng(28)
    n28 = 300 if Q else 800
    add(f"linear algebra: Levinson-Durbin (np.flip) n={n28}", L.levinson_durbin,
        lambda: (rng28.random(n28) * (0.5 / n28),), 1e-9)
    add("linear algebra: covariance, chained symmetric fill 400x60", L.covariance_fill,
        lambda: (rng28.random((400, 60)),), 1e-9)
    add("linear algebra: Gram-Schmidt norms + reversed() solve 200x40", L.gram_schmidt_norms,
        lambda: (rng28.random((200, 40)) + np.eye(200, 40),), 1e-9)
    add("statistics: row mean/norm/sign 300x50", L.row_stats,
        lambda: (rng28.random((300, 50)) - 0.5,), 1e-9)
    # constructs captured since session 29 (np.std/np.prod of slices,
    # float("inf"), sums and means along an axis of a 2-D local)
    rng29 = np.random.default_rng(29)
    n29 = 2000 if Q else 20000
    add(f"statistics: rolling z-score + growth (np.std/np.prod) n={n29} w=20", L.rolling_zscore,
        lambda: (rng29.standard_normal(n29), 20), 1e-9)
    add("statistics: column/row means of a rescaled 64x48 x50", L.column_stats_steps,
        lambda: (rng29.standard_normal((64, 48)), 50), 1e-9)
    # session 30: NaN data without a rerun (quiet compares), `.T` of subscripts
    rng30 = np.random.default_rng(30)
    n30 = 2000 if Q else 20000
    x30 = rng30.standard_normal(n30)
    x30[rng30.integers(0, n30, n30 // 500)] = np.nan
    add(f"signal: max/min envelope of NaN-gapped data n={n30} w=16", L.sensor_envelope,
        lambda x=x30: (x, 16), 0)
    m30 = 60 if Q else 200
    A30, v30 = rng30.standard_normal((m30, m30)), rng30.standard_normal(m30)
    add(f"linear algebra: trailing projections A[:, k:].T @ v n={m30}", L.trailing_projections,
        lambda A=A30, v=v30: (A, v), 1e-9)
    # the tracer's: every pass fused into one kernel (loop capture leaves it)
    for size in (64, 10 ** 5 if Q else 10 ** 6):
        add(f"state: x = x * 1.5 + 0.25 x10 on {size} elements (tracer's)", L.affine_steps,
            lambda size=size: (np.linspace(0, 1, size), 10), 1e-12)
    return cases


def run(quick=False, only=None):
    return H.run_cases(loop_cases(quick), quick=quick, only=only)


if __name__ == "__main__":
    H.main(loop_cases, "Element loops: plain Python vs numdyn vs numba (bench/bench_loops.py)")
