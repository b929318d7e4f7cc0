"""Tensor.backward() frees the graph as torch does (issue 14): a second
backward through nodes whose backward reads saved forward values raises
torch's RuntimeError; retain_graph=True keeps the graph and the gradients
accumulate into .grad; graphs of sums, views, indexing and additions (torch
saves nothing for them) go through again. Compared with torch.autograd
case by case."""
import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")

X = np.linspace(-1.0, 2.0, 6)

CASES = {
    "add": lambda x: (x + 1.0).sum(),
    "neg_getitem": lambda x: (-x)[1:].sum(),
    "mean": lambda x: x.mean(),
    "mul_scalar": lambda x: (x * 2.0).sum(),
    "div_scalar": lambda x: (x / 2.0).sum(),
    "mul_self": lambda x: (x * x).sum(),
    "sin": lambda x: x.sin().sum() if isinstance(x, torch.Tensor) else np.sin(x).sum(),
    "exp_add": lambda x: (x.exp() if isinstance(x, torch.Tensor) else np.exp(x)).sum() + x.sum(),
    "matmul": lambda x: x @ x,
    "reshape_T": lambda x: (x.reshape(2, 3).T + 1.0).sum(),
}

MSG = "Trying to backward through the graph a second time"


def run(lib, f):
    t = numdyn.tensor(X.copy(), requires_grad=True) if lib == "nd" else \
        torch.tensor(X.copy(), requires_grad=True)
    return t, f(t)


def outcome(y):
    try:
        y.backward()
        return "ok"
    except RuntimeError as e:
        assert MSG in str(e)
        return "raised"


def grad_of(t):
    return t.grad.numpy() if t.grad is not None else None


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_backward_as_torch(name):
    f = CASES[name]
    (tn, yn), (tt, yt) = run("nd", f), run("torch", f)
    yn.backward()
    yt.backward()
    got, want = outcome(yn), outcome(yt)
    assert got == want, (name, got, want)
    # the first gradient stays (doubled where the second went through)
    np.testing.assert_allclose(grad_of(tn), grad_of(tt), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_retain_graph_accumulates_then_frees(name):
    f = CASES[name]
    (tn, yn), (tt, yt) = run("nd", f), run("torch", f)
    for y in (yn, yt):
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()  # the graph was kept: this one goes through, then frees it
    np.testing.assert_allclose(grad_of(tn), grad_of(tt), rtol=1e-12)
    assert outcome(yn) == outcome(yt)


def test_shared_subgraph_freed_for_another_root():
    # torch frees the nodes, not the root: another loss over the same
    # intermediate can no longer backward through it
    for lib in ("nd", "torch"):
        t, _ = run(lib, lambda x: x)
        h = t * t
        a, b = h.sum(), (h + 1.0).sum()
        a.backward()
        with pytest.raises(RuntimeError, match=MSG):
            b.backward()
        np.testing.assert_allclose(grad_of(t), 2 * X, rtol=1e-12)


def test_fresh_graph_each_iteration_is_fine():
    t = numdyn.tensor(X.copy(), requires_grad=True)
    for _ in range(3):
        (t * t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 6 * X, rtol=1e-12)


def test_wrap_numpy_node_is_freed():
    f = numdyn.wrap_numpy(lambda a: np.sum(np.tanh(a) * a))
    t = numdyn.tensor(X.copy(), requires_grad=True)
    y = f(t) * 3.0
    y.backward(retain_graph=True)
    g1 = t.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * g1, rtol=1e-12)
    with pytest.raises(RuntimeError, match=MSG):
        y.backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * g1, rtol=1e-12)
