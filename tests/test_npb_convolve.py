"""np.convolve / np.correlate with mode='valid' and a short real filter are
stencils in the graph (shim_stats.c conv_stencil): views of the long
operand times the taps, accumulated in tap order at NumPy's promoted dtype.
Everything else (full/same, float16, bool, complex, long filters, a
correlate whose second operand is longer) still calls NumPy's own."""
import numpy as np
import pytest

import numdyn
from bench_realprograms import blur as separable_blur  # bench/ is on sys.path (conftest)
from oracle import check


def conv_valid(a, v):
    return np.convolve(a, v, mode="valid"), np.correlate(a, v), np.correlate(a, v, "valid")


def conv_any(a, v, mode):
    return np.convolve(a, v, mode=mode), np.correlate(a, v, mode)


def layout(x, how):
    if how == "strided":
        return np.repeat(x, 2)[::2]
    if how == "reversed":
        return x[::-1].copy()[::-1]
    return x


CASES = [
    # (a dtype, v dtype, len a, len v, layout of a)
    (np.float64, np.float64, 9, 3, "C"),
    (np.float32, np.float32, 9, 3, "strided"),
    (np.float64, np.float64, 9, 3, "reversed"),
    (np.uint8, np.float32, 11, 4, "C"),       # an image row and a float filter: float32
    (np.int8, np.int8, 10, 3, "C"),           # wraps like NumPy's int8 dot
    (np.int64, np.uint8, 7, 2, "strided"),
    (np.float64, np.float64, 1, 1, "C"),
    (np.float64, np.float64, 5, 5, "C"),
    (np.float64, np.float64, 3, 6, "C"),      # v longer: convolve swaps, correlate calls NumPy
    (np.float16, np.float16, 8, 3, "C"),      # NumPy accumulates float16 in float32: its own
    (np.bool_, np.bool_, 8, 3, "C"),
    (np.complex128, np.complex128, 8, 3, "C"),
    (np.float64, np.float64, 40, 20, "C"),    # a long filter: NumPy's
]


@pytest.fixture(scope="module")
def cf_valid():
    return numdyn.compile(conv_valid)


@pytest.mark.parametrize("da, dv, n, m, how", CASES)
def test_valid_matches_numpy(cf_valid, da, dv, n, m, how):
    rng = np.random.default_rng(n * 31 + m)
    a = layout((rng.standard_normal(n) * 50).astype(da), how)
    v = (rng.standard_normal(m) * 5).astype(dv)
    check(conv_valid, a, v, compiled=cf_valid)


@pytest.mark.parametrize("mode", ["full", "same", "bogus"])
def test_other_modes_and_bad_input(mode):
    a, v = np.arange(6.0), np.array([1.0, -2.0, 0.5])
    check(conv_any, a, v, mode)
    check(conv_any, np.zeros(0), v, mode)           # ValueError: a cannot be empty
    check(conv_any, np.ones((2, 2)), v, mode)       # ValueError: object too deep


def test_per_row_convolve_loop_stays_in_the_graph():
    img = np.random.default_rng(3).integers(0, 256, (9, 12), dtype=np.uint8)
    cf = numdyn.compile(separable_blur, options={"floor": False})
    for _ in range(2):
        check(separable_blur, img, compiled=cf)
    # np.array of the taps is in the graph (shim_elementwise.c constant_seq),
    # not an array input: the call replays without running Python
    before = numdyn.utils.counters["replays"]
    check(separable_blur, img, compiled=cf)
    assert numdyn.utils.counters["replays"] > before
    ex = numdyn.explain(cf)(img)
    assert ex.graph_break_count == 0
    # the graph holds no call of NumPy's convolve: each row is a stencil
    g = numdyn.export(separable_blur)(img)[0]
    assert "convolve" not in str(g)


def tables(x, k):
    a = np.array([1, 2, 3])                       # int64
    b = np.array([[1.5, 2], [3, 4]], dtype=np.float32)
    c = np.asarray((True, False, True))
    d = np.array([1, 2.5, 3j])                    # complex128
    e = np.array([np.uint8(200), 100])            # NumPy's promotion of a strong uint8 and an int
    f = np.array([300], dtype=np.int16) * k       # a Python int scalar argument, guarded
    g = np.asarray(2.5) + np.array(1)             # 0-d: NumPy's arrays, no break
    return x[:3] * a, b @ b, x[:3][c], d * 2, e + e, f, a[k], g


def test_arrays_of_numbers_are_numpys():
    cf = numdyn.compile(tables)
    x = np.arange(5.0)
    for k in (1, 1, 2):                          # traced, replayed, another guard
        check(tables, x, k, compiled=cf)
    check(tables, x, 7, compiled=cf)             # IndexError from a[7]
    assert numdyn.explain(cf)(x, 1).graph_break_count == 0
    bad = numdyn.compile(lambda: np.array([300], dtype=np.uint8))
    check(lambda: np.array([300], dtype=np.uint8), compiled=bad)   # OverflowError, NumPy's words
