"""Reductions walk their input's memory order, as NumPy's iterator does.

NumPy reduces with the axes sorted by memory (nditer): a Fortran array's
column sums are pairwise sums down each contiguous column, its row sums add
column after column. numdyn's reduction kernels over a Fortran-ordered
input, a transposed view of a C-ordered one, or a value NumPy lays out in
another order (a ufunc of Fortran arrays) take that order too (pass_schedule.c
reduce_memory_order): the same values in every layout, NumPy's accuracy
(a float32 column sum of a Fortran array was a sequential sum, 20x NumPy's
error) and unit-stride walks.
"""
import numpy as np
import pytest

import numdyn

from oracle import assert_same


def _compile(fn):
    return numdyn.compile(fn, options={"floor": False})


def _layouts(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        base = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind in "iu":
        base = rng.integers(-50, 50, shape).astype(dtype)
    elif np.dtype(dtype).kind == "c":
        base = (rng.random(shape) + 1j * rng.random(shape)).astype(dtype)
    else:
        base = (rng.random(shape) + 0.5).astype(dtype)
    c = np.ascontiguousarray(base)
    return {
        "C": c,
        "F": np.asfortranarray(base),
        "T of C": np.ascontiguousarray(base.T),   # used through .T below
    }


REDUCERS = {
    "sum": lambda a, ax: a.sum(axis=ax),
    "prod": lambda a, ax: (a * 0.01 + 1).prod(axis=ax),
    "max": lambda a, ax: a.max(axis=ax),
    "var": lambda a, ax: a.var(axis=ax),
    "sum keepdims": lambda a, ax: a.sum(axis=ax, keepdims=True),
}


def _all(a, ax):
    return [red(a, ax) for red in REDUCERS.values()]


@pytest.mark.parametrize("shape,ax", [((37, 29), 0), ((37, 29), 1), ((6, 7, 9), 1),
                                      ((6, 7, 9), (1, 2)), ((6, 7, 9), (0, 2))])
def test_reductions_in_every_layout(shape, ax):
    f = _compile(lambda a: _all(a, ax))
    for name, x in _layouts(shape, np.float64).items():
        if name == "T of C":
            if len(shape) == 2:   # a.T of a C array: the same kernels as F's
                assert_same(_compile(lambda a: _all(a.T, ax))(x), _all(x.T, ax))
        else:
            assert_same(f(x), _all(x, ax))


@pytest.mark.parametrize("dtype", ["float32", "int32", "complex128"])
def test_dtypes_of_fortran_reductions(dtype):
    f = _compile(lambda a: (a.sum(axis=0), a.sum(axis=1), a.max(axis=0), a.sum()))
    for name, x in _layouts((33, 21), dtype, seed=3).items():
        if name == "T of C":
            continue
        assert_same(f(x), (x.sum(axis=0), x.sum(axis=1), x.max(axis=0), x.sum()))


def test_a_ufunc_of_fortran_arrays_reduces_in_their_order():
    # np.exp of a Fortran array is Fortran (NumPy's order K): its sums too
    x = np.asfortranarray(np.random.default_rng(1).random((300, 200)))
    f = _compile(lambda a: (np.exp(a).sum(axis=0), np.exp(a).sum(axis=1), (a * 2).max(axis=1)))
    assert_same(f(x), (np.exp(x).sum(axis=0), np.exp(x).sum(axis=1), (x * 2).max(axis=1)))


def test_negative_strides_and_transposed_views():
    x = np.random.default_rng(2).random((40, 30, 5))
    fns = [lambda a: a[::-1].T.sum(axis=0), lambda a: a.transpose(1, 0, 2).sum(axis=(0, 2)),
           lambda a: a.T[:, ::2].sum(axis=1), lambda a: np.swapaxes(a, 0, 2).mean(axis=0)]
    for fn in fns:
        assert_same(_compile(fn)(x), fn(x))


@pytest.mark.parametrize("layout", ["C", "F"])
def test_arg_reductions_keep_numpy_ties(layout):
    # ties everywhere: the first index along the axis, and for axis=None the
    # first C-order flat index whatever the memory order
    x = np.zeros((8, 6))
    x[[1, 3, 5], [2, 2, 4]] = 5.0
    x[[2, 6], [0, 5]] = -5.0
    x = np.asfortranarray(x) if layout == "F" else x
    f = _compile(lambda a: (a.argmax(axis=0), a.argmax(axis=1), a.argmax(), a.argmin(),
                            np.argmin(a, axis=0), np.argmax(a.T, axis=0)))
    assert_same(f(x), (x.argmax(axis=0), x.argmax(axis=1), x.argmax(), x.argmin(),
                       np.argmin(x, axis=0), np.argmax(x.T, axis=0)))


def test_fortran_float32_column_sums_are_as_accurate_as_numpys():
    # down each contiguous column (NumPy's pairwise order), not across the
    # rows one at a time: a sequential float32 sum of 3000 terms was ~20x
    # NumPy's error
    x = np.asfortranarray(np.random.default_rng(0).random((3000, 400), dtype=np.float32) + 1)
    exact = x.astype(np.float64).sum(axis=0)
    got = _compile(lambda a: a.sum(axis=0))(x)
    want = x.sum(axis=0)
    err = np.max(np.abs(got - exact) / exact)
    np_err = np.max(np.abs(want - exact) / exact)
    assert got.dtype == np.float32
    assert err <= 2 * np_err + 1e-9, (err, np_err)
