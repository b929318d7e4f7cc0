"""out= given an element read is NumPy's TypeError, not a silent copy.

`o[1, 0]` of an array is a NumPy scalar, not an array, so NumPy refuses it
as out= ("return arrays must be of ArrayType"). The tracer holds such a read
as a lazy 0-d value, which reductions and ufuncs took as a 0-d out=: the call
returned the value and `o` was left unchanged.
"""
import numpy as np
import pytest

import numdyn


def _sum(a, o):
    return np.sum(a * 2, out=o[1, 0])


def _max(a, o):
    return a.max(out=o[1, 0])


def _mean(a, o):
    return np.mean(a, out=o[0, 1])


def _ufunc_pos(a, o):
    return np.add(a[:1], 1, o[1, 0])


def _ufunc_kw(a, o):
    return np.multiply(a[:1], 3, out=o[1, 0])


def _zero_d_ok(a, o):
    s = np.empty(())
    np.sum(a, out=s)
    np.add(a[:2], 1, out=o[0])
    return s, o


@pytest.mark.parametrize("fn", [_sum, _max, _mean, _ufunc_pos, _ufunc_kw])
def test_out_element_read_raises_as_numpy(fn):
    for impl in (fn, numdyn.compile(fn)):
        o = np.zeros((2, 2))
        with pytest.raises(TypeError, match="return arrays must be of ArrayType"):
            impl(np.arange(3.0), o)
        assert not o.any()


def test_zero_d_and_row_outs_still_written():
    o1, o2 = np.zeros((2, 2)), np.zeros((2, 2))
    s1, r1 = _zero_d_ok(np.arange(3.0), o1)
    s2, r2 = numdyn.compile(_zero_d_ok)(np.arange(3.0), o2)
    assert type(s2) is type(s1) and s2.shape == () and s2 == s1
    np.testing.assert_array_equal(o2, o1)
