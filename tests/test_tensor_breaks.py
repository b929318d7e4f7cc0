"""Gradients through graph breaks on every path (issue 14's walk, item
"gradients flow through graph breaks"): numdyn.vjp, a Tensor tape of a
wrap_numpy call, the torch autograd bridge, vjp composed with compile both
ways and backend="aot_eager" -- against torch.autograd of the same math.
The pullback keeps a forward value computed BEFORE the break (the min-cut
saves it); the flush at the break used to donate that value's buffer to a
later kernel, and the pullback's call failed (SystemError: NULL object
passed to Py_BuildValue)."""
import numpy as np
import pytest

import numdyn

X = np.random.default_rng(5).standard_normal((5, 3))


def f_branch(a):
    y = np.tanh(a) * 2
    if y.sum() > 0:          # a data-dependent branch: a graph break
        y = y * a
    else:
        y = y - a
    return np.sum(np.exp(y) ** 2)


def f_break(a):
    y = np.tanh(a) * 2
    numdyn.graph_break()
    return np.sum(np.exp(y) ** 2)


def torch_ref(fn_name, x):
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    y = torch.tanh(t) * 2
    if fn_name == "f_branch":
        y = y * t if y.sum() > 0 else y - t
    (torch.exp(y) ** 2).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("fn", [f_branch, f_break], ids=["branch", "graph_break"])
def test_every_gradient_path_through_a_break(fn):
    torch = pytest.importorskip("torch")
    for x in (X, -X):  # both sides of the branch
        ref = torch_ref(fn.__name__, x)
        out, pull = numdyn.vjp(fn, x)
        np.testing.assert_allclose(out, fn(x), rtol=1e-12)
        np.testing.assert_allclose(pull(1.0)[0], ref, rtol=1e-10, atol=1e-12)
        T = numdyn.tensor(x, requires_grad=True)
        numdyn.wrap_numpy(fn)(T).backward()
        np.testing.assert_allclose(T.grad.numpy(), ref, rtol=1e-10, atol=1e-12)
        t = torch.tensor(x, requires_grad=True)
        numdyn.wrap_numpy(fn)(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), ref, rtol=1e-10, atol=1e-12)
    ref = torch_ref(fn.__name__, X)
    o, pull = numdyn.vjp(numdyn.compile(fn), X)
    np.testing.assert_allclose(pull(1.0)[0], ref, rtol=1e-10, atol=1e-12)
    o, pull = numdyn.vjp(numdyn.compile(fn, backend="aot_eager"), X)
    np.testing.assert_allclose(pull(1.0)[0], ref, rtol=1e-10, atol=1e-12)

    @numdyn.compile
    def h(a):
        o, pull = numdyn.vjp(fn, a)
        return o, pull(np.float64(1.0))[0]
    for _ in range(2):  # traced, then again
        o, g = h(X)
        np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-12)
        assert type(g) is np.ndarray and g.dtype == np.float64


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        numdyn.tensor(np.arange(3), requires_grad=True)
