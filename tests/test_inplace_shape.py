"""Arrays whose shape changes in place, and new arrays' memory order.

`a.shape = s` and `a.resize(...)` change the array object itself: an
argument leaves the call with its new shape (and, for resize, new memory),
as under NumPy. resize used to write the resized copy back into the old
storage (a shrunk argument came back with uninitialized elements, a grown
local lost its new elements) and `x.shape = s` of an argument left the
caller's array as it was. np.zeros/ones/empty/full/eye ignored order='F':
ravel('K'), tobytes('A'), strides and flags were C order's.
"""
import numpy as np
import pytest

import numdyn
from oracle import check


def grow_local(n):
    a = np.arange(float(n))
    a.resize(8, refcheck=False)
    return a


def grow_local_2d(n):
    a = np.arange(float(n))
    a.resize((2, 4))
    return a * 2


def grow_after_write(n):
    a = np.zeros((2, 3))
    a[0] = 1
    a.resize((3, 3))
    return a


def grow_fortran(n):
    a = np.zeros((2, 3), order="F")
    a[0] = 1
    a.resize((3, 3))
    return a, a.flags.f_contiguous


def resize_forms(n):
    a = np.arange(float(n))
    a.resize(None)
    a.resize()
    a.resize(2, 3)
    return a


def resize_viewed(n):
    a = np.arange(float(n))
    b = a[:2]
    a.resize(8)
    return a, b


def resize_not_owner(n):
    a = np.arange(float(n)).reshape(2, 3)
    a.resize(7)
    return a


def resize_bad_shape(n):
    a = np.arange(float(n))
    a.resize((2, -1))
    return a


def shrink_arg(x):
    x.resize((3,), refcheck=False)
    x += 1
    return x


def grow_arg_after_write(x):
    x *= 2
    x.resize(8, refcheck=False)
    return x


def resize_arg_refcheck(x):
    x.resize((3,))
    return x


def shape_arg(x):
    x.shape = (2, 3)
    x[0] = 5
    return x.T.sum(0)


def shape_arg_view_before(x):
    v = x[1:]
    x.shape = (3, 2)
    v += 1
    return x


def shape_arg_bad(x):
    x.shape = (4, 2)
    return x


@pytest.mark.parametrize("fn", [grow_local, grow_local_2d, grow_after_write, grow_fortran,
                                resize_forms, resize_viewed, resize_not_owner,
                                resize_bad_shape])
def test_resize_local(fn):
    check(fn, 6, check_layout=True)


@pytest.mark.parametrize("fn", [shrink_arg, grow_arg_after_write, resize_arg_refcheck,
                                shape_arg, shape_arg_view_before, shape_arg_bad])
def test_argument_changes_shape(fn):
    # check() compares the argument's shape and values after the call
    check(fn, np.arange(6.0))


def test_argument_shape_seen_by_caller():
    x = np.arange(6.0)
    numdyn.compile(shape_arg)(x)
    assert x.shape == (2, 3)
    assert x.tolist() == [[5.0, 5.0, 5.0], [3.0, 4.0, 5.0]]


def fortran_layouts(n):
    a = np.zeros((2, 3), order="F")
    a[0] = 1
    b = np.ones((2, 3), order="f") * 2
    c = np.full((3, 2), 7.0, order="F")
    e = np.eye(3, order="F")
    e[0, 2] = 5
    return (a.ravel(order="K"), a.tobytes(order="A"), a.strides, a.T.flags.c_contiguous,
            b.strides, c.ravel("K"), c.flags.f_contiguous, e.ravel("K"), np.empty((2, 2), "F").strides)


def test_creation_order_f():
    check(fortran_layouts, 1, check_layout=True)


@pytest.mark.parametrize("order", ["A", "K", "X", "CF", 1])
@pytest.mark.parametrize("make", [lambda o: np.zeros((2, 3), order=o),
                                  lambda o: np.full((2, 3), 1.0, order=o),
                                  lambda o: np.eye(2, order=o)])
def test_creation_order_errors(make, order):
    def f(o):
        return make(o)
    check(f, order)
