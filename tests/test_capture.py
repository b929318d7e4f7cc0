"""Capture: proxies, flushes, graph breaks, explain, nesting, threads."""
import collections
import inspect
import threading

import builtins

import numpy as np
import pytest

import numdyn
from oracle import check
import programs
from programs import toy_example

G = np.arange(4.0)  # a global array the compiled functions read


def line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(text)


# ----------------------------------------------------------------- explain

@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_toy_example_explain(sign, capsys):
    a = np.linspace(-2, 2, 10)
    b = sign * np.arange(1.0, 11.0)
    out = numdyn.explain(toy_example)(a, b)
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    br = out.break_reasons[0]
    assert "bool()" in br.reason
    assert br.filename == programs.__file__
    assert br.lineno == line_of(toy_example, "if b.sum() < 0")
    assert br.source == "if b.sum() < 0:"
    # the division stays lazy across the break: it runs in graph 2
    assert "true_divide" not in out.ops_per_graph[0]
    assert "true_divide" in out.ops_per_graph[1]
    assert len(out.graphs) == 2
    np.testing.assert_allclose(out.result, toy_example(a, b))
    text = str(out)
    assert "Graph Count: 2" in text and "Graph Break Count: 1" in text
    assert "if b.sum() < 0:" in text
    assert capsys.readouterr().out.count("woo") == 2  # print() is no break


def test_toy_example_matches_numpy(backend):
    a = np.linspace(-2, 2, 10)
    check(toy_example, a, -np.arange(10.0), backend=backend)
    check(toy_example, a, np.arange(10.0), backend=backend)


def break_bool(a):
    if (a > 0).all():
        return a
    return -a


def break_float(a):
    return a * float(a.max())


def break_int(a):
    return a * int(a.sum())


def break_repr(a):
    s = repr(a + 1)
    return a, s


def break_uncovered(a):
    u = np.unique(a + 1)
    return u * 2


@pytest.mark.parametrize("fn,text,marker", [
    (break_bool, "bool()", "if (a > 0).all()"),
    (break_float, "float()", "float(a.max())"),
    (break_int, "int()", "int(a.sum())"),
    (break_repr, "repr()", "repr(a + 1)"),
    (break_uncovered, "unique", "np.unique"),
])
def test_break_reasons_and_locations(fn, text, marker):
    a = np.linspace(-1.0, 3.0, 8)
    out = numdyn.explain(fn)(a)
    assert out.graph_break_count >= 1
    br = out.break_reasons[0]
    assert text in br.reason
    assert (br.filename, br.lineno) == (__file__, line_of(fn, marker))
    assert marker in br.source
    check(fn, a, backend="eager")


def test_fullgraph_error_message():
    f = numdyn.compile(break_float, backend="eager", fullgraph=True)
    with pytest.raises(numdyn.GraphBreakError) as ei:
        f(np.ones(3))
    msg = str(ei.value)
    assert "float()" in msg
    assert f"{__file__}:{line_of(break_float, 'float(a.max())')}:" in msg
    assert "return a * float(a.max())" in msg
    assert isinstance(ei.value, RuntimeError)
    # no break: fine under fullgraph
    g = numdyn.compile(lambda a: a * 2 + 1, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(g(np.ones(2)), np.full(2, 3.0))


def test_fullgraph_of_outer_applies_to_inlined():
    inner = numdyn.compile(break_float, backend="eager")
    outer = numdyn.compile(lambda a: inner(a) + 1, backend="eager", fullgraph=True)
    with pytest.raises(numdyn.GraphBreakError):
        outer(np.ones(3))


def test_print_without_arrays_is_not_a_break(capsys):
    def f(a):
        print("hello", 3)
        return a + 1

    out = numdyn.explain(f)(np.ones(2))
    assert out.graph_break_count == 0 and out.graph_count == 1
    assert "hello 3" in capsys.readouterr().out


# --------------------------------------------------------- arguments/returns

Pair = collections.namedtuple("Pair", "x y")


def nested(args, d, p):
    a, (b, c) = args
    return {"s": a + b, "t": [c * 2, d["k"] - 1], "p": Pair(p.x + p.y, 3)}


def test_nested_arguments_and_returns(backend):
    a, b, c = np.arange(3.0), np.ones(3), np.full(3, 2.0)
    check(nested, (a, [b, c]), {"k": np.arange(3)}, Pair(np.ones(2), np.ones(2)),
          backend=backend)


def test_scalar_results_are_numpy_scalars(backend):
    def f(a):
        return a.sum(), a.max() * 2, (a.sum(keepdims=True) + 0)

    check(f, np.arange(5.0), backend=backend)
    s, m, k = numdyn.compile(f, backend=backend)(np.arange(5.0))
    assert type(s) is np.float64 and type(m) is np.float64
    assert type(k) is np.ndarray and k.shape == (1,)


def test_returning_an_argument_keeps_identity():
    f = numdyn.compile(lambda a, b: (a, b + 0), backend="eager")
    a = np.arange(3.0)
    r, _ = f(a, a)
    assert r is a


def test_non_array_arguments_pass_through():
    def f(a, n, s, obj):
        return a * n, s.upper(), obj

    sentinel = object()
    r = numdyn.compile(f, backend="eager")(np.ones(2), 3, "x", sentinel)
    assert r[2] is sentinel and r[1] == "X"
    np.testing.assert_array_equal(r[0], np.full(2, 3.0))


def test_unsupported_dtypes_stay_real():
    def f(a, s):
        return a + 1, s

    strs = np.array(["a", "b"])
    r = numdyn.compile(f, backend="eager")(np.ones(2, np.float32), strs)
    assert r[1] is strs and r[0].dtype == np.float32


def test_globals_and_closures(backend):
    k = np.full(4, 3.0)

    def f(a):
        return a * G + k

    check(f, np.ones(4), backend=backend)


def test_exceptions_propagate_and_state_is_clean():
    class Boom(Exception):
        pass

    @numdyn.compile(backend="eager")
    def f(a):
        b = a + 1
        raise Boom(b.shape)

    with pytest.raises(Boom) as ei:
        f(np.ones(3))
    assert ei.value.args == ((3,),)
    assert not numdyn.is_compiling()
    # the next call works normally
    np.testing.assert_array_equal(numdyn.compile(lambda a: a + 1, backend="eager")(np.ones(2)),
                                  np.full(2, 2.0))


def test_numpy_exceptions_inside():
    def f(a, b):
        return a + b

    check(f, np.ones(3), np.ones(4), backend="eager")


# ----------------------------------------------------------- proxy protocol

def test_proxy_attributes_need_no_graph_work():
    seen = {}

    def f(a):
        b = a + 1
        seen.update(shape=b.shape, dtype=b.dtype, ndim=b.ndim, size=b.size,
                    itemsize=b.itemsize, nbytes=b.nbytes, len=len(b),
                    isinst=isinstance(b, np.ndarray))
        return b

    out = numdyn.explain(f)(np.ones((2, 3), np.float32))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert seen == dict(shape=(2, 3), dtype=np.dtype(np.float32), ndim=2, size=6,
                        itemsize=4, nbytes=24, len=2, isinst=True)


def test_operators_match_numpy(backend):
    def f(a, b):
        return (a + b, a - b, b - a, a * b, a / b, a // b, a % b, a ** 2, 2 ** a,
                -a, +a, abs(a), a < b, a <= b, a == b, a != b, a > b, a >= b,
                3 - a, 1.5 / b, divmod(a, b))

    check(f, np.linspace(-3, 3, 7), np.linspace(1, 2, 7), backend=backend)


def test_integer_operators(backend):
    def f(a, b):
        return a & b, a | b, a ^ b, ~a, a << 2, a >> 1, 7 & a

    check(f, np.arange(8, dtype=np.int32), np.arange(8, 0, -1).astype(np.int32),
          backend=backend)


def test_matmul_operator():
    def f(a, b):
        return a @ b

    check(f, np.ones((3, 4)), np.arange(8.0).reshape(4, 2), backend="eager")


def test_methods_route_to_shim(backend):
    def f(a):
        return a.sum(), a.mean(axis=0), a.max(), a.astype(np.float32), a.copy()

    check(f, np.arange(12.0).reshape(3, 4), backend=backend)


def test_conversions_materialize():
    def f(a):
        s = a.sum()
        return float(s), int(s), complex(s), bool(s > 1), f"{s:.1f}", str(a + 0)

    check(f, np.arange(3.0), backend="eager")


def test_bool_of_many_elements_raises_like_numpy():
    def f(a):
        return bool(a + 1)

    check(f, np.ones(3), backend="eager")
    check(f, np.ones(0), backend="eager")
    out = numdyn.compile(f, backend="eager")
    with pytest.raises(ValueError):
        out(np.ones(2))


def test_iteration_and_len():
    def f(a):
        return [row.sum() for row in a + 1], len(a)

    check(f, np.arange(6.0).reshape(3, 2), backend="eager")

    def g(a):
        return list(a.sum())

    with pytest.raises(TypeError, match="object is not iterable"):
        numdyn.compile(g, backend="eager")(np.ones(2))


def test_buffer_protocol_and_array_protocol():
    def f(a):
        b = a + 1
        return bytes(memoryview(b)), np.asarray(b), b.__array__(np.float32)

    check(f, np.arange(3.0), backend="eager")


def test_hash_is_unhashable():
    @numdyn.compile(backend="eager")
    def f(a):
        return hash(a + 1)

    with pytest.raises(TypeError):
        f(np.ones(2))


# ----------------------------------------------------------- escaped proxies

def test_escaped_proxy_materializes_after_return():
    box = []

    @numdyn.compile(backend="eager")
    def f(a):
        b = a * 3
        box.append(b)
        return a.sum()

    assert f(np.ones(3)) == 3.0
    # the closure's list is the caller's: it holds NumPy's array, as under NumPy
    assert type(box[0]) is np.ndarray
    np.testing.assert_array_equal(box[0], np.full(3, 3.0))

    class Holder:  # a class's own attributes are not walked: the value stays lazy
        items = []

    @numdyn.compile(backend="eager")
    def g(a):
        b = a * 3
        Holder.items.append(b)
        return a.sum()

    assert g(np.ones(3)) == 3.0
    esc = Holder.items[0]
    assert not esc._numdyn_live
    np.testing.assert_array_equal(np.asarray(esc), np.full(3, 3.0))
    np.testing.assert_array_equal(esc + 1, np.full(3, 4.0))
    np.testing.assert_array_equal(np.sin(esc), np.sin(np.full(3, 3.0)))
    assert repr(esc) == repr(np.full(3, 3.0))
    assert esc.sum() == 9.0
    # usable inside another compiled function
    g = numdyn.compile(lambda x, y: x + y, backend="eager")
    np.testing.assert_array_equal(g(esc, np.ones(3)), np.full(3, 4.0))


def test_escaped_scalar_is_scalar_like():
    box = []

    @numdyn.compile(backend="eager")
    def f(a):
        box.append(a.sum())
        return a

    f(np.ones(3))
    assert repr(box[0]) == repr(np.float64(3.0))
    assert float(box[0]) == 3.0


# ---------------------------------------------------------------- nesting

def test_nested_compiled_calls_inline():
    kinds = []

    @numdyn.compile(backend="eager")
    def inner(x):
        kinds.append(builtins.type(x).__name__)  # the real type: not numdyn's NumPy-faithful type()
        return x * 2, x.sum()

    @numdyn.compile(backend="eager")
    def outer(x):
        y, s = inner(x + 1)
        return y + s

    out = numdyn.explain(outer)(np.arange(3.0))
    assert kinds == ["LazyArray"]  # inner got outer's proxy, not an array
    assert out.graph_count == 1
    np.testing.assert_array_equal(out.result, (np.arange(3.0) + 1) * 2 + 6)


def test_recursion():
    @numdyn.compile(backend="eager")
    def power(x, n):
        return x if n == 0 else x * power(x, n - 1)

    np.testing.assert_array_equal(power(np.full(2, 2.0), 5), np.full(2, 64.0))


def test_thread_local_traces_do_not_mix():
    barrier = threading.Barrier(2)
    errors = []

    @numdyn.compile(backend="eager")
    def f(x, k):
        y = x * k
        barrier.wait()  # both threads are tracing now
        return y + k

    def work(k, out):
        try:
            out[k] = f(np.ones(3), float(k))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    out = {}
    ts = [threading.Thread(target=work, args=(k, out)) for k in (2, 3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    np.testing.assert_array_equal(out[2], np.full(3, 4.0))
    np.testing.assert_array_equal(out[3], np.full(3, 6.0))


# ------------------------------------------------------------ shim remap

def test_numpy_names_resolve_to_shim():
    from numpy import zeros as npzeros  # noqa: F401  (module-level lookup below)

    def f(a):
        out = np.zeros(a.shape) + a
        return out * 2

    out = numdyn.explain(f)(np.ones(3))
    # np.zeros ran lazily inside the graph: no break, one graph
    assert out.graph_break_count == 0 and out.graph_count == 1
    np.testing.assert_array_equal(out.result, np.full(3, 2.0))


def test_rebinding_numpy_global_is_followed():
    ns = {"np": np}
    exec("def f(a):\n    return np.add(a, 1)\n", ns)
    f = numdyn.compile(ns["f"], backend="eager")
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))

    class FakeNp:
        @staticmethod
        def add(a, b):
            return "fake"

    ns["np"] = FakeNp
    assert f(np.ones(2)) == "fake"
    ns["np"] = np
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))


def test_attribute_named_like_numpy_alias_not_remapped():
    class Holder:
        np = "attribute"

    def f(a, h):
        return a + 1, h.np

    r = numdyn.compile(f, backend="eager")(np.ones(2), Holder())
    assert r[1] == "attribute"


def test_tracing_cost_is_small():
    # Not a benchmark: guards against the operator path doing something
    # quadratic. 2000 chained adds must trace quickly.
    src = "def f(a, b):\n" + "    a = a + b\n" * 2000 + "    return a\n"
    ns = {}
    exec(src, ns)
    f = numdyn.compile(ns["f"], backend="eager")
    np.testing.assert_array_equal(f(np.zeros(4), np.ones(4)), np.full(4, 2000.0))
