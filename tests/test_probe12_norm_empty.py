"""np.linalg.norm's max-based orders of empty arrays are 0, as NumPy's.

NumPy 2's norm takes `abs(x).max(axis, initial=0)` for a vector's inf-norm
and `add.reduce(abs(x), axis).max(axis, initial=0)` for a matrix's 1- and
inf-norms (and svd's amax for ord=2 with initial=0): an empty vector or a
matrix with a zero-length axis gives 0.0. numdyn took the max without the
initial and raised "zero-size array to reduction operation maximum which
has no identity". The min-based orders (-inf, -1) still raise, as NumPy's.
"""
import numpy as np
import pytest

from oracle import check

VECTORS = [np.array([], dtype=float), np.zeros(0, np.float32), np.array([np.nan, 1.0]),
           np.array([-3.0, 2.0]), np.array([1 + 1j, -3j]), np.zeros(0, np.complex128)]
MATRICES = [np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 0)), np.ones((2, 3)),
            np.array([[np.nan, 1.0], [2, 3]])]


@pytest.mark.parametrize("ord_", [np.inf, -np.inf, "inf_keepdims"])
@pytest.mark.parametrize("i", range(len(VECTORS)))
def test_vector_inf_norms(i, ord_):
    if ord_ == "inf_keepdims":
        check(lambda x: np.linalg.norm(x, np.inf, keepdims=True), VECTORS[i])
    else:
        check(lambda x: np.linalg.norm(x, ord_), VECTORS[i])


@pytest.mark.parametrize("ord_", [1, -1, np.inf, -np.inf, 2, "nuc"])
@pytest.mark.parametrize("i", range(len(MATRICES)))
def test_matrix_norms(i, ord_):
    check(lambda x: np.linalg.norm(x, ord_), MATRICES[i])


def test_axis_forms():
    check(lambda x: (np.linalg.norm(x, np.inf, axis=1), np.linalg.norm(x, 1, axis=(1, 0)),
                     np.linalg.norm(x, np.inf, axis=(0, 1), keepdims=True)), np.zeros((3, 0)))
