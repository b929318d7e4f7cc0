"""Assignment through boolean masks whose value is not a broadcast scalar
(`a[m] += 1`, `a[m] = b[m]`, `a[m, 1:] = v`): NumPy treats a boolean index
as its nonzero() positions, so numdyn scatters in-graph once the mask is
known (numpy_shim/shim_advidx.c mask_as_positions) instead of handing the
whole array to NumPy. Shape mismatches keep NumPy's IndexError."""
import numpy as np
import pytest

import numdyn
from oracle import check


def aug_masked(a):
    a[a > 2] += 1
    a[a < 0] *= 3
    return a


def copy_masked(a, b):
    m = b > 0
    a[m] = b[m] * 2
    return a


def mask_then_slice(a, v):
    m = a[:, 0] > 0
    a[m, 1:] = v[: int(m.sum())][:, None]
    return a


def two_dim_mask_columns(a):
    m = a > 0
    a[m] = np.arange(int(m.sum()), dtype=a.dtype)
    return a


def caller_mask(a, m, v):
    a[m] = v
    return a


def wrong_mask_shape(a):
    a[np.ones(3, dtype=bool)] = np.zeros(3)
    return a


def wrong_value_length(a):
    a[a > 0] = np.zeros(100)
    return a


def _arr(layout, dtype="float64"):
    a = (np.arange(20) % 7 - 3).reshape(4, 5).astype(dtype)
    return np.asfortranarray(a) if layout == "F" else a


@pytest.mark.parametrize("layout", ["C", "F"])
def test_masked_updates(backend, layout):
    check(aug_masked, make_args=lambda: (_arr(layout),), backend=backend)
    check(aug_masked, make_args=lambda: (_arr(layout, "int16"),), backend=backend)
    check(copy_masked, make_args=lambda: (_arr(layout), _arr("C")[::-1].copy()), backend=backend)
    check(mask_then_slice, make_args=lambda: (_arr(layout), np.arange(10.0)), backend=backend)
    check(two_dim_mask_columns, make_args=lambda: (_arr(layout, "int64"),), backend=backend)


def test_caller_mask_with_array_value_is_in_graph(backend):
    a = _arr("C")
    m = a > 0
    v = np.arange(float(m.sum()))
    check(caller_mask, a, m, v, backend=backend)
    # a caller's mask is known: no graph break for it
    rep = numdyn.explain(caller_mask, a.copy(), m, v)
    assert rep.graph_break_count == 0, rep


@pytest.mark.parametrize("fn", [wrong_mask_shape, wrong_value_length])
def test_mask_errors_are_numpys(backend, fn):
    check(fn, make_args=lambda: (_arr("C"),), backend=backend)


def _store_scalar(a, v, k):
    if k == 0:
        a[a > 1] = v
    elif k == 1:
        a[[0, 1]] = v
    else:
        a[np.array([True, False, True, False])] = v
    return a


@pytest.mark.parametrize("dt", [np.uint32, np.uint8, np.int8, np.float32])
def test_scalar_store_through_mask_or_fancy_index_converts_as_numpy(dt):
    """A Python float stored into an integer array through a mask or an
    index array converts as int() of it, range-checked (NumPy 2 raises
    OverflowError for -1.0 into uint32; it used to wrap)."""
    cf = numdyn.compile(_store_scalar)
    for v in (-1.0, 300.0, -1.5, 2.5, 1e30, float("nan"), -1, 300, np.float64(-1.0), np.int64(-3)):
        for k in range(3):
            a = np.arange(4).astype(dt)
            try:
                want = repr(_store_scalar(a.copy(), v, k))
            except Exception as e:  # noqa: BLE001 - compared with numdyn's
                want = repr(e)
            try:
                got = repr(cf(a.copy(), v, k))
            except Exception as e:  # noqa: BLE001
                got = repr(e)
            assert got == want, (v, k)
