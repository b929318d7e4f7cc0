"""Tensor.backward takes torch's signature (issue 14, probed as a torch
user would write it): backward(gradient=None, retain_graph=None,
create_graph=False, inputs=None), `grad=` an alias. Before, gradient= and
retain_graph= were TypeErrors; create_graph / inputs work as torch's
(test_tensor_backward_graph.py)."""
import numpy as np
import pytest

import numdyn

X = np.linspace(-1.0, 2.0, 6)
G = np.arange(6.0) - 2.0


def leaf():
    return numdyn.tensor(X.copy(), requires_grad=True)


@pytest.mark.parametrize("call", [lambda y: y.backward(G), lambda y: y.backward(gradient=G),
                                  lambda y: y.backward(grad=G),
                                  lambda y: y.backward(numdyn.tensor(G), retain_graph=False)])
def test_gradient_keyword_forms(call):
    t = leaf()
    call(np.sin(t) * 2.0)
    np.testing.assert_allclose(t.grad.numpy(), 2.0 * np.cos(X) * G, rtol=1e-12)


def test_retain_graph_twice_accumulates_as_torch():
    torch = pytest.importorskip("torch")
    t = leaf()
    y = (t * t * t).sum()
    y.backward(retain_graph=True)
    y.backward()
    tt = torch.tensor(X, requires_grad=True)
    yt = (tt * tt * tt).sum()
    yt.backward(retain_graph=True)
    yt.backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-12)


def test_argument_errors():
    t = leaf()
    y = t * 2.0
    with pytest.raises(TypeError, match="both gradient= and its alias grad="):
        y.backward(gradient=G, grad=G)
    with pytest.raises(RuntimeError, match=r"grad has shape \(3,\), the Tensor \(6,\)"):
        y.backward(np.ones(3))
    with pytest.raises(TypeError):
        y.backward(G, None, False, None, G)  # grad= is keyword-only
