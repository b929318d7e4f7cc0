"""Shape arguments taken from traced values (np.zeros(x[0]), a.reshape(n),
np.empty([x, 1])) are read as NumPy reads them: an integer array is a shape,
a float or bool is NumPy's TypeError with NumPy's message (a float scalar's
names its type; a bool is "an integer is required" inside a sequence and
"expected a sequence of integers or a single integer" alone)."""
import numpy as np
import pytest

import numdyn
from oracle import check


def shapes(x, k):
    if k == 0:
        return np.zeros(x)
    if k == 1:
        return np.zeros([x[0], 2])
    if k == 2:
        return np.ones((x.sum(),))
    if k == 3:
        return np.empty([x, 1])
    if k == 4:
        return np.full((2, x[1]), 1.0)
    if k == 5:
        return x.reshape(x[0])
    if k == 6:
        return x.reshape((x[0], -1))
    return list(range(x[0]))


_compiled = numdyn.compile(shapes)


@pytest.mark.parametrize("x", [np.array([2.0, 1.0]), np.array([2, 1]), np.array([True, False])],
                         ids=["float", "int", "bool"])
def test_shape_arguments_from_traced_values(x):
    for k in range(8):
        check(shapes, x, k, compiled=_compiled)


def array_valued(x, k):
    # integer arguments given as arrays: NumPy reads a 1-d array as a
    # sequence and a 0-d integer array as an integer (both have __index__,
    # which only the 0-d one honours)
    i = np.array([2, 4])
    if k == 0:
        return np.histogram(x, bins=np.arange(5))
    if k == 1:
        return np.split(x, i)
    if k == 2:
        return np.partition(x, i)
    if k == 3:
        return np.array_split(x, np.array(3))
    if k == 4:
        return np.roll(x, np.array(2))
    if k == 5:
        return np.tile(x, np.array([2]))
    if k == 6:
        return np.transpose(x.reshape(2, 3), np.array([1, 0]))
    if k == 7:
        return np.tensordot(x.reshape(2, 3), x.reshape(3, 2), axes=np.array(1))
    return np.diff(x, n=np.array(2))


_compiled_arrays = numdyn.compile(array_valued)


def test_integer_arguments_given_as_arrays():
    for k in range(9):
        check(array_valued, np.array([0.5, 3.0, 1.0, 2.5, 0.0, 1.5]), k, compiled=_compiled_arrays)
