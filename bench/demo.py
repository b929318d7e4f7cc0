"""numdyn demo: a few ordinary NumPy functions, run by NumPy and compiled by
numdyn, timed side by side, then numdyn.explain on a function with a graph
break.  `make demo` runs it.

Every numdyn result is first checked against NumPy's; a function numdyn
cannot run yet is reported as such (with the error), never timed, and a
wrong result is reported as WRONG (and the demo exits with status 1).
"""
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import toy_example  # noqa: E402  (the explain example, shared with the tests)
from runner import format_time, machine_description, report, timeit_interleaved  # noqa: E402


# ---- the functions: plain NumPy, nothing numdyn-specific ------------------

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def black_scholes(price, strike, t, rate, vol):
    sqrt_t = np.sqrt(t)
    d1 = (np.log(price / strike) + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t)
    d2 = d1 - vol * sqrt_t
    cdf1 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1 ** 3)))
    cdf2 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2 ** 3)))
    disc = np.exp(-rate * t)
    call = price * cdf1 - strike * disc * cdf2
    put = call - price + strike * disc
    return call, put


def great_circle(lat1, lon1, lat2, lon2):
    dlat, dlon = lat2 - lat1, lon2 - lon1
    a = np.sin(dlat / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2) ** 2
    return 6371.0 * 2 * np.arcsin(np.sqrt(a))


def small_chain(a, b):
    # ten ops on 100 elements: measures per-call overhead, not throughput
    c = a * b + 1.0
    c = np.sqrt(np.abs(c)) - a
    c = c * c + b / 3.0
    return np.maximum(c, 0.0) - np.minimum(a, b)


def cases(rng):
    f32 = np.float32
    n = 1_000_000
    return [
        ("softmax f32 (64, 64, 256), last axis", softmax,
         (rng.standard_normal((64, 64, 256)).astype(f32),)),
        ("tanh-GELU f32 4e6", gelu, (rng.standard_normal(4_000_000).astype(f32),)),
        ("Black-Scholes f64 1e6 options", black_scholes,
         (rng.uniform(10, 50, n), rng.uniform(10, 50, n), rng.uniform(0.1, 2, n), 0.02, 0.3)),
        ("great-circle distance f64 1e6", great_circle,
         tuple(np.radians(rng.uniform(-80, 80, n)) for _ in range(4))),
        ("10 ops on 100 elements (call overhead)", small_chain,
         (rng.standard_normal(100), rng.standard_normal(100))),
    ]


# ---- helpers ----------------------------------------------------------------

def _error_line(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:110]


def _tolerance(dt):
    return {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5}.get(np.dtype(dt), 1e-9)


def _mismatch(got, want):
    """None when got is NumPy's result (within float tolerance), else why not."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"returned {type(got).__name__}, NumPy returns a {len(want)}-tuple"
        for i, (g, w) in enumerate(zip(got, want)):
            why = _mismatch(g, w)
            if why:
                return f"[{i}]: {why}"
        return None
    if type(got) is not type(want):
        return f"returned {type(got).__name__}, NumPy returns {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return f"returned {g.dtype}{list(g.shape)}, NumPy returns {w.dtype}{list(w.shape)}"
    # Absolute room in proportion to the result's magnitude: e.g. GELU's
    # 1 + tanh(x) near -1 cancels, leaving a few ulp of |x|, not of the result.
    tol = _tolerance(w.dtype)
    finite = np.abs(w[np.isfinite(w)]) if w.size else np.zeros(1)
    scale = float(finite.max()) if finite.size else 1.0
    if not np.allclose(g, w, rtol=tol, atol=tol * max(scale, 1e-30), equal_nan=True):
        err = np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))
        return f"values differ from NumPy's (max abs error {err:.3g})"
    return None


def run_case(numdyn, name, fn, args, quick):
    row = {"benchmark": name, "numpy": None, "numdyn": None, "note": ""}
    want = fn(*args)
    try:
        compiled = numdyn.compile(fn)
        t0 = time.perf_counter()
        got = compiled(*args)
        first = time.perf_counter() - t0
    except Exception as e:
        row["note"] = "numdyn cannot run it yet: " + _error_line(e)
        row["numpy"] = timeit_interleaved({"numpy": lambda: fn(*args)},
                                          repeat=3 if quick else 7, min_time=0.05)["numpy"]
        return row, True
    why = _mismatch(got, want)
    if why:
        row["note"] = "WRONG RESULT: " + why
        return row, False
    t = timeit_interleaved({"numpy": lambda: fn(*args), "numdyn": lambda: compiled(*args)},
                           repeat=3 if quick else 9, warmup=1, min_time=0.05 if quick else 0.2)
    row.update(t)
    row["note"] = f"first call (trace + compile) {format_time(first)}"
    return row, True


def main():
    quick = "--quick" in sys.argv
    print("numdyn demo: plain NumPy functions vs the same functions under @numdyn.compile")
    print(machine_description())
    print()
    try:
        import numdyn
    except Exception as e:
        print(f"numdyn cannot be imported: {_error_line(e)}")
        print("Build it first: `make demo` does, or `pip install .`")
        return 1

    rng = np.random.default_rng(0)
    rows, all_right = [], True
    for name, fn, args in cases(rng):
        print(f"... {name}", flush=True)
        try:
            row, right = run_case(numdyn, name, fn, args, quick)
        except Exception as e:  # NumPy itself or the timing failed: a demo bug
            traceback.print_exc()
            row, right = {"benchmark": name, "note": "demo error: " + _error_line(e)}, True
        rows.append(row)
        all_right &= right
    print()
    report(rows, describe_machine=False)
    print("ratio = NumPy time / numdyn time (> 1: numdyn is faster); median of interleaved runs")

    print("\nnumdyn.explain(toy_example)(a, b):")
    a, b = np.linspace(-1, 1, 10), np.linspace(-1, 0.5, 10)
    try:
        out = numdyn.explain(toy_example)(a, b)
        print(out)
    except Exception as e:
        print(f"  explain is not available yet: {_error_line(e)}")

    if not all_right:
        print("\nnumdyn gave a WRONG RESULT above: that is a bug, please report it.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
