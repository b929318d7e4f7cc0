"""Axis arguments that are not integers -- floats, bools, np.float64,
np.bool_, strings, tuples holding them -- against NumPy (session 27,
probe9).

NumPy reads an axis through one of three converters, which take the same
integers and differ in what they refuse (shim_internal.h, nd_axis_conv):
operator.index (ufunc reductions, swapaxes, diagonal), PyArray_AxisConverter
(take, repeat, concatenate, append, argsort, argmax, cumsum: a bool is "an
integer is required for the axis") and normalize_axis_index (stack, sort,
partition, trace, diff, expand_dims, take_along_axis, mean/var/std and the
entries of normalize_axis_tuple: a float is "integer argument expected,
got float"). numdyn read every axis the first way, so:

1. **wrong answers**: ``np.take(a, i, axis=True)``, ``np.repeat(a, 2,
   axis=True)``, ``np.concatenate(..., axis=True)``, ``np.append(...,
   axis=True)``, ``a.take(i, True)``, ``a.repeat(2, True)`` returned arrays
   where NumPy raises TypeError; ``np.linalg.norm(a, axis='0')`` raised
   where NumPy takes int(axis);
2. ``np.moveaxis(a, (0, 1.0), 0)`` and ``np.moveaxis(a, '0', 0)`` raised
   SystemError (the AxisError check imported a module with the TypeError
   still set); ``np.unstack(a, axis=(1,))`` raised where NumPy returns;
3. the TypeError texts of ~60 other (function, axis) pairs differed
   (``np.expand_dims(a, 1.0)``, ``np.mean(a, 1.0)``, ``np.sort(a,
   axis=np.float64(1))``, ``np.argmax(a, axis=(True,))``,
   ``np.maximum.accumulate(a, axis=None)``'s ValueError ...).
"""
import numpy as np
import pytest

from oracle import check

import numdyn

AXES = ["1.0", "True", "np.float64(1)", "np.bool_(False)", "np.array(1.0)", "(0, 1.0)", "(True,)",
        "'0'", "None"]
FUNCS = [
    "np.mean(a, axis={})", "np.std(a, axis={})", "np.var(a, axis={})", "a.mean(axis={})",
    "np.argmax(a, axis={})", "a.argmin({})", "np.cumsum(a, axis={})", "a.cumprod({})",
    "np.sort(a, axis={})", "a.sort({})", "np.argsort(a, axis={})", "np.partition(a, 1, axis={})",
    "np.expand_dims(a, {})", "np.flip(a, {})", "np.flip(a, axis=[{}])",
    "np.concatenate([a, a], axis={})", "np.append(a, a, axis={})", "np.stack([a, a], axis={})",
    "np.take(a, [0, 1], axis={})", "a.take([0], {})", "np.repeat(a, 2, axis={})", "a.repeat(2, {})",
    "np.diff(a, axis={})", "np.moveaxis(a, {}, 0)", "np.unstack(a, axis={})",
    "np.take_along_axis(a, np.argsort(a, axis=1), axis={})", "np.trace(a, axis1={})",
    "a.trace(0, {}, 1)", "np.diagonal(a, axis1={})", "np.swapaxes(a, {}, 0)",
    "np.maximum.accumulate(a, axis={})", "np.linalg.norm(a, axis={})", "np.median(a, axis={})",
]
CASES = [f.replace("{}", ax) for f in FUNCS for ax in AXES]


def _m2():
    return (np.arange(12.0).reshape(3, 4),)


def _m3():
    return (np.arange(24.0).reshape(2, 3, 4),)


@pytest.mark.parametrize("expr", CASES)
def test_axis_argument_kinds(backend, expr):
    fn = eval(f"lambda a: {expr}", {"np": np})
    cf = numdyn.compile(fn, backend=backend, options={"floor": False})
    for make in (_m2, _m2, _m3):
        check(fn, make_args=make, compiled=cf)
