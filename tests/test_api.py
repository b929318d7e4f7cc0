"""The public API surface of numdyn (src/numdyn/__init__.py + the C tracer)."""
import functools
import pickle
import threading

import numpy as np
import pytest

import numdyn
from oracle import check


def add_mul(a, b):
    """docstring of add_mul"""
    return (a + b) * 2


# ---------------------------------------------------------------- compile

def test_plain_decorator(backend):
    f = numdyn.compile(add_mul)
    f = numdyn.compile(add_mul, backend=backend)
    a, b = np.arange(4.0), np.ones(4)
    np.testing.assert_array_equal(f(a, b), add_mul(a, b))


def test_decorator_forms():
    @numdyn.compile
    def f1(a):
        return a + 1

    @numdyn.compile(backend="eager", fullgraph=True)
    def f2(a):
        return a + 1

    @numdyn.compile()
    def f3(a):
        return a + 1

    for f in (f1, f2, f3):
        assert isinstance(f, numdyn.CompiledFunction)
    np.testing.assert_array_equal(f2(np.arange(3)), np.arange(3) + 1)


def test_wrapper_metadata():
    f = numdyn.compile(add_mul, backend="eager")
    assert f.__name__ == "add_mul"
    assert f.__qualname__ == "add_mul"
    assert f.__doc__ == "docstring of add_mul"
    assert f.__module__ == add_mul.__module__
    assert f.__wrapped__ is add_mul
    assert f.backend == "eager"
    assert "add_mul" in repr(f)


def test_methods_and_descriptor():
    class K:
        scale = 3.0

        @numdyn.compile(backend="eager")
        def m(self, x):
            return x * self.scale

        @staticmethod
        @numdyn.compile(backend="eager")
        def s(x):
            return x - 1

    k = K()
    x = np.arange(3.0)
    np.testing.assert_array_equal(k.m(x), x * 3.0)
    np.testing.assert_array_equal(K.s(x), x - 1)
    assert K.m.__qualname__.endswith("K.m")
    # compiling a bound method and a callable object
    bound = numdyn.compile(k.m.__wrapped__.__get__(k), backend="eager")
    np.testing.assert_array_equal(bound(x), x * 3.0)

    class Callable:
        def __call__(self, x):
            return x + 10

    np.testing.assert_array_equal(numdyn.compile(Callable(), backend="eager")(x), x + 10)


def test_compile_rejects_bad_arguments():
    with pytest.raises(TypeError):
        numdyn.compile(42)
    with pytest.raises(ValueError, match="unknown backend"):
        numdyn.compile(add_mul, backend="no-such-backend")
    with pytest.raises(TypeError):
        numdyn.compile(add_mul, backend=3)


def test_disable_flag_runs_plain():
    calls = []

    def f(a):
        calls.append(type(a))
        return a + 1

    g = numdyn.compile(f, disable=True)
    np.testing.assert_array_equal(g(np.ones(2)), np.full(2, 2.0))
    assert calls == [np.ndarray]


def test_aot_eager_is_eager():
    check(add_mul, np.arange(5.0), np.ones(5), backend="aot_eager")


# --------------------------------------------------------------- backends

def test_list_and_register_backends():
    assert {"eager", "aot_eager", "native"} <= set(numdyn.list_backends())

    @numdyn.register_backend
    def counting_backend(graph, example_inputs):
        return graph

    assert "counting_backend" in numdyn.list_backends()

    @numdyn.register_backend(name="tagged_dbg", tags=("debug",))
    def dbg(graph, example_inputs):
        return graph

    assert "tagged_dbg" not in numdyn.list_backends()
    assert "tagged_dbg" in numdyn.list_backends(exclude_tags=())
    f = numdyn.compile(add_mul, backend="counting_backend")
    check(add_mul, np.arange(3.0), np.ones(3), compiled=f)
    with pytest.raises(ValueError):
        numdyn.register_backend(dbg, name="eager")


def test_custom_backend_callable_cached_per_graph():
    seen = []

    def my_compiler(graph, example_inputs):
        seen.append(len(example_inputs))
        assert all(isinstance(x, np.ndarray) for x in example_inputs)
        return graph  # numdyn.Graph is callable: interprets with NumPy

    f = numdyn.compile(add_mul, backend=my_compiler)
    a, b = np.arange(6.0), np.ones(6)
    np.testing.assert_array_equal(f(a, b), add_mul(a, b))
    np.testing.assert_array_equal(f(a + 1, b), add_mul(a + 1, b))
    assert seen == [2]  # same structure: compiled once


def test_custom_backend_output_checked():
    def bad(graph, example_inputs):
        return lambda *args: [np.zeros(1, dtype=np.int8)]

    f = numdyn.compile(add_mul, backend=bad)
    with pytest.raises(SystemError, match="backend output"):
        f(np.ones(3), np.ones(3))

    def not_callable(graph, example_inputs):
        return 5

    with pytest.raises(TypeError, match="not callable"):
        numdyn.compile(add_mul, backend=not_callable)(np.ones(3), np.ones(3))


def test_custom_backend_scalar_values_not_shared():
    # x * 0.5 and x * 0.25 share structure; a custom backend's callable only
    # sees arrays, so each scalar value gets its own compilation.
    calls = []

    def comp(graph, example_inputs):
        calls.append(1)
        return graph

    @numdyn.compile(backend=comp)
    def f(x, s):
        return x * s

    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x, 0.5), x * 0.5)
    np.testing.assert_array_equal(f(x, 0.25), x * 0.25)
    assert len(calls) == 2


# ---------------------------------------------------------------- policies

def test_disallow_in_graph_runs_eagerly_with_break():
    seen = []

    def helper(x):
        seen.append(type(x))
        return x * 2

    helper_d = numdyn.disallow_in_graph(helper)

    def f(a):
        return helper_d(a + 1) + 1

    out = numdyn.explain(f)(np.ones(3))
    assert seen == [np.ndarray]
    assert out.graph_break_count == 1
    assert "disallow_in_graph" in out.break_reasons[0].reason
    np.testing.assert_array_equal(out.result, np.full(3, 5.0))


def test_forbid_in_graph():
    g = numdyn.forbid_in_graph(lambda x: x)

    @numdyn.compile(backend="eager")
    def f(a):
        return g(a)

    with pytest.raises(RuntimeError, match="forbid_in_graph"):
        f(np.ones(2))
    np.testing.assert_array_equal(g(np.ones(2)), np.ones(2))  # outside: fine


def test_disable_function():
    kinds = []

    @numdyn.disable
    def plain(x):
        kinds.append(type(x))
        return x + 1

    @numdyn.compile(backend="eager")
    def f(a):
        return plain(a * 2)

    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 3.0))
    assert kinds == [np.ndarray]


def test_allow_in_graph_traces_through():
    @numdyn.allow_in_graph
    def pure(x):
        return x * 3

    out = numdyn.explain(lambda a: pure(a) + 1)(np.ones(2))
    assert out.graph_break_count == 0
    np.testing.assert_array_equal(out.result, np.full(2, 4.0))


def test_graph_break_splits():
    def f(a):
        b = a + 1
        numdyn.graph_break()
        return b * 2

    out = numdyn.explain(f)(np.ones(3))
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    assert out.break_reasons[0].reason == "numdyn.graph_break()"
    np.testing.assert_array_equal(out.result, np.full(3, 4.0))
    numdyn.graph_break()  # outside a compiled function: a no-op


def test_run_compiles_nothing():
    kinds = []

    @numdyn.compile(backend="eager")
    def f(a):
        kinds.append(numdyn.is_compiling())
        return a + 1

    r = numdyn.run(lambda x: f(x))(np.ones(2))
    np.testing.assert_array_equal(r, np.full(2, 2.0))
    assert kinds == [False]
    f(np.ones(2))
    assert kinds[1] is True  # compiled again outside run()


def test_is_compiling():
    @numdyn.compile(backend="eager")
    def f(a):
        return numdyn.is_compiling()

    assert f(np.ones(1)) is True
    assert numdyn.is_compiling() is False


def test_reset_and_counters():
    numdyn.reset()
    c = numdyn._C._trace_counters()
    assert c["graphs"] == 0 and c["graph_breaks"] == 0
    numdyn.compile(add_mul, backend="eager")(np.ones(2), np.ones(2))
    assert numdyn._C._trace_counters()["graphs"] == 1
    numdyn.reset()
    assert numdyn._C._trace_counters()["graphs"] == 0


def test_mark_dynamic_static():
    x = np.ones((3, 4))
    numdyn.mark_dynamic(x, 0)
    numdyn.mark_static(x, -1)
    assert numdyn._marked_dims(x) == (frozenset({0}), frozenset({1}))
    with pytest.raises(IndexError):
        numdyn.mark_static(x, 5)
    assert numdyn._marked_dims(np.ones(2)) == (frozenset(), frozenset())


def test_config_and_graph_exports():
    assert isinstance(numdyn.config.cache_size_limit, int)
    assert hasattr(numdyn.config, "suppress_errors")
    assert issubclass(numdyn.GraphBreakError, RuntimeError)
    assert numdyn.GraphBreakError.__module__ == "numdyn"


def test_verbose_logging(capsys):
    old = numdyn.config.verbose
    numdyn.config.verbose = True
    try:
        @numdyn.compile(backend="eager")
        def f(a):
            return float(a.sum())

        f(np.ones(2))
    finally:
        numdyn.config.verbose = old
    assert "graph break: float()" in capsys.readouterr().out


def test_set_logs(caplog):
    numdyn.set_logs(graph_breaks=True)
    try:
        with caplog.at_level("INFO", logger="numdyn"):
            numdyn.compile(lambda a: float(a.sum()), backend="eager")(np.ones(2))
    finally:
        numdyn.set_logs(graph_breaks=False)
    assert any("graph break" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError):
        numdyn.set_logs(nonsense=True)


def test_pickle_and_copy_of_results():
    @numdyn.compile(backend="eager")
    def f(a):
        return a * 2

    r = f(np.arange(3.0))
    assert type(r) is np.ndarray
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(r)), r)


def test_partial_and_functools():
    f = numdyn.compile(functools.partial(add_mul, b=np.ones(3)), backend="eager")
    np.testing.assert_array_equal(f(np.arange(3.0)), add_mul(np.arange(3.0), np.ones(3)))


def test_threads_share_a_compiled_function():
    @numdyn.compile(backend="eager")
    def f(x):
        return (x * 2 + 1).sum()

    results = {}

    def work(i):
        x = np.full(500, float(i))
        for _ in range(30):
            results[i] = f(x)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: np.float64(500 * (2 * i + 1)) for i in range(4)}
    assert all(type(v) is np.float64 for v in results.values())
