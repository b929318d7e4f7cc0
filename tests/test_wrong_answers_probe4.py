"""Differences from NumPy found by probe programs written as users write
NumPy code (session 22), each against NumPy.

1. A ufunc called with ``where=`` and no ``out=`` keyword
   (``np.multiply(a, 2, where=m)``) warns in NumPy 2: UserWarning "'where'
   used without 'out', expect unitialized memory in output...". An ``out=``
   keyword, even ``out=None``, silences it; a positional ``None`` or
   ``where=np.True_`` does not; ``where=True`` is no mask at all. numdyn
   recorded the op silently.
"""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check


# -------------------------------------------- 1. where= without out= warns

def where_without_out(a, b):
    r = np.multiply(a, 2, where=b < 0)
    s = np.add(a, b, None, where=a > 0)
    u = np.subtract(a, 1, where=np.True_)
    return np.where(b < 0, r, 0), np.where(a > 0, s, 0), u


def where_with_out_keyword(a, b):
    r = np.multiply(a, 2, where=b < 0, out=None)
    s = np.add(a, b, where=a > 0, out=(None,))
    full = np.full_like(a, -1.0)
    np.add(a, b, out=full, where=a > 0)
    return np.where(b < 0, r, 0), np.where(a > 0, s, 0), full, np.add(a, 1, where=True)


@pytest.mark.parametrize("fn", [where_without_out, where_with_out_keyword])
def test_where_without_out_warns(backend, fn):
    cf = numdyn.compile(fn, backend=backend)
    rng = np.random.default_rng(0)
    for shape in [(6,), (6,), (3, 4)]:
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        check(fn, a, b, compiled=cf, warnings=True)


def test_where_without_out_warns_on_every_call():
    cf = numdyn.compile(where_without_out)
    a = np.arange(5.0) - 2
    for _ in range(3):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            cf(a, -a)
        assert [str(x.message)[:40] for x in w] == ["'where' used without 'out', expect uniti"] * 3
