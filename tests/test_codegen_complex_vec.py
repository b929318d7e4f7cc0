"""Complex kernels vectorize (issue 19, kernel code quality).

GCC vectorizes a strided `_Complex` element only when it is loaded and
stored as its two real parts (kernels/nd_kernel.h nd_cld/nd_cst), and it
could not vectorize np.abs of a complex in a loop that also folds a sum or
collects error bits (a division under a condition in NumPy's |z|
algorithm): the generated C now loads and stores complex operands as parts,
and |z| divides safe operands in every lane. Values must stay NumPy's to
the bit where NumPy is exact: |z| (NumPy's own algorithm), +, -, the fused
multiply, conj, real/imag, where; over zeros, subnormals, infinities, NaNs
and huge parts, strided (reversed) and transposed, complex128 and complex64.
"""
import os
import sys

import numpy as np

import numdyn
from oracle import check


def _edge_values(dt):
    f = np.finfo(np.float64 if dt == np.complex128 else np.float32)
    parts = np.array([0.0, -0.0, 1.0, -2.5, 3e-310 if dt == np.complex128 else 1e-40, f.tiny, f.max,
                      -f.max, 1e300 if dt == np.complex128 else 1e38, np.inf, -np.inf, np.nan, 0.1, 7.0],
                     dtype=f.dtype)
    re, im = np.meshgrid(parts, parts)
    rng = np.random.default_rng(3)
    scale = 10.0 ** rng.integers(-200, 200, 300) if dt == np.complex128 else 10.0 ** rng.integers(-30, 30, 300)
    z = np.concatenate([(re + 1j * im).ravel(), rng.standard_normal(300) * scale + 1j * rng.standard_normal(300)])
    return z.astype(dt)


def pointwise(z, w):
    return np.abs(z), z + w, z * w, np.conj(z) - w, np.where(z.real > w.imag, z, w), z.real * w.imag


def parts(z, w):
    return z + w, z * w, np.conj(z) - w, np.where(z.real > w.imag, z, w), z.real * w.imag


def absolute(z):
    return np.abs(z)


def folded(z, w):
    # |z| in a loop that also folds (a sum) and collects error bits (log1p)
    return np.abs(z).sum(), np.log1p(np.abs(z) ** 2), (w * np.abs(z)).sum(0)


def test_complex_parts_exact_layouts():
    with np.errstate(all="ignore"):
        for dt in (np.complex128, np.complex64):
            z = _edge_values(dt)
            w = z[::-1].copy() * dt(0.5 + 0.25j)
            n = z.shape[0] - z.shape[0] % 4
            cases = [(z[::-2], w[1::2]), (z[:n].reshape(-1, 4).T, w[:n].reshape(-1, 4).T)]
            for a, b in cases if dt == np.complex128 else cases[:1]:
                # NumPy's |z| (both dtypes) and complex64 z * w are its SIMD
                # loops on contiguous operands and scalar C on strided ones,
                # whose bits differ (|z|: 2 and 14 of these 248 values,
                # complex64 z * w: 24): numdyn's are the SIMD loops' forms,
                # exact against contiguous operands, within an ulp against
                # strided ones (NumPy's strided complex64 product of an
                # infinity is NaN where its SIMD loop's is an infinity: finite
                # operands there)
                eps = np.finfo(dt).eps
                check(pointwise, a.copy(), b.copy(), rtol=0, atol=0, warnings=False)
                if dt == np.complex128:
                    check(parts, a, b, rtol=0, atol=0, warnings=False)
                else:
                    fin = np.isfinite(a) & np.isfinite(b) & (np.abs(a) < 1e18) & (np.abs(b) < 1e18)
                    sa, sb = np.zeros((2, 2 * int(fin.sum())), dt)
                    sa[::2], sb[::2] = a[fin], b[fin]
                    check(parts, sa[::2], sb[::2], rtol=eps, atol=0, warnings=False)
                check(absolute, a, rtol=eps, atol=0, warnings=False)
        z = _edge_values(np.complex128)
        fin = z[np.isfinite(z) & (np.abs(z.real) < 1e100) & (np.abs(z.imag) < 1e100)]
        x2 = fin[: fin.shape[0] - fin.shape[0] % 8].reshape(-1, 8)
        check(folded, x2[:, ::-1], x2[0], rtol=1e-12)


def test_complex_loaded_as_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))
    z = np.arange(64) * (1 + 2j)
    numdyn.compile(pointwise)(z[::2], z[1::2])
    numdyn.utils.wait_compiles()
    src = "".join(p.read_text() for p in tmp_path.rglob("kernel_*.c"))
    assert "nd_cld_cd(&p" in src and "nd_cst_cd(&p" in src, src


def test_split_passes_run_this_file_unchecked():
    # `make test` (NUMDYN_SPLIT_PASSES=1, conftest.py VECTOR_FILES) runs this
    # file's kernels without store checks, so their loops vectorize: the
    # paths this file exists for are the ones tested
    if os.environ.get("NUMDYN_SPLIT_PASSES") == "1":
        assert os.environ["NUMDYN_CHECK_STORES"] == "0"
    assert sys.modules["conftest"].VECTOR_FILES.count(os.path.basename(__file__)) == 1
