"""Gradients through list/tuple/dict arguments and results of
numdyn.wrap_numpy (issue 14): torch tensors (and numdyn Tensors) that
require grad inside containers get their gradients, as torch's autograd
gives them on the same math; results nested in lists, tuples and dicts keep
their structure and carry grad_fn (torch) / requires_grad (numdyn)."""
import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 2))
B = RNG.standard_normal(2)
X = RNG.standard_normal((4, 3))


def mlp(params, x):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.sum(h ** 2)


def torch_mlp(params, x):
    return (torch.tanh(x @ params["W"] + params["b"]) ** 2).sum()


def pieces(x, ws):
    # a nested result: a list holding an array and a dict with a tuple
    y = x * ws[0]
    return [y, {"s": np.sum(np.sin(y)), "t": (y + ws[1], 3)}]


def torch_pieces(x, ws):
    y = x * ws[0]
    return [y, {"s": torch.sin(y).sum(), "t": (y + ws[1], 3)}]


def tt(a, grad=True):
    return torch.tensor(a, requires_grad=grad)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_torch_dict_argument_gets_gradients_twice():
    f = numdyn.wrap_numpy(mlp)
    for scale in (1.0, 0.5):          # the second call replays the recorded vjp
        pw, pb = tt(W * scale), tt(B)
        rw, rb = tt(W * scale), tt(B)
        loss = f({"W": pw, "b": pb}, torch.tensor(X))
        assert loss.grad_fn is not None
        loss.backward()
        torch_mlp({"W": rw, "b": rb}, torch.tensor(X)).backward()
        close(loss.detach(), torch_mlp({"W": rw, "b": rb}, torch.tensor(X)).detach())
        close(pw.grad, rw.grad)
        close(pb.grad, rb.grad)


def test_torch_list_with_constants_and_a_tensor_without_grad():
    @numdyn.wrap_numpy
    def f(ws, x):
        a, k, c = ws
        return np.sum((x * a + c) ** k)

    pa, pc = tt(W[:, 0].copy()), torch.tensor(B[0])     # c needs no gradient
    f([pa, 3, pc], torch.tensor(X)).backward()
    ra = tt(W[:, 0].copy())
    ((torch.tensor(X) * ra + torch.tensor(B[0])) ** 3).sum().backward()
    close(pa.grad, ra.grad)
    assert pc.grad is None


def test_torch_keyword_container_and_plain_argument():
    @numdyn.wrap_numpy
    def f(x, *, params):
        return mlp(params, x)

    px, pw, pb = tt(X), tt(W), tt(B)
    f(px, params={"W": pw, "b": pb}).backward()
    rx, rw, rb = tt(X), tt(W), tt(B)
    torch_mlp({"W": rw, "b": rb}, rx).backward()
    for g, r in ((px, rx), (pw, rw), (pb, rb)):
        close(g.grad, r.grad)


def test_torch_nested_results_carry_grad_fn():
    f = numdyn.wrap_numpy(pieces)
    px, p0, p1 = tt(X), tt(W[:, 0].copy()), tt(B[0])
    out = f(px, (p0, p1))
    assert isinstance(out, list) and isinstance(out[1], dict) and out[1]["t"][1] == 3
    assert all(v.grad_fn is not None for v in (out[0], out[1]["s"], out[1]["t"][0]))
    (out[0].sum() * 2 + out[1]["s"] + (out[1]["t"][0] ** 2).sum()).backward()
    rx, r0, r1 = tt(X), tt(W[:, 0].copy()), tt(B[0])
    ro = torch_pieces(rx, (r0, r1))
    (ro[0].sum() * 2 + ro[1]["s"] + (ro[1]["t"][0] ** 2).sum()).backward()
    for g, r in ((px, rx), (p0, r0), (p1, r1)):
        close(g.grad, r.grad)


def test_torch_one_used_result_of_several():
    # torch passes no cotangent for unused outputs: numdyn takes zeros
    f = numdyn.wrap_numpy(pieces)
    px, p0, p1 = tt(X), tt(W[:, 0].copy()), tt(B[0])
    f(px, [p0, p1])[1]["s"].backward()
    rx, r0 = tt(X), tt(W[:, 0].copy())
    torch_pieces(rx, [r0, torch.tensor(B[0])])[1]["s"].backward()
    close(px.grad, rx.grad)
    close(p0.grad, r0.grad)
    assert p1.grad is None or float(p1.grad.abs().sum()) == 0.0


def test_numdyn_tensors_in_a_dict_get_gradients():
    f = numdyn.wrap_numpy(mlp)
    for scale in (1.0, 2.0):
        nw, nb = numdyn.tensor(W * scale, requires_grad=True), numdyn.tensor(B, requires_grad=True)
        loss = f({"W": nw, "b": nb}, numdyn.tensor(X))
        assert loss.requires_grad
        loss.backward()
        rw, rb = tt(W * scale), tt(B)
        torch_mlp({"W": rw, "b": rb}, torch.tensor(X)).backward()
        close(nw.grad.numpy(), rw.grad)
        close(nb.grad.numpy(), rb.grad)


def test_numdyn_nested_results_require_grad():
    f = numdyn.wrap_numpy(pieces)
    nx = numdyn.tensor(X, requires_grad=True)
    n0 = numdyn.tensor(W[:, 0].copy(), requires_grad=True)
    out = f(nx, [n0, 1.5])
    assert out[0].requires_grad and out[1]["s"].requires_grad and out[1]["t"][0].requires_grad
    out[1]["s"].backward()
    rx, r0 = tt(X), tt(W[:, 0].copy())
    torch_pieces(rx, [r0, 1.5])[1]["s"].backward()
    close(nx.grad.numpy(), rx.grad)
    close(n0.grad.numpy(), r0.grad)


def test_numdyn_tensor_in_a_list_matches_finite_differences():
    # a helper torch does not have as one op: central differences
    def fn(ws, x):
        a, b = ws
        return np.sum(np.log1p(np.exp(-(x @ a) * b)))

    f = numdyn.wrap_numpy(fn)
    a0, b0 = W[:, 0].copy(), np.float64(0.7)
    na, nb = numdyn.tensor(a0, requires_grad=True), numdyn.tensor(b0, requires_grad=True)
    f([na, nb], numdyn.tensor(X)).backward()
    eps = 1e-6
    fd_a = np.array([(fn([a0 + eps * e, b0], X) - fn([a0 - eps * e, b0], X)) / (2 * eps)
                     for e in np.eye(3)])
    fd_b = (fn([a0, b0 + eps], X) - fn([a0, b0 - eps], X)) / (2 * eps)
    np.testing.assert_allclose(na.grad.numpy(), fd_a, rtol=1e-6)
    np.testing.assert_allclose(nb.grad.numpy(), fd_b, rtol=1e-6)
