"""float32 vector math of kernels/nd_vm32.h against a float64 reference
rounded once: every 1021st bit pattern (every exponent, subnormals, +-inf,
NaNs) plus each form's edges, within 1 ULP (NumPy's own float32 loops: 2-3
ULP), NumPy's values for +-0, negatives, +-inf and NaN, and the floating-
point flags the loop raises: none but "inexact" for a valid operand,
"invalid" where NumPy warns. Each target's form is built here (AVX-512
where the CPU has it, -march=haswell's AVX2 C form, x86-64's SSE2 form
without fma instructions, and the scalar symbols loop remainders call) and
called through ctypes; one kernel in production mode checks the generated
code's path and NumPy's warnings. One compiled unit per target.
"""
import ctypes
import numpy as np
import pytest
from vmath_build import (FE_INVALID, FE_OVERFLOW, PER_ISA_FLAGS, build, flag_loops, float32_patterns, kernel_values,
                         numpy_flags, run_in_production, ulps32)

# NumPy's name: (the kernels' C function, max ULP of the AVX-512 form, of the
# C form AVX2/SSE2 compile; NumPy's own float32 cosh is 2 off too, the C
# inverse hyperbolics 3)
FNS = {"log2": ("nd_log2f", 1, 1), "log10": ("nd_log10f", 1, 1), "sinh": ("nd_sinhf", 1, 1),
       "cosh": ("nd_coshf", 2, 2), "cbrt": ("nd_cbrtf", 1, 1), "arcsinh": ("nd_asinhf", 1, 3),
       "arccosh": ("nd_acoshf", 1, 3), "arctanh": ("nd_atanhf", 1, 3)}
LOGS = ("log2", "log10")


def _operands():
    # the log tables' bucket edges (m in [1, 2) by 1/32), around 1 and the powers of 2
    edges = np.concatenate([1 + np.arange(33) / 32, 2.0 ** np.arange(-149, 128, 3.0), [1e-45, 1.1754942e-38,
                            1.1754944e-38, 3.4028235e38, 10.0, 100.0, 0.1, 1e-30, 1e30]]).astype(np.float32)
    with np.errstate(over="ignore"):
        edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges, np.float32(np.inf)),
                                1 + np.arange(-64, 65, dtype=np.float32) * np.float32(2.0 ** -24)])
    return np.concatenate([float32_patterns(), edges, -edges]).astype(np.float32)


def _want(name, x):
    with np.errstate(all="ignore"):
        return getattr(np, name)(x.astype(np.float64)).astype(np.float32)


def _check(name, got, want, tag, zv=True):
    assert got.dtype == np.float32
    assert np.array_equal(np.isnan(got), np.isnan(want)), (name, tag)
    fin = ~np.isnan(want)
    assert np.array_equal(np.isinf(got[fin]), np.isinf(want[fin])), (name, tag)
    assert np.array_equal(np.signbit(got[fin]), np.signbit(want[fin])), (name, tag)
    u = ulps32(got[fin], want[fin])
    assert u.size == 0 or u.max() <= FNS[name][1 if zv else 2], (name, tag, int(u.max()), got[fin][u.argmax()], want[fin][u.argmax()])


@PER_ISA_FLAGS
def test_float32_forms_per_isa(tmp_path, flags):
    src = ['#include "nd_kernel.h"', "#include <fenv.h>", flag_loops("float", {nm: v[0] for nm, v in FNS.items()})]
    lib, vec = build(tmp_path, "f32", "\n".join(src) + "\n", flags)
    if flags == ["-march=haswell"] or "-mprefer-vector-width=512" in flags:
        assert len(vec) == len(FNS), vec
    elif "-fno-tree-vectorize" in flags:
        assert not vec
    x = _operands()
    zv = "-march=native" in flags and _has_zv()

    def run(name, a):
        a = np.ascontiguousarray(a, dtype=np.float32)
        out = np.empty_like(a)
        fl = getattr(lib, "t_" + name)(a.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
                                       ctypes.c_long(a.size))
        return out, fl

    for name in FNS:
        out, _ = run(name, x)
        _check(name, out, _want(name, x), flags, zv)
        # flags: none for the valid operands (and NaN, +inf), NumPy's for
        # each special one alone and among valid ones (an odd count: the
        # scalar remainder too). Division by zero is the kernel's (nd_ckat
        # from the operand), so only "invalid" and "overflow" are the
        # function's own.
        w = _want(name, x)
        _, fl = run(name, x[np.isfinite(w) | np.isnan(x) | (np.isinf(x) & (w == x))])
        assert fl & (FE_INVALID | FE_OVERFLOW) == 0, (name, flags, fl)
        base = np.linspace(-0.9, 0.9, 37, dtype=np.float32) if name == "arctanh" else \
            np.linspace(1.01, 3, 37, dtype=np.float32)   # inside every domain
        for v in (-1.0, -np.inf, -1e-45, 0.0, -0.0, np.inf, np.nan, 100.0, -100.0, 1e-40, 89.4, 89.42, -89.42):
            e = numpy_flags(name, np.array([v], np.float32)) & (FE_INVALID | FE_OVERFLOW)
            for arr in (np.array([v], np.float32), np.concatenate([base, [v], base[:20]]).astype(np.float32)):
                o, fl = run(name, arr)
                assert fl & (FE_INVALID | FE_OVERFLOW) == e, (name, v, flags, fl, e)
                _check(name, o, _want(name, arr), (flags, v), zv)


def _has_zv():
    from test_vmath_zv import _target_has_zv
    return _target_has_zv()


def _production():
    import numdyn
    x = _operands()
    # (the inverse hyperbolics' kernels: test_vmath_zv.py's _compare_f32)
    names = [n for n in FNS if n not in ("arcsinh", "arccosh", "arctanh")]
    fns = [getattr(np, n) for n in names]
    f = numdyn.compile(lambda a: tuple(fn(abs(a)) if fn.__name__ in LOGS else fn(a) for fn in fns),
                       options={"floor": False})
    with np.errstate(all="ignore"):
        x = x[np.isnan(x) | ((np.abs(x) < 80) & (x != 0))]
    got = kernel_values(f, x, over="raise", invalid="raise", divide="raise")
    for name, g in zip(names, got):
        _check(name, np.asarray(g), _want(name, np.abs(x) if name in LOGS else x), "production", _has_zv())
    base = x[:40]
    for v, flag in ((0.0, "divide"), (-0.0, "divide"), (100.0, "over"), (-100.0, "over")):
        for arr in (np.array([v], np.float32), np.concatenate([base, [v], base]).astype(np.float32)):
            with np.errstate(**{flag: "raise"}), pytest.raises(FloatingPointError, match=flag[:4]):
                f(arr)
            with np.errstate(all="ignore"):
                for name, g in zip(names, f(arr)):
                    _check(name, np.asarray(g), _want(name, np.abs(arr) if name in LOGS else arr), ("production", v),
                           _has_zv())
    g = numdyn.compile(lambda a: (np.log2(a), np.log10(a)), options={"floor": False})
    for arr in (np.array([-1.0], np.float32), np.concatenate([base, [-np.inf], base]).astype(np.float32)):
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid"):
            g(arr)
    print("OK")


def test_float32_production_against_numpy(tmp_path):
    # production mode (no store checks: the loops vectorize and call the
    # 16-lane variants where the CPU has AVX-512)
    run_in_production("test_vmath_f32", "_production", tmp_path)
