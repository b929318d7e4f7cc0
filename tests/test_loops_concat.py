"""np.concatenate((u, v, ...)) of 1-D arrays and np.array([x, y, ...]) of
scalars inside captured loops (issue 17; issue 13's seam carving, whose row
loop pads each row with np.concatenate((np.array([np.inf]), M[i - 1, :-1]))
and ran as NumPy calls). Each is computed into a buffer first, its dtype
NumPy's (array promotion; a Python scalar's default dtype in np.array), its
elements cast as NumPy casts them. The oracle is plain Python/NumPy:
values, dtypes, arguments afterwards, exceptions, warnings."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls


def ran_as_c(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def seam_rows(E):
    M = E.copy()
    for i in range(1, E.shape[0]):
        left = np.concatenate((np.array([np.inf]), M[i - 1, :-1]))
        right = np.concatenate((M[i - 1, 1:], np.array([np.inf])))
        M[i] += np.minimum(np.minimum(left, M[i - 1]), right)
    return M, left


def mixed_items(a, k, s):
    for i in range(a.shape[0] - 1):
        t = np.array([a[i], k, a[i + 1] * 2, s])    # NumPy's dtype of the four
        a[i] = np.sum(t[1:]) + a[i + 1]
    return a, t


def rotate(out, x, y):
    for i in range(out.shape[0]):
        out[i, :] = np.concatenate((x[i:], y, x[:i]))   # int32, other dtype, int32
    return out


def roll_in_place(x, n):
    for _ in range(n):
        x[:] = np.concatenate((x[1:], x[:1]))   # reads what it writes: a buffer first
    return x


def cat_sum(a, b):
    s = 0
    for i in range(a.shape[0] + 1):
        s += np.sum(np.concatenate((a[i:], b[:i], np.array([i, 1]))))
    return s


def bad_store(out, x):
    for i in range(out.shape[0]):
        out[i, :] = np.concatenate((x, x[:i]))    # shapes differ after row 0: ValueError
    return out


def big_item(a, big):
    for i in range(a.shape[0]):
        t = np.array([big, a[i]])       # a Python int past int64: NumPy's uint64 or object
    return t


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
@pytest.mark.parametrize("shape", [(6, 7), (4, 1), (3, 2)])
def test_seam_rows(dtype, shape):
    E = arr(dtype, shape, seed=sum(shape))
    check_calls(seam_rows, (E,))     # int32: NumPy's UFuncTypeError at `M[i] +=` of float64
    if dtype != "int32":
        cf = numdyn.compile(seam_rows)
        cf(E)
        ran_as_c(cf)


@pytest.mark.parametrize("adt,k,s", [
    ("float64", 3, 2.5), ("float32", 3, 2.5), ("float32", np.float32(1.5), np.float32(2)),
    ("int8", 3, np.int8(4)), ("uint8", True, np.uint8(7)), ("int64", np.uint64(5), 1),
    ("int16", np.int8(-2), False)])
def test_array_items(adt, k, s):
    a = arr(adt, 7, seed=3)
    check_calls(mixed_items, (a, k, s))
    cf = numdyn.compile(mixed_items)
    cf(a.copy(), k, s)
    ran_as_c(cf)


@pytest.mark.parametrize("odt,xdt,ydt", [
    ("float64", "int32", "float32"), ("int16", "int8", "uint8"), ("float32", "float32", "bool"),
    ("int64", "int64", "int64")])
def test_concatenate_dtypes(odt, xdt, ydt):
    out = np.zeros((5, 8), dtype=odt)
    x, y = arr(xdt, 5, seed=1), arr(ydt, 3, seed=2)
    check_calls(rotate, (out, x, y), (out[:, ::-1], x, y))
    cf = numdyn.compile(rotate)
    cf(out.copy(), x, y)
    ran_as_c(cf)


def test_reads_what_it_writes():
    x = arr("float64", 9, seed=4)
    check_calls(roll_in_place, (x, 4), (x[::2], 3))
    cf = numdyn.compile(roll_in_place)
    cf(x.copy(), 4)
    ran_as_c(cf)


@pytest.mark.parametrize("dt", ["int64", "float32", "uint8"])
def test_in_reduction(dt):
    check_calls(cat_sum, (arr(dt, 6, seed=5), arr(dt, 6, seed=6)))
    cf = numdyn.compile(cat_sum)
    cf(arr(dt, 6, seed=5), arr(dt, 6, seed=6))
    ran_as_c(cf)


def test_shape_error_as_numpy():
    check_calls(bad_store, (np.zeros((3, 4)), arr("float64", 4)))


@pytest.mark.parametrize("big", [2 ** 63, 2 ** 70, -(2 ** 64), 5])
def test_big_python_int(big):
    check_calls(big_item, (arr("int64", 3), big))
