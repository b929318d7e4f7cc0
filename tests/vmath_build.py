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
