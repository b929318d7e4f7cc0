"""Gathers and index checks of a graph's run (issue 13: the COO mat-vec
`np.add.at(y, rows, data * x[cols])` was 0.96x NumPy by numdyn's own path).

- A GATHER step (x[idx] of a lazy or argument index) the native run does in
  one C pass where the source is aligned, native, C-contiguous and of the
  result's dtype (runtime_native.c, gather_direct); other layouts, and an
  index still outside the source, go to NumPy's take as before.
- index_check (the bounds check and wrap of a lazy index, shim_advidx.c)
  fills its new array in the checking pass itself instead of NumPy's copy
  first, and takes over an int64 conversion nothing else holds.

Every case runs the compiled function warm (replays included) with the
speed floor off, so numdyn's own path is the one compared with NumPy:
values, dtypes, shapes, IndexError texts, and the arguments afterwards.
"""
import numpy as np
import pytest

import numdyn
from oracle import check

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]


def _values(dt, shape, rng):
    x = rng.standard_normal(shape) * 50
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def _same_warm(fn, make_args, calls=3):
    """fn under NumPy and compiled (native, no speed floor), `calls` times
    on fresh arguments each: the same outcome every time."""
    f = numdyn.compile(fn, backend="native", mode="reduce-overhead")
    for _ in range(calls):
        check(fn, compiled=f, make_args=make_args)


def _sources(dt, rng):
    """(name, factory) of gather sources in the layouts a graph meets"""
    base = _values(dt, (12, 10), rng)
    return [
        ("contig1d", lambda: base.ravel().copy()),
        ("contig2d", lambda: base.copy()),
        ("fortran", lambda: np.asfortranarray(base)),
        ("strided", lambda: base.ravel()[::3].copy()[::2]),
        ("transposed", lambda: base.copy().T),
    ]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gather_argument_index_dtypes_layouts(dt):
    rng = np.random.default_rng(1)
    for name, src in _sources(dt, rng):
        n = src().size
        idx = rng.integers(-n, n, 37)

        def g(x, i):
            return x.ravel()[i], x.ravel()[i[::-1]]

        _same_warm(g, lambda: (src(), idx.copy()))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gather_lazy_index_into_kernel(dt):
    """the index computed in the graph (index_check on a lazy array), the
    gathered values used by a kernel after it"""
    rng = np.random.default_rng(2)
    x = _values(dt, (64,), rng)
    i = rng.integers(0, 32, 50)

    def g(x, i):
        j = (i * 2 + 1) % 64 - 64      # negative: wrapped by the check
        return x[j] + x[j[::-1]] if x.dtype != np.bool_ else x[j] | x[j[::-1]]

    _same_warm(g, lambda: (x.copy(), i.copy()))


@pytest.mark.parametrize("idt", [np.int8, np.int16, np.int32, np.uint32, np.int64, np.intp])
def test_index_check_converted_indices(idt):
    """an index of another integer dtype: its int64 conversion is the
    checked array itself"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100)
    i = rng.integers(0, 100, 40).astype(idt)

    def g(x, i):
        k = i + i.dtype.type(0)    # lazy, of the same dtype
        return x[k], np.take(x, k), x[k.reshape(5, 8)]

    _same_warm(g, lambda: (x.copy(), i.copy()))


@pytest.mark.parametrize("mode", ["wrap", "clip", "raise"])
def test_take_modes_lazy(mode):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20)
    i = rng.integers(-45, 45, 30) if mode != "raise" else rng.integers(-20, 20, 30)

    def g(x, i):
        return np.take(x, i + 0, mode=mode)

    _same_warm(g, lambda: (x.copy(), i.copy()))


@pytest.mark.parametrize("bad", [100, -101, 10 ** 6])
def test_out_of_range_index_error_text(bad):
    """NumPy's IndexError (type and text) for an index out of range, lazy
    and argument alike, with no write into the caller's arrays"""
    x = np.arange(100.0)

    def lazy(x, i):
        return x[i + 0] * 2

    def arg(x, i):
        y = np.zeros(10)
        np.add.at(y, i % 10, x[i])
        return y

    for fn in (lazy, arg):
        i = np.array([3, 5, bad, 7])
        _same_warm(fn, lambda: (x.copy(), i.copy()))


def test_empty_source_and_index():
    def g(x, i):
        return x[i + 0]

    _same_warm(g, lambda: (np.zeros(0), np.zeros(0, dtype=np.int64)))
    _same_warm(g, lambda: (np.zeros(0), np.array([0])))
    _same_warm(g, lambda: (np.arange(3.0), np.zeros((0, 2), dtype=np.int64)))


@pytest.mark.parametrize("nnz", [0, 1, 1000, 20000])
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.complex128])
def test_coo_matvec(nnz, dt):
    """the bench row: a scatter-add of gathered products, repeated indices"""
    rng = np.random.default_rng(5)
    n = max(nnz // 10, 1)
    rows, cols = rng.integers(0, n, nnz), rng.integers(-n, n, nnz)
    data, x = _values(dt, (nnz,), rng), _values(dt, (n,), rng)

    def coo(rows, cols, data, x, n):
        y = np.zeros(n, dtype=data.dtype)
        np.add.at(y, rows, data * x[cols])
        return y

    _same_warm(coo, lambda: (rows.copy(), cols.copy(), data.copy(), x.copy(), n))


def test_index_argument_not_changed():
    """the checked index is a new array: a negative index of the caller is
    wrapped in the copy, never in the caller's array"""
    x = np.arange(10.0)
    i = np.array([-1, -2, 3, -10])

    def g(x, i):
        return x[i] + 1, x[i + 0] * 2

    _same_warm(g, lambda: (x, i))
    assert i.tolist() == [-1, -2, 3, -10]
