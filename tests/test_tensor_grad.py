"""Gradients of numdyn.Tensor operations and wrap_numpy calls (the tape,
differentiated by numdyn's autodiff), checked against central finite
differences in float64."""
import numpy as np
import pytest

import numdyn
from numdyn import Tensor


def numeric_grad(f, arrays, i, eps=1e-6):
    """d f(*arrays) / d arrays[i] by central differences (f returns a float)"""
    x = arrays[i]
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = x[idx]
        x[idx] = old + eps
        hi = f(*arrays)
        x[idx] = old - eps
        lo = f(*arrays)
        x[idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


def check_grads(loss, *arrays, rtol=1e-5, atol=1e-7):
    """loss written once: on Tensors (backward()) and on ndarrays (finite
    differences) -- the two must agree"""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    ts = [numdyn.tensor(a, requires_grad=True) for a in arrays]
    out = loss(*ts)
    assert isinstance(out, Tensor) and out.requires_grad and out.ndim == 0
    np.testing.assert_allclose(out.item(), float(loss(*[a.copy() for a in arrays])), rtol=1e-12)
    out.backward()
    for i, t in enumerate(ts):
        want = numeric_grad(lambda *a: float(loss(*a)), [a.copy() for a in arrays], i)
        assert t.grad is not None and t.grad.shape == t.shape and t.grad.dtype == t.dtype
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=rtol, atol=atol)


R = np.random.default_rng(0)
A = R.standard_normal((3, 4))
B = R.standard_normal((4,))
C = R.standard_normal((4, 2))
P = R.random((3, 4)) + 0.5

LOSSES = {
    "arith_broadcast": (lambda a, b: ((a + b) * (a - 2 * b) / (1.5 + b * b)).sum(), A, B),
    "pow_neg_abs": (lambda a, b: ((-a) ** 2 + abs(b) ** 3).mean(), A, B),
    "matmul": (lambda a, c: (a @ c).sum() + (a @ c @ c.T).mean(), A, C),
    "ufuncs": (lambda p: (np.exp(np.sin(p)) + np.log(p) * np.tanh(p) + np.sqrt(p)).sum(), P),
    "reductions_axes": (lambda a: (a.sum(axis=0) ** 2).sum() + a.mean(axis=1).prod()
                        + np.max(a, axis=1).sum(), A),
    "views": (lambda a: (a.T @ a).sum() + a.reshape(2, 6)[1].sum() + a[:, ::2].var(), A),
    "indexing": (lambda a: (a[np.array([0, 2, 2])] ** 2).sum() + a[1, 1:3].sum(), A),
    "maximum_where_clip": (lambda a, b: (np.maximum(a, b) + np.where(a > 0, a * a, -a)
                                        + np.clip(a, -0.5, 0.5)).sum(), A, B),
    "join": (lambda a, b: (np.concatenate([a, b[None, :]], axis=0) ** 2).sum()
             + np.stack([b, b * b]).sum(), A, B),
    "softmax_xent": (lambda a: -(a - np.log(np.exp(a).sum(axis=1, keepdims=True)))[
        np.arange(3), np.array([1, 0, 3])].mean(), A),
    "scalar_consts": (lambda a: (a * 2 + 3.5 - np.float64(1.25) * a).sum() ** 2 / 7, A),
    "ufunc_method": (lambda a: np.add.reduce(a * a, axis=1).sum(), A),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_tensor_op_gradients(name):
    fn, *arrays = LOSSES[name]
    check_grads(fn, *arrays)


def softmax_xent(x, W, labels):
    z = x @ W
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def test_wrap_numpy_gradients():
    x, W = R.standard_normal((5, 3)), R.standard_normal((3, 4))
    labels = np.array([0, 3, 1, 1, 2])
    w = numdyn.wrap_numpy(softmax_xent)
    check_grads(lambda a, b: w(a, b, labels), x, W)


def test_tape_mixes_wrap_numpy_and_tensor_ops():
    @numdyn.wrap_numpy
    def layer(h, W):
        return np.tanh(h @ W)

    x, W1, W2 = R.standard_normal((4, 3)), R.standard_normal((3, 5)), R.standard_normal((5, 2))
    check_grads(lambda x, a, b: (layer(layer(x * 2, a), b) ** 2).sum() + a.sum() * 0.1, x, W1, W2)


def test_backward_with_a_cotangent_and_accumulation():
    x = numdyn.tensor(np.arange(1.0, 4.0), requires_grad=True)
    y = x * x                                     # not a scalar: grad must be given
    with pytest.raises(RuntimeError, match="only for single-element"):
        y.backward()
    y.backward(np.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 40.0, 600.0])
    (x.sum() * 3).backward()                      # accumulates, like torch
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 43.0, 603.0])
    x.grad = None
    (x * 1.0).sum().backward(numdyn.tensor(2.0))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).backward(np.ones(4))
    leaf = numdyn.tensor(np.ones(2), requires_grad=True)
    leaf.backward(np.array([3.0, 4.0]))           # a leaf's own gradient
    np.testing.assert_allclose(leaf.grad.numpy(), [3.0, 4.0])


def test_second_backward_reuses_the_program():
    """the same tape structure is one program: later steps differentiate it
    again with new values (and get the right numbers)"""
    W0 = R.standard_normal((3, 2))
    progs = set()
    for step in range(3):
        W = numdyn.tensor(W0 * (step + 1), requires_grad=True)
        x = numdyn.tensor(R.standard_normal((4, 3)))
        loss = (np.tanh(x @ W) ** 2).sum()
        progs.add(id(numdyn._C._tape_program(loss)[0]))
        loss.backward()
        t = np.tanh(x.numpy() @ W.numpy())
        np.testing.assert_allclose(W.grad.numpy(), x.numpy().T @ (2 * t * (1 - t * t)),
                                   rtol=1e-10)
    assert len(progs) == 1


def test_float32_and_non_float_inputs():
    a = numdyn.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    i = numdyn.tensor(np.arange(6).reshape(2, 3))          # integers: no gradient
    loss = (a * i + a).sum()
    assert loss.dtype == np.float64 or loss.dtype == np.float32
    loss.backward()
    assert a.grad.dtype == np.float32
    np.testing.assert_allclose(a.grad.numpy(), np.arange(6).reshape(2, 3) + 1.0)
    assert i.grad is None and not i.requires_grad


def test_requires_grad_bookkeeping_and_errors():
    x = numdyn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None and x.is_leaf
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    with pytest.raises(RuntimeError, match="does not require grad"):
        numdyn.tensor([1.0]).sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    with numdyn.no_grad():
        z = x * 2
        assert not numdyn.is_grad_enabled()
    assert numdyn.is_grad_enabled() and not z.requires_grad
    with pytest.raises(RuntimeError, match="in place"):
        y += 1
    c = (x > 1.5)                                    # comparisons: no gradient
    assert not c.requires_grad
    assert (x * 3).argmax().requires_grad is False   # integer results: none either
    x.requires_grad_(False)
    assert not (x * 2).requires_grad
    g = numdyn.tensor([1.0, 2.0], requires_grad=True)
    plain = numdyn.tensor(np.zeros(2))
    with pytest.raises(RuntimeError, match="out="):
        np.add(g, 1.0, out=plain)
    with pytest.raises(RuntimeError, match="out="):
        g.cumsum(out=plain)
    assert np.add(g, 1.0, out=None).requires_grad    # out=None is no write
    z = numdyn.tensor(np.array([1 + 2j]), requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * z).sum().backward()                      # as torch: a complex 0-d needs grad=
