"""A store that fails inside the user's ``try`` block, into an array the
function made itself (session 27, probe9).

NumPy converts a scalar stored into an integer array with int() before it
writes: ``o[0] = s`` with ``s`` a NaN float64 raises ValueError ("cannot
convert float NaN to integer"), one out of range raises OverflowError, and
``o`` keeps what it held. Inside a ``try`` numdyn runs the pending graph at
once so the error reaches the handler (trace_handlers.c), but the failed
store stayed the array's current version: the handler's own writes were
made on top of it, and the return flush ran the store again and raised the
same error out of the function (NumPy returned). The write log that puts
caller arrays back covered caller arrays only; arrays the function made now
drop the stores NumPy did not make (trace_flush.c, rewind_own_stores).
Each program: first call, warm call, and calls with other values.
"""
import numpy as np
import pytest

from oracle import check

import numdyn


def _calls(fn, backend, *makers, floor=False):
    cf = numdyn.compile(fn, backend=backend, options={"floor": floor})
    for make in makers + makers[:1]:
        check(fn, make_args=make, compiled=cf)


def overflow_into_own_int32(a, b):
    o = np.zeros(5, dtype=np.int32)
    o += 1
    try:
        o[0] = a.max() * 1e10 * b
    except OverflowError:
        o[1] = 3
    return o


def nan_into_own_int64(a, b):
    o = np.zeros(5, dtype=np.int64)
    o += 2
    x = a.sum() / b * 0.0          # nan when b is 0 or inf
    try:
        o[3] = x
    except ValueError:
        o[4] = -1
    return o


def nan_through_a_view(a, b):
    o = np.zeros(4, dtype=np.int64)
    o2 = o[::2]
    try:
        o2[1] = a.sum() / b
    except (ValueError, OverflowError) as e:
        o2[0] = len(str(e))
    return o, o2


def second_store_fails(a, b):
    o = np.zeros(4, dtype=np.int8)
    try:
        o[0] = 3
        o[1] = a.max() * b
        o[2] = 4
    except OverflowError:
        pass
    return o


def stores_in_a_loop(a, b):
    out = np.ones(4, dtype=np.uint8)
    vals = a / b
    for i in range(4):
        try:
            out[i] = vals[i]
        except (ValueError, OverflowError):
            out[i] = 0
    return out


@pytest.mark.parametrize("fn", [overflow_into_own_int32, nan_into_own_int64, nan_through_a_view,
                                second_store_fails, stores_in_a_loop])
@pytest.mark.parametrize("floor", [False, True])
def test_failed_store_into_own_array(backend, fn, floor):
    _calls(fn, backend,
           lambda: (np.arange(5.0), 1.0), lambda: (np.arange(5.0), 0.0),
           lambda: (np.arange(5.0) + 1e4, 1e3), lambda: (np.arange(5.0), np.inf),
           floor=floor)


def test_failed_store_then_read_in_the_handler(backend):
    # the handler reads the array: it must see the value before the store
    def f(a, b):
        o = (a * 2).astype(np.int64)
        try:
            o[1] = a.sum() / b
        except ValueError:
            return o.sum(), o
        return -1, o
    _calls(f, backend, lambda: (np.arange(4.0), 0.0), lambda: (np.arange(4.0), 2.0))
