"""The WRITEABLE flag as NumPy sets it: read-only views (diagonal, .imag of
a real array) stay read-only when returned; `x.flags.writeable = False` on
an argument changes the caller's array; on a value the function made, the
returned array is read-only; a view taken earlier keeps writing. Each case
is called three times (the later calls replay when the capture allows)."""
import numpy as np
import pytest

import numdyn


def _run(fn, x):
    try:
        return fn(x), None
    except Exception as e:  # noqa: BLE001 - compared with NumPy's
        return None, e


def diag_view(M):
    return M.diagonal()


def diag_offset(M):
    return np.diag(M, 1)


def diag_of_computed(M):
    return (M * 2).diagonal()


def diag_next_to_other(M):
    return M.diagonal(), M + 1


def imag_of_real(M):
    return M.imag


def imag_of_computed(M):
    return (M + 1).imag


def diag_copy(M):
    return M.diagonal().copy()


def arg_made_readonly(M):
    M.flags.writeable = False
    return M * 2


def value_made_readonly(M):
    z = M * 2
    z.flags.writeable = False
    return z


def fresh_made_readonly(M):
    z = np.zeros(3)
    z.flags.writeable = False
    return z


def write_then_lock(M):
    M[0, 0] = 7
    M.flags.writeable = False
    return M.sum()


def lock_unlock_write(M):
    M.flags.writeable = False
    M.flags.writeable = True
    M[1, 1] = 5
    return M


def earlier_view_writes(M):
    v = M[:2]
    M.flags.writeable = False
    v[0, 0] = 3
    return M


def write_after_lock(M):
    M.flags.writeable = False
    M[0, 0] = 1


CASES = [diag_view, diag_offset, diag_of_computed, diag_next_to_other, imag_of_real,
         imag_of_computed, diag_copy, arg_made_readonly, value_made_readonly,
         fresh_made_readonly, write_then_lock, lock_unlock_write, earlier_view_writes,
         write_after_lock]


def _flags(r):
    if isinstance(r, tuple):
        return tuple(_flags(x) for x in r)
    if isinstance(r, np.ndarray):
        return (r.flags.writeable, r.flags.c_contiguous, r.shape, r.dtype)
    return type(r)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_writeable_flag_is_numpys(fn):
    cf = numdyn.compile(fn)
    for _ in range(3):
        a = np.arange(16.0).reshape(4, 4)
        b = a.copy()
        r1, e1 = _run(fn, a)
        r2, e2 = _run(cf, b)
        assert repr(e1) == repr(e2)
        assert a.flags.writeable == b.flags.writeable
        np.testing.assert_array_equal(a, b)
        assert _flags(r1) == _flags(r2)
        for x, y in zip(r1 if isinstance(r1, tuple) else (r1,), r2 if isinstance(r2, tuple) else (r2,)):
            np.testing.assert_array_equal(x, y)
