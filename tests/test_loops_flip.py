"""np.flip of 1-D arrays in captured loops.

Levinson-Durbin's `np.dot(np.flip(r[:k]), y[:k])` and `y[:k] += alpha *
np.flip(y[:k])` were refused (a call of np.flip()) and the loop ran in
Python. np.flip(u) of a 1-D value is read back to front into a buffer
before the statement stores anything (NumPy's view is read whole by the
ufunc that consumes it, which buffers overlapping operands): `y[:k] +=
np.flip(y[:k])` reads every old element. np.flip of a 2-D array, or with
an axis, still runs in Python.
"""
import numpy as np
import pytest

from oracle import check
from programs_loops import levinson_durbin as durbin  # bench/programs_loops.py, the benchmark itself
from test_loop_capture import captured_close, run_both


def overlap_add(x):
    for k in range(0, x.shape[0]):      # k = 0: an empty flip
        x[:k] += 0.5 * np.flip(x[:k])
    return x


def flip_rows(A):
    for i in range(A.shape[0]):
        A[i] = np.flip(A[i, :])
    return A


def flip_dot(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.dot(np.flip(A[i]), A[i])
    return s


def flip_strided(x, out):
    for k in range(1, out.shape[0]):
        out[k] = np.sum(np.flip(x[1:2 * k:2]) * x[:k])
    return out


def flip_axis(x):
    for k in range(3):
        x = np.flip(x, 0)
    return x


def flip_2d(A, out):
    for i in range(out.shape[0]):
        out[i] = np.sum(np.flip(A) * i)
    return out


RNG = np.random.default_rng(11)


@pytest.mark.parametrize("fn,args", [
    (durbin, (RNG.random(60) * 0.1,)),
    (durbin, ((RNG.random(40) * 0.1).astype(np.float32),)),
    (overlap_add, (np.arange(9.0),)),
    (overlap_add, (np.arange(9, dtype=np.int16),)),       # UFuncTypeError, nothing stored
    (flip_rows, (np.arange(12.0).reshape(3, 4),)),
    (flip_rows, (np.arange(12, dtype=np.uint8).reshape(3, 4),)),
    (flip_rows, (np.asfortranarray(np.arange(12.0).reshape(3, 4)),)),
    (flip_dot, (np.arange(12.0).reshape(3, 4),)),
    (flip_strided, (np.arange(20.0), np.zeros(8))),
    (flip_strided, (np.arange(20, dtype=np.int32), np.zeros(8, dtype=np.int64))),
    (flip_axis, (np.arange(5.0),)),
    (flip_2d, (np.arange(6.0).reshape(2, 3), np.zeros(3))),
])
def test_flip_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (durbin, (RNG.random(30) * 0.1,)),
    (overlap_add, (np.arange(9.0),)),
    (flip_rows, (np.arange(12.0).reshape(3, 4),)),
    (flip_dot, (np.arange(12.0).reshape(3, 4),)),
    (flip_strided, (np.arange(20.0), np.zeros(8))),
])
def test_flip_is_captured(fn, args):
    captured_close(fn, *args)


@pytest.mark.parametrize("fn,args,why", [
    (flip_axis, (np.arange(5.0),), "unsupported number of arguments"),
    (flip_2d, (np.arange(6.0).reshape(2, 3), np.zeros(3)), "np.flip"),
])
def test_flip_not_captured_says_why(fn, args, why):
    exp, got, _, _, cf = run_both(fn, *args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(exp))
    info = cf._loop_info()
    assert len(info) == 1, info
    reason = info[0]["reason"] or info[0].get("last_fallback") or ""
    assert why in reason, info
