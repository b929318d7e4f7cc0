"""Warm-call overhead: what a call of a tiny compiled function costs beyond
the plain NumPy function, in microseconds per call.

Arrays of 8 elements, so the arithmetic is nothing and the figures are the
machinery: argument guards, replay, tracing when a call cannot be replayed
(a graph break, a global array, a dict of parameters), the end-of-call work
(settling lazy values left in the caller's objects), the speed floor. Per
row, interleaved in one process: plain NumPy, numdyn as configured by
default (the speed floor may pick NumPy), numdyn's own path (floor off),
and torch.compile of the same NumPy function (torch traces NumPy code;
skipped where torch is not installed or cannot compile it).

The module holds a list of 5000 floats and a settings table, as real
modules hold data: a warm call must not pay for walking them.

    python bench/bench_overhead.py [--quick] [--no-torch]
"""
import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import format_time, report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

DATA = [float(i) for i in range(5000)]
SETTINGS = {f"opt{i}": [i, str(i)] for i in range(100)}
K = np.linspace(0.0, 1.0, 8)


def axpy(x, y):
    return x * y + 1.0


def sin_sum(x):
    return np.sin(x).sum()


def scaled(x, a, *, b=0.5):
    return x * a + b


def global_array(x):
    return x * K + 1.0


def branch(x):
    if x.sum() > 0:  # a graph break: traced on every call
        return x * 2.0
    return x - 1.0


def params_dict(p, x):
    return np.tanh(x * p["w"] + p["b"])


def element_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


class Scale:
    def __init__(self):
        self.w = np.full(8, 0.5)

    def __call__(self, x):
        return self.w * x - 1.0


def _cases():
    x = np.linspace(-1.0, 1.0, 8)
    y = np.linspace(0.5, 2.0, 8)
    p = {"w": np.full(8, 0.3), "b": np.full(8, 0.1)}
    return [
        ("x * y + 1", axpy, (x, y)),
        ("np.sin(x).sum()", sin_sum, (x,)),
        ("x * a + b (float args)", scaled, (x, 1.5)),
        ("global array", global_array, (x,)),
        ("graph break (branch)", branch, (x,)),
        ("dict of params", params_dict, (p, x)),
        ("element loop", element_loop, (x,)),
        ("object attribute", Scale().__call__, (x,)),
    ]


def _torch_compile(fn, args, ref):
    try:
        import torch
        import torch._dynamo
    except Exception:
        return None
    torch._dynamo.config.cache_size_limit = 64
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = torch.compile(fn)
            got = c(*args)
            np.testing.assert_allclose(got, ref, rtol=1e-6)
    except Exception as e:  # torch cannot compile it: no figure
        print(f"# torch.compile failed on {fn.__name__}: {type(e).__name__}", file=sys.stderr)
        return None
    return c


def run(quick=False, use_torch=True):
    rows = []
    for name, fn, args in _cases():
        ref = fn(*args)
        default = numdyn.compile(fn)
        own = numdyn.compile(fn, options={"floor": False})
        for c in (default, own):
            got = c(*args)
            assert type(got) is type(ref), (name, type(got), type(ref))
            np.testing.assert_allclose(got, ref, rtol=1e-12)
        fns = {"numpy": fn, "numdyn": default, "numdyn own path": own}
        tc = _torch_compile(fn, args, ref) if use_torch else None
        if tc is not None:
            fns["torch.compile"] = tc
        t = timeit_interleaved(fns, args, repeat=5 if quick else 15,
                               min_time=0.05 if quick else 0.2)
        note = "over NumPy per call: numdyn %+.2f us, own path %+.2f us" % (
            (t["numdyn"] - t["numpy"]) * 1e6, (t["numdyn own path"] - t["numpy"]) * 1e6)
        if "torch.compile" in t:
            note += ", torch.compile %+.2f us" % ((t["torch.compile"] - t["numpy"]) * 1e6)
        rows.append({"benchmark": name, **t, "note": note})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    rows = run(quick=a.quick, use_torch=not a.no_torch)
    report(rows)
    print("\nper call (us): numpy / numdyn / own path"
          + (" / torch.compile" if any("torch.compile" in r for r in rows) else ""))
    for r in rows:
        figs = [format_time(r.get(k)) for k in ("numpy", "numdyn", "numdyn own path", "torch.compile")
                if k in r]
        print(f"  {r['benchmark']}: " + " / ".join(figs))
