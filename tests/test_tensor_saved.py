"""A wrap_numpy call on Tensors that require grad runs its forward as
numdyn's vjp and the tape keeps the pullback: backward() runs the backward
graph from the values the forward saved, never the function again (the
torch semantics: the gradient is that of the forward that ran). Checked
against central finite differences and torch.autograd."""
import numpy as np
import pytest

import numdyn

from test_tensor_grad import check_grads, numeric_grad

R = np.random.default_rng(7)
SCALE = np.full(4, 2.0)


@numdyn.wrap_numpy
def scaled(x):
    return (SCALE * x ** 2).sum()


def test_backward_uses_the_forward_that_ran():
    """the global the function reads is rebound between forward and
    backward: a backward that ran the function again would differentiate
    the new one (gradient 6x, not 4x)"""
    global SCALE
    x0 = R.standard_normal(4)
    for step in range(3):                 # cold, then recorded vjp replays
        SCALE = np.full(4, 2.0)
        x = numdyn.tensor(x0 + step, requires_grad=True)
        loss = scaled(x)
        SCALE = np.full(4, 3.0)
        loss.backward()
        np.testing.assert_allclose(x.grad.numpy(), 4.0 * (x0 + step), rtol=1e-12)
    SCALE = np.full(4, 2.0)


@numdyn.wrap_numpy
def two_outputs(x, W, b):
    h = np.tanh(x @ W + b)
    return h, (h * h).sum(axis=1), np.argmax(h, axis=1)


@pytest.mark.parametrize("use", ["first", "second", "both"])
def test_multiple_outputs_some_unused(use):
    x, W, b = R.standard_normal((3, 4)), R.standard_normal((4, 5)), R.standard_normal(5)

    def loss(x, W, b):
        h, s, idx = two_outputs(x, W, b)
        if use == "first":
            return (h * 1.5).sum()
        if use == "second":
            return np.log1p(s).sum()
        return (h ** 3).sum() + s.mean()

    for _ in range(2):                               # the second call replays
        check_grads(loss, x, W, b)


@numdyn.wrap_numpy
def layer(h, W, scale=1.0):
    return np.tanh(h @ W) * scale


def test_chained_calls_constants_and_keywords():
    x, W1, W2 = R.standard_normal((4, 3)), R.standard_normal((3, 5)), R.standard_normal((5, 2))
    c = numdyn.tensor(R.standard_normal((4, 2)))     # no grad: a constant
    for _ in range(2):
        check_grads(lambda x, a, b: ((layer(layer(x * 2, a), b, scale=0.5) - c) ** 2).sum()
                    + a.sum() * 0.1, x, W1, W2)
    # a Tensor that requires grad passed by keyword: recorded as a replayed node
    check_grads(lambda x, a: layer(x, W=a).sum() ** 2, x, W1)


def test_same_tensor_twice_and_accumulation():
    x0 = R.standard_normal((3, 3))
    x = numdyn.tensor(x0, requires_grad=True)
    loss = layer(x, x).sum() + layer(x, x.T).sum()
    loss.backward()
    want = numeric_grad(lambda a: float(np.tanh(a @ a).sum() + np.tanh(a @ a.T).sum()),
                        [x0.copy()], 0)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-7)
    loss = layer(x, x).sum()
    loss.backward()                                  # accumulates into .grad
    want2 = want + numeric_grad(lambda a: float(np.tanh(a @ a).sum()), [x0.copy()], 0)
    np.testing.assert_allclose(x.grad.numpy(), want2, rtol=1e-5, atol=1e-7)


def test_float32_and_nonscalar_backward_against_torch():
    torch = pytest.importorskip("torch")
    x0 = R.standard_normal((6, 3)).astype(np.float32)
    W0 = R.standard_normal((3, 4)).astype(np.float32)
    x = numdyn.tensor(x0, requires_grad=True)
    W = numdyn.tensor(W0, requires_grad=True)
    out = layer(x, W)
    assert out.dtype == np.float32
    ct = R.standard_normal((6, 4)).astype(np.float32)
    out.backward(ct)
    xt = torch.tensor(x0, requires_grad=True)
    Wt = torch.tensor(W0, requires_grad=True)
    torch.tanh(xt @ Wt).backward(torch.from_numpy(ct))
    assert x.grad.dtype == np.float32 and W.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(W.grad.numpy(), Wt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_no_grad_and_detached_calls_record_nothing():
    x = numdyn.tensor(R.standard_normal((2, 3)), requires_grad=True)
    W = numdyn.tensor(R.standard_normal((3, 2)), requires_grad=True)
    with numdyn.no_grad():
        out = layer(x, W)
    assert not out.requires_grad
    out = layer(x.detach(), W.detach())
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), np.tanh(x.numpy() @ W.numpy()))


def test_inplace_write_after_the_call_keeps_the_saved_values():
    """the pullback saved tanh's output; the Tensor owns a copy, so writing
    it in place afterwards (recorded, versioned) leaves the saved value and
    the gradient right"""
    x0, W0 = R.standard_normal((3, 4)), R.standard_normal((4, 2))
    for _ in range(2):
        x = numdyn.tensor(x0, requires_grad=True)
        W = numdyn.tensor(W0, requires_grad=True)
        y = layer(x, W)
        y *= 2.0
        y += 1.0
        (y * y).sum().backward()
        t = np.tanh(x0 @ W0)
        dy = 2 * (2 * t + 1) * 2 * (1 - t * t)
        np.testing.assert_allclose(W.grad.numpy(), x0.T @ dy, rtol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), dy @ W0.T, rtol=1e-10)


@numdyn.wrap_numpy
def with_python_float(x):
    return float(np.sum(x)), (x * 3.0).sum()


def test_a_value_leaving_as_data_does_not_break_the_call():
    """float() of a differentiated value inside the function: the call
    still returns NumPy's values (recorded as a node backward() replays);
    backward() through it refuses (never a gradient missing the float()'s
    share)"""
    x0 = R.standard_normal(5)
    x = numdyn.tensor(x0, requires_grad=True)
    s, t = with_python_float(x)
    assert isinstance(s, float) and s == pytest.approx(x0.sum())
    assert t.item() == pytest.approx(3 * x0.sum())
    with pytest.raises(NotImplementedError, match="float"):
        t.backward()
