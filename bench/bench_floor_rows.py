"""The programs the speed floor runs as NumPy (issue 13): NumPy vs numdyn's own
path (floor off) vs numdyn's default (floor on), interleaved in one process.

    python bench/bench_floor_rows.py [--cpu] [--reps N] [NAME ...]

The rows of bench_programs.py where numdyn's own warm call lost to NumPy, so
the floor (numdyn.config.floor) ran the function as plain NumPy. Columns:
median per call of NumPy, of the own path (compile(fn, options={"floor":
False})) and of the default compile (after B.FLOOR_SETTLE_CALLS calls: the floor has decided),
each ratio numpy/that, the floor's choice, and the own path's flushes and
kernel runs per call.

--loops adds issue 13's per-iteration cost of a loop the tracer runs (it
calls a helper, so it is not captured) with an element read (a flush) and an
element write each iteration, at growing trip counts: the cost an iteration
must not grow with the trip count; and the first call of a long lazy update
(point 2/3: one graph of 2n nodes, thousands of identical kernels).

--capture (alone: it turns replay off for the process, NUMDYN_REPLAY=0)
splits the cost of a traced loop of small statements, seam carving's DP
rows, loop capture off: per row, NumPy, the own path, the tracing alone (the
same loop returning nothing: no flush), and so the return flush + run; and
the backtrack that reads one element a row (a flush a row).

--ragged adds a function called on segments of many lengths (ragged data:
one call per row, 5..400 elements): NumPy vs numdyn's default, and how many
calls the floor ran as NumPy (its signatures count sizes by class, so the
lengths share a decision instead of each starting one).

--cpu times with time.thread_time() instead of wall time: on a machine other
work loads, CPU time of the calling thread is what stays comparable between
runs (run it with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 so that all work
is on that thread).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_programs as B  # noqa: E402  (sets NUMDYN_CACHE_DIR before numdyn loads)
import numdyn  # noqa: E402
import numpy as np  # noqa: E402

ROWS = ["LU partial", "Jacobi until", "seam carving", "logistic regression", "RNN forward",
        "random walk", "Lorenz", "Mandelbrot boolean",
        "Mandelbrot compacting", "Gaussian window"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="thread CPU time instead of wall time")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--loops", action="store_true", help="also the traced-loop rows (issue 13 point 1-3)")
    ap.add_argument("--capture", action="store_true", help="also the per-row cost of a traced loop")
    ap.add_argument("--ragged", action="store_true", help="also a function called on segments of many lengths")
    ap.add_argument("names", nargs="*", help="rows whose name contains one of these")
    opts = ap.parse_args(argv)
    clock = time.thread_time if opts.cpu else time.perf_counter
    if opts.capture:
        os.environ["NUMDYN_REPLAY"] = "0"   # read at the first compiled call
    print(B.machine_description())
    print(f"clock: {'thread CPU time' if opts.cpu else 'wall'}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    if opts.capture:
        capture_cost(clock, opts.reps)
        return
    if opts.loops:
        traced_loops(clock, opts.reps)
    if opts.ragged:
        ragged(clock, opts.reps)
    print("| program | NumPy | own path | default (floor) | flushes / kernels a call |")
    print("|---|---:|---:|---:|---:|")
    cases = B.program_cases(False)
    for key in opts.names or ROWS:
        for case in [c for c in cases if key.lower() in c.name.lower()]:
            args = case.make_args()
            want = case.fn(*args)
            own = numdyn.compile(case.fn, options={"floor": False})
            flo = numdyn.compile(case.fn)
            for _ in range(B.FLOOR_SETTLE_CALLS):
                for f in (own, flo):
                    e = B.compare(want, f(*args), case.rtol, True, case.max_int_diff)
                    if e:
                        raise SystemExit(f"{case.name}: numdyn differs from NumPy: {e}")
            numdyn.utils.wait_compiles()  # background compiles are not timed
            own(*args)
            c0 = dict(numdyn.utils.counters)
            own(*args)
            c1 = dict(numdyn.utils.counters)
            tn, to, tf = [], [], []
            for _ in range(opts.reps):
                t = clock(); case.fn(*args); tn.append(clock() - t)
                t = clock(); own(*args); to.append(clock() - t)
                t = clock(); flo(*args); tf.append(clock() - t)
            mn, mo, mf = (statistics.median(x) for x in (tn, to, tf))
            info = flo._floor_info_for(*args) or {}
            print(f"| {case.name} | {B.format_time(mn)} | {B.format_time(mo)} ({mn / mo:.2f}x) | "
                  f"{B.format_time(mf)} ({mn / mf:.2f}x, {info.get('path')}) | "
                  f"{c1['flushes'] - c0['flushes']} / {c1['kernel_runs'] - c0['kernel_runs']} |",
                  flush=True)


def _step(v, a):
    return v * a + 0.1


def _branchy(x):
    for i in range(1, len(x)):
        v = _step(x[i - 1], 0.5)   # a helper call: the loop is traced, not captured
        if v > 0.3:                # an element read: a flush
            x[i] = v + x[i]        # an element write to the argument
    return x


def _lazy(x, n):
    for _ in range(n):
        x = _step(x, 0.999)        # lazy: one graph of 2n nodes
    return x


def _dp_rows(M, n):
    M = M.copy()
    for i in range(1, n):
        left = np.concatenate((np.array([np.inf]), M[i - 1, :-1]))
        right = np.concatenate((M[i - 1, 1:], np.array([np.inf])))
        M[i] += np.minimum(np.minimum(left, M[i - 1]), right)
    return M


def _dp_rows_traced_only(M, n):   # _dp_rows returning nothing: no flush
    M = M.copy()
    for i in range(1, n):
        left = np.concatenate((np.array([np.inf]), M[i - 1, :-1]))
        right = np.concatenate((M[i - 1, 1:], np.array([np.inf])))
        M[i] += np.minimum(np.minimum(left, M[i - 1]), right)
    return None


def _backtrack(M):
    h = M.shape[0]
    seam = np.zeros(h, dtype=np.int64)
    seam[h - 1] = np.argmin(M[h - 1])
    for i in range(h - 2, -1, -1):
        j = seam[i + 1]           # an element read: a flush a row
        lo = max(j - 1, 0)
        seam[i] = lo + np.argmin(M[i, lo:j + 2])
    return seam


def capture_cost(clock, reps):
    numdyn.config.loop_capture = False   # the loops run traced, statement by statement
    n = 300
    M = np.random.default_rng(0).random((n, 400))
    own = numdyn.compile(_dp_rows, options={"floor": False})
    tro = numdyn.compile(_dp_rows_traced_only, options={"floor": False})
    back = numdyn.compile(_backtrack, options={"floor": False})
    Mf = _dp_rows(M, n)
    if not np.array_equal(own(M, n), Mf) or not np.array_equal(back(Mf), _backtrack(Mf)):
        raise SystemExit("capture cost: numdyn differs from NumPy")
    for _ in range(3):
        own(M, n), tro(M, n), back(Mf)
    numdyn.utils.wait_compiles()
    tn, to, tt, bn, bo = [], [], [], [], []
    for _ in range(reps):
        t = clock(); _dp_rows(M, n); tn.append(clock() - t)
        t = clock(); own(M, n); to.append(clock() - t)
        t = clock(); tro(M, n); tt.append(clock() - t)
        t = clock(); _backtrack(Mf); bn.append(clock() - t)
        t = clock(); back(Mf); bo.append(clock() - t)
    m = statistics.median
    print("| traced loop, per row (300 rows of 400) | NumPy | own path | tracing alone | flush + run |")
    print("|---|---:|---:|---:|---:|")
    print(f"| DP rows (10 statements, one return flush) | {m(tn) / n * 1e6:.2f} us | {m(to) / n * 1e6:.2f} us | "
          f"{m(tt) / n * 1e6:.2f} us | {(m(to) - m(tt)) / n * 1e6:.2f} us |")
    print(f"| backtrack (element read: a flush a row) | {m(bn) / n * 1e6:.2f} us | {m(bo) / n * 1e6:.2f} us | | |")
    print()


def _centered(y):
    return y - y.mean()


def ragged_steps(x, n):
    # a Python helper per step and a float() of each sum: a graph break a step
    acc = 0.0
    for i in range(n):
        acc += float(_centered(x * (i + 1)).sum())
    return acc


def ragged(clock, reps):
    rng = np.random.default_rng(0)
    segs = [rng.standard_normal(int(n)) for n in rng.integers(5, 400, 500)]
    cf = numdyn.compile(ragged_steps)
    for s in segs:
        cf(s, 5)
    c0 = numdyn.utils.counters["floor_numpy_calls"]
    tn, tc = [], []
    for _ in range(reps):
        t0 = clock()
        for s in segs:
            ragged_steps(s, 5)
        t1 = clock()
        for s in segs:
            cf(s, 5)
        t2 = clock()
        tn.append((t1 - t0) / len(segs))
        tc.append((t2 - t1) / len(segs))
    share = (numdyn.utils.counters["floor_numpy_calls"] - c0) / (reps * len(segs))
    n, c = statistics.median(tn), statistics.median(tc)
    print(f"ragged segments (500 calls, 5..400 elements, 5 breaks a call): NumPy {n * 1e6:.1f} us, "
          f"numdyn {c * 1e6:.1f} us a call ({n / c:.2f}x NumPy); {share:.1%} of the calls ran as "
          f"NumPy, {len(cf._floor_info())} floor signatures\n")


def traced_loops(clock, reps):
    import numpy as np
    import resource
    print("| traced loop (helper call, element read + write) | NumPy per iteration | "
          "own path per iteration | ratio | flushes a call |")
    print("|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for n in (1000, 4000, 16000):
        x0 = rng.standard_normal(n)
        own = numdyn.compile(_branchy, options={"floor": False})
        want = _branchy(x0.copy())
        for _ in range(2):
            b = x0.copy()
            own(b)
            if not np.array_equal(b, want):
                raise SystemExit("traced loop: numdyn differs from NumPy")
        numdyn.utils.wait_compiles()
        f0 = numdyn.utils.counters["flushes"]
        own(x0.copy())
        nfl = numdyn.utils.counters["flushes"] - f0
        tn, to = [], []
        for _ in range(max(3, reps // 3)):
            a, b = x0.copy(), x0.copy()
            t = clock(); _branchy(a); tn.append(clock() - t)
            t = clock(); own(b); to.append(clock() - t)
        mn, mo = statistics.median(tn), statistics.median(to)
        print(f"| n={n} | {mn / n * 1e6:.2f} us | {mo / n * 1e6:.2f} us | {mn / mo:.2f}x | {nfl} |",
              flush=True)
    print()
    print("| lazy update x = x * a + b, 16 elements | NumPy | own path first call | "
          "own path warm | peak RSS growth | kernel texts made / kernels |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in (10000, 100000):
        x0 = np.linspace(-1.0, 1.0, 16)
        t = clock(); want = _lazy(x0, n); tnp = clock() - t
        numdyn.reset()
        numdyn.utils.clear_cache()
        saved = numdyn.config.compile_budget
        numdyn.config.compile_budget = float("inf")
        own = numdyn.compile(_lazy, options={"floor": False})
        C = numdyn.utils.counters
        c0 = dict(C)
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = clock(); got = own(x0, n); tfirst = clock() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        numdyn.config.compile_budget = saved
        if not np.allclose(got, want, rtol=1e-12, atol=0):
            raise SystemExit("lazy update: numdyn differs from NumPy")
        texts = C.get("kernel_texts", 0) - c0.get("kernel_texts", 0)
        kern = C["kernel_runs"] - c0["kernel_runs"]
        own(x0, n)
        tw = []
        for _ in range(3):
            t = clock(); own(x0, n); tw.append(clock() - t)
        print(f"| n={n} | {B.format_time(tnp)} | {B.format_time(tfirst)} | "
              f"{B.format_time(statistics.median(tw))} | {(r1 - r0) // 1024} MB | "
              f"{texts} / {kern} |", flush=True)
    print()


if __name__ == "__main__":
    main()
