"""Differences from NumPy found by probe programs written as users write
NumPy code (session 22), each against NumPy.

1. A ufunc called with ``where=`` and no ``out=`` keyword
   (``np.multiply(a, 2, where=m)``) warns in NumPy 2: UserWarning "'where'
   used without 'out', expect unitialized memory in output...". An ``out=``
   keyword, even ``out=None``, silences it; a positional ``None`` or
   ``where=np.True_`` does not; ``where=True`` is no mask at all. numdyn
   recorded the op silently.
2. ``b.__array_interface__`` / ``b.__array_struct__`` of an array the
   function computes (what PIL's ``Image.fromarray`` and ctypes code read)
   raised AttributeError; they now give the concrete array's, and the
   address that went out is an escaped alias: writes through it are seen.
3. A float16 sum over axes that are not innermost in memory (``m.sum(0)``
   of a C-order matrix, ``t.sum(axis=(0, 2))``, ``np.nansum(m, 0)``, a
   strided whole-array sum) is added in float16 by NumPy, rounding at every
   step (its inner loop sums one contiguous run pairwise in float32, then
   adds it into the float16 result); numdyn summed everything in float32
   and rounded once: more exact, but up to ~0.3% (tens of float16 ulps) off
   NumPy's answer. Such sums now run in NumPy; the innermost-axis ones
   (``m.sum(1)``, an F-order ``m.sum(0)``, ``t.sum(axis=(1, 2))``) stay in
   the graph, where float32 gives NumPy's value. The same holds for
   ``m.prod(0)`` (NumPy multiplies a run in float32, the runs into float16).
   ``np.nanmean`` of float16 divides NumPy's float16 ``np.sum``: the total
   is rounded to float16 before the division (numdyn divided the float32
   total), and over outer axes it is summed in float16 (now in NumPy).
   ``m.var(0)`` / ``m.std(0)`` of float16 (NumPy's _var sums the mean and
   the squares in float16) likewise: 0.006 off on variances of ~1.
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


# ------------------------------- 2. __array_interface__ of a computed array

class _Interface:
    def __init__(self, d):
        self.__array_interface__ = d


def write_through_interface(a):
    b = a * 2
    c = np.asarray(_Interface(b.__array_interface__))
    c[0] = 99
    return b, b + 1, c.sum(), b.__array_interface__["shape"], b.__array_interface__["typestr"]


def write_through_argument_interface(a):
    c = np.asarray(_Interface(a.__array_interface__))
    c[-1] = -5
    return a.sum(), a


def array_struct(a):
    b = a[::2] * 3
    return type(b.__array_struct__).__name__, b, a.sum().__array_interface__["shape"]


@pytest.mark.parametrize("fn", [write_through_interface, write_through_argument_interface, array_struct])
def test_array_interface_of_a_lazy_array(backend, fn):
    cf = numdyn.compile(fn, backend=backend)
    for a in [np.arange(4.0), np.arange(4.0), np.arange(6.0).reshape(2, 3), np.arange(5, dtype=np.int32)[::-1]]:
        check(fn, a, compiled=cf)


# ------------------- 3. float16 sums over outer axes add in float16 (NumPy)

def half_sums(m, t):
    return (m.sum(0), np.add.reduce(m, axis=0), np.nansum(m, 0), (m * 2).sum(0), m[:, ::2].sum(),
            m.sum(0, where=m > 0), m.sum(0, initial=5), t.sum(axis=(0, 2)), t.sum(axis=(0, 1)),
            t.sum(axis=1), m.sum(1), m.T.sum(), t.sum(axis=(1, 2)), t.transpose(2, 0, 1).sum(axis=0))


def half_sums_in_float32(m):
    return m.sum(0, dtype=np.float32), m.mean(0), m.mean(), m.astype(np.float32).sum(0)


def test_half_sums_round_as_numpy(backend):
    cf = numdyn.compile(half_sums, backend=backend)
    rng = np.random.default_rng(0)
    for shape in [(200, 50), (200, 50), (64, 30)]:
        m = rng.standard_normal(shape).astype(np.float16)
        t = rng.standard_normal((20, 30, 40)).astype(np.float16)
        for mm in (m, np.asfortranarray(m)):
            check(half_sums, mm, t, compiled=cf, rtol=0, atol=0)
            check(half_sums_in_float32, mm, backend=backend)


def half_prods_and_nanmeans(m):
    return (m.prod(0), m.prod(1), m.prod(), np.nanmean(m, 0), np.nanmean(m, 1), np.nanmean(m),
            np.nanmean(m, 1, keepdims=True), m.var(0), m.std(0, ddof=1), m.var(1))


def test_half_prods_and_nanmeans_round_as_numpy(backend):
    cf = numdyn.compile(half_prods_and_nanmeans, backend=backend)
    rng = np.random.default_rng(1)
    for k in range(3):
        m = (1 + rng.standard_normal((300, 67)) * 0.5).astype(np.float16) * (1 + 2 * k)
        m[3, 4] = np.nan if k == 1 else m[3, 4]
        for mm in (m, np.asfortranarray(m)):
            check(half_prods_and_nanmeans, mm, compiled=cf, rtol=0, atol=0)
