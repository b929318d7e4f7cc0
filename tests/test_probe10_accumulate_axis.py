"""ufunc.accumulate's axis argument (session 28, probe10).

NumPy's ufunc methods read ``axis`` themselves (PyUFunc_GenericReduction):
a tuple names axes element by element and accumulate then wants exactly
one, so ``np.add.accumulate(a, axis=(1,))`` works, ``(0, 1)`` and ``()`` are
"accumulate does not allow multiple axes", ``(0, 1.0)`` names the float;
None is every axis (one of a 1-d array: it works); a 0-d array is a
TypeError unless the axis is out of range first. numdyn read any tuple as
one integer: programs passing ``axis=(1,)`` raised TypeError where NumPy
returns, and the errors named the tuple.
"""
import numpy as np
import pytest

from oracle import check

import numdyn

AXES = [(0,), (1,), (-1,), (np.int32(1),), (np.array(1),), (0, 1), (0, 0), (), (0, 1.0), (1.0,),
        (2,), (0, 5), (5, 1.0), (None,), ((0,),), (True,), (0, 1, 2), None, 0, -1, 1, -3, 1.0, True,
        [0], np.int64(1), np.array(0), (0,) * 40]
ARRAYS = {"2d": lambda: np.arange(6.0).reshape(2, 3), "1d": lambda: np.arange(4.0),
          "0d": lambda: np.array(2.0), "int8": lambda: np.arange(12, dtype=np.int8).reshape(3, 4)}


@pytest.mark.parametrize("arr", list(ARRAYS))
@pytest.mark.parametrize("axis", AXES, ids=repr)
def test_accumulate_axis_as_numpy(arr, axis):
    def maximum_acc(a):
        return np.maximum.accumulate(a, axis=axis)

    def add_acc_positional(a):
        return np.add.accumulate(a * 2, axis)

    def multiply_acc_dtype(a):
        return np.multiply.accumulate(a, axis=axis, dtype=np.float32)

    for fn in (maximum_acc, add_acc_positional, multiply_acc_dtype):
        cf = numdyn.compile(fn)
        for _ in range(2):
            check(fn, make_args=lambda: (ARRAYS[arr](),), compiled=cf)


def test_accumulate_default_axis_of_a_0d_array():
    def f(a):
        return np.add.accumulate(a)
    check(f, np.array(3.0))
