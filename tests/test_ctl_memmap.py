"""np.memmap arguments are traced (issue 15, point 1): where NumPy's result
for a memmap is a plain array or a scalar (ufuncs, operators, reductions,
np.where, matmul...) the operation is in the graph; where it is a memmap
(views, indexing, copy, astype, sort, argmax(axis), reshape) or not checked,
it runs on the memmap object itself, a recorded graph break -- so every
result has NumPy's type and value, `isinstance(m, np.memmap)`, its
attributes and `return m` are the memmap's own, and writes reach the file's
memory. NumPy is the oracle, case by case, on two memmaps of the same data."""
import os

import numpy as np
import pytest

import numdyn

_W = np.ones((4, 2))


def _inplace(m):
    m += 1
    m[0, 0] = 100
    return m.sum()


_CASES = {
    "operators": lambda m: (m * 2 + 1, -m, m > 2, m @ _W),
    "ufuncs": lambda m: np.sin(m) + np.exp(-m),
    "reductions": lambda m: (m.sum(), m.sum(0), np.mean(m), m.mean(1), m.std(), m.var(0),
                             np.max(m, 0), m.argmax(), np.tanh(m.sum())),
    "functions": lambda m: (np.where(m > 0, m, 0), np.concatenate([m, m]), m.clip(0, 3),
                            m.round(), m.cumsum(), np.asarray(m)),
    "memmap results": lambda m: (m[1:], m[0, 1], m.T, m.copy(), m.astype(np.float32),
                                 m.argmax(0), m.reshape(-1), np.sort(m, axis=0)),
    "the memmap itself": lambda m: (m, isinstance(m, np.memmap), m.mode, m.offset,
                                    [type(r) for r in m]),
    "chained": lambda m: (m[1:] * 2).sum() + m.sum(),
    "in place": _inplace,
}


def _memmap(path):
    m = np.memmap(path, dtype=np.float64, mode="w+", shape=(3, 4))
    m[:] = np.arange(12.0).reshape(3, 4) - 4
    return m


def _same(got, want, args):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, args)
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        if isinstance(want, np.memmap) and want.base is not None:
            assert np.shares_memory(got, args[0]) == np.shares_memory(want, args[1])
    if isinstance(want, (np.ndarray, np.generic)):
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize("name", list(_CASES))
def test_memmap_results_and_state_are_numpys(tmp_path, name):
    fn = _CASES[name]
    want_m, got_m = _memmap(tmp_path / "a.dat"), _memmap(tmp_path / "b.dat")
    want = fn(want_m)
    got = numdyn.compile(fn, backend="eager")(got_m)
    if name == "the memmap itself":
        assert got[0] is got_m
        got, want = got[1:], want[1:]
    _same(got, want, (got_m, want_m))
    np.testing.assert_array_equal(got_m, want_m)  # what the function wrote


def test_memmap_traced_where_numpy_gives_plain_arrays(tmp_path):
    def f(m):
        m[0] = 7.0
        return np.sin(m) * 2.0 + m.sum(0)

    m = _memmap(tmp_path / "c.dat")
    ref = _memmap(tmp_path / "d.dat")
    out = numdyn.explain(numdyn.compile(f, backend="eager"))(m)  # capture is the backends' same
    assert out.graph_break_count == 0, out.break_reasons
    want = f(ref)
    assert type(out.result) is np.ndarray
    np.testing.assert_allclose(out.result, want, rtol=1e-12)
    r = numdyn.compile(f, fullgraph=True, backend="eager")(m)  # no break
    np.testing.assert_allclose(r, f(ref), rtol=1e-12)
    m.flush()
    on_disk = np.fromfile(os.fspath(tmp_path / "c.dat"), dtype=np.float64).reshape(3, 4)
    np.testing.assert_array_equal(on_disk, ref)  # the writes reached the file's memory
