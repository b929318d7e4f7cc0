"""Values NumPy's item assignment refuses by their dims (session 28, probe10).

A list or tuple assigned through a basic index is converted with at most
the view's dims (PyArray_CopyObject): ``a[:3] = [[1, 2, 3]]`` on a 1-d array
is NumPy's ValueError ("setting an array element with a sequence ..."),
where the same value as an array broadcasts. Through one boolean array
with the array's dims the value must have 0 or 1 dims (TypeError), where
a fancy index (or a mask of the leading dims only) broadcasts ``(1, n)``.
numdyn broadcast both and returned arrays where NumPy raises.
"""
import numpy as np
import pytest

from oracle import check

import numdyn

CASES = {
    "list2d_into_1d": lambda a: a.__setitem__(slice(0, 3), [[1, 2, 3]]),
    "tuple2d_into_1d": lambda a: a.__setitem__(slice(0, 3), ((1, 2, 3),)),
    "list3d_into_2d": lambda a: a.reshape(2, 3).__setitem__(slice(None), [[[1, 2, 3]]]),
    "nested_scalar": lambda a: a.__setitem__(slice(0, 1), [[5]]),
    "ellipsis": lambda a: a.__setitem__(Ellipsis, [[1, 2, 3, 4, 5, 6]]),
    "list_of_arrays": lambda a: a.__setitem__(slice(0, 3), [np.array([1, 2, 3])]),
    "empty_nested": lambda a: a.__setitem__(slice(0, 0), [[]]),
    "list_into_mask": lambda a: a.__setitem__(a > 2, [[1, 2, 3]]),
    "array_into_mask": lambda a: a.__setitem__(a > 2, np.array([[1, 2, 3]])),
    "array_into_mask_2d": lambda a: a.reshape(2, 3).__setitem__(a.reshape(2, 3) > 2, np.array([[1, 2, 3]])),
    "list_into_mask_tuple": lambda a: a.__setitem__((a > 2,), [[1, 2, 3]]),
    # allowed: the same values where NumPy broadcasts them
    "array2d_into_1d": lambda a: a.__setitem__(slice(0, 3), np.array([[1, 2, 3]])),
    "list_into_fancy": lambda a: a.__setitem__([0, 1, 2], [[1, 2, 3]]),
    "array_into_row_mask": lambda a: a.reshape(2, 3).__setitem__(np.array([True, False]), np.array([[[7, 8, 9]]])),
    "list_into_column_mask": lambda a: a.reshape(2, 3).__setitem__((slice(None), np.array([True, False, True])), [[1, 2]]),
    "list_fits": lambda a: a.reshape(2, 3).__setitem__(slice(None), [[1, 2, 3], [4, 5, 6]]),
    "array_into_mask_1d_value": lambda a: a.__setitem__(a > 2, np.array([9, 8, 7])),
}


@pytest.mark.parametrize("lazy", [True, False], ids=["own", "caller"])
@pytest.mark.parametrize("case", list(CASES))
def test_setitem_value_dims_as_numpy(case, lazy):
    g = CASES[case]

    def f(a):
        if lazy:
            a = a * 1
        g(a)
        return a

    cf = numdyn.compile(f)
    for _ in range(2):
        check(f, make_args=lambda: (np.arange(6),), compiled=cf)
