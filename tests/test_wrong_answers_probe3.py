"""Wrong answers found by probe programs written as users write NumPy code
(session 21), each against NumPy.

1. ``np.int32(C) + a[i]`` -- a NumPy scalar on the left of a scalar the
   function computes (an element read kept lazy, ``x.sum()``) -- is NumPy's
   scalar math: it warns "overflow encountered in scalar add" where the
   int32 wraps (or raises under ``np.errstate(over="raise")``). The NumPy
   scalar's slot does not defer to the proxy, it calls the ufunc, so numdyn
   computed ``np.add``'s answer: no warning, a silent wrap. ``np.add(...)``
   itself still does not warn.
2. A reshape NumPy makes as a view of a computed array whose memory is not
   in C order (``z = x.transpose(2, 0, 1) * 1.5`` is laid out as x, so
   ``z.reshape(4, -1)`` merges dims adjacent in memory) was a copy: writes
   through it reached ``z`` inside the function (the graph's view) but the
   arrays handed back did not share memory, so a write after the call, or
   ``np.shares_memory``, differed from NumPy.
3. A method NumPy runs on a computed NumPy scalar that numdyn does not
   trace (``s.view(np.int64)`` of ``s = x.sum()``) ran on the 0-d array
   holding the scalar's value: the result was a 0-d array (NumPy: an
   ``np.int64``) aliasing the scalar's storage.
4. ``a @ b`` / ``np.dot`` / ``np.inner`` / ``np.vdot`` of float16 vectors
   multiplied in float16 and summed in float32: NumPy converts each element
   to float32, multiplies and sums there and rounds once, so
   ``[300, 300] . [300, -300]`` is 0 under NumPy and was nan (inf - inf);
   the overflow warning names matmul / dot, not multiply.
5. ``np.nan_to_num(s, copy=False)`` of a computed NumPy scalar wrote the
   scalar's storage (``s`` changed from inf to 1.8e308) where NumPy's
   ``np.array(s, copy=False)`` raises ValueError; of a 0-d array it returned
   the array where NumPy returns ``x[()]``, a NumPy scalar.
6. A computed NumPy scalar's mutating methods (``s.fill(1)``,
   ``s.put(0, 5)``, ``s.resize(1)``) wrote the scalar's storage: NumPy runs
   them on a new 0-d array of its value, and ``s`` stays as it was.
7. ``np.copyto(s, v)`` and ``np.put(s, i, v)`` of a computed NumPy scalar
   wrote it: NumPy's copyto raises TypeError ("... must be a numpy.ndarray,
   not numpy.float64"; the message lacked "a"), np.put runs the scalar's
   put on a new 0-d array; ``np.add.at(s, ...)`` raises "first operand must
   be array" (numdyn raised IndexError).
8. ``np.linalg.norm`` of a whole float16 array (no axis; ord None, 2 of a
   vector, 'fro') is NumPy's ``sqrt(x.dot(x))``, a float32 dot rounded
   once: numdyn summed float16 squares and warned "overflow encountered in
   cast" where NumPy's names dot.
"""
import numpy as np
import pytest

import numdyn
from oracle import check


# ------------------------------------ 1. NumPy scalar OP computed scalar

def scalar_left_of_element_reads(a):
    return (np.int8(100) + a[0], a[1] * np.int16(30000), np.uint8(3) - a[2], np.int8(-128) - a[0],
            np.int8(2) ** a[1], np.int8(5) // a[2], np.int8(5) % a[2])


def float_scalar_left_of_a_sum(x):
    return (np.float32(3e38) * x.sum(), np.float32(1.0) / (x.sum() - x.sum()),
            np.float32(-3e38) - x.max() * np.float32(1e38))


def ufunc_call_does_not_warn(a):
    return np.add(np.int32(2**31 - 1), a[0]), np.multiply(np.int32(2**30), a[1])


def scalar_left_under_errstate(a):
    with np.errstate(over="raise"):
        try:
            return np.int32(2**31 - 1) + a[0]
        except FloatingPointError as e:
            return str(e)


def scalar_left_in_a_loop(a, out):
    t = np.int16(0)
    for i in range(a.shape[0]):
        out[i] = np.int32(2**31 - 10) + a[i]
        t = np.int16(3) * t + a[i].astype(np.int16)
    return out, t


@pytest.mark.parametrize("a", [np.array([100, 7, 0], np.int8), np.array([-1, 2, 5], np.int8)])
def test_numpy_scalar_left_of_element_read_warns(backend, a):
    check(scalar_left_of_element_reads, a, backend=backend, warnings=True)


def test_numpy_scalar_left_of_computed_float(backend):
    check(float_scalar_left_of_a_sum, np.array([1.0, 2.0], np.float32), backend=backend,
          warnings=True)


def test_ufunc_call_with_numpy_scalar_does_not_warn(backend):
    check(ufunc_call_does_not_warn, np.array([5, 4], np.int32), backend=backend, warnings=True)


def test_numpy_scalar_left_raises_under_errstate(backend):
    check(scalar_left_under_errstate, np.array([1, 2], np.int32), backend=backend)


def test_numpy_scalar_left_in_captured_loop(backend):
    cf = numdyn.compile(scalar_left_in_a_loop, backend=backend)
    for n in (3, 3, 5):
        a = np.arange(n, dtype=np.int32) * 7 + 3
        check(scalar_left_in_a_loop, a, np.zeros(n, np.int32), compiled=cf, warnings=True)


# --------------------- 2. reshape views of arrays laid out as their input

def reshape_of_permuted_result(x):
    z = np.transpose(x, (2, 0, 1)) * 1.5
    w = z.reshape(z.shape[0], -1)
    w[0, 0] = 99
    w[:, 1] = -1
    return z, w, np.shares_memory(z, w), w.strides, z.strides


def reshape_of_argument(z):
    w = z.reshape(z.shape[0], -1)
    w[:, 1] = -1
    return z, w, np.shares_memory(z, w), w.strides


def reshapes_of_fortran_result(x):
    z = x.T * 2.0
    w = z.reshape(z.shape[0], -1)
    v = z.reshape(-1, z.shape[-1])
    v[0] = 5
    y = z[1:].reshape(-1, z.shape[2])
    return z, w, v, y, np.shares_memory(z, w), np.shares_memory(z, v), np.shares_memory(z, y)


def returned_reshape(x):
    z = np.transpose(x, (2, 0, 1)) * 1.5
    return z, z.reshape(z.shape[0], -1)


_rng = np.random.default_rng(0)
_x3 = _rng.random((2, 3, 4))


@pytest.mark.parametrize("x", [_x3, np.asfortranarray(_x3)])
def test_reshape_of_permuted_result_is_a_view(backend, x):
    check(reshape_of_permuted_result, x, backend=backend)
    check(reshapes_of_fortran_result, x, backend=backend)


@pytest.mark.parametrize("z", [_x3.transpose(2, 0, 1), np.asfortranarray(_x3)])
def test_reshape_of_argument_is_a_view(backend, z):
    check(reshape_of_argument, z, backend=backend)


def test_returned_reshape_shares_memory(backend):
    z, w = numdyn.compile(returned_reshape, backend=backend)(_x3.copy())
    ez, ew = returned_reshape(_x3.copy())
    w[0, 0] = ew[0, 0] = 99
    np.testing.assert_array_equal(z, ez)
    assert np.shares_memory(z, w)


# ---------------------------- 3. methods of a computed scalar NumPy runs

def view_of_a_sum(x):
    s = x.sum()
    v = s.view(np.int64)
    v += 1
    w = x.max().view(np.uint64)
    return s, v, w, s.view(), s.real, s.imag, s.base, s.T


def view_of_a_scalar_product(a0):
    s = a0 * 2                      # a 0-d array times 2: a NumPy scalar
    return s, s.view(np.int64), a0


@pytest.mark.parametrize("x", [np.arange(4.0), np.array([1.5, -2.0])])
def test_dtype_view_of_a_computed_scalar_is_a_scalar(backend, x):
    check(view_of_a_sum, x, backend=backend)
    check(view_of_a_scalar_product, np.array(x[1]), backend=backend)


# --------------------------------------------- 4. float16 vector products

def half_products(a, b):
    return a @ b, np.matmul(a, b), np.dot(a, b), np.inner(a, b), np.vdot(a, b), a.dot(b)


@pytest.mark.parametrize("a,b", [
    (np.array([300, 300], np.float16), np.array([300, -300], np.float16)),  # f16 products overflow
    (np.full(3, 60000, np.float16), np.full(3, 60000, np.float16)),         # the sum overflows
    (np.full(1000, 0.1, np.float16), np.full(1000, 0.1, np.float16)),
    (np.array([300, 300], np.float16), np.array([100, -100], np.int8)),
])
def test_float16_vector_products_accumulate_in_float32(backend, a, b):
    check(half_products, a, b, backend=backend, warnings=True)
    check(lambda a, b: np.vdot(a.reshape(1, -1), b[None]), a, b, backend=backend, warnings=True)


# --------------------------------------------- 5. nan_to_num(copy=False)

def nan_to_num_of_a_computed_scalar(x):
    s = x.sum() / 0
    try:
        r = np.nan_to_num(s, copy=False)
    except ValueError as e:
        r = str(e)
    t = x[0] * np.inf
    try:
        np.nan_to_num(t, copy=0)
    except ValueError:
        pass
    return s, r, t, np.nan_to_num(s)


def nan_to_num_of_a_0d_array(a):
    b = a * np.inf
    r = np.nan_to_num(b, copy=False)
    r2 = np.nan_to_num(a, copy=False, nan=-1.0)
    return a, b, r, r2


def nan_to_num_in_place(x):
    y = x * np.inf
    r = np.nan_to_num(y, copy=False, nan=-1.0, posinf=5)
    t = y[1:]
    np.nan_to_num(t, copy=False)
    return y, t, r is y


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_to_num_copy_false(backend):
    check(nan_to_num_of_a_computed_scalar, np.arange(3.0), backend=backend)
    check(nan_to_num_of_a_0d_array, np.array(np.nan), backend=backend)
    check(nan_to_num_of_a_0d_array, np.array(-1.0), backend=backend)
    check(nan_to_num_in_place, np.array([0.0, 1.0, -1.0]), backend=backend)


# -------------------------- 6. a computed scalar's mutating methods

def mutating_methods_of_a_scalar(x):
    s = x.max()
    t = x.sum()
    u = x[0] * 1
    r = [s.fill(1), t.put(0, 5), u.resize(1)]
    try:
        s.sort()
    except Exception as e:
        r.append(type(e).__name__)
    try:
        t.byteswap(True)
    except ValueError as e:
        r.append(str(e))
    return s, t, u, r


@pytest.mark.parametrize("x", [np.arange(4.0), np.arange(1, 5, dtype=np.int32)])
def test_mutating_methods_leave_a_computed_scalar(backend, x):
    check(mutating_methods_of_a_scalar, x, backend=backend)


# ------------------------- 7. NumPy functions given a computed scalar

def functions_writing_a_computed_scalar(x):
    s = x.sum()
    r = []
    for f in (lambda: np.copyto(s, 1.0), lambda: np.put(s, 0, 5), lambda: np.add.at(s, 0, 1),
              lambda: np.copyto([1.0], x[:1]), lambda: np.put(s, 3, 5)):
        try:
            r.append(f())
        except Exception as e:
            r.append(type(e).__name__ + ": " + str(e))
    return s, r


def test_numpy_functions_leave_a_computed_scalar(backend):
    check(functions_writing_a_computed_scalar, np.arange(3.0), backend=backend)
    check(functions_writing_a_computed_scalar, np.arange(3, dtype=np.int16), backend=backend)


# ------------------------------------- 8. float16 norm of a whole array

def half_whole_norms(a):
    r = [np.linalg.norm(a), np.linalg.norm(a, keepdims=True)]
    if a.ndim == 1:
        r += [np.linalg.norm(a, 2), np.linalg.norm(a, 2.0)]
    else:
        r += [np.linalg.norm(a, "fro"), np.linalg.norm(a, "f", keepdims=True)]
    return r


@pytest.mark.parametrize("a", [np.array([60000, 60000, -60000], np.float16),
                               np.full(1000, 0.1, np.float16), np.full((2, 2), 300, np.float16),
                               np.arange(6, dtype=np.float16).reshape(3, 2)])
def test_float16_norm_is_a_float32_dot(backend, a):
    check(half_whole_norms, a, backend=backend, warnings=True)
