"""np.mgrid / np.ogrid inside a compiled function are lazy values (issue
13: NPBench mandelbrot2 built its index grids with np.mgrid, concrete
arrays, and then indexed them by lazy masks: a break at every read).
Checked against NumPy: values, dtypes, shapes, types, layout, errors."""
import numpy as np
import pytest

import numdyn

OWN = {"floor": False}

KEYS = [
    (slice(0, 5),),
    (slice(2, 11, 3),),
    (slice(None, 4),),
    (slice(7, -3, -2),),
    ((slice(0, 3), slice(0, 4)),),
    ((slice(1, 4), slice(-2, 5, 2)),),
    ((slice(0, 6),),),
    ((slice(0, 2), slice(3, 0, -1), slice(None, 5, 2)),),
    # NumPy's own answer, as before (no lazy model): float and complex
    # steps, empty and reversed ranges, non-slices
    ((slice(0.0, 1.0, 0.25), slice(0, 3)),),
    ((slice(-1, 1, 5j), slice(0, 2)),),
    (slice(0, 1, 4j),),
    ((slice(5, 0), slice(0, 3)),),
    (slice(5, 0),),
    ((slice(0, np.int32(3)), slice(0, 2)),),
]


def grid_of(which, key, x):
    g = (np.mgrid if which == "m" else np.ogrid)[key]
    return g, x + 1


def _check(got, want):
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous == want.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("which", ["m", "o"])
@pytest.mark.parametrize("key", [k[0] for k in KEYS], ids=repr)
def test_grid_matches_numpy(which, key):
    x = np.arange(3.0)
    cf = numdyn.compile(grid_of, options=OWN)
    try:
        want = grid_of(which, key, x)
    except Exception as e:   # NumPy's error (a negative dimension), NumPy's way
        with pytest.raises(type(e), match=str(e)):
            cf(which, key, x)
        return
    for _ in range(2):
        got = cf(which, key, x)
        _check(got[0], want[0])
        _check(got[1], want[1])


def grid_errors(key):
    return np.mgrid[key]


@pytest.mark.parametrize("key", [slice(0, 5, 0), (slice(0, 3), slice(0, 4, 0)), (slice(0, None),)])
def test_grid_errors_are_numpys(key):
    try:
        grid_errors(key)
    except Exception as e:
        err = type(e)
    else:
        err = None
    cf = numdyn.compile(grid_errors, options=OWN)
    if err is None:
        np.testing.assert_array_equal(cf(key), grid_errors(key))
    else:
        with pytest.raises(err):
            cf(key)


def mandel_grids(xn, yn, mask_at):
    # NPBench mandelbrot2's set-up: index grids, gathers through them
    Xi, Yi = np.mgrid[0:xn, 0:yn]
    Xi, Yi = Xi.astype(np.uint32), Yi.astype(np.uint32)
    X = np.linspace(-2.0, 0.5, xn, dtype=np.float64)[Xi]
    Y = np.linspace(-1.25, 1.25, yn, dtype=np.float64)[Yi]
    C = X + Y * 1j
    oi, oj = np.ogrid[0:xn, 0:yn]
    return C, Xi * 2, (oi * yn + oj) > mask_at


def test_grids_stay_in_graph():
    want = mandel_grids(5, 7, 9)
    cf = numdyn.compile(mandel_grids, options=OWN)
    out = numdyn.explain(cf)(5, 7, 9)
    # np.mgrid was NumPy's: concrete grids, each gather a lazy op on a
    # concrete index (no break either) but not one kernel with the grid
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    for n in (5, 8):   # other sizes: no recompile needed for correctness
        want = mandel_grids(n, 7, 9)
        got = cf(n, 7, 9)
        for g, w in zip(got, want):
            assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_grid_object_attributes_are_numpys():
    # attributes and repr of the object itself are NumPy's object's
    def attrs():
        return np.ogrid.sparse, np.mgrid.sparse, repr(np.mgrid)[:20]
    assert numdyn.compile(attrs, options=OWN)() == attrs()


def window(n, s):
    X, Y = np.mgrid[0:n, 0:n]
    k = np.exp(-((X - n / 2) ** 2 + (Y - n / 2) ** 2) / s)
    return k / k.sum()


def test_grid_fuses_with_its_consumers():
    # the grid is INDEX nodes in the same graph as the arithmetic on it
    # (NumPy's object made a concrete (2, n, n) array first: no graph at all)
    cf = numdyn.compile(window, options=OWN)
    out = numdyn.explain(cf)(9, 4.0)
    assert out.graph_break_count == 0 and out.graph_count == 1
    ops = out.ops_per_graph[0]
    assert "index" in ops and "exp" in ops and "add.reduce" in ops, ops
    for n in (9, 16):
        got, want = cf(n, 4.0), window(n, 4.0)
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13)
