"""Per-element cost of the kernels' vector math: each float ufunc's
function from kernels/nd_kernel.h in a plain C loop (what a generated
kernel's inner loop runs, one thread, compiled with numdyn's own compiler
command) against NumPy's loop over the same operands, interleaved in one
process, the minimum of many runs over 16384 elements (L1/L2-resident:
the arithmetic, not memory). `--against DIR` times a second kernels/
directory (another checkout's) in the same loop, before/after.

    python bench/bench_vmath.py [--only exp,sinh] [--against /path/to/old/kernels] [--runs N] [--avx2]

Operands are bench_ufuncs.py's (binary ones too: arctan2); the max error against NumPy's results is
printed in units of the dtype's epsilon (relative), and for float64 the
error in ULP (max, mean) against a long double reference, NumPy's own max,
and the share of results differing from NumPy's.
--avx2: the kernels built for -march=haswell (what a machine without
AVX-512 compiles: the C forms) against NumPy with its AVX-512 loops off
(NPY_DISABLE_CPU_FEATURES, set for a child process: NumPy's AVX2 loops,
glibc's scalar functions for most float64 transcendentals), on this CPU.
"""
import argparse
import ctypes
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ufuncs import BINARY, UNARY, _operand  # noqa: E402

import numdyn  # noqa: E402

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "kernels"
DEFAULT = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
           "arctanh", "cbrt"]
CNAME = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "arcsin": "asin", "arccos": "acos",
         "arctan": "atan", "arctan2": "atan2"}


NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR X86_V4"


def _compiler_command(tmp):
    """numdyn's own compile command line (compile.txt of a debug dir)"""
    env = dict(os.environ, NUMDYN_DEBUG_DIR=str(tmp / "dbg"), NUMDYN_CACHE_DIR=str(tmp / "cache"))
    code = "import numpy as np, numdyn; numdyn.compile(lambda a: np.exp(a))(np.ones(9)); numdyn.utils.wait_compiles()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    for line in next((tmp / "dbg").rglob("compile.txt")).read_text().splitlines():
        if line.startswith("compiler: "):
            return line[len("compiler: "):]
    raise RuntimeError("no compiler line in compile.txt")


def _build(names, kdir, cmd, tmp, tag):
    src = ['#include "nd_kernel.h"']
    for nm in names:
        c = CNAME.get(nm, nm)
        for t, s, f in (("double", "d", ""), ("float", "f", "f")):
            if nm in BINARY:   # (x, x2, y)
                src.append(f"void vm_{nm}_{s}(const {t} *restrict x, const {t} *restrict x2, {t} *restrict y, long n)\n"
                           f"{{\n#pragma omp simd\n    for (long i = 0; i < n; i++) y[i] = nd_{c}{f}(x[i], x2[i]);\n}}")
            else:
                src.append(f"void vm_{nm}_{s}(const {t} *restrict x, {t} *restrict y, long n)\n"
                           f"{{\n#pragma omp simd\n    for (long i = 0; i < n; i++) y[i] = nd_{c}{f}(x[i]);\n}}")
    c_path, so = tmp / f"vm_{tag}.c", tmp / f"vm_{tag}.so"
    c_path.write_text("\n".join(src) + "\n")
    subprocess.run(f"{cmd} -I{kdir} {c_path} -o {so} -lsleefgnuabi -lm", shell=True, check=True)
    return ctypes.CDLL(str(so))


def _isa(cmd):
    """the vector ISA numdyn's compile command targets here (-march=native:
    detected, not assumed), from the compiler's predefined macros"""
    out = subprocess.run(cmd.replace("-shared", "") + " -dM -E -x c /dev/null", shell=True, capture_output=True,
                         text=True).stdout
    return next((nm for mac, nm in (("__AVX512F__", "AVX-512"), ("__AVX2__", "AVX2"), ("__SSE2__", "SSE2"))
                 if "#define " + mac + " " in out), "scalar")


def _ulps(got, x, nm):
    """(max, mean) error in ULP against a long double reference"""
    with np.errstate(all="ignore"):
        ref = getattr(np, nm)(x.astype(np.longdouble))
    fin = np.isfinite(ref) & (np.abs(ref) < np.finfo(np.float64).max)
    e = (np.abs(got[fin].astype(np.longdouble) - ref[fin]) / np.spacing(np.abs(ref[fin]).astype(np.float64)))
    return float(e.max()), float(e.mean())


def run(names, against=None, runs=100, n=16384, avx2=False):
    with tempfile.TemporaryDirectory() as td:
        tmp = pathlib.Path(td)
        cmd = _compiler_command(tmp)
        if avx2:
            cmd = cmd.replace("-march=native", "-march=haswell").replace("-mprefer-vector-width=512", "")
        print(f"target ISA {_isa(cmd)}; load {os.getloadavg()[0]:.1f}; OMP_NUM_THREADS="
              f"{os.environ.get('OMP_NUM_THREADS', 'unset')}")
        libs = [("numdyn", _build(names, KERNELS, cmd, tmp, "new"))]
        if against:
            libs.insert(0, ("against", _build(names, against, cmd, tmp, "old")))
        rng = np.random.default_rng(0)
        print(f"{'ufunc':8s} dtype  NumPy ns  " + "  ".join(f"{t:>8s} ns" for t, _ in libs) +
              "  " + "  ".join(f"NumPy/{t}" for t, _ in libs) + "  max err/eps" +
              "  (float64, ULP: " + ", ".join(f"{t} max/mean" for t, _ in libs) + ", NumPy max; % differing from NumPy)")
        for nm in names:
            for dt, s in (("f8", "d"), ("f4", "f")):
                xs = [_operand(rng, spec, n, np.dtype(dt)) for spec in (BINARY[nm] if nm in BINARY else (UNARY[nm],))]
                want, y = np.empty_like(xs[0]), np.empty_like(xs[0])
                uf = getattr(np, nm)
                fns = [getattr(lib, f"vm_{nm}_{s}") for _, lib in libs]
                ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in (*xs, y)]
                tn, tk = [], [[] for _ in fns]
                for _ in range(runs):
                    t0 = time.perf_counter()
                    uf(*xs, out=want)
                    tn.append(time.perf_counter() - t0)
                    for fn, acc in zip(fns, tk):
                        t0 = time.perf_counter()
                        fn(*ptrs, ctypes.c_long(n))
                        acc.append(time.perf_counter() - t0)
                fi = np.finfo(dt)
                err = np.max(np.abs(y - want) / np.maximum(np.abs(want), fi.tiny)) / fi.eps
                b = min(tn)
                extra = ""
                if dt == "f8" and nm not in BINARY:
                    ys = []
                    for fn in fns:
                        fn(*ptrs, ctypes.c_long(n))
                        ys.append(y.copy())
                    u = [_ulps(v, xs[0], nm) for v in ys]
                    extra = ("  " + "  ".join(f"{m:.2f}/{a:.3f}" for m, a in u) + f"  {_ulps(want, xs[0], nm)[0]:.2f};" +
                             "  " + "  ".join(f"{np.mean(v != want) * 100:.1f}%" for v in ys))
                print(f"{nm:8s} {dt}    {b / n * 1e9:7.2f}  " + "  ".join(f"{min(a) / n * 1e9:11.2f}" for a in tk) +
                      "  " + "  ".join(f"{b / min(a):10.2f}x" for a in tk) + f"  {err:9.2f}" + extra)
        print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(DEFAULT))
    ap.add_argument("--against", default=None, help="another kernels/ directory, timed alongside")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--avx2", action="store_true", help="AVX2 kernels against NumPy without its AVX-512 loops")
    a = ap.parse_args()
    if a.avx2 and os.environ.get("NPY_DISABLE_CPU_FEATURES") != NO_AVX512:   # before NumPy's import: a child
        sys.exit(subprocess.run([sys.executable, *sys.argv], env=dict(os.environ, NPY_DISABLE_CPU_FEATURES=NO_AVX512)).returncode)
    run(a.only.split(","), a.against, a.runs, avx2=a.avx2)
