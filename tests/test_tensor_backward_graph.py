"""Tensor.backward(inputs=...) and backward(create_graph=True) as torch
has them (issue 14): inputs= accumulates only into the Tensors it names
(non-leaf ones and the root too; others keep their .grad), create_graph
records the backward on the tape so that the gradients are differentiated
again (second derivatives, Hessian-vector products). Each case runs the
same program through numdyn.Tensor and torch.autograd, step by step, and
compares every .grad: values, dtypes, shapes, None-ness."""
import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")

R = np.random.default_rng(1415)
X = np.array([0.3, -1.2, 2.0, 0.7, -0.4, 1.1])
W = R.standard_normal((6, 3))


def is_t(x):
    return isinstance(x, torch.Tensor)


def sin(x):
    return torch.sin(x) if is_t(x) else np.sin(x)


def tanh(x):
    return torch.tanh(x) if is_t(x) else np.tanh(x)


def leaf(lib, a):
    if lib == "torch":
        return torch.tensor(a.copy(), requires_grad=True)
    return numdyn.tensor(a.copy(), requires_grad=True)


def const(lib, a):
    return torch.tensor(a.copy()) if lib == "torch" else numdyn.tensor(a.copy())


def grad_of(t):
    g = t.grad
    if g is None:
        return None
    a = g.detach().numpy() if is_t(g) else g.numpy()
    return a


def same_grads(nd_ts, th_ts, rtol=1e-12):
    for i, (n, t) in enumerate(zip(nd_ts, th_ts)):
        gn, gt = grad_of(n), grad_of(t)
        assert (gn is None) == (gt is None), (i, gn, gt)
        if gn is None:
            continue
        assert gn.dtype == gt.dtype and gn.shape == gt.shape, (i, gn.dtype, gt.dtype)
        np.testing.assert_allclose(gn, gt, rtol=rtol, atol=1e-13, err_msg=f"tensor {i}")


def both(program, *arrays):
    """program(lib, *leaves) -> list of the Tensors whose .grad to compare"""
    nd = program("nd", *[leaf("nd", a) for a in arrays])
    th = program("torch", *[leaf("torch", a) for a in arrays])
    same_grads(nd, th, rtol=1e-4 if any(a.dtype == np.float32 for a in arrays) else 1e-12)
    return nd, th


# ---------------------------------------------------------------- inputs=

def test_inputs_leaves_only():
    def prog(lib, x, z):
        y = (x * x * z).sum()
        y.backward(inputs=[x])
        return [x, z]
    nd, _ = both(prog, X, X[::-1])
    assert nd[1].grad is None


def test_inputs_a_single_tensor_and_accumulation():
    def prog(lib, x, z):
        (sin(x) * z).sum().backward(inputs=z)
        (x * z).sum().backward(inputs=(x, z))
        return [x, z]
    both(prog, X, X[::-1])


def test_inputs_non_leaf_and_root():
    """a non-leaf's .grad is its own cotangent (the path through it to x
    counts for x as well); the root's is the given gradient"""
    def prog(lib, x):
        h = x * 3.0
        y = sin(h) * h
        s = y.sum()
        s.backward(inputs=[h, x, s])
        return [x, h, y, s]
    nd, _ = both(prog, X)
    assert nd[2].grad is None and nd[3].grad.item() == 1.0

    def prog2(lib, x):
        h = x * 3.0
        y = sin(h) * h
        y.sum().backward(inputs=[y], retain_graph=True)
        y.sum().backward(inputs=[y, h])
        return [x, h, y]
    both(prog2, X)


def test_inputs_non_leaf_read_twice_and_given_gradient():
    """h read by two operations: its gradient sums both; a non-scalar root
    with an explicit gradient; float32 throughout"""
    G = np.linspace(-1.0, 1.0, 6).astype(np.float32)

    def prog(lib, x):
        h = tanh(x)
        y = h * h + (torch.flip(h, (0,)) if lib == "torch" else h[::-1]) * 2.0
        y.backward(const(lib, G) if lib == "torch" else G, inputs=[h])
        return [x, h]
    nd, _ = both(prog, X.astype(np.float32))
    assert nd[0].grad is None and nd[1].grad.dtype == np.float32


def test_inputs_matmul_reshape_views():
    def prog(lib, x, w):
        h = x.reshape(2, 3).T  # a view
        z = (h @ w[:2, :] if lib == "nd" else h @ w[:2, :])
        z2 = tanh(z)
        z2.sum().backward(inputs=[w, z])
        return [x, w, z]
    both(prog, X, W)


def test_inputs_unreached_keep_grad_and_errors():
    x, z = leaf("nd", X), leaf("nd", X)
    (x * 2.0).sum().backward(inputs=[z])
    assert x.grad is None and z.grad is None
    y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        y.backward(inputs=[])
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward(inputs=[numdyn.tensor(X.copy())])
    with pytest.raises(TypeError, match="numdyn.Tensor"):
        y.backward(inputs=[X])
    y.backward(inputs=[x, x])  # a repeated input counts once
    np.testing.assert_array_equal(x.grad.numpy(), np.full(6, 2.0))


def test_inputs_through_wrap_numpy():
    """the sweep over a wrap_numpy call's pullback honours inputs= too"""
    @numdyn.wrap_numpy
    def layer(h, w):
        return np.tanh(h @ w)

    xs, ws = X.reshape(2, 3), W[:3]
    x, w = leaf("nd", xs), leaf("nd", ws)
    h = x * 2.0
    (layer(h, w) ** 2).sum().backward(inputs=[h, w])
    tx, tw = leaf("torch", xs), leaf("torch", ws)
    th = tx * 2.0
    (torch.tanh(th @ tw) ** 2).sum().backward(inputs=[th, tw])
    same_grads([x, h, w], [tx, th, tw])
    assert x.grad is None


def test_retain_grad():
    """retain_grad() (and inputs= of a non-leaf, as torch) makes later
    backwards fill a non-leaf's .grad, through a wrap_numpy call too"""
    @numdyn.wrap_numpy
    def layer(h):
        return np.tanh(h) * 2.0

    def prog(lib, x):
        h = x * x
        h.retain_grad()
        assert h.retains_grad and not x.retains_grad
        u = sin(h) + 1.0
        (u * u).sum().backward(inputs=[u], retain_graph=True)
        (u * h).sum().backward()  # h and u: both retained now
        return [x, h, u]
    both(prog, X)

    x, tx = leaf("nd", X), leaf("torch", X)
    h, th = x * 3.0, tx * 3.0
    h.retain_grad()
    th.retain_grad()
    (layer(h) ** 2).sum().backward()
    (tanh(th) * 2.0).pow(2).sum().backward()
    same_grads([x, h], [tx, th])
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        numdyn.tensor(X.copy()).retain_grad()


# ------------------------------------------------------------ create_graph

def test_create_graph_second_derivative():
    def prog(lib, x):
        y = (sin(x) * x).sum()
        y.backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        x.grad = None
        (g * g).sum().backward()
        return [x]
    both(prog, X)


def test_create_graph_accumulates_with_graph():
    """two create_graph backwards add up (out of place, recorded); the
    second backward of their sum then accumulates into x.grad itself, as
    torch does (x.grad = g1 + g2 + d/dx sum(g1 + g2))"""
    def prog(lib, x):
        (x ** 3).sum().backward(create_graph=True)
        (sin(x) * 2.0).sum().backward(create_graph=True)
        x.grad.sum().backward()
        return [x]
    both(prog, X)


def test_hessian_vector_product_with_inputs():
    """HVP: grad of <grad f(x), v> w.r.t. x (inputs=[x]: v's gradient, the
    gradient itself, stays None); the MLP-like f uses matmul and tanh"""
    v = np.linspace(0.5, -0.5, 6)

    def prog(lib, x, w):
        f = (tanh(x.reshape(2, 3) @ w[:3]) ** 2).sum() + (x * x * x).sum()
        f.backward(create_graph=True, inputs=[x])
        g = x.grad
        x.grad = None
        vt = const(lib, v)
        (g * vt).sum().backward(inputs=[x])
        return [x, w]
    nd, th = both(prog, X, W)
    assert nd[1].grad is None


def test_create_graph_given_gradient_is_differentiated():
    """a non-scalar root with a gradient Tensor that requires grad: the
    second backward reaches it too"""
    def prog(lib, x, c):
        y = sin(x) * x
        y.backward(c, create_graph=True)
        g = x.grad
        x.grad = None
        (g * g).sum().backward()
        return [x, c]
    both(prog, X, np.linspace(1.0, 2.0, 6))


def test_create_graph_float32_and_non_leaf_input():
    """the gradient of a non-leaf (inputs=[h]) with a graph, differentiated
    again w.r.t. x; float32 throughout"""
    def prog(lib, x):
        h = x * x
        y = (tanh(h) * 3.0).sum()
        y.backward(create_graph=True, inputs=[h])
        gh = h.grad
        assert gh.dtype == (torch.float32 if lib == "torch" else np.float32)
        first = gh.detach().numpy().copy() if lib == "torch" else gh.numpy().copy()
        (gh * gh).sum().backward(inputs=[x])
        return first, x
    (fn, xn), (ft, xt) = prog("nd", leaf("nd", X.astype(np.float32))), \
        prog("torch", leaf("torch", X.astype(np.float32)))
    np.testing.assert_allclose(fn, ft, rtol=1e-5, atol=1e-6)
    same_grads([xn], [xt], rtol=1e-4)


def test_create_graph_retained_non_leaf_second_order():
    """a retained non-leaf h gets its share of a backward through
    create_graph gradients, as torch: first h.grad (with a graph), then,
    reset or accumulated, d/dh of a function of x.grad and h.grad; a
    second backward with inputs=[x] fills h.grad too (h lies between the
    root and x)"""
    def prog(lib, x, w, reset):
        h = x * x * w
        h.retain_grad()
        (sin(h) * h * x).sum().backward(create_graph=True)
        gx, gh = x.grad, h.grad
        assert gh.requires_grad
        x.grad = None
        if reset:
            h.grad = None
        ((gx * gx).sum() + (gh * gh * w).sum()).backward()
        return [x, w, h]
    for reset in (True, False):
        both(lambda lib, x, w: prog(lib, x, w, reset), X, X[::-1])

    def prog_inputs(lib, x):
        h = sin(x) * 2.0
        h.retain_grad()
        (h * h * x).sum().backward(create_graph=True)
        x.grad.sum().backward(inputs=[x])
        return [x, h]
    both(prog_inputs, X)


def test_create_graph_through_wrap_numpy():
    """a wrap_numpy call on the tape: its pullback runs saved residuals, so
    create_graph replays its compiled function inside the differentiated
    program instead; second derivatives of x and w equal torch's"""
    @numdyn.wrap_numpy
    def layer(h, w):
        return np.tanh(h @ w)

    def prog(lib, x, w):
        y = ((layer(x * 2.0, w) if lib == "nd" else torch.tanh((x * 2.0) @ w)) ** 2).sum()
        y.backward(create_graph=True)
        gx, gw = x.grad, w.grad
        x.grad = w.grad = None
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        return [x, w]
    both(prog, X.reshape(2, 3), W[:3, :4])


def test_complex_create_graph_and_inputs():
    """complex leaves and a non-leaf: torch's conjugate-Wirtinger gradients,
    then the gradient of a real function of the gradient (second order)"""
    Z = np.array([0.3 + 0.5j, -1.2 + 0.1j, 2.0 - 0.7j])

    def prog(lib, z):
        h = z * 2.0
        if lib == "torch":
            y = (torch.sin(h) * h.conj()).real.sum() + (h * h).abs().sum()
        else:
            y = (np.sin(h) * h.conj()).real.sum() + np.abs(h * h).sum()
        y.backward(create_graph=True, inputs=[z, h])
        g = z.grad
        first = [(t.detach().numpy() if lib == "torch" else t.numpy()).copy() for t in (g, h.grad)]
        z.grad = None
        if lib == "torch":
            (g.real * g.imag).sum().backward(inputs=[z])
        else:
            (np.real(g) * np.imag(g)).sum().backward(inputs=[z])
        return first, z
    (fn, zn), (ft, zt) = prog("nd", leaf("nd", Z)), prog("torch", leaf("torch", Z))
    for a, b in zip(fn, ft):
        assert a.dtype == np.complex128
        np.testing.assert_allclose(a, b, rtol=1e-12)
    same_grads([zn], [zt])
