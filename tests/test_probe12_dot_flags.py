"""NumPy's floating-point warnings and values of 1-D products, and of
complex np.where / power on zeros.

A 1-D np.dot / @ / inner / ndarray.dot / np.linalg.norm is a fused sum of
products in numdyn; NumPy computes it in one BLAS call whose overflow or
invalid warning names the function ("overflow encountered in dot", "... in
matmul"), where numdyn's re-run by NumPy named the multiply (or reduce).
np.vdot and np.einsum check no floating-point status at all: NumPy warns
nothing (nor raises under np.errstate(all="raise")), numdyn warned.
BLAS's (and einsum's) complex products round each part's two products
apart: (1e200+1e200j)**2 summed is nan+infj in NumPy, where the fused
complex multiply gave -inf+infj.

np.where(z != 0, np.log(z), 0) on complex zeros: the select was C's ?:,
whose arm GCC computed only where kept, so "divide by zero encountered in
log" was lost; complex z ** p of a zero with p not positive gave nan
without NumPy's "invalid value encountered in power".
"""
import numpy as np
import pytest

from oracle import check

DATA = {
    "f64_over": np.array([1e200, 1e200, 1.0]),
    "f64_sum_over": np.array([1e308, 1e308, 1.0]),
    "f64_invalid": np.array([np.inf, 0.0, 1.0]),
    "f32_over": np.array([1e30, 1e30, 1.0], np.float32),
    "c128_over": np.array([1e200 + 1e200j, 1.0, 2.0]),
    "c64_over": np.array([1e30 + 1e30j, 1.0, 2.0], np.complex64),
    "f64_long": np.concatenate([np.full(5000, 1e160), [np.inf, 0.0]]),
}

PRODUCTS = {
    "dot": lambda x, y: np.dot(x, y),
    "matmul_op": lambda x, y: x @ y,
    "matmul": lambda x, y: np.matmul(x, y),
    "inner": lambda x, y: np.inner(x, y),
    "method": lambda x, y: x.dot(y),
    "norm": lambda x, y: np.linalg.norm(x),
    "norm_2": lambda x, y: np.linalg.norm(x, 2),
    "vdot": lambda x, y: np.vdot(x, y),
    "einsum": lambda x, y: np.einsum("i,i", x, y),
    "einsum_out": lambda x, y: np.einsum("i,i->i", x, y),
    "einsum_sum": lambda x, y: np.einsum("i->", x * y),
    "dot_then_more": lambda x, y: np.dot(x, y) * 2 + x.sum(),
}


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_product_warnings(name, data):
    x = DATA[data]
    check(PRODUCTS[name], x, x.copy(), warnings=True)


@pytest.mark.parametrize("name", ["dot", "matmul_op", "method", "norm", "vdot", "einsum"])
@pytest.mark.parametrize("data", ["f64_over", "f64_invalid", "c128_over"])
def test_product_under_raise(name, data):
    fn = PRODUCTS[name]

    def raising(x, y):
        with np.errstate(all="raise"):
            return fn(x, y)

    x = DATA[data]
    check(raising, x, x.copy())


@pytest.mark.parametrize("name", ["dot", "matmul_op", "inner", "einsum"])
@pytest.mark.parametrize("data", ["c128_over", "c64_over"])
def test_complex_product_values_ignored(name, data):
    fn = PRODUCTS[name]

    def ignoring(x, y):
        with np.errstate(all="ignore"):
            return fn(x, y)

    x = DATA[data]
    check(ignoring, x, x.copy())


def test_matrix_norms_still_warn_in_multiply():
    a = np.full((3, 3), 1e200)
    check(lambda a: (np.linalg.norm(a), np.linalg.norm(a, axis=0), np.linalg.norm(a, "fro")),
          a, warnings=True)


def test_einsum_matrix_forms_silent():
    a = np.full((3, 3), 1e200)
    v = np.full(3, 1e200)
    check(lambda a, v: (np.einsum("ij,ij->i", a, a), np.einsum("ij,j->i", a, v),
                        np.einsum("ij->j", a * 1e108)), a, v, warnings=True)


ZEROS = np.array([0j, 1 + 1j, 0j, -0.0 + 0j, 2 + 0j, 1e-320 + 0j] * 700)


@pytest.mark.parametrize("n", [6, len(ZEROS)])
@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("expr", ["log", "log10", "sqrt_div", "pow_neg", "pow_im", "pow_c", "pow_pos"])
def test_complex_zeros(expr, dtype, n):
    z = ZEROS[:n].astype(dtype)
    fns = {
        "log": lambda z: np.where(z != 0, np.log(z), 0),
        "log10": lambda z: np.where(z.real > 0, np.log10(z), z),
        "sqrt_div": lambda z: np.where(z != 0, 1 / np.sqrt(z), 1),
        "pow_neg": lambda z: z ** -1.5,
        "pow_im": lambda z: np.power(z, 1j),
        "pow_c": lambda z: z ** (-2 + 0j),
        "pow_pos": lambda z: z ** (1 + 1j),
    }
    check(fns[expr], z, warnings=True)
