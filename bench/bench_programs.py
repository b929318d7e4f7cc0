"""Real programs: NumPy vs numdyn (warm and first call) vs numba, issue 13
("Real programs run faster than NumPy, never slower: the cost of capture").

    python bench/bench_programs.py [--quick] [--only NAME] [--output FILE.md]

The programs (bench/programs_real.py) are ordinary NumPy code: factorizations
by rows with slices, triangular solves, stencils and time-stepping solvers,
dynamic programming with array rows, hand-written neural-network steps,
signal processing, statistics and simulations, at sizes from small (per-call
overhead dominates) to large. Each one is given unchanged to NumPy (called as
it is), to numdyn (``numdyn.compile(fn)``) and to numba (``numba.njit(fn)``).

Columns, per program (median seconds per call unless said otherwise):

numpy            the function called as it is.
numdyn           numdyn warm: later calls of the compiled function (kernels
                 built, replay recorded where numdyn replays), median over
                 rounds interleaved with the other contenders
                 (runner.timeit_interleaved). numdyn runs with its
                 defaults, the speed floor included (numdyn.config.floor):
                 where it measured plain NumPy faster for a program, the
                 note says so and gives numdyn's own warm cost.
numdyn 1st call  wall time of ONE call of a fresh ``numdyn.compile(fn)`` made
                 with numdyn's defaults (background compiles: the call
                 waits for its compilers up to numdyn.config.compile_budget,
                 1 s, and NumPy runs the rest; the harness waits for those
                 compiles before the warm calls; with
                 NUMDYN_BACKGROUND_COMPILE=0 the call waits for every
                 compiler; bench_first_call.py compares the modes),
                 right after ``numdyn.reset()`` and
                 ``numdyn.utils.clear_cache()`` with NUMDYN_CACHE_DIR pointing
                 at a fresh, private temporary directory (set by this file
                 before numdyn is imported): tracing the Python function,
                 building and fusing the graphs, generating C, running the C
                 compiler, loading the kernels and running them. What stays
                 warm: the Python interpreter, NumPy, the numdyn extension and
                 the OS file cache (the C compiler's own files included).
numba            numba.njit of the same function object, warm.
numba 1st call   the first call of a fresh njit dispatcher (type inference +
                 LLVM compile + run); numba's process-wide caches of its own
                 library functions stay warm, so later rows compile faster.

Both compilers are warmed up once at process start on a tiny function (then
numdyn's caches are emptied again), so the first row's "1st call" figures do
not carry the one-time start-up of the extension, OpenMP or LLVM.

Every numdyn and numba result is compared with NumPy's before anything is
timed (values with a per-program rtol, integers and booleans exactly; numdyn
must also give NumPy's dtypes, shapes and scalar types, and leave its
arguments as NumPy leaves them). The first three numdyn calls are all checked
(the first traces; later ones may run from the program cache or replay). A
numdyn answer that differs is recorded as "WRONG ANSWER" and numdyn is not
timed on that row; an exception is recorded in the note. A numba compile
failure is shown as "-" with its reason: never a made-up figure.

ratio = numpy time / contender time (> 1: faster than NumPy); the geomean of
numpy/numdyn over the rows numdyn ran correctly is printed at the end.
bench/bench_loops.py uses the same harness (``main``) for element loops.
"""
import argparse
import atexit
import copy
import math
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _fresh_cache_dir():
    """Point NUMDYN_CACHE_DIR at a new private directory before numdyn loads."""
    if "numdyn" in sys.modules:
        return None
    d = tempfile.mkdtemp(prefix="numdyn-bench-cache-")  # mode 0700
    os.environ["NUMDYN_CACHE_DIR"] = d
    atexit.register(shutil.rmtree, d, True)
    return d


CACHE_DIR = _fresh_cache_dir()

import numpy as np  # noqa: E402

from runner import format_time, machine_description, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

try:
    import numba
    from numba.core.errors import NumbaWarning
    warnings.simplefilter("ignore", NumbaWarning)
except ImportError:  # pragma: no cover - numba is optional
    numba = None

import programs_real as P  # noqa: E402
import programs_styles as PS  # noqa: E402

NUMDYN_COLS = ("numdyn", "numdyn 1st call")
# the speed floor's settling: 2 untimed calls + 5 timed calls of each of its
# (up to) 3 paths, 9 each when the paths are within 10% (runtime_floor.c)
FLOOR_SETTLE_CALLS = 29
COLUMNS = ("numpy", "numdyn", "numdyn 1st call", "numba", "numba 1st call")


# =================================================================== cases
class Case:
    """One row: fn(*make_args()) at one size."""

    def __init__(self, name, fn, make_args, rtol=1e-9, category="", max_int_diff=None):
        self.name = name
        self.fn = fn
        self.make_args = make_args
        self.rtol = rtol
        self.category = category
        # (fraction, amount): integer results derived from float comparisons
        # may differ in a few entries by a rounding flip (documented per case)
        self.max_int_diff = max_int_diff


def _spd(rng, n):
    M = rng.standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


def _diag_dominant(rng, n):
    return rng.random((n, n)) + n * np.eye(n)


def _tri(rng, n, lower):
    T = rng.random((n, n)) * 0.5 + np.eye(n) * n / 4
    return np.tril(T) if lower else np.triu(T)


def program_cases(quick=False):
    rng = np.random.default_rng(20261123)
    Q = quick
    cases = []

    def add(name, fn, make_args, rtol=1e-9, category="", **kw):
        cases.append(Case(name, fn, make_args, rtol, category, **kw))

    # ----------------------------------------------------- factorizations
    cat = "factorization"
    for n in ((16,) if Q else (32, 96)):
        A = _spd(rng, n)
        add(f"cholesky by rows n={n}", P.cholesky_rows, lambda A=A: (A,), 1e-9, cat)
    for n in ((32,) if Q else (64, 500)):
        A = _spd(rng, n)
        add(f"cholesky by columns n={n}", P.cholesky_cols, lambda A=A: (A,), 1e-9, cat)
    for n in ((32,) if Q else (64, 400)):
        A = _diag_dominant(rng, n)
        add(f"LU rank-1 updates n={n}", P.lu_outer, lambda A=A: (A,), 1e-9, cat)
    n = 48 if Q else 200
    A = rng.standard_normal((n, n))
    add(f"LU partial pivoting n={n}", P.lu_partial_pivot, lambda A=A: (A,), 1e-8, cat)
    add(f"LU partial pivoting, row copies n={n}", P.lu_partial_pivot_rows, lambda A=A: (A,), 1e-8, cat)
    m, n = (40, 12) if Q else (200, 50)
    A = rng.standard_normal((m, n))
    add(f"QR modified Gram-Schmidt {m}x{n}", P.qr_gram_schmidt, lambda A=A: (A,), 1e-8, cat)
    m, n = (40, 30) if Q else (300, 200)
    A = rng.standard_normal((m, n))
    add(f"QR Householder {m}x{n}", P.qr_householder, lambda A=A: (A,), 1e-8, cat)

    # ---------------------------------------------------- triangular work
    cat = "triangular"
    n = 64 if Q else 500
    L, b = _tri(rng, n, True), rng.random(n)
    add(f"forward substitution n={n}", P.forward_subst, lambda L=L, b=b: (L, b), 1e-9, cat)
    n, k = (48, 8) if Q else (300, 32)
    U, B = _tri(rng, n, False), rng.random((n, k))
    add(f"back substitution n={n}, {k} rhs", P.back_subst_multi, lambda U=U, B=B: (U, B), 1e-9, cat)
    n, m = (48, 32) if Q else (400, 300)
    C, A = rng.random((n, n)), rng.random((n, m))
    add(f"syrk lower by rows n={n} k={m}", P.syrk_lower,
        lambda C=C, A=A: (C, A, 1.5, 0.5), 1e-9, cat)

    # ------------------------------------------------ stencils, time steps
    cat = "stencil"
    n, steps = (200, 50) if Q else (1000, 500)
    u = rng.random(n)
    add(f"heat 1-D n={n} x{steps}", P.heat_1d, lambda u=u, s=steps: (u, 0.25, s), 1e-9, cat)
    for n, steps in (((32, 20),) if Q else ((64, 100), (500, 50))):
        u = rng.random((n, n))
        add(f"heat 2-D {n}x{n} x{steps}", P.heat_2d, lambda u=u, s=steps: (u, 0.2, s), 1e-9, cat)
    n, steps = (500, 50) if Q else (4000, 400)
    x = np.linspace(0.0, 1.0, n)
    u = np.exp(-200.0 * (x - 0.5) ** 2)
    add(f"wave 1-D leapfrog n={n} x{steps}", P.wave_1d, lambda u=u, s=steps: (u, 0.25, s), 1e-9, cat)
    n, sweeps = (32, 3) if Q else (200, 10)
    u, f = np.zeros((n, n)), rng.random((n, n))
    u[0, :] = 1.0
    add(f"Gauss-Seidel by rows {n}x{n} x{sweeps}", P.gauss_seidel_rows,
        lambda u=u, f=f, s=sweeps: (u, f, s), 1e-9, cat)
    n = 64 if Q else 400
    p = np.zeros((n, n))
    p[:, 0] = np.sin(np.linspace(0.0, np.pi, n))
    add(f"column marching p[:, j] <- p[:, j-1] {n}x{n}", P.march_columns,
        lambda p=p: (p, 0.3), 1e-9, cat)
    n = 16 if Q else 40
    u, f = np.zeros((n, n)), np.ones((n, n))
    add(f"Jacobi until converged {n}x{n}", P.jacobi_until_converged,
        lambda u=u, f=f: (u, f, 1e-6, 5000), 1e-8, cat)
    n, steps = (64, 5) if Q else (256, 20)
    c = rng.random((n, n))
    vx, vy = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    add(f"upwind advection np.roll {n}x{n} x{steps}", P.advect_upwind_2d,
        lambda c=c, vx=vx, vy=vy, s=steps: (c, vx, vy, 0.1, s), 1e-9, cat)

    # ---------------------------------------------------- dynamic programming
    cat = "dynamic programming"
    items, cap = (20, 500) if Q else (100, 10000)
    w = rng.integers(1, cap // 10, items)
    v = rng.random(items) * 100
    add(f"0/1 knapsack {items} items cap={cap}", P.knapsack_01,
        lambda w=w, v=v, cap=cap: (w, v, cap), 1e-12, cat)
    h, wd = (32, 40) if Q else (300, 400)
    E = rng.random((h, wd))
    add(f"seam carving energy {h}x{wd}", P.seam_energy, lambda E=E: (E,), 1e-12, cat)
    S, T = (8, 50) if Q else (32, 1000)
    logA = np.log(rng.dirichlet(np.ones(S), S))
    logB = np.log(rng.dirichlet(np.ones(16), S))
    logpi = np.log(np.full(S, 1.0 / S))
    obs = rng.integers(0, 16, T)
    add(f"Viterbi S={S} T={T}", P.viterbi,
        lambda a=logA, b=logB, p=logpi, o=obs: (a, b, p, o), 1e-12, cat)
    for n in ((24,) if Q else (64, 400)):
        D = rng.random((n, n)) * 10
        np.fill_diagonal(D, 0.0)
        add(f"Floyd-Warshall np.minimum n={n}", P.floyd_warshall_vec, lambda D=D: (D,), 1e-12, cat)

    # ---------------------------------------------------------- neural nets
    cat = "neural network"
    for b, d, h, k in (((16, 8, 16, 3),) if Q else ((32, 16, 32, 4), (256, 784, 256, 10))):
        X = rng.standard_normal((b, d))
        Y = rng.integers(0, k, b)
        W1, b1 = rng.standard_normal((d, h)) * 0.1, np.zeros(h)
        W2, b2 = rng.standard_normal((h, k)) * 0.1, np.zeros(k)
        add(f"MLP train step {b}x{d}-{h}-{k}", P.mlp_train_step,
            lambda X=X, Y=Y, W1=W1, b1=b1, W2=W2, b2=b2: (X, Y, W1, b1, W2, b2, 0.1), 1e-9, cat)
    n, k = (64, 10) if Q else (1024, 100)
    logits, labels = rng.standard_normal((n, k)) * 3, rng.integers(0, k, n)
    add(f"softmax cross-entropy + grad {n}x{k}", P.softmax_xent_grad,
        lambda z=logits, y=labels: (z, y), 1e-9, cat)
    n, d, iters = (100, 5, 20) if Q else (1000, 20, 200)
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    add(f"logistic regression GD {n}x{d} x{iters}", P.logistic_gd,
        lambda X=X, y=y, it=iters: (X, y, 0.5, it), 1e-9, cat)
    add(f"logistic regression GD, lr * X.T @ r {n}x{d} x{iters}", P.logistic_gd_scaled,
        lambda X=X, y=y, it=iters: (X, y, 0.5, it), 1e-9, cat)
    n, iters = (100, 10) if Q else (500, 30)
    links = rng.random((n, n))
    links /= links.sum(axis=0)
    add(f"PageRank power iteration 0.85 * M @ r n={n} x{iters}", P.pagerank,
        lambda M=links, it=iters: (M, it), 1e-9, cat)
    T, b, d, h = (10, 4, 8, 16) if Q else (50, 16, 32, 64)
    xs = rng.standard_normal((T, b, d))
    Wx, Wh, bb = rng.standard_normal((d, h)) * 0.2, rng.standard_normal((h, h)) * 0.1, np.zeros(h)
    add(f"RNN forward T={T} batch={b} hidden={h}", P.rnn_forward,
        lambda xs=xs, Wx=Wx, Wh=Wh, bb=bb: (xs, Wx, Wh, bb), 1e-9, cat)

    # ---------------------------------------------------- signal processing
    cat = "signal"
    n, K = (5000, 15) if Q else (200000, 31)
    x, hh = rng.standard_normal(n), np.hanning(K) / np.hanning(K).sum()
    add(f"FIR filter n={n} taps={K}", P.fir_filter, lambda x=x, hh=hh: (x, hh), 1e-9, cat)
    n, lag = (1024, 32) if Q else (8192, 200)
    x = np.cumsum(rng.standard_normal(n))
    add(f"autocorrelation n={n} lags={lag}", P.autocorr, lambda x=x, lag=lag: (x, lag), 1e-9, cat)
    n = 10000 if Q else 1000000
    x = 100.0 + np.cumsum(rng.standard_normal(n))
    add(f"Bollinger bands (cumsum) n={n} w=20", P.bollinger, lambda x=x: (x, 20), 1e-7, cat)
    for n in ((32,) if Q else (64, 1024)):
        x = rng.standard_normal(n)
        add(f"DFT by matrix n={n} (complex)", P.dft_matrix, lambda x=x: (x,), 1e-8, cat)

    # ---------------------------------------------------------- statistics
    cat = "statistics"
    n, d = (500, 8) if Q else (10000, 50)
    X = rng.standard_normal((n, d)) * rng.random(d) * 10 + rng.random(d)
    add(f"standardize + covariance {n}x{d}", P.standardize_cov, lambda X=X: (X,), 1e-9, cat)
    n, k, iters = (300, 4, 3) if Q else (5000, 8, 10)
    centers = rng.standard_normal((k, 2)) * 5
    X = centers[rng.integers(0, k, n)] + rng.standard_normal((n, 2))
    C0 = X[:k].copy()
    add(f"k-means n={n} k={k} x{iters}", P.kmeans, lambda X=X, C0=C0, it=iters: (X, C0, it),
        1e-9, cat)
    n = 10000 if Q else 1000000
    x = rng.standard_normal(n)
    add(f"histogram by bincount n={n} bins=100", P.histogram_bincount,
        lambda x=x: (x, -4.0, 4.0, 100), 1e-12, cat)
    n, p = (500, 4) if Q else (20000, 10)
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + 0.5 * rng.standard_normal(n)
    add(f"least squares normal equations {n}x{p}", P.ols_normal_eq, lambda X=X, y=y: (X, y),
        1e-8, cat)

    # --------------------------------------------------------- simulations
    cat = "simulation"
    for n, steps in (((16, 10),) if Q else ((32, 100), (400, 5))):
        pos, vel, mass = rng.standard_normal((n, 3)), rng.standard_normal((n, 3)) * 0.1, rng.random(n)
        add(f"n-body leapfrog n={n} x{steps}", P.nbody_leapfrog,
            lambda p=pos, v=vel, m=mass, s=steps: (p, v, m, 0.001, s), 1e-8, cat)
    for n, steps in (((32, 10),) if Q else ((64, 100), (512, 20))):
        board = (rng.random((n, n)) < 0.3).astype(np.uint8)
        board[0, :] = board[-1, :] = board[:, 0] = board[:, -1] = 0
        add(f"Game of Life {n}x{n} x{steps}", P.game_of_life,
            lambda g=board, s=steps: (g, s), 0, cat)
    walkers, steps = (100, 100) if Q else (2000, 1000)
    add(f"random walk seed=42 {walkers}x{steps}", P.random_walk,
        lambda w=walkers, s=steps: (42, w, s), 1e-12, cat)
    steps = 100 if Q else 1000
    add(f"Lorenz RK4 (3-vectors) x{steps}", P.lorenz_rk4,
        lambda s=steps: (np.array([1.0, 1.0, 1.0]), 10.0, 28.0, 8.0 / 3.0, 0.005, s), 1e-6, cat)
    h, wd, it = (40, 60, 20) if Q else (200, 300, 50)
    cre, cim = np.linspace(-2.0, 0.6, wd), np.linspace(-1.2, 1.2, h)
    add(f"Mandelbrot boolean mask {h}x{wd} x{it}", P.mandelbrot_mask,
        lambda a=cre, b=cim, it=it: (a, b, it), 0, cat, max_int_diff=(1e-3, 1))
    for n in ((32,) if Q else (64, 512)):
        add(f"Gaussian window on mgrid {n}x{n}", P.gaussian_window,
            lambda n=n: (n, n * 0.5), 1e-12, cat)
    for n, it in (((32, 10),) if Q else ((64, 20), (256, 50))):
        add(f"Mandelbrot compacting mgrid {n}x{n} x{it}", P.mandelbrot_compact,
            lambda n=n, it=it: (-2.0, 0.5, -1.25, 1.25, n, n, it), 1e-9, cat)

    # ------------------- programs of bench_styles.py that were below NumPy
    # (session 25): a scatter-add, a column softmax, masked attention (exp
    # of -inf), group-by with np.bincount, sorting, shifted-sum convolution
    cat = "new styles"
    for nnz in ((1000,) if Q else (1000, 1000000)):
        nn = nnz // 10
        r_, c_ = rng.integers(0, nn, nnz), rng.integers(0, nn, nnz)
        d_, x_ = rng.standard_normal(nnz), rng.standard_normal(nn)
        add(f"COO mat-vec np.add.at nnz={nnz}", PS.scatter_add_at,
            lambda r=r_, c=c_, d=d_, x=x_, nn=nn: (r, c, d, x, nn), 1e-9, cat)
    r, c = (100, 100) if Q else (1000, 1000)
    x = rng.standard_normal((r, c)) * 3
    add(f"log-softmax axis 0 {r}x{c}", PS.log_softmax_axis0, lambda x=x: (x,), 1e-9, cat)
    q, k = rng.standard_normal((16, 8)), rng.standard_normal((16, 8))
    mask = np.tril(np.ones((16, 16), dtype=bool))
    add("masked attention weights 16x8", PS.attention_weights,
        lambda q=q, k=k, m=mask: (q, k, m), 1e-9, cat)
    keys, vals = rng.integers(0, 50, 1000), rng.standard_normal(1000)
    add("group-by bincount/maximum.at n=1000", PS.groupby_stats,
        lambda k=keys, v=vals: (k, v, 50), 1e-9, cat)
    x, edges = rng.standard_normal(1000), np.linspace(-3, 3, 25)
    add("ranks/searchsorted/unique n=1000", PS.rank_and_bins, lambda x=x, e=edges: (x, e), 1e-12, cat)
    side = 64 if Q else 1000
    img, kern = rng.random((side, side)), rng.random((5, 5))
    add(f"conv2d shifted sums 5x5 {side}x{side}", PS.conv2d_shifted,
        lambda a=img, k=kern: (a, k), 1e-9, cat)
    # ------------------- programs the lead found slow in session 29 (a row
    # callback, a lambda argument, slice-assignment sieve, power iteration)
    img = rng.random((50, 200))
    add("apply_along_axis row blur 50x200", PS.blur_rows_apply, lambda a=img: (a,), 1e-12, cat)
    gauss = lambda t: np.exp(-t * t) * np.cos(3 * t)  # noqa: E731
    add("trapezoid of a lambda n=10000", PS.integrate_trapezoid,
        lambda f=gauss: (f, -4.0, 4.0, 10000), 1e-12, cat)
    add("sieve by slice assignment n=100000", PS.sieve_slices, lambda: (100000,), 0, cat)
    M = rng.random((100, 100))
    add("power iteration 100x100 x50", PS.power_iteration, lambda A=M + M.T: (A, 50), 1e-9, cat)
    return cases


# ========================================================== checking
def _describe(x):
    if isinstance(x, np.ndarray):
        return f"ndarray {x.dtype}{x.shape}"
    return type(x).__name__


def compare(ref, got, rtol, strict, max_int_diff=None, where="result"):
    """None when got matches ref, else a one-line reason.

    strict: also dtypes, shapes and the returned types (numdyn's promise);
    otherwise (numba) values and shapes only.
    """
    if isinstance(ref, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(ref):
            return f"{where}: expected {type(ref).__name__} of {len(ref)}, got {_describe(got)}"
        if strict and type(got) is not type(ref):
            return f"{where}: expected {type(ref).__name__}, got {type(got).__name__}"
        for i, (r, g) in enumerate(zip(ref, got)):
            e = compare(r, g, rtol, strict, max_int_diff, f"{where}[{i}]")
            if e:
                return e
        return None
    if strict:
        if isinstance(ref, np.ndarray) != isinstance(got, np.ndarray) or (
                not isinstance(ref, np.ndarray) and type(ref) is not type(got)):
            return f"{where}: expected {_describe(ref)}, got {_describe(got)}"
    r, g = np.asarray(ref), np.asarray(got)
    if r.shape != g.shape:
        return f"{where}: shape {g.shape}, NumPy {r.shape}"
    if strict and r.dtype != g.dtype:
        return f"{where}: dtype {g.dtype}, NumPy {r.dtype}"
    if r.dtype.kind in "biuSUO" or rtol == 0:
        if r.dtype.kind in "fc" or g.dtype.kind in "fc":
            ok = np.array_equal(r, g, equal_nan=True)
            bad = None if ok else np.flatnonzero(~((r == g) | (np.isnan(r) & np.isnan(g))))
        else:
            bad = np.flatnonzero(r.ravel() != g.ravel()) if r.size else np.array([], int)
        if bad is not None and bad.size:
            if max_int_diff is not None and r.dtype.kind in "iu":
                frac, amount = max_int_diff
                diff = np.abs(r.ravel().astype(np.int64) - g.ravel().astype(np.int64))
                if bad.size <= frac * r.size and diff.max() <= amount:
                    return None
            i = int(bad[0])
            return (f"{where}: {bad.size} of {r.size} elements differ, first at flat index {i}: "
                    f"{g.ravel()[i]!r} vs NumPy {r.ravel()[i]!r}")
        return None
    finite = np.abs(r[np.isfinite(r)]) if r.size else np.array([0.0])
    scale = float(finite.max()) if finite.size else 0.0
    try:
        np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * max(scale, 1e-300), equal_nan=True)
    except AssertionError as e:
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        detail = "; ".join(l for l in lines if l.startswith(("Mismatched", "Max abs", "Max rel")))
        return f"{where}: values differ (rtol={rtol:g}) {detail}"
    return None


# ============================================================ timeouts
class _Timeout(BaseException):
    pass


class deadline:
    """Raise _Timeout in the main thread after `seconds` (SIGALRM)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def _fire(self, signum, frame):
        raise _Timeout(f"still running after {self.seconds:.0f} s")

    def __enter__(self):
        self.old = signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)
        return False


def _short_exc(e, limit=240):
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FUNC = re.compile(r"Function\(<(?:built-in )?(?:function|method) (\w+)(?: of [^>]*)?(?: at 0x[0-9a-f]+)?>\)")


def _numba_reason(e):
    """numba's error, shortened to its informative line (its typing errors are long)."""
    lines = [_FUNC.sub(r"\1", _ANSI.sub("", l)).strip() for l in str(e).splitlines()]
    lines = [l for l in lines if l]
    keys = ("No implementation of function", "Unknown attribute", "Use of unsupported",
            "Cannot", "cannot", "Invalid use", "not supported", "Unsupported", "No definition",
            "Untyped global", "unsupported", "can't", "Cannot unify")
    pick = next((l for l in lines if any(k in l for k in keys)), None)
    if pick is None:
        skip = ("Failed in nopython mode pipeline", "Failed in", "During:", "File ", "- Resolution",
                "Resolution failure", "^", "- Of which")
        pick = next((l for l in lines if not l.startswith(skip)), "")
    if pick is not None and "No implementation" in pick:
        sig = next((l for l in lines[lines.index(pick):] if l.startswith(">>>")), None)
        if sig:
            pick = pick.replace(" found for signature:", "") + " for " + sig[3:].strip()
    pick = pick.replace(" found for signature:", "").rstrip(":")
    return f"{type(e).__name__}: {pick}"[:150] if pick else type(e).__name__


# ============================================================ one row
def _reset_numdyn():
    numdyn.reset()
    # the disk cache is only emptied when it is ours (never a user's cache)
    if CACHE_DIR is not None and os.path.realpath(numdyn.utils.cache_dir()) == os.path.realpath(CACHE_DIR):
        numdyn.utils.clear_cache()
        return True
    return False


WRONG = []  # (benchmark, detail) of every numdyn wrong answer, printed at the end


def measure(case, quick=False, budget=None, log=print):
    """Check numdyn and numba against NumPy on case, then time them. -> row dict."""
    budget = budget if budget is not None else (1.0 if quick else 4.0)
    fn, rtol = case.fn, case.rtol
    args = case.make_args()
    row = {"benchmark": case.name}
    for c in COLUMNS:
        row[c] = None
    notes = []
    probes = {}
    fns = {"numpy": fn}

    # ---- NumPy: the reference (on a deep copy; its final argument state too)
    a_ref = copy.deepcopy(args)
    t0 = time.perf_counter()
    ref = fn(*a_ref)
    probes["numpy"] = time.perf_counter() - t0
    ref = copy.deepcopy(ref)

    def check(got, a_got, strict, who):
        e = compare(ref, got, rtol, strict, case.max_int_diff)
        if e is None:
            e = compare(tuple(a_ref), tuple(a_got), rtol, strict, None, "arguments after the call")
        return e

    # ---- numdyn: first call on a cold cache, then two more checked calls
    limit_first = 60 if quick else 240
    limit_warm = 30 if quick else 120
    try:
        cold = _reset_numdyn()
        c0 = dict(numdyn.utils.counters)
        a = copy.deepcopy(args)
        with deadline(limit_first):
            t0 = time.perf_counter()
            nd = numdyn.compile(fn)
            got = nd(*a)
            t_first = time.perf_counter() - t0
        c1 = dict(numdyn.utils.counters)
        # kernels that compile in the background (numdyn.config.
        # background_compile) are built before the warm calls are timed
        if hasattr(numdyn.utils, "wait_compiles"):
            numdyn.utils.wait_compiles()
        err = check(got, a, True, "numdyn")
        call = 1
        warm_times = []
        while err is None and call < 3:
            call += 1
            a = copy.deepcopy(args)
            with deadline(limit_warm):
                t0 = time.perf_counter()
                got = nd(*a)
                warm_times.append(time.perf_counter() - t0)
            err = check(got, a, True, "numdyn")
        if err is not None:
            msg = f"WRONG ANSWER (numdyn call {call}): {err}"
            notes.append(msg)
            WRONG.append((case.name, msg))
            log(f"\n!!!!!!!! {case.name}: {msg}\n", flush=True)
        else:
            row["numdyn 1st call"] = t_first
            c3 = dict(numdyn.utils.counters)  # background compiles load on calls 2-3
            kc = c3.get("kernels_compiled", 0) - c0.get("kernels_compiled", 0)
            gr = c1.get("graphs", 0) - c0.get("graphs", 0)
            gb = c1.get("graph_breaks", 0) - c0.get("graph_breaks", 0)
            rp = dict(numdyn.utils.counters).get("replays", 0) - c1.get("replays", 0)
            detail = f"1st call: {gr} graphs, {gb} breaks, {kc} kernels compiled"
            if not cold:
                detail += " (disk cache not cleared)"
            if rp:
                detail += f"; warm calls replay"
            notes.append(detail)
            probes["numdyn"] = min(warm_times)
            fns["numdyn"] = nd
    except _Timeout as e:
        notes.append(f"numdyn {e} (call abandoned)")
        log(f"  {case.name}: numdyn {e}", flush=True)
        numdyn.reset()
    except Exception as e:
        msg = f"numdyn raised {_short_exc(e)}"
        notes.append(msg)
        WRONG.append((case.name, msg))
        log(f"\n!!!!!!!! {case.name}: {msg}\n", flush=True)
        if os.environ.get("BENCH_TRACEBACK"):
            traceback.print_exc()

    # ---- numba: a fresh dispatcher per row, same function object
    if numba is None:
        notes.append("numba not installed")
    else:
        try:
            jf = numba.njit(fn)
            a = copy.deepcopy(args)
            with deadline(limit_first):
                t0 = time.perf_counter()
                got = jf(*a)
                t_first = time.perf_counter() - t0
            err = check(got, a, False, "numba")
            if err is None:
                a = copy.deepcopy(args)
                t0 = time.perf_counter()
                got = jf(*a)
                probes["numba"] = time.perf_counter() - t0
                err = check(got, a, False, "numba")
            if err is not None:
                notes.append(f"numba differs: {err}")
            else:
                row["numba 1st call"] = t_first
                fns["numba"] = jf
        except _Timeout as e:
            notes.append(f"numba {e}")
        except Exception as e:
            notes.append(f"numba: {_numba_reason(e)}")

    # ---- timing: interleaved rounds; very slow contenders use their probes
    slow_limit = 2.0 if quick else 8.0
    timed = {k: f for k, f in fns.items() if probes.get(k, 0) <= slow_limit}
    for k in fns:
        if k not in timed:
            row[k] = probes[k]
            notes.append(f"{k}: {format_time(probes[k])} per call was measured on 1 call, not timed in rounds")
    per_round = sum(max(probes.get(k, 0.0), 0.01) for k in timed)
    rounds = int(max(3, min(5 if quick else 15, budget / per_round)))
    if timed:
        # warm-up: enough calls for the speed floor to measure its paths
        # and settle (runtime_floor.c: 2 untimed + up to 3 x 9 measured calls)
        t = timeit_interleaved(timed, args, repeat=rounds, warmup=FLOOR_SETTLE_CALLS,
                               min_time=0.05 if quick else 0.2)
        row.update(t)
    nd = fns.get("numdyn")
    floor = nd._floor_info_for(*args) if nd is not None and hasattr(nd, "_floor_info_for") else None
    loops = [i for i in (nd._loop_info() if hasattr(nd, "_loop_info") else []) if i.get("captured")]
    # captured loops that Python ran (a type C does not compute in): the
    # floor's "untraced" path is then the original function's own work, and
    # its two estimates differ by noise alone
    fell = [i["last_fallback"] for i in loops if i.get("last_fallback")]
    if loops and len(fell) == len(loops):
        notes.append(f"its captured loops ran by Python ({fell[0]})")
        loops = []
    if floor and floor["path"] == "numpy" and loops:
        # its NumPy path is the function untraced with its captured loops as C
        row["floor"] = "untraced"
        notes.append(f"speed floor ran it untraced: NumPy calls as they are, its captured loops as C "
                     f"(numdyn's traced warm call: {format_time(floor['numdyn_s'])})")
    elif floor and floor["path"] == "original" and not loops:
        row["floor"] = "numpy"
        notes.append(f"speed floor ran it as plain NumPy, the original function (numdyn's own warm "
                     f"call: {format_time(floor['numdyn_s'])})")
    elif floor and floor["path"] == "original":
        # its captured loops' C lost to NumPy too: the original function ran
        row["floor"] = "numpy"
        notes.append(f"speed floor ran it as plain NumPy, the original function (numdyn's own warm "
                     f"call: {format_time(floor['numdyn_s'])}, with its captured loops as C: "
                     f"{format_time(floor['numpy_s'])})")
    elif floor and floor["path"] == "numpy":
        # the speed floor (numdyn.config.floor) ran this program as plain NumPy:
        # say so, with numdyn's own warm cost as the floor measured it
        row["floor"] = "numpy"
        notes.append(f"speed floor ran it as plain NumPy (numdyn's own warm call: "
                     f"{format_time(floor['numdyn_s'])})")
    row["note"] = "; ".join(notes)
    return row


# ============================================================ reporting
def _ratio(base, t):
    if base is None or t is None or t <= 0:
        return None
    return base / t


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary_lines(rows):
    nd = [_ratio(r.get("numpy"), r.get("numdyn")) for r in rows]
    nb = [_ratio(r.get("numpy"), r.get("numba")) for r in rows]
    both = [(a, b) for a, b in zip(nd, nb) if a is not None and b is not None]
    out = []
    g = geomean(nd)
    n_nd = sum(x is not None for x in nd)
    out.append(f"geomean numpy/numdyn (warm): "
               f"{'-' if g is None else f'{g:.2f}x'} over {n_nd} of {len(rows)} programs")
    g = geomean(nb)
    out.append(f"geomean numpy/numba  (warm): "
               f"{'-' if g is None else f'{g:.2f}x'} over {sum(x is not None for x in nb)} "
               f"of {len(rows)} programs")
    if both:
        out.append(f"on the {len(both)} programs both ran: numpy/numdyn "
                   f"{geomean([a for a, _ in both]):.2f}x, numpy/numba {geomean([b for _, b in both]):.2f}x")
    firsts = [(r["numdyn 1st call"], r.get("numpy")) for r in rows if r.get("numdyn 1st call")]
    if firsts:
        out.append(f"numdyn first call: median {format_time(statistics.median(f for f, _ in firsts))}, "
                   f"max {format_time(max(f for f, _ in firsts))}")
    slower = sorted(((x, r["benchmark"]) for x, r in zip(nd, rows) if x is not None and x < 1.0))
    if slower:
        out.append("numdyn slower than NumPy (warm) on: "
                   + ", ".join(f"{name} ({x:.2f}x)" for x, name in slower))
    floored = [r["benchmark"] for r in rows if r.get("floor") == "numpy"]
    if floored:
        out.append(f"the speed floor ran {len(floored)} of {len(rows)} programs as plain NumPy: "
                   + ", ".join(floored))
    untraced = [r["benchmark"] for r in rows if r.get("floor") == "untraced"]
    if untraced:
        out.append(f"the speed floor ran {len(untraced)} of {len(rows)} programs untraced with their "
                   f"captured loops as C")
    wrong = [r["benchmark"] for r in rows if "WRONG ANSWER" in (r.get("note") or "")]
    raised = [r["benchmark"] for r in rows if "numdyn raised" in (r.get("note") or "")]
    if wrong:
        out.append("WRONG ANSWERS from numdyn: " + ", ".join(wrong))
    if raised:
        out.append("numdyn raised on: " + ", ".join(raised))
    return out


def table(rows):
    """The markdown table: times, ratios numpy/x, notes."""
    header = ["benchmark", "numpy", "numdyn", "numpy/numdyn", "numdyn 1st call",
              "numba", "numpy/numba", "numba 1st call", "note"]
    lines = ["| " + " | ".join(header) + " |",
             "|---|" + "---:|" * (len(header) - 2) + "---|"]

    def ft(t):
        return "-" if t is None else format_time(t)

    def fr(x):
        return "-" if x is None else f"{x:.2f}x"

    for r in rows:
        base = r.get("numpy")
        cells = [r["benchmark"], ft(base), ft(r.get("numdyn")), fr(_ratio(base, r.get("numdyn"))),
                 ft(r.get("numdyn 1st call")), ft(r.get("numba")), fr(_ratio(base, r.get("numba"))),
                 ft(r.get("numba 1st call")), (r.get("note") or "").replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_WARMED = []


def _warm_up():
    """One-time process start-up of numdyn (extension init, OpenMP load, first
    C compile) and of numba (LLVM init), so that the first row's "1st call"
    columns measure that program and not the process's first compile."""
    if _WARMED:
        return
    _WARMED.append(True)

    def tiny(a, b):
        c = a.copy()
        for i in range(1, a.shape[0] - 1):
            c[i, 1:-1] = 0.5 * (a[i - 1, 1:-1] + a[i + 1, :-2]) + np.dot(a[i, :3], b[:3])
        return c, np.sqrt(c * 2.0 + 1.0).sum()

    a, b = np.ones((6, 6)), np.arange(6.0)
    numdyn.compile(tiny)(a, b)
    _reset_numdyn()
    if numba is not None:
        numba.njit(tiny)(a, b)


def run_cases(cases, quick=False, only=None, log=print):
    _warm_up()
    rows = []
    for case in cases:
        if only and only.lower() not in case.name.lower() and only != case.fn.__name__:
            continue
        t0 = time.perf_counter()
        row = measure(case, quick=quick, log=log)
        r = _ratio(row.get("numpy"), row.get("numdyn"))
        log(f"  {case.name:<48} numpy {format_time(row['numpy']):>9}  numdyn "
            f"{format_time(row['numdyn']):>9} ({'-' if r is None else f'{r:.2f}x'})  1st "
            f"{format_time(row['numdyn 1st call']):>9}  numba {format_time(row['numba']):>9}"
            f"  [{time.perf_counter() - t0:.0f} s]", flush=True)
        rows.append(row)
    return rows


def run(quick=False, only=None):
    return run_cases(program_cases(quick), quick=quick, only=only)


def main(cases_fn, title, argv=None):
    ap = argparse.ArgumentParser(description=title)
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke run)")
    ap.add_argument("--only", help="run the rows whose name contains NAME (or function NAME)")
    ap.add_argument("--output", help="also write the markdown report to this file")
    opts = ap.parse_args(argv)
    t0 = time.perf_counter()
    head = machine_description()
    print(head, flush=True)
    print(f"NUMDYN_CACHE_DIR={os.environ.get('NUMDYN_CACHE_DIR')} (fresh, private)\n", flush=True)
    rows = run_cases(cases_fn(opts.quick), quick=opts.quick, only=opts.only)
    took = time.perf_counter() - t0
    text = [f"### {title}{' (--quick)' if opts.quick else ''}", "", "```", head, "```", "",
            table(rows), ""]
    text += [f"- {line}" for line in summary_lines(rows)]
    text += [f"- total run time {took:.0f} s", ""]
    md = "\n".join(text)
    print()
    print(md)
    if WRONG:
        print("\n" + "!" * 72)
        print("numdyn WRONG ANSWERS / EXCEPTIONS (bug reports):")
        for name, msg in WRONG:
            print(f"  {name}: {msg}")
        print("!" * 72)
    if opts.output:
        with open(opts.output, "w") as f:
            f.write(md)
        print(f"markdown written to {opts.output}")
    return rows


if __name__ == "__main__":
    main(program_cases, "Real programs: NumPy vs numdyn vs numba (bench/bench_programs.py)")
