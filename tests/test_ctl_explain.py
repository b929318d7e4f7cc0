"""What stays untraced is named by explain, with its line (issue 15, point 1):
a ufunc of another library (np.frompyfunc's here, scipy.special's alike) is
named by its own name, not "numpy.?"; an np.memmap argument is traced where
NumPy's results are plain arrays, and what would give a memmap (a view) runs
on the memmap as a recorded break, with NumPy's result types and its writes
reaching the file's memory (tests/test_ctl_memmap.py has the rest)."""
import numpy as np
import pytest

import numdyn


def _inc(v):
    return v + 1


_UF = np.frompyfunc(_inc, 1, 1)


def _uses_foreign_ufunc(x):
    return _UF(x * 2.0).astype(float) + 1.0


def _scales_in_place(m):
    m[0] = 5.0
    return np.tanh(m) * 2.0, m[1:]


def test_foreign_ufunc_is_named():
    out = numdyn.explain(numdyn.compile(_uses_foreign_ufunc))(np.arange(3.0))
    np.testing.assert_array_equal(out.result, _uses_foreign_ufunc(np.arange(3.0)))
    (b,) = out.break_reasons
    assert b.reason == "ufunc _inc (vectorized) is not supported in-graph"
    assert "return _UF(x * 2.0)" in b.source


def test_memmap_view_is_a_reported_break(tmp_path):
    def memmap(name):
        m = np.memmap(tmp_path / name, dtype=np.float64, mode="w+", shape=(4,))
        m[:] = np.arange(4.0)
        return m

    want_m, got_m = memmap("a.dat"), memmap("b.dat")
    want = _scales_in_place(want_m)
    out = numdyn.explain(numdyn.compile(_scales_in_place))(got_m)
    assert [type(v) for v in out.result] == [type(v) for v in want] == [np.ndarray, np.memmap]
    np.testing.assert_array_equal(out.result[0], want[0])
    np.testing.assert_array_equal(got_m, want_m)
    assert out.graph_break_count == 1 and "indexing an np.memmap" in out.break_reasons[0].reason
    assert "m[1:]" in out.break_reasons[0].source
    with pytest.raises(numdyn.GraphBreakError, match="indexing an np.memmap"):
        numdyn.compile(_scales_in_place, fullgraph=True)(got_m)


def _reads_an_element(x):
    y = x * 2.0
    return y * float(y[1])


def test_value_read_outside_a_recorded_call_is_named():
    # no call is recorded under explain: the element read runs the graph so
    # far (two graphs, no break), and explain says where
    out = numdyn.explain(_reads_an_element)(np.arange(3.0))
    np.testing.assert_array_equal(out.result, _reads_an_element(np.arange(3.0)))
    assert out.graph_count == 2 and out.graph_break_count == 0
    (r,) = out.value_reads
    assert "float(y[1])" in r.source and r.lineno > 0
    assert "Value Reads" in str(out) and "float(y[1])" in str(out)


class _Arr(np.ndarray):
    def doubled(self):
        y = self * 2.0
        return type(y), type(self)

    @staticmethod
    def kinds(x):
        return type(x), type(x[1:])

    @classmethod
    def made(cls, x):
        return cls, type(x.sum())


def _calls_class_methods(x):
    return _Arr.doubled(x), _Arr.kinds(x), _Arr.made(x), x.doubled()


def test_type_inside_methods_called_through_the_class():
    x = np.arange(4.0).view(_Arr)
    assert numdyn.compile(_calls_class_methods)(x) == _calls_class_methods(x)
