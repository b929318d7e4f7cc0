"""Programs the differential fuzzers found (make fuzz, session 12), each
against NumPy: the smallest program that showed each difference."""
import numpy as np
import pytest

import numdyn
from oracle import check


def full_wraps_to_width(a):
    # np.full(..., -1.0, dtype=uint32) holds 4294967295: a scalar node of a
    # narrow integer dtype is wrapped to its width when the eager backend
    # makes it a NumPy value (it raised OverflowError)
    v2 = np.full((4, 1), -1.0, dtype=np.uint32)
    v6 = (7 * v2).sum(dtype=np.uint8)
    v7 = v6 >= (v2 != a)
    return v7 / complex(1.0, 2.0), v7, np.full(3, -3.7, dtype=np.int8) * 1


@pytest.mark.parametrize("value", [np.array([1, 2]), np.array([5]), np.array([[5]]), [1, 2], [5], (1,),
                                   np.array([True, False])])
@pytest.mark.parametrize("dtype", [np.int8, np.float64])
def test_one_element_takes_no_sequence(backend, value, dtype):
    # a[i] = <array with dims or a list>: NumPy's scalar conversion raises
    # ("setting an array element with a sequence.", int()'s TypeError)
    def assign(a, v):
        a[1] = v
        return a

    def assign_lazy(a, v):
        a[-2] = np.asarray(v) * 1
        return a
    check(assign, np.zeros(5, dtype), value, backend=backend)
    check(assign_lazy, np.zeros(5, dtype), value, backend=backend)


def test_full_wraps_to_width(backend):
    check(full_wraps_to_width, np.array(3.0), backend=backend)


def test_copyto_onto_itself_is_a_no_op(backend):
    # NumPy skips copying a view onto itself before checking it is writeable
    def f(b):
        v = b.diagonal()
        np.copyto(v, v, where=v <= 0)
        np.copyto(v, v)
        return v * 2
    check(f, np.arange(9, dtype=np.int16).reshape(3, 3) - 4, backend=backend)


@pytest.mark.parametrize("a_shape,out_shape", [((2, 1), (1, 2)), ((1, 3), (2, 1)), ((4, 1, 3), (2, 3)),
                                               ((5,), (5, 1)), ((2, 3), (3,))])
def test_out_names_the_broadcast_with_the_output(backend, a_shape, out_shape):
    def f(a, out):
        np.add(a, 1, out=out)
        return out
    check(f, np.ones(a_shape), np.ones(out_shape), backend=backend)


@pytest.mark.parametrize("shape", [(2, 4), (4, 3)])
@pytest.mark.parametrize("op", ["astype", "copy", "np.copy", "zeros_like", "np.array", "add"])
def test_layout_of_copies_of_broadcast_arrays(backend, shape, op):
    # NumPy's copy/astype/*_like order a broadcast (zero-stride) dim innermost
    fns = {"astype": lambda b: b.astype(np.int16), "copy": lambda b: b.copy(), "np.copy": np.copy,
           "zeros_like": np.zeros_like, "np.array": np.array, "add": lambda b: b + 1}
    x = np.arange(float(shape[1])) if shape == (2, 4) else np.arange(float(shape[0]))[:, None]

    def f(x):
        r = fns[op](np.broadcast_to(x, shape))
        return r, r.ravel()
    check(f, x, backend=backend, check_layout=True)


def test_einsum_of_nothing_is_a_scalar(backend):
    check(lambda b: np.einsum("->", b), np.array(-9, dtype=np.int8), backend=backend)
    check(lambda b: np.einsum("ij", b), np.arange(4.0).reshape(2, 2), backend=backend)


def test_complex_to_bool_casts_do_not_warn(backend):
    # complex -> bool is a test for nonzero: NumPy gives no ComplexWarning
    # (complex -> int/float does warn, and still does under numdyn)
    import warnings

    def f(a, b):
        b[1] = np.complex128(1 + 2j)
        b[2] = 0j
        return a.astype(bool), np.array(a, dtype=bool), b
    g = numdyn.compile(f, backend=backend)
    a = np.array([1 + 2j, 0j, 0.5j])
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = g(a, np.zeros(3, bool))
        for x, y in zip(r, f(a, np.zeros(3, bool))):
            np.testing.assert_array_equal(x, y)
    with pytest.warns(np.exceptions.ComplexWarning):
        numdyn.compile(lambda a: a.astype(np.int8), backend=backend)(a)


@pytest.mark.parametrize("op", ["min", "sum", "max_where", "add_reduce", "float_initial"])
def test_reduction_initial_converts_as_numpy(backend, op):
    # initial= is np.asarray(initial, dtype): a Python int out of the
    # integer dtype's range is NumPy's OverflowError (found by the fuzzer:
    # a.min(axis=0, initial=-5) on uint8 returned 10)
    fns = {"min": lambda a: a.min(axis=0, initial=-5), "sum": lambda a: a.sum(initial=-5),
           "max_where": lambda a: a.max(initial=300, where=[False]),
           "add_reduce": lambda a: np.add.reduce(a, initial=-1),
           "float_initial": lambda a: a.min(initial=2.5)}
    check(fns[op], np.array([10], dtype=np.uint8), backend=backend)


@pytest.mark.parametrize("fn", ["np.ptp", "np.ptp_axis", "hasattr"])
def test_ptp_of_bool_and_no_ndarray_ptp_method(backend, fn):
    # NumPy 2: ptp of a bool array is NumPy's TypeError (no boolean
    # subtract), and ndarray has no .ptp method (the fuzzer found a
    # SystemError, and hasattr(x, "ptp") answering True)
    fns = {"np.ptp": lambda a: np.ptp(a), "np.ptp_axis": lambda a: np.ptp(a, axis=-1),
           "hasattr": lambda a: (hasattr(a, "ptp"), np.ptp(a.astype(np.int8)))}
    check(fns[fn], np.array([[False, True, False, False]]), backend=backend)
