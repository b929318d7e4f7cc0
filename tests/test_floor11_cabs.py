"""np.absolute of complex arrays in generated kernels (kernels/nd_kernel.h
nd_cabs): NumPy's value to the bit (a threshold |z| <= 2 must split the
same points), NumPy's floating-point flags (overflow of a huge |z|, none
for NaN or infinite parts: a vector `<` of a NaN raises "invalid", which
had NumPy rerun the whole graph), over complex64/complex128 and layouts.
The function is computed with integer compares of the parts' bits so that
GCC vectorizes it without AVX-512 (it ran one element at a time, 6x slower
than NumPy's |z| <= 2): the values checked here are the ones that choice
could change -- infinities, NaNs, zeros, the largest and smallest parts.
"""
import warnings

import numpy as np
import pytest

import numdyn

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -3.0, np.inf, -np.inf, np.nan, 1e300, -1e300,
           1.7976931348623157e308, 2.2250738585072014e-308, 5e-324, 1e-300, 1e154,
           1e-160, 3.4028235e38, 1e38, 1e-40, 1.5e-45, 3e19]


def _specials(dt):
    re, im = np.meshgrid(SPECIAL, SPECIAL)
    z = np.empty(re.size, dt)
    with np.errstate(over="ignore"):
        z.real, z.imag = re.ravel(), im.ravel()
    # and ordinary values around the Mandelbrot threshold, both orders of parts
    rng = np.random.default_rng(11)
    a = rng.uniform(-2.5, 2.5, 3000) + 1j * rng.uniform(-2.5, 2.5, 3000)
    return np.concatenate([z, a.astype(dt), (1j * a).astype(dt)])


def _layouts(z):
    n = (len(z) // 8) * 8
    m = z[:n].reshape(-1, 8)
    return {"contiguous": z, "strided": z[::3], "reversed": z[::-1],
            "fortran": np.asfortranarray(m), "transposed": m.T}


def _same_bits(got, exp, ulp=False):
    assert got.dtype == exp.dtype and got.shape == exp.shape
    gn, en = np.isnan(got), np.isnan(exp)
    assert (gn == en).all()
    if ulp:
        np.testing.assert_array_max_ulp(got[~gn], exp[~en], maxulp=2)
    else:
        np.testing.assert_array_equal(got[~gn], exp[~en])


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed", "fortran", "transposed"])
def test_absolute_bits_and_threshold(dt, layout):
    z = _layouts(_specials(dt))[layout]
    f = numdyn.compile(lambda z: (np.abs(z), np.abs(z) <= 2.0, np.abs(z * 0.5) + 1.0))
    with np.errstate(all="ignore"):
        exp = (np.abs(z), np.abs(z) <= 2.0, np.abs(z * 0.5) + 1.0)
        f(z)
        numdyn.utils.wait_compiles()
        got = f(z)
    # NumPy computes a complex64 |z| of negative strides by npy_hypotf,
    # not its SIMD loop: up to 2 ulp apart on a third of the values (so may
    # numdyn's be, which computes every layout as the SIMD loop does)
    ulp = dt == np.complex64 and layout == "reversed"
    _same_bits(got[0], exp[0], ulp)
    _same_bits(got[2], exp[2], ulp)
    if not ulp:
        np.testing.assert_array_equal(got[1], exp[1])


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_nan_and_inf_parts_raise_no_flag(dt):
    # NumPy warns for none of these: a NaN or infinite part, zeros
    z = np.array([complex(np.nan, 1), complex(1, np.nan), complex(np.inf, np.nan),
                  complex(np.nan, -np.inf), complex(0, 0), complex(-0.0, 3),
                  complex(np.nan, np.nan), complex(np.inf, -np.inf)] * 500, dtype=dt)
    # (|z| alone: a vector `<=` of a NaN |z| raises "invalid" itself --
    # codegen's float compares, not nd_cabs)
    f = numdyn.compile(lambda z: np.abs(z) * 0.5)
    f(z)
    numdyn.utils.wait_compiles()
    r0 = numdyn.utils.counters["errstate_reruns"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            got = f(z)
            exp = np.abs(z) * 0.5
    assert numdyn.utils.counters["errstate_reruns"] == r0
    _same_bits(got, exp)


def _outcome(fn, z):
    try:
        return fn(z)
    except FloatingPointError as e:
        return str(e)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_huge_parts_flags_as_numpy(dt):
    # |z| of parts near the largest finite value is inf: whatever NumPy's
    # loop reports for it (it reports nothing), numdyn reports the same
    big = np.finfo(np.dtype(dt).char.lower()).max
    z = np.full(1000, complex(1, 1), dtype=dt)
    z[::97] = dt(complex(big, big))
    z[5::97] = dt(complex(big, 0))
    f = numdyn.compile(lambda z: np.abs(z))
    with np.errstate(over="ignore"):
        f(z)
    numdyn.utils.wait_compiles()
    for mode in ("raise", "warn", "ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(over=mode, invalid=mode, divide=mode):
                exp, got = _outcome(np.abs, z), _outcome(f, z)
        if isinstance(exp, str):
            assert got == exp
        else:
            _same_bits(got, exp)


@pytest.mark.parametrize("flags", [["-march=haswell"], ["-march=native"]], ids=["avx2", "native"])
def test_absolute_loop_vectorizes(tmp_path, flags):
    # |z| <= 2 over complex128 ran one element at a time on an AVX2 host
    # (GCC would not if-convert the selects before the division): the loops
    # of both widths vectorize, and their values are the kernels' above
    import ctypes
    from vmath_build import build
    src = '#include "nd_kernel.h"\n' + "\n".join(
        f"void f_{s}(const {ct} *restrict p, nd_bool *restrict o, long n, {t} b)\n"
        "{\n#pragma omp simd\n"
        f"    for (long j = 0; j < n; j++) o[j] = (nd_bool)(nd_cabs_{s}(nd_cld_{s}(&p[j])) * 0 == b);\n}}"
        for ct, t, s in (("nd_c128", "double", "cd"), ("nd_c64", "float", "cf")))
    lib, vec = build(tmp_path, "cabs_vec", src, flags)
    lines = {str(i + 1) for i, line in enumerate(src.splitlines()) if "for (long j" in line}
    assert lines <= vec, (lines, vec)
    # the loaded loops give NumPy's |z| * 0 == 0 (False where |z| is NaN or inf)
    for dt, ct, fn in ((np.complex128, ctypes.c_double, lib.f_cd), (np.complex64, ctypes.c_float, lib.f_cf)):
        z = _specials(dt)
        out = np.empty(len(z), np.uint8)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ct]
        with np.errstate(all="ignore"):
            fn(z.ctypes.data, out.ctypes.data, len(z), 0.0)
            np.testing.assert_array_equal(out.astype(bool), np.abs(z) * 0 == 0)
