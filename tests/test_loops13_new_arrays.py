"""np.zeros / np.empty / np.ones made inside a captured loop's body
(issue 17): `t = np.zeros(3)`, `np.zeros((n, m), dtype=np.int32)`,
`np.ones(k, float)`.

Before, the loop ran in Python ("a call of np.zeros() at line N"). Each
call makes a fresh array (a pool slot no name holds: an array kept from an
earlier iteration is never written through the new one), C-ordered, of
NumPy's default float64 or the dtype given; a negative size is NumPy's
ValueError at the same iteration (Python reruns the loop), and an array
handed back after the loop is an ndarray of the last iteration's values.
"""
import numpy as np
import pytest

import numdyn
from test_loop_capture import run_both, captured


def moments(a):
    """per element, a small feature vector built in a fresh array"""
    n = a.shape[0]
    out = np.zeros(n)
    for i in range(n):
        t = np.zeros(3)
        t[0] = a[i]
        t[1] = a[i] * a[i]
        t[2] = abs(a[i])
        out[i] = t.sum() + t[1]
    return out


def window_counts(x, k, lo, hi):
    """histogram of each window into a fresh int32 array; keeps the last"""
    n = x.shape[0]
    peaks = np.zeros(n - k + 1, dtype=np.int64)
    for i in range(n - k + 1):
        h = np.zeros(4, dtype=np.int32)
        for j in range(i, i + k):
            b = int((x[j] - lo) / (hi - lo) * 4)
            if b < 0:
                b = 0
            if b > 3:
                b = 3
            h[b] += 1
        peaks[i] = np.argmax(h)
    return peaks, h


def local_grids(U, r):
    """(2r+1) x (2r+1) neighbourhoods copied into a fresh 2-D array"""
    n, m = U.shape
    s = np.zeros((n, m))
    for i in range(r, n - r):
        for j in range(r, m - r):
            P = np.empty((2 * r + 1, 2 * r + 1))
            for a in range(2 * r + 1):
                for b in range(2 * r + 1):
                    P[a, b] = U[i - r + a, j - r + b]
            s[i, j] = np.max(P) - np.min(P)
    return s


def ones_weights(x, k):
    acc = 0.0
    for i in range(x.shape[0] - k + 1):
        w = np.ones(k, float)
        w[k - 1] = 2.0
        acc += np.dot(w, x[i:i + k])
    return acc


def keep_previous(a):
    """prev holds last iteration's array: the new one must not alias it"""
    prev = np.zeros(2)
    tot = 0.0
    for i in range(a.shape[0]):
        cur = np.ones(2)
        cur[0] = a[i]
        tot += prev[0] * 10.0 + prev[1] + cur[0]
        prev = cur
    return tot, prev


def negative_size(a, k):
    s = 0.0
    for i in range(a.shape[0]):
        t = np.zeros(k - i)
        s += t.size + a[i]
    return s


def bool_flags(a):
    c = 0
    for i in range(a.shape[0]):
        f = np.zeros(3, dtype=bool)
        f[0] = a[i] > 0
        f[2] = a[i] > 1
        c += np.sum(f)
    return c


def _same(exp, got):
    for x, y in zip(exp if isinstance(exp, tuple) else (exp,), got if isinstance(got, tuple) else (got,)):
        x, y = np.asarray(x), np.asarray(y)
        np.testing.assert_array_equal(y, x)
        assert y.dtype == x.dtype and y.shape == x.shape


def test_moments():
    a = np.random.default_rng(1).standard_normal(30)
    exp, got, _, _, cf = run_both(moments, a)
    _same(exp, got)
    captured(cf)


def test_window_counts_int32_kept_after_the_loop():
    x = np.random.default_rng(2).standard_normal(40)
    exp, got, _, _, cf = run_both(window_counts, x, 6, -2.0, 2.0)
    _same(exp, got)
    assert type(got[1]) is np.ndarray and got[1].dtype == np.int32 and got[1].flags.c_contiguous
    captured(cf)


def test_local_grids_2d_empty():
    U = np.random.default_rng(3).standard_normal((9, 8))
    exp, got, _, _, cf = run_both(local_grids, U, 1)
    _same(exp, got)
    captured(cf)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_ones_with_positional_dtype(k):
    x = np.random.default_rng(4).standard_normal(20)
    exp, got, _, _, cf = run_both(ones_weights, x, k)
    np.testing.assert_allclose(got, exp, rtol=1e-13)
    captured(cf)


def test_fresh_array_each_iteration_no_aliasing():
    a = np.arange(1.0, 8.0)
    exp, got, _, _, cf = run_both(keep_previous, a)
    _same(exp, got)
    captured(cf)


def test_negative_size_raises_numpys_valueerror():
    a = np.arange(5.0)
    with pytest.raises(ValueError) as e1:
        negative_size(a, 2)
    cf = numdyn.compile(negative_size)
    with pytest.raises(ValueError) as e2:
        cf(a, 2)
    assert str(e2.value) == str(e1.value)
    exp, got, _, _, cf = run_both(negative_size, a, 9)
    _same(exp, got)
    captured(cf)


def test_bool_dtype():
    a = np.array([-1.0, 0.5, 1.5, 3.0, -2.0])
    exp, got, _, _, cf = run_both(bool_flags, a)
    _same(exp, got)
    assert type(got) is type(exp)
    captured(cf)


def test_unsupported_dtype_is_named():
    def f(a):
        s = 0.0
        for i in range(a.shape[0]):
            t = np.zeros(2, dtype=np.complex128)
            s += a[i] + t.real[0]
        return s

    a = np.arange(3.0)
    exp, got, _, _, cf = run_both(f, a)
    _same(exp, got)
    info = cf._loop_info()
    assert not info[0]["captured"] and "dtype" in info[0]["reason"]
