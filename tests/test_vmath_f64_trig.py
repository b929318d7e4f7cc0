"""float64 tanh, arctan, sinh, cosh, tan, arcsin and arccos of the kernels
(kernels/nd_vm64_trig.h, nd_kernel.h) against a long double reference, per
target: where the target has no AVX-512 (AVX2 -march=haswell, SSE2 x86-64)
numdyn's own double-double forms (tanh, arctan, sinh, cosh) and SLEEF's
1-ULP tan, asin, acos, within 1 ULP over a dense sweep -- NumPy's loops
there are glibc's scalar functions, 2-8x slower (bench/bench_vmath.py
--avx2); with AVX-512 (native here where the CPU has it) the faster forms
NumPy's SVML loops are measured against (SLEEF's 3.5-ULP ones, session 25's
exp-based hyperbolics), within 3. Everywhere NumPy's values for +-0 (its
sign), +-inf and NaN, and no floating-point flag where NumPy raises none
("invalid" of arcsin and arccos past +-1 from the function itself; tan's
"invalid" at +-inf and sinh's and cosh's "overflow" come from the
kernel's operand checks, nd_ckinf and nd_ckgt, not tested here). One
compiled unit per target, called through ctypes.
"""
import ctypes

import numpy as np
import pytest
from vmath_build import FE_INVALID, FE_OVERFLOW, PER_ISA_FLAGS, build, flag_loops, numpy_flags, run_in_production

# NumPy's name: (the kernels' function, max ULP of the form a target without
# AVX-512 compiles, max fraction of results differing from NumPy's)
FNS = {"tanh": ("nd_tanh", 0.92, 0.25), "arctan": ("nd_atan", 0.51, 0.02), "sinh": ("nd_sinh", 0.9, 0.05),
       "cosh": ("nd_cosh", 0.8, 0.12), "tan": ("nd_tan", 1.0, 0.04), "arcsin": ("nd_asin", 1.0, 0.05),
       "arccos": ("nd_acos", 1.0, 0.07)}
ZV_MAX_ULP = 3.0
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1e-310, 2.0 ** -28,
                    np.nextafter(2.0 ** -28, 0), 1e-300, 1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0])


def _operands(name):
    rng = np.random.default_rng(26)
    n = 20_000
    sgn = rng.choice([-1.0, 1.0], n)
    if name in ("arcsin", "arccos"):
        near = 1 - 10.0 ** rng.uniform(-17, 0, n)
        x = [rng.uniform(-1, 1, n), near * sgn, 10.0 ** rng.uniform(-30, 0, n) * sgn, [0.5, -0.5, np.nextafter(0.5, 0)]]
    elif name == "tan":
        x = [rng.uniform(-1e4, 1e4, n), rng.uniform(-2, 2, n), 10.0 ** rng.uniform(-30, 300, n) * sgn,
             np.pi / 2 * np.arange(-40, 41)]
    elif name == "arctan":
        ratio = np.repeat((np.arange(17) - 0.25) / 16, 9) * (1 + np.tile(np.arange(-4, 5) * 2.0 ** -50, 17))
        x = [rng.uniform(-1, 1, n), 10.0 ** rng.uniform(-30, 30, n) * sgn, ratio, 1 / ratio[ratio > 0],
             [2.0 ** 60, np.nextafter(2.0 ** 60, np.inf), 2.0 ** 53]]
    else:   # tanh, sinh, cosh: the reduction's bucket edges (k ln2 / 2), the caps
        top = 20.0 if name == "tanh" else 710.5
        edges = np.arange(1, 60) * np.log(2) / (4 if name == "tanh" else 2)
        x = [rng.uniform(-top, top, n), rng.uniform(-2, 2, n), 10.0 ** rng.uniform(-30, np.log10(top), n) * sgn,
             edges, np.nextafter(edges, 0), [19.06, 19.1, 19.5, 22.0, 710.47, 710.48, 710.5, 711.0, 0.5493]]
    x = np.concatenate(x)
    return np.concatenate([x, -x[:50], SPECIAL])


def _ulp_err(got, x, name):
    ref = getattr(np, name)(x.astype(np.longdouble))
    return (np.abs(got.astype(np.longdouble) - ref) / np.spacing(np.abs(ref).astype(np.float64))).astype(np.float64)


@PER_ISA_FLAGS
def test_forms_per_isa(tmp_path, flags):
    src = ['#include "nd_kernel.h"', "#include <fenv.h>", "int t_zv(void) { return ND_ZV; }",
           flag_loops("double", {nm: v[0] for nm, v in FNS.items()})]
    lib, vec = build(tmp_path, "f64t", "\n".join(src) + "\n", flags)
    if flags == ["-march=haswell"] or "-mprefer-vector-width=512" in flags:
        assert len(vec) == len(FNS), vec   # every loop vectorized (AVX2: gathers, AVX-512: its own calls)
    zv = bool(lib.t_zv())

    def run(name, x):
        y = np.empty_like(x)
        fl = getattr(lib, "t_" + name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
                                       ctypes.c_long(x.size))
        return y, fl

    for name, (_, max_ulp, max_differ) in FNS.items():
        x = _operands(name)
        got, _ = run(name, x)
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x)
        fin = np.isfinite(want)
        # NaN, +-inf exactly NumPy's; +-0 with NumPy's sign
        assert np.array_equal(got[~fin], want[~fin], equal_nan=True), name
        z = want == 0
        assert np.array_equal(got[z], want[z]) and np.array_equal(np.signbit(got[z]), np.signbit(want[z])), name
        e = _ulp_err(got[fin], x[fin], name)
        bound = ZV_MAX_ULP if zv else max_ulp
        assert e.max() <= bound, (name, float(e.max()), x[fin][e.argmax()])
        if not zv:
            # where NumPy's value is the correctly rounded one (its loops are
            # SVML's with AVX-512, glibc's without: off by an ULP more often)
            differ = np.mean((got[fin] != want[fin]) & (_ulp_err(want[fin], x[fin], name) <= 0.5))
            assert differ <= max_differ, (name, differ)
        # the flags: NumPy's for each special operand alone and among
        # ordinary ones (a spurious flag makes numdyn rerun the graph in NumPy:
        # right but slow; SLEEF's raise "invalid" on a NaN -- still so with
        # AVX-512 for arctan, tan, arcsin, arccos --, its 1-ULP
        # asin/acos "invalid" and "divide" at +-0, +-1 and tiny operands); past
        # +-1 arcsin's and arccos's SLEEF "invalid" may come with "overflow"
        # (from ~1e300); tan's "invalid" at +-inf is also the kernel's nd_ckinf
        for v in np.concatenate([SPECIAL, [2.0, -1.5, 1 + 2.0 ** -52, 710.47, 710.48, 711.0, -1e300, 1e-20]]):
            for arr in (np.array([v]), np.array([0.5, v, 0.25, -0.75, 0.125, 3.0, v, 1.5, 0.0625])):
                fl, want_fl = run(name, arr)[1], numpy_flags(name, arr)
                extra = FE_OVERFLOW if name in ("arcsin", "arccos") and want_fl & FE_INVALID else 0
                kernel = FE_INVALID if name == "tan" and np.isinf(v) else 0
                if zv and name in ("arctan", "tan", "arcsin", "arccos") and np.isnan(v):
                    extra |= FE_INVALID   # SLEEF's 3.5-ULP forms with AVX-512 (a rerun)
                assert (fl | kernel) & ~extra == (want_fl | kernel) & ~extra, (name, v, fl, want_fl)
        with np.errstate(all="ignore"):
            quiet = x[np.isfinite(getattr(np, name)(x)) | np.isnan(x)]
        if zv and name in ("arctan", "tan", "arcsin", "arccos"):
            quiet = quiet[~np.isnan(quiet)]
        if name in ("sinh", "cosh"):
            quiet = quiet[np.abs(quiet) < 710.47]
        assert run(name, quiet)[1] == 0 == numpy_flags(name, quiet), name


def _production_nan_inf():
    import numdyn
    from test_vmath_zv import _target_has_zv
    from vmath_build import kernel_values
    f = numdyn.compile(lambda a, c, b: (np.tanh(a), np.sinh(a), np.cosh(a), np.arctan(c), np.tan(b), np.arcsin(b),
                                        np.arccos(b)), options={"floor": False})
    # NaN, +-0, +-1, tiny and (not tan, arcsin, arccos) +-inf lanes among
    # ordinary ones: NumPy's values, no flag, so no rerun of the graph in
    # NumPy (kernel_values checks the counter; "underflow", which a tiny
    # operand's x^2 raises and NumPy does not, is ignored as by default).
    # With AVX-512 SLEEF's arctan, tan, arcsin, arccos raise "invalid" on a
    # NaN (a rerun): no NaN lanes for them there, and no special lanes for
    # arctan (SLEEF's reruns over 7 zeros too)
    sp = [0.0, -0.0, 5e-324, -1e-300, 1.0, -1.0]
    nan = [np.nan, -np.nan]
    a = np.concatenate([np.linspace(-30, 30, 61), sp, nan, [np.inf, -np.inf]] * 3)
    c = a if not _target_has_zv() else np.linspace(-30, 30, 61)
    b = np.concatenate([np.linspace(-1, 1, 63), sp, [] if _target_has_zv() else nan] * 3)
    got = kernel_values(f, a, c, b, over="raise", invalid="raise", divide="raise")
    for g, name, x in zip(got, ("tanh", "sinh", "cosh", "arctan", "tan", "arcsin", "arccos"), (a, a, a, c, b, b, b)):
        want = getattr(np, name)(x)
        assert np.array_equal(np.isnan(g), np.isnan(want)), name
        fin = ~np.isnan(want)
        assert np.array_equal(np.signbit(g[fin]), np.signbit(want[fin])), name
        assert np.allclose(g[fin], want[fin], rtol=1e-15, atol=1e-300), name
    print("OK")


def test_production_special_lanes_no_rerun(tmp_path):
    run_in_production("test_vmath_f64_trig", "_production_nan_inf", tmp_path)
