"""numdyn.Graph: the captured graph as custom backends see it -- iteration,
node attributes, printing, calling it on new arrays (eager interpretation)."""
import numpy as np
import pytest

import numdyn


def capture(fn, *args):
    """The graphs a custom backend receives for fn(*args)."""
    seen = []

    def backend(graph, example_inputs):
        seen.append((graph, example_inputs))
        return graph  # Graph.__call__ interprets it with NumPy

    out = numdyn.compile(fn, backend=backend)(*args)
    return seen, out


def f(a, b):
    return np.sum(np.exp(a) * b + 1.5, axis=0), a[1:, ::-1].T


def test_graph_iteration_and_attrs():
    a = np.arange(6.0).reshape(2, 3)
    b = np.ones(3, np.float32)
    seen, out = capture(f, a, b)
    assert len(seen) == 1
    g, inputs = seen[0]
    assert isinstance(g, numdyn.Graph)
    nodes = list(g)
    assert len(nodes) == len(g) and [n.index for n in nodes] == list(range(len(g)))
    ops = [n.op for n in nodes]
    assert ops.count("input") == 2 and "ufunc" in ops and "reduce" in ops and "view" in ops
    for n in nodes:
        assert isinstance(n.dtype, np.dtype) and isinstance(n.shape, tuple)
        assert all(0 <= i < n.index for i in n.inputs)
    ufuncs = {n.attrs["ufunc"] for n in nodes if n.op == "ufunc"}
    assert {"exp", "multiply", "add"} <= ufuncs
    red = [n for n in nodes if n.op == "reduce"][0]
    assert red.attrs["reduce"] == "add" and red.attrs["axes"] == (0,) and red.shape == (3,)
    mul = [n for n in nodes if n.op == "ufunc" and n.attrs["ufunc"] == "multiply"][0]
    assert mul.dtype == np.float64
    assert mul.attrs["loop_dtypes"] == (np.dtype("float64"), np.dtype("float64"))
    sc = [n for n in nodes if n.op == "scalar"][0]
    assert sc.attrs["value"] == 1.5 and sc.attrs["weak"] is True
    view = [n for n in nodes if n.op == "view"]
    assert view and all("strides" in v.attrs and "offset" in v.attrs for v in view)
    assert len(g.outputs) == 2
    assert all(isinstance(x, np.ndarray) for x in g.inputs)
    exp0, exp1 = f(a, b)
    np.testing.assert_allclose(out[0], exp0)
    np.testing.assert_array_equal(out[1], exp1)


def test_graph_str():
    a = np.arange(6.0).reshape(2, 3)
    seen, _ = capture(lambda x: x * 2 + 1, a)
    text = str(seen[0][0])
    lines = text.splitlines()
    assert lines[0] == "%0 = input float64 (2, 3)"
    assert any(line.startswith("%") and "ufunc multiply(%0, %" in line and "float64 (2, 3)" in line
               for line in lines)
    assert lines[-1].startswith("return (%")
    assert "numdyn.Graph" in repr(seen[0][0])


def test_graph_call_on_new_inputs():
    a = np.arange(6.0).reshape(2, 3)
    b = np.ones(3, np.float32)
    seen, _ = capture(f, a, b)
    g = seen[0][0]
    a2, b2 = a * 3 - 1, np.full(3, 2.0, np.float32)
    res = g(a2, b2)
    assert isinstance(res, list) and len(res) == 2
    e0, e1 = f(a2, b2)
    np.testing.assert_allclose(res[0], e0)
    np.testing.assert_array_equal(res[1], e1)
    with pytest.raises(ValueError, match="as traced"):
        g(np.ones((3, 3)), b2)
    with pytest.raises(TypeError):
        g(a2)


def test_graph_node_kinds_print():
    def h(x):
        y = np.zeros(4)
        y[1:] = x[:3]
        return np.cumsum(y), np.where(x > 1, x, 0.0), np.argmax(x), x.astype(np.int8), np.eye(2)
    seen, out = capture(h, np.arange(4.0))
    g = seen[0][0]
    text = str(g)
    for word in ("setitem", "scan add", "where", "reduce argmax", "cast", "index"):
        assert word in text, (word, text)
    ref = h(np.arange(4.0))
    for r, e in zip(out, ref):
        np.testing.assert_array_equal(r, e)
