"""Idioms of real NumPy programs (NPBench and others) the shim covers:
reductions into an out= of another dtype."""
import numpy as np
import pytest

from oracle import check

rng = np.random.default_rng(0)
A = rng.random((5, 4)) * 3


def sum_into(a, o):
    np.sum(a, out=o)
    return o


def add_reduce_into(a, o):
    np.add.reduce(a, axis=1, out=o)
    return o


def mean_into(a, o):
    np.mean(a, axis=0, out=o)
    return o


def prod_method_into(a, o):
    return a.prod(axis=0, out=o)


def var_std_into(a, o):
    np.var(a, axis=0, out=o[0])
    np.std(a, axis=0, out=o[1])
    return o


# out= without dtype=: NumPy's loop is out's dtype promoted with the
# operand's (a float32 sum into float64 adds in float64; numdyn added in
# float32 and cast: 42 of 336 such dtype pairs were off by float32 rounding)
@pytest.mark.parametrize("fn, adt, odt, shape", [
    (sum_into, np.float32, np.float64, ()),
    (add_reduce_into, np.float32, np.float64, (5,)),
    (mean_into, np.complex64, np.complex128, (4,)),
    (mean_into, np.float64, np.float32, (4,)),   # and not simply out's dtype: float64 here
    (prod_method_into, np.float32, np.float64, (4,)),
    (var_std_into, np.complex64, np.float64, (2, 4)),   # _var's last sum only
])
def test_reduction_into_out_of_other_dtype(fn, adt, odt, shape):
    # small integers: every sum exact in any order (complex64's mean too)
    a = np.floor(A * 3) if fn is var_std_into else A
    check(fn, a.astype(adt), np.zeros(shape, odt), backend="native")
