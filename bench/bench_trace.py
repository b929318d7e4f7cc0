"""What tracing one op costs, next to NumPy's own small-array call.

A function of N chained adds on 8-element float64 arrays

    def f(a, b):
        x = a + b
        x = x + b
        ...            # N adds
        return x

is timed for two values of N; the slope (t(N2) - t(N1)) / (N2 - N1) is the
cost of one op with the fixed costs (call, argument wrapping, flush, result)
taken out. Compared with NumPy running the same function (its per-op cost:
one np.add on 8 elements, about 0.5-1 us) and with a bare np.add call.

Rows (seconds per op; "ratio" = numpy / numdyn, > 1 means cheaper than NumPy):
- "trace only": the compiled function traces N adds and returns None, so
  nothing is computed -- the pure capture cost per op (the target: <= ~1 us);
- "trace + eager run": returns x with backend="eager": capture plus running
  each node with NumPy at the flush;
- "native": returns x with backend="native" (after the first call compiled
  the kernel: capture + one fused kernel, or a replay if numdyn skips
  tracing for deterministic functions -- see numdyn.utils.counters).
The trace-only and eager functions call a plain Python helper, so that
numdyn cannot replay them without running Python: every call traces.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

N1, N2 = 16, 256


def _touch():
    """A plain Python call in the traced function (see the module doc)."""
    return None


def _chain(n, returns, touch):
    lines = ["def f(a, b):"]
    if touch:
        lines.append("    _touch()")
    lines.append("    x = a + b")
    lines += ["    x = x + b"] * (n - 1)
    lines.append("    return x" if returns else "    return None")
    ns = {"np": np, "_touch": _touch}
    exec(compile("\n".join(lines) + "\n", f"<chain{n}>", "exec"), ns)
    return ns["f"]


def _slope(times, n1=N1, n2=N2):
    return (times[n2] - times[n1]) / (n2 - n1)


def run(quick=False):
    import numdyn

    a = np.linspace(0.0, 1.0, 8)
    b = np.full(8, 0.5)
    repeat = 5 if quick else 15
    rows = []

    # NumPy: one call, and the per-op slope of the same chain in plain NumPy
    t_add = timeit_interleaved({"np.add": np.add}, (a, b), repeat=repeat)["np.add"]
    np_chain = {n: _chain(n, True, False) for n in (N1, N2)}
    tn = timeit_interleaved({n: f for n, f in np_chain.items()}, (a, b), repeat=repeat)
    np_per_op = _slope(tn)
    rows.append({"benchmark": "np.add on 8 float64 (one call)", "numpy": t_add,
                 "note": "NumPy's own per-call overhead"})
    rows.append({"benchmark": "chained add, per op (NumPy)", "numpy": np_per_op})

    variants = [
        ("trace only (eager, result unused)", False, True, "eager"),
        ("trace + eager run, per op", True, True, "eager"),
        ("native (compiled kernel), per op", True, False, "native"),
    ]
    for label, returns, touch, backend in variants:
        fns = {}
        try:
            for n in (N1, N2):
                f = _chain(n, returns, touch)
                cf = numdyn.compile(f, backend=backend)
                got, want = cf(a, b), f(a, b)
                if returns:
                    np.testing.assert_allclose(got, want, rtol=1e-12)
                else:
                    assert got is None
                fns[n] = cf
        except Exception as e:  # report honestly, never a made-up figure
            rows.append({"benchmark": label, "numpy": np_per_op,
                         "note": f"numdyn failed: {type(e).__name__}: {e}"[:120]})
            continue
        t = timeit_interleaved(fns, (a, b), repeat=repeat)
        per_op = _slope(t)
        rows.append({"benchmark": label, "numpy": np_per_op, "numdyn": per_op,
                     "note": f"fixed cost {max(t[N1] - N1 * per_op, 0) * 1e6:.1f} us/call; "
                             f"target <= ~1 us/op"})
    return rows


if __name__ == "__main__":
    report(run(quick="--quick" in sys.argv), title="tracing cost (us per op)")
