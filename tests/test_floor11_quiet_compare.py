"""Ordered compares of floats (<, <=, >, >=) in generated kernels raise no
"invalid" for a NaN operand, as NumPy's loops raise none: GCC vectorizes C's
`<` as a signaling compare, and the flag of a NaN lane had NumPy rerun the
whole graph wherever the kernel's flags are read (a graph that also
computes sqrt, abs of a complex, a division...). Values: NumPy's, NaN
comparing false, -0.0 equal to 0.0, infinities ordered, over float16/32/64,
array and scalar operands, layouts."""
import warnings

import numpy as np
import pytest

import numdyn

OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def _operands(dt):
    vals = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 4.0, 1e-300, 65504.0],
                    dtype=np.float64)
    a, b = np.meshgrid(vals, vals)
    rng = np.random.default_rng(28)
    a = np.concatenate([a.ravel(), rng.uniform(0, 9, 3000)])
    b = np.concatenate([b.ravel(), rng.uniform(0, 9, 3000)])
    b[len(vals) ** 2::7] = np.nan
    with np.errstate(over="ignore"):
        return a.astype(dt), b.astype(dt)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("layout", ["contiguous", "strided", "scalar"])
def test_compare_with_nan_no_rerun(dt, op, layout):
    a, b = _operands(dt)
    if layout == "strided":
        a, b = a[::-2], b[::-2]
    uf = OPS[op]
    if layout == "scalar":
        # a flag-read op (sqrt) in the same kernel as the compare
        def fn(x, y):
            return uf(np.sqrt(np.abs(x)), 2.0), uf(2.0, np.sqrt(np.abs(x)))
    else:
        def fn(x, y):
            return uf(np.sqrt(np.abs(x)), y), uf(y, np.sqrt(np.abs(x)))
    f = numdyn.compile(fn)
    f(a, b)
    numdyn.utils.wait_compiles()
    r0 = numdyn.utils.counters["errstate_reruns"]
    k0 = numdyn.utils.counters["kernel_runs"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise", under="ignore"):
            got = f(a, b)
            exp = fn(a, b)
    assert numdyn.utils.counters["kernel_runs"] > k0
    assert numdyn.utils.counters["errstate_reruns"] == r0
    for g, e in zip(got, exp):
        assert g.dtype == e.dtype == np.bool_
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("flags", [["-march=haswell"], ["-march=native"]], ids=["avx2", "native"])
def test_quiet_compare_vectorizes_without_flag(tmp_path, flags):
    import ctypes
    from vmath_build import build
    lines = ['#include "nd_kernel.h"', "#include <fenv.h>"]
    for t, s in (("double", "d"), ("float", "f")):
        for q in ("qlt", "qle"):
            lines += [f"int f_{q}_{s}(const {t} *restrict a, const {t} *restrict b, nd_bool *restrict o, long n)",
                      "{", "    feclearexcept(FE_ALL_EXCEPT);", "#pragma omp simd",
                      f"    for (long j = 0; j < n; j++) o[j] = (nd_bool)nd_{q}_{s}(a[j], b[j]);",
                      "    return fetestexcept(FE_INVALID) != 0;", "}"]
    src = "\n".join(lines) + "\n"
    lib, vec = build(tmp_path, "qcmp_vec", src, flags)
    loops = {str(i + 1) for i, line in enumerate(src.splitlines()) if "for (long j" in line}
    assert loops <= vec, (loops, vec)
    for dt, s in ((np.float64, "d"), (np.float32, "f")):
        a, b = _operands(dt)
        for q, uf in (("qlt", np.less), ("qle", np.less_equal)):
            out = np.empty(len(a), np.uint8)
            fn = getattr(lib, f"f_{q}_{s}")
            fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_long]
            assert fn(a.ctypes.data, b.ctypes.data, out.ctypes.data, len(a)) == 0
            np.testing.assert_array_equal(out.astype(bool), uf(a, b))
