"""np.linalg.inv in captured loops: singular and near-singular matrices.

NumPy's inv is LAPACK's ?gesv (OpenBLAS's LU), which raises "Singular
matrix" only for an exactly zero pivot. arange(1, 10).reshape(3, 3) is
singular, but its pivots depend on the order of the sums: LAPACK found an
exact zero and raised, the loop's Gauss-Jordan found one of 1e-16 and
returned a huge "inverse" -- a value where NumPy raises. A pivot that is
small against its column of the matrix (about sqrt(eps)) now hands the loop
to NumPy, which decides; a well-conditioned matrix, however badly scaled
its columns, still runs as C.
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls
from test_loops11_matmul import inverses, ran_as_c


def inv_store(Ms, out):
    for k in range(Ms.shape[0]):
        out[k] = np.linalg.inv(Ms[k])
    return out


def hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


SINGULAR = [
    np.arange(1.0, 10.0).reshape(3, 3),
    np.arange(1.0, 17.0).reshape(4, 4),
    np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]]),
    np.array([[3.0, 1, 2], [6, 2, 4], [1, 1, 1]]),
    hilbert(9),                                   # cond ~5e11: NumPy's own inverse
    np.array([[1.0, 1.0], [1.0, 1.0 + 2.0 ** -40]]),
]


@pytest.mark.parametrize("k", range(len(SINGULAR)))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_singular_and_near_singular_as_numpy(k, dtype):
    M = SINGULAR[k].astype(dtype)
    Ms = np.stack([np.eye(M.shape[0], dtype=dtype) * 2, M, np.eye(M.shape[0], dtype=dtype)])
    # NumPy's own inverse (the loop hands such a matrix to NumPy): equal to
    # far below what two elimination orders give for these (cond * eps)
    check_calls(inv_store, (Ms, np.zeros_like(Ms)), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scaled_columns_run_as_c(dtype):
    # a pivot is measured against its column: scaling the columns (units of
    # the unknowns) changes no decision; scaling the rows by 1e8 may (that
    # matrix's condition number is ~1e8: NumPy decides)
    D = np.diag([1e4, 1e-4, 1.0, 3e3]).astype(dtype)
    R = np.array([[1.0, 0.2, 0, 0], [0.1, 1.0, 0.3, 0], [0, 0.2, 1.0, 0.1], [0.05, 0, 0.1, 1.0]], dtype=dtype)
    Ms = np.stack([R @ D, D, R]).astype(dtype)
    check_calls(inv_store, (Ms, np.zeros_like(Ms)), rtol=1e-9 if dtype == "float64" else 1e-3, atol=1e-12)
    cf = numdyn.compile(inv_store)
    cf(Ms, np.zeros_like(Ms))
    ran_as_c(cf)


def test_the_singular_3x3_raises_linalgerror():
    A = np.zeros((3, 3))
    B = np.arange(1.0, 10.0).reshape(3, 3)
    outs = check_calls(inverses, (A, B, np.array([0.0]), np.zeros(1)))
    assert type(outs[0].exc).__name__ == "LinAlgError"
