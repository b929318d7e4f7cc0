"""Own-path costs of the programs the speed floor ran as NumPy (issue 13
point 1), each checked by a counter or by NumPy's exact values:

- a time-stepping loop on tiny arrays whose every step reads elements of
  lazy stages (RK4 on a 3-vector, 27 reads a step) is recorded and replayed
  up to a Lorenz of 1000 steps: no flush per read (counter flushes);
- a row swap by fancy index (NumPy's scatter: a fresh copy) followed by a
  slice update writes into that copy instead of copying it again (counter
  base_copy_bytes), and values read from the version before the update or
  through a view stay NumPy's;
- np.abs of complex arrays is NumPy's own loop to the bit (a threshold
  |z| <= 2 as in an escape-time Mandelbrot then agrees lane by lane).
"""
import os
import sys

import numpy as np
import pytest

import numdyn
from test_floor_replay import _delta  # counters one call changed

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from programs_real import lorenz_rk4 as _rk4  # noqa: E402  (RK4 on a 3-vector, as users write it)


def test_time_stepping_loop_of_element_reads_replays(monkeypatch):
    # (loop capture runs this loop as C since session 26, its 3-vector state
    # rebound each step: this test is of the tracer's recording and replay)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    # 160 steps: 4320 lazy element reads (the old bound, 4096, made every
    # read of such a loop a flush: 4 a step). Recording and replay are the
    # tracer's: the eager backend spares CI the compile of the big graph
    cf = numdyn.compile(_rk4, backend="eager", options={"floor": False})
    s0 = np.array([1.0, 1.0, 1.0])
    args = (s0, 10.0, 28.0, 8.0 / 3.0, 0.01, 160)
    want = _rk4(*args)
    for _ in range(2):
        np.testing.assert_allclose(cf(*args), want, rtol=1e-12)
    numdyn.utils.wait_compiles()
    got, d = _delta(cf, *args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert d["replays"] == 1 and d["flushes"] == 0, {k: v for k, v in d.items() if v}
    np.testing.assert_array_equal(s0, [1.0, 1.0, 1.0])


def _swap_update(A, i, j):
    A = A.copy()
    A[[i, j], :] = A[[j, i], :]
    before = A[:, 0].sum()       # the swapped version, read after the update below
    row = A[0]                   # a view: sees the update
    A[1:, 0] /= 2.0
    A[2:, 1:] -= np.outer(A[2:, 0], A[0, 1:])
    return A, before, row * 1.0


def test_row_swap_then_update_writes_the_swap_in_place():
    A = np.random.default_rng(0).random((40, 40))
    A0 = A.copy()
    cf = numdyn.compile(_swap_update, options={"floor": False})
    for i, j in ((5, 1),):
        want = _swap_update(A, i, j)
        for _ in range(2):
            got, d = _delta(cf, A, i, j)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        # the scatter's fresh copy is the update's base: nothing copied
        assert d["base_copy_bytes"] == 0, {k: v for k, v in d.items() if v}
    np.testing.assert_array_equal(A, A0)


def _absmask(z, lim):
    return np.abs(z), np.abs(z) <= lim


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_abs_is_numpys_to_the_bit(dtype):
    rng = np.random.default_rng(1)
    n = 4096
    parts = [rng.standard_normal(n) + 1j * rng.standard_normal(n),
             rng.random(n) * 1e30 + 1j * rng.random(n) * 1e-30,
             np.array([complex(np.inf, np.nan), complex(np.nan, np.inf), complex(np.nan, 1.0),
                       complex(-np.inf, 3.0), complex(0.0, 0.0), complex(-0.0, -0.0),
                       complex(1e38, 1e38), complex(1e-45, 1e-45), complex(np.inf, np.inf),
                       complex(3.0, -4.0)] * 4)]
    with np.errstate(over="ignore"):
        z = np.concatenate(parts).astype(dtype)
    # points near the circle |z| = 2, where a last-place difference flips the mask
    ang = rng.random(n) * 2 * np.pi
    ring = (2.0 * np.exp(1j * ang)).astype(dtype)
    cf = numdyn.compile(_absmask, options={"floor": False})
    for x in (z, z[::3], ring):
        a, m = cf(x, 2.0)
        wa, wm = _absmask(x, 2.0)
        assert a.dtype == wa.dtype
        np.testing.assert_array_equal(a, wa)
        np.testing.assert_array_equal(m, wm)


def _one_element_arrays(x):
    # seam carving's row: np.array([np.inf]) padding a shifted row, twice a row
    left = np.concatenate((np.array([np.inf]), x[:-1]))
    a = np.array([[7]], dtype=np.int32)
    a += 2
    b = np.array((np.float32(1.5),))
    b[0] = x.sum()
    return np.minimum(left, x), a, b, np.array([-0.0]) * 1


def test_one_element_constant_array_is_one_scalar_node():
    # a constant of one element is a SCALAR node broadcast (as np.full's),
    # not a select over its positions (index, equal, where: 1.4 us to trace)
    x = np.arange(5.0)
    want = _one_element_arrays(x)
    cf = numdyn.compile(_one_element_arrays, options={"floor": False})
    ops = [op for g in numdyn.explain(cf)(x).ops_per_graph for op in g]
    assert "where" not in ops and "equal" not in ops, ops
    got = cf(x)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        assert g.strides == w.strides
        np.testing.assert_array_equal(g, w)
    assert np.signbit(got[3][0])
