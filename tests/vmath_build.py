"""kernels/ code built for a chosen target and loaded here (the vector math
tests): gcc with numdyn's own code-generation flags and `flags` (-march=...),
linked to SLEEF. Skips the calling test where gcc or SLEEF is missing, or
where flags name haswell and this CPU cannot run AVX2 + FMA code."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

KDIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")


def build(tmp_path, name, src, flags):
    """(the loaded library, the set of source lines of the loops GCC vectorized)"""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    out = subprocess.run([gcc, "-march=native", "-dM", "-E", "-x", "c", "/dev/null"], capture_output=True,
                         text=True).stdout
    if "-march=haswell" in flags and ("#define __AVX2__ 1" not in out or "#define __FMA__ 1" not in out):
        pytest.skip("this CPU does not run AVX2 code")
    c, so = tmp_path / (name + ".c"), tmp_path / (name + ".so")
    c.write_text(src)
    r = subprocess.run([gcc, "-O3", *flags, "-fopenmp", "-fno-math-errno", "-ffp-contract=off", "-fPIC",
                        "-shared", "-I" + KDIR, str(c), "-o", str(so), "-lsleefgnuabi", "-lm",
                        "-fopt-info-vec-optimized"], capture_output=True, text=True)
    if r.returncode != 0 and "sleefgnuabi" in r.stderr:
        pytest.skip("SLEEF is not installed")
    assert r.returncode == 0, r.stderr
    vec = set(re.findall(re.escape(name) + r"\.c:(\d+):\d+: optimized: loop vectorized", r.stderr))
    return ctypes.CDLL(str(so)), vec


def kernel_values(f, *args, **errstate):
    """f(*args) of a compiled function under np.errstate(**errstate), the
    second call's: the kernels' values (at least one kernel run), not NumPy's
    rerun of the graph after a flag"""
    import numpy as np
    import numdyn
    with np.errstate(**errstate):
        f(*args)
        numdyn.utils.wait_compiles()
        k0, r0 = numdyn.utils.counters["kernel_runs"], numdyn.utils.counters["errstate_reruns"]
        got = f(*args)
        assert numdyn.utils.counters["kernel_runs"] - k0 >= 1
        assert numdyn.utils.counters["errstate_reruns"] == r0
    return got


def ulps32(got, want):
    """distance in float32 units in the last place (adjacent floats: 1)"""
    import numpy as np
    gi, wi = got.view(np.int32).astype(np.int64), want.view(np.int32).astype(np.int64)
    gi, wi = np.where(gi < 0, -(1 << 31) - gi, gi), np.where(wi < 0, -(1 << 31) - wi, wi)
    return np.abs(gi - wi)


def float32_patterns(step=1021):
    """every step-th float32 bit pattern (every exponent, subnormals, +-inf),
    NaNs made quiet (a signaling one raises "invalid" in some of NumPy's
    functions and not in others)"""
    import numpy as np
    bits = np.arange(0, 2 ** 32, step, dtype=np.uint64).astype(np.uint32)
    return np.where((bits & 0x7f800000) == 0x7f800000, bits | 0x00400000, bits).view(np.float32)


def run_in_production(module, fn, tmp_path):
    """module.fn() (a test module's) in a production-mode process (no store
    checks: the loops vectorize); it prints OK at the end"""
    import subprocess
    import sys
    code = "import sys; sys.path.insert(0, %r); import %s as T; T.%s()" % (
        os.path.dirname(os.path.abspath(__file__)), module, fn)
    env = dict(os.environ, NUMDYN_CHECK_STORES="0", NUMDYN_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


FE_INVALID, FE_DIVBYZERO, FE_OVERFLOW = 0x01, 0x04, 0x08   # x86's <fenv.h>
# each target's form: AVX-512 where the CPU has it (native), AVX2's and
# SSE2's C forms, and the scalar symbols loop remainders call
PER_ISA_FLAGS = pytest.mark.parametrize(
    "flags", [["-march=native", "-mprefer-vector-width=512"], ["-march=haswell"], ["-march=x86-64"],
              ["-march=native", "-fno-tree-vectorize"]], ids=["native", "avx2", "sse2", "native-scalar"])


def numpy_flags(name, x):
    """the flags NumPy's function raises on x (FE_ bits; underflow aside)"""
    import numpy as np
    fl = 0
    for flag, bit in (("invalid", FE_INVALID), ("divide", FE_DIVBYZERO), ("over", FE_OVERFLOW)):
        try:
            with np.errstate(all="ignore"), np.errstate(**{flag: "raise"}):
                getattr(np, name)(x)
        except FloatingPointError:
            fl |= bit
    return fl


def flag_loops(ctype, fns):
    """C source: int t_<name>(x, y, n) running y[i] = fn(x[i]) for each
    name: fn of fns, returning the invalid/divide/overflow flags it raised"""
    return "".join(f"int t_{name}(const {ctype} *restrict x, {ctype} *restrict y, long n)\n"
                   f"{{ feclearexcept(FE_ALL_EXCEPT);\n"
                   f"  for (long i = 0; i < n; i++) y[i] = {fn}(x[i]);\n"
                   f"  return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW); }}\n" for name, fn in fns.items())
