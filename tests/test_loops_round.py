"""round(x) in captured loops.

`out[int(round(v * 10)) % n] += 1` was refused (a call of round()) and its
loop ran in Python. round(x) of a float (Python's or NumPy's) is Python's
int of x rounded half to even; NaN raises ValueError and an infinity
OverflowError at the same iteration (Python's own round() runs for them,
as for values past int64); round of an integer is the same int.
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import captured_close


def bucket(x, n):
    out = np.zeros(n, dtype=np.int64)
    for v in x:
        out[int(round(v * 10)) % n] += 1
    return out


def rounded(x):
    s = 0
    for i in range(x.shape[0]):
        s += round(x[i])
    return s


def halves(n):
    s = 0
    for k in range(-n, n):
        s = s * 3 + round(k + 0.5)
    return s


RNG = np.random.default_rng(41)


@pytest.mark.parametrize("fn,args", [
    (bucket, (RNG.random(200), 7)),
    (bucket, (RNG.random(200).astype(np.float32), 7)),
    (rounded, (np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996, 1e15 + 0.5]),)),
    (rounded, (np.array([0.5, 1.5, 2.5, -2.5], dtype=np.float32),)),
    (rounded, (np.arange(-5, 5, dtype=np.int16),)),
    (rounded, (np.array([1.0, np.nan, 2.0]),)),        # ValueError at i = 1
    (rounded, (np.array([1.0, -np.inf]),)),            # OverflowError
    (rounded, (np.array([1e19, 1.0]),)),               # past int64: Python's int
    (halves, (6,)),
])
def test_round_values(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    (bucket, (RNG.random(200), 7)),
    (rounded, (np.array([0.5, 1.5, 2.5, -0.5, -1.5]),)),
    (halves, (6,)),
])
def test_round_is_captured(fn, args):
    captured_close(fn, *args)
