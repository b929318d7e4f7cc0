"""Kernel loops that stayed scalar on AVX2 now vectorize, with NumPy's bits
(issues 13 and 19, kernel code quality).

- int64 -> float64: x86 has no vector form of that conversion before
  AVX-512DQ, so a loop converting int64 (np.arange, np.outer of indices,
  `k * 0.5`) was scalar whole, a complex exp fused after it too (the DFT
  matrix exp(-2j pi outer(k, k) / n): numdyn's own path 0.65x NumPy). The
  generated C calls nd_i64_to_d (kernels/nd_f2i.h): integer and double
  operations with one rounding, C's cast to the bit over the whole range.
- complex division: NumPy's Smith algorithm written with branches; GCC
  sinks the operands of a loop-invariant condition (a division by a
  scalar) into arms and then will not vectorize, and an exp fused after
  the division stayed scalar with it. nd_cdiv selects operands by their
  bits and runs one set of operations: NumPy's values and flags to the bit,
  zero divisors, infinities, NaNs and subnormals included.

- float64 -> int64 (astype, an index computed in floats): no vector form
  before AVX-512DQ either; nd_d2i64 is C's truncation by the bits (the
  mantissa shifted by the exponent), x86's INT64_MIN outside the range.

This file is in conftest's VECTOR_FILES: `make test` runs it once more
without store checks, so the vectorized loops are the ones checked.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import numdyn
from oracle import check

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(os.path.dirname(HERE), "kernels")


def _int64_values():
    i64 = np.iinfo(np.int64)
    p = [0, 1, -1, 2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**32, -2**32 - 1, 2**52, 2**53 - 1, 2**53,
         2**53 + 1, 2**53 + 3, -(2**53 + 1), 2**62 + 2**9 + 1, 2**63 - 2**10, 2**63 - 2**10 - 1,
         2**63 - 513, i64.max, i64.min, i64.min + 1, 12345678901234567, -98765432109876543]
    rng = np.random.default_rng(12)
    r = rng.integers(i64.min, i64.max, 400, dtype=np.int64, endpoint=True)
    small = rng.integers(-5000, 5000, 200)
    shifts = rng.integers(0, 63, 200)
    mixed = rng.integers(0, 2**62, 200) >> shifts
    return np.concatenate([np.array(p, dtype=np.int64), r, small, mixed]).astype(np.int64)


def scaled(k):
    return k * 0.5, k + 0.25, k / 3.0


def to_float(k):
    return k.astype(np.float64), np.sqrt(np.abs(k.astype(np.float64))), np.float64(1.5) * k


def to_complex(k):
    return k * (0.5 - 2j), k + 1j


def dft_matrix(n):
    k = np.arange(n)
    return np.exp(-2j * np.pi * np.outer(k, k) / n)


def test_int64_to_float64_exact_layouts():
    k = _int64_values()
    m = k[: k.shape[0] - k.shape[0] % 8]
    for a in (k, k[::-3], m.reshape(-1, 8).T, m.reshape(8, -1)[:, ::-2]):
        for fn in (scaled, to_float, to_complex):
            check(fn, a, rtol=0, atol=0, signed_zeros=True)


def test_int64_to_float64_against_cast_bits():
    # the conversion itself, element by element, against C's cast (NumPy's astype)
    k = _int64_values()
    got = numdyn.compile(lambda k: k * 1.0)(k)
    exp = k.astype(np.float64)
    assert got.dtype == np.float64
    assert (got.view(np.uint64) == exp.view(np.uint64)).all(), k[got != exp]


def test_dft_matrix_values():
    for n in (1, 7, 64, 256):
        check(dft_matrix, n, rtol=1e-12, atol=1e-12)


def _complex_edges(dt):
    f = np.finfo(np.float64 if dt == np.complex128 else np.float32)
    parts = np.array([0.0, -0.0, 1.0, -2.5, f.tiny, f.smallest_subnormal, f.max, -f.max, np.inf,
                      -np.inf, np.nan, 0.1, 7.0], dtype=f.dtype)
    re, im = np.meshgrid(parts, parts)
    z = (re + 1j * im).ravel()
    rng = np.random.default_rng(5)
    lo, hi = (-200, 200) if dt == np.complex128 else (-30, 30)
    s = 10.0 ** rng.integers(lo, hi, 300)
    w = rng.standard_normal(300) * s + 1j * rng.standard_normal(300) * s[::-1]
    a = np.concatenate([np.repeat(z, z.shape[0]), w, w[::-1]]).astype(dt)
    b = np.concatenate([np.tile(z, z.shape[0]), w[::-1] * 0.5, w]).astype(dt)
    return a, b


def divide(a, b):
    return a / b


def divide_scalars(a):
    return a / 3, a / (2 - 0.5j), a / 0.0, a / -0.0j


def exp_of_quotient(a, b):
    return np.exp(a / b), np.exp(a / 4)


def test_complex_division_exact_edges():
    for dt in (np.complex128, np.complex64):
        a, b = _complex_edges(dt)
        with np.errstate(all="ignore"):
            check(divide, a, b, rtol=0, atol=0, signed_zeros=True)
            check(divide, a[::-2], b[1::2], rtol=0, atol=0, signed_zeros=True)
            check(divide_scalars, a, rtol=0, atol=0, signed_zeros=True)
        n = a.shape[0] - a.shape[0] % 4
        with np.errstate(all="ignore"):
            check(divide, a[:n].reshape(-1, 4).T, b[:n].reshape(4, -1), rtol=0, atol=0, signed_zeros=True)


def test_complex_division_warnings():
    # NumPy's flags: a zero divisor warns (divide or invalid), finite data none
    for dt in (np.complex128, np.complex64):
        a, b = _complex_edges(dt)
        fin = np.isfinite(a) & np.isfinite(b) & (b != 0) & (np.abs(a) < 1e20) & (np.abs(b) > 1e-20)
        check(divide, a[fin], b[fin], rtol=0, atol=0, warnings=True)
        z = np.array([1 + 1j, 0j, 2 - 3j], dtype=dt)
        check(divide, z, np.zeros(3, dt), rtol=0, atol=0, warnings=True)
        check(divide_scalars, z, rtol=0, atol=0, warnings=True)


def test_exp_of_quotient():
    for dt in (np.complex128, np.complex64):
        a, b = _complex_edges(dt)
        with np.errstate(all="ignore"):
            fin = np.isfinite(a) & np.isfinite(b) & (np.abs(a / b) < 50) & (b != 0)
        check(exp_of_quotient, a[fin], b[fin], rtol=4 * np.finfo(dt).eps, atol=0)


def test_int64_conversion_in_kernel_source(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))
    numdyn.compile(dft_matrix)(32)
    numdyn.utils.wait_compiles()
    src = "".join(p.read_text() for p in tmp_path.rglob("kernel_*.c"))
    assert "nd_i64_to_d(" in src and "(double)(v" not in src, src


def _float_values():
    p = [0.0, -0.0, 0.5, -0.5, 0.999999, -1.5, 1e-310, 4503599627370495.5, 2.0**52, 2.0**53 + 2, 2.0**63 - 1024,
         -2.0**63, -2.0**63 - 2048, 2.0**63, 2.0**64 - 2048, 2.0**64, 1e19, -1e19, 1e300, 2147483648.5,
         -2147483649.5, 4294967295.9, 4294967296.0]
    rng = np.random.default_rng(8)
    r = rng.standard_normal(600) * 10.0 ** rng.integers(-3, 21, 600)
    return np.concatenate([np.array(p), r])


def to_int64(x):
    return x.astype(np.int64)


def to_unsigned(x):
    # where NumPy's result is one value: what fits int64 or the unsigned
    # type (out of range, NumPy's loops give 0 or the indefinite by layout)
    return x.astype(np.uint64), x.astype(np.uint32), x.astype(np.int32)


def bin_index(x):
    idx = ((x + 3.0) * 4.0).astype(np.int64)
    return np.clip(idx, 0, 23)


def test_float_to_int_exact_layouts():
    x = _float_values()
    with np.errstate(invalid="ignore"):
        u = x[(x > -2.0**31) & (x < 2.0**31)]
        for a, b in ((x, u), (x[::-3], u[::-3]), (x[:620].reshape(-1, 4).T, u[:u.size // 4 * 4].reshape(-1, 4).T)):
            check(to_int64, a, rtol=0, atol=0)
            check(to_unsigned, b, rtol=0, atol=0)
    check(to_int64, x[np.abs(x) < 2.0**63], rtol=0, atol=0, warnings=True)
    check(to_int64, np.array([1.5, np.nan, -np.inf, 3e19]), rtol=0, atol=0, warnings=True)
    check(to_unsigned, np.array([1.5, 7.9, 1e9, 0.0]), rtol=0, atol=0, warnings=True)
    check(bin_index, np.random.default_rng(3).standard_normal(5000), rtol=0, atol=0)


LOOPS = r"""
#include "nd_kernel.h"
void div_exp(const nd_c128 *restrict p, nd_c128 *restrict q, nd_c128 w, long n)
{
#pragma omp simd
    for (long j = 0; j < n; j++) nd_cst_cd(&q[j], nd_cexp_cd(nd_cdiv_cd(nd_cld_cd(&p[j]), w)));
}
void i64_exp(const int64_t *restrict p, nd_c128 *restrict q, nd_c128 w, long n)
{
#pragma omp simd
    for (long j = 0; j < n; j++) nd_cst_cd(&q[j], nd_cexp_cd(nd_cmul_cd(w, nd_cmk_cd(nd_i64_to_d(p[j]), 0))));
}
void f2i(const double *restrict p, int64_t *restrict q, long n)
{
#pragma omp simd
    for (long j = 0; j < n; j++) q[j] = nd_d2i64(p[j] * 0.5);
}
"""


def test_loops_vectorize(tmp_path):
    # the point of these forms: GCC (numdyn's kernel flags) vectorizes a loop
    # of a complex division or an int64 conversion followed by a complex exp,
    # and one converting doubles to int64
    cc = os.environ.get("CC") or shutil.which("cc")
    ver = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" not in ver:
        pytest.fail(f"this check reads GCC's -fopt-info report; {cc} is not GCC: {ver[:80]}")
    src = tmp_path / "loops.c"
    src.write_text(LOOPS)
    r = subprocess.run([cc, "-O3", "-march=x86-64-v3", "-fopenmp", "-fno-math-errno", "-ffp-contract=off",
                        "-fPIC", "-c", "-I", KERNELS, str(src), "-o", str(tmp_path / "loops.o"),
                        "-fopt-info-vec-optimized"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith(str(src)) and "loop vectorized" in ln]
    vect = {int(ln.split(":")[1]) for ln in lines}
    assert {6, 11, 16} <= vect, r.stderr[-3000:]


def test_in_vector_files():
    assert sys.modules["conftest"].VECTOR_FILES.count(os.path.basename(__file__)) == 1
