"""np.sign in captured loops (scalars and 1-D arrays).

`np.sign(x[i])` was refused (a call of np.sign()) and its loop ran in
Python. NumPy's sign: x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x -- +0.0 for
-0.0, the NaN itself for a NaN with no 'invalid' warning (computed on the
bits: no compare that could flag it), -1/0/1 of the integer's own type, and
bool has no loop (TypeError: Python runs it).
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured_close


def sign_scaled(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.sign(x[i]) * 2
    return y


def sign_window(x, out):
    for i in range(out.shape[0]):
        out[i] = np.sum(np.sign(x[i:i + 3]))
    return out


def sign_python_scalars(n):
    s = 0
    for k in range(-n, n):
        s += np.sign(k) + np.sign(k * 0.5)
    return s


SPECIAL = np.array([-0.5, 0.0, -0.0, np.nan, 2.0, -np.inf, np.inf, 5e-324])


@pytest.mark.parametrize("fn,args", [
    (sign_scaled, (SPECIAL,)),
    (sign_scaled, (SPECIAL.astype(np.float32),)),
    (sign_scaled, (np.arange(-3, 4, dtype=np.int8),)),
    (sign_scaled, (np.arange(0, 4, dtype=np.uint16),)),
    (sign_scaled, (np.array([True, False]),)),               # no bool loop: TypeError
    (sign_window, (SPECIAL, np.zeros(6))),
    (sign_window, (np.arange(-3, 5, dtype=np.int32), np.zeros(5, dtype=np.int64))),
    (sign_python_scalars, (5,)),
])
def test_sign_values(fn, args):
    with np.errstate(invalid="raise"):   # a NaN gives no 'invalid' in NumPy
        check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (sign_scaled, (SPECIAL,)),
    (sign_scaled, (np.arange(-3, 4, dtype=np.int8),)),
    (sign_window, (SPECIAL, np.zeros(6))),
    (sign_python_scalars, (5,)),
])
def test_sign_is_captured(fn, args):
    captured_close(fn, *args)
