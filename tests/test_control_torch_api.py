"""torch._dynamo names users reach for when porting (issue 15):
error_on_graph_break (context manager and decorator), is_dynamo_compiling,
lookup_backend, config.accumulated_recompile_limit. Each does what torch's
does, in numdyn's terms; NumPy is the oracle for values."""
import builtins
import warnings

import numpy as np
import pytest

import numdyn

C = numdyn.utils.counters


def breaks(x):
    y = x * 2.0
    if y.sum() > 0:          # a graph break: Python needs the value
        return y + 1.0
    return y - 1.0


def test_error_on_graph_break_around_a_call():
    f = numdyn.compile(breaks, backend="eager")
    x = np.arange(3.0)
    np.testing.assert_allclose(f(x), breaks(x))          # breaks, runs
    with numdyn.error_on_graph_break(True):
        with pytest.raises(numdyn.GraphBreakError):
            f(x)
        with numdyn.error_on_graph_break(False):         # undone for an inner region
            np.testing.assert_allclose(f(x), breaks(x))
        with pytest.raises(numdyn.GraphBreakError):
            f(x)
    np.testing.assert_allclose(f(x), breaks(x))          # the region ended


def test_error_on_graph_break_inside_the_function():
    def g(x):
        y = x + 1.0
        if y.sum() > 0:                                  # allowed: before the region
            y = y * 2.0
        with numdyn.error_on_graph_break(True):
            if y.max() > 100.0:                          # raises: inside it
                y = y - 1.0
        return y
    f = numdyn.compile(g, backend="eager")
    with pytest.raises(numdyn.GraphBreakError):
        f(np.arange(3.0))

    def h(x):
        y = x + 1.0
        with numdyn.error_on_graph_break(True):
            y = y * 3.0                                  # no break in the region
        if y.sum() > 0:                                  # after it: a break, allowed
            y = y - 1.0
        return y
    f = numdyn.compile(h, backend="eager")
    np.testing.assert_allclose(f(np.arange(3.0)), h(np.arange(3.0)))


def test_error_on_graph_break_false_keeps_fullgraph():
    f = numdyn.compile(breaks, backend="eager", fullgraph=True)
    with numdyn.error_on_graph_break(False):
        with pytest.raises(numdyn.GraphBreakError):
            f(np.arange(3.0))


def test_error_on_graph_break_as_decorator():
    f = numdyn.compile(breaks, backend="eager")

    @numdyn.error_on_graph_break(True)
    def strict(x):
        return f(x)
    with pytest.raises(numdyn.GraphBreakError):
        strict(np.arange(3.0))
    np.testing.assert_allclose(f(np.arange(3.0)), breaks(np.arange(3.0)))


def test_is_dynamo_compiling():
    seen = []

    def g(x):
        seen.append(numdyn.is_dynamo_compiling())
        return x + 1.0
    assert numdyn.is_dynamo_compiling() is False
    numdyn.compile(g, backend="eager")(np.ones(2))
    assert seen == [True]
    assert numdyn.is_dynamo_compiling is numdyn.is_compiling


def test_lookup_backend():
    def mine(graph, example_inputs):
        return graph.run if hasattr(graph, "run") else None
    numdyn.register_backend(mine, name="grad10_lookup")
    assert numdyn.lookup_backend("grad10_lookup") is mine
    assert numdyn.lookup_backend("native") == "native"
    assert numdyn.lookup_backend(mine) is mine
    with pytest.raises(ValueError, match="unknown backend 'nope'.*native"):
        numdyn.lookup_backend("nope")
    with pytest.raises(TypeError):
        numdyn.lookup_backend(3)


def test_accumulated_recompile_limit(monkeypatch):
    """recompiles of all functions together: past the limit, unseen inputs
    of any function run eagerly with one warning; first compiles go on"""
    kinds = []

    def make():
        def f(x):
            kinds.append(builtins.type(x).__name__)
            return np.sin(x) * 2.0
        return f
    start = numdyn._C._recompiles()
    monkeypatch.setattr(numdyn.config, "accumulated_recompile_limit", start + 1)
    f, g = numdyn.compile(make(), backend="eager"), numdyn.compile(make(), backend="eager")
    f(np.ones(3))                                  # first compile: not counted
    f(np.ones(3, np.float32))                      # recompile 1 (the limit)
    g(np.ones(3))                                  # g's first compile still happens
    assert kinds == ["LazyArray"] * 3
    assert numdyn._C._recompiles() == start + 1
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for dt in (np.int32, np.int64):
            x = np.arange(4, dtype=dt)
            r = g(x)
            np.testing.assert_allclose(r, np.sin(x) * 2.0)
            assert r.dtype == (np.sin(x) * 2.0).dtype
    assert kinds[3:] == ["ndarray"] * 2
    msgs = [str(m.message) for m in w if issubclass(m.category, UserWarning)]
    assert len(msgs) == 1 and "accumulated_recompile_limit" in msgs[0], msgs
    f(np.ones(7, np.float32))                      # a seen signature: compiled
    assert kinds[-1] == "LazyArray"
    with pytest.raises(ValueError):
        numdyn.config.accumulated_recompile_limit = -1
    assert numdyn.config.accumulated_cache_size_limit == start + 1   # torch's older name
