"""The copy of an innermost loop whose range checks were proved before it is
the one GCC may vectorize (issue 17, "at least as fast as numba"): it counts
its iterations with a signed int64 (GCC gives up on addresses computed from
an unsigned counter), tests once before it that the array names it reads
and does not rebind are bound (a test at each access is an exit from the
loop), and, where those names' last axes are contiguous, uses the element
size as their stride (GCC does not vectorize an unknown stride). Each of
these makes a second path that must give exactly what NumPy gives: the
oracle is plain Python/NumPy (values, arrays after the call, exceptions at
the same iteration), on ranges with any step, near the ends of int64, on
views whose last axis is strided, and on names left unbound."""
import numpy as np
import pytest

import numdyn
from loop_gen import arr, check_calls
from programs_loops import lu_loops


def stepped(x, y, lo, hi, step, off):
    # y[j - off] for j in range(lo, hi, step): any step, offsets near 2**62
    for j in range(lo, hi, step):
        y[j - off] = x[j - off] * 2 + 1
    return y


def relax_swap(A, B, steps):
    n0, n1 = A.shape
    for t in range(steps):
        for i in range(1, n0 - 1):
            for j in range(1, n1 - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        A, B = B, A
    return A, B


def maybe_unbound(A, steps, make):
    if make:
        B = A.copy()
    for t in range(steps):
        for i in range(1, A.shape[0] - 1):
            for j in range(1, A.shape[1] - 1):
                B[i, j] = A[i, j - 1] + A[i, j + 1]
        A, B = B, A
    return A


def loop_c(fn, args, monkeypatch, capfd):
    """the C of fn's loops (NUMDYN_LOOP_DEBUG), after one checked call"""
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    check_calls(fn, args, repeat=False)
    return capfd.readouterr().err


def test_lu_inner_loop_counts_signed(monkeypatch, capfd):
    A = arr("float64", (9, 9), seed=5) + 9 * np.eye(9)
    err = loop_c(lu_loops, (A,), monkeypatch, capfd)
    # the proved copy of the innermost loop: a signed counter and variable
    assert "for (; k" in err and "< (int64_t)n" in err, err[-3000:]
    check_calls(lu_loops, (arr("float32", (6, 6), seed=6) + 6 * np.eye(6, dtype=np.float32),),
                (arr("float64", (1, 1), seed=7) + 1,))


@pytest.mark.parametrize("lo,hi,step,off", [
    (0, 10, 1, 0), (9, -1, -1, 0), (1, 10, 3, 0), (9, 0, -2, 0), (0, 11, 1, 0),   # the last one past the end
    (2**62, 2**62 + 10, 1, 2**62), (2**62 + 9, 2**62 - 1, -1, 2**62),
    (2**63 - 10, 2**63 - 1, 1, 2**63 - 10), (-(2**63), -(2**63) + 10, 2, -(2**63)),
    (-(2**63) + 9, -(2**63) - 1, -3, -(2**63)),
])
def test_ranges_of_any_step_near_the_ends_of_int64(lo, hi, step, off):
    check_calls(stepped, (arr("int64", 10, seed=1), np.zeros(10, dtype=np.int64), lo, hi, step, off),
                repeat=False)


def test_swapped_names_get_the_proved_copy(monkeypatch, capfd):
    rng = np.random.default_rng(8)
    err = loop_c(relax_swap, (rng.random((6, 7)), np.zeros((6, 7)), 3), monkeypatch, capfd)
    # bound once before the loop, and the contiguous copy's constant stride
    assert "_set && a" in err and "_s1 == (int64_t)sizeof(double)" in err, err[-3000:]
    assert "* (int64_t)sizeof(double))" in err, err[-3000:]


def test_swapped_views_of_any_stride():
    rng = np.random.default_rng(9)
    big0 = rng.random((9, 16))
    f = numdyn.compile(relax_swap)
    # views of one fresh array per call: last axis strided (the general
    # copy), one contiguous and one strided (they alternate between the
    # names), overlapping views, the same array under both names
    views = [lambda b: (b[:, ::2], b[:, 1::2]), lambda b: (b[:8:2, :8], b[1::2, ::2]),
             lambda b: (b[:, :9], b[:, 1:10]), lambda b: (b[:, :7], b[:, :7])]
    for mk in views:
        for steps in (1, 2, 3):
            b0, b1 = big0.copy(), big0.copy()
            want = relax_swap(*mk(b0), steps)
            got = f(*mk(b1), steps)
            for w, g in zip(want, got):
                np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(b1, b0)


@pytest.mark.parametrize("make", [True, False])
def test_name_unbound_before_the_loop(make):
    check_calls(maybe_unbound, (arr("float64", (5, 6), seed=2), 2, make))


def big_steps(x, lo, hi, st):
    # the inner loop's variable indexes nothing: no proof bounds it, and
    # (n - 1) * step may pass int64 while every value it takes fits
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(lo, hi, st):
            s += x[i] * 0.5 + j
    return s


@pytest.mark.parametrize("lo,hi,st", [(-(2**63) + 5, 10, 2**62), (2**63 - 6, -(2**63), -(2**62)),
                                      (-(2**63), 2**63 - 1, 2**63 - 1), (0, 7, 2)])
def test_inner_loop_steps_whose_product_passes_int64(lo, hi, st):
    check_calls(big_steps, (arr("float64", 4, seed=3), lo, hi, st), repeat=False)
