"""A tape of individual Tensor operations keeps its forward's values:
backward() differentiates the program of the recorded calls, and every
step output the tape holds (each Tensor a later step read, and the result)
stands in that program for the step's recomputation
(nd_trace_grad_alias), so the backward runs from the saved values and no
forward operation runs again. Gradients checked against torch.autograd;
the saved values counted (counter ad_aliased_values) and an expensive
step's recomputation counted by NumPy calls."""
import numpy as np
import pytest

import numdyn
from numpy_calls import numpy_calls

R = np.random.default_rng(31)


def aliased():
    return numdyn.utils.counters["ad_aliased_values"]


def test_backward_runs_no_forward_step_again():
    """the inverse is a NumPy call the forward made once; its backward needs
    the inverse itself, which the tape holds: backward() calls inv no more
    (before, the program ran the whole forward again: one more call)"""
    a = R.standard_normal((5, 5)) + 5 * np.eye(5)
    for step in range(2):   # the first trace asks NumPy for inv's result type
        A = numdyn.tensor(a, requires_grad=True)
        Y = np.linalg.inv(A)
        loss = (Y * Y).sum()
        with numpy_calls(np.linalg.inv) as n:
            before = aliased()
            loss.backward()
            assert aliased() - before == 3      # Y, Y * Y and the loss
    assert n[0] == 0
    yi = np.linalg.inv(a)
    np.testing.assert_allclose(A.grad.numpy(), -yi.T @ (2 * yi) @ yi.T, rtol=1e-10)


def mlp_step(xp, x, onehot, ps):
    h1 = xp.tanh(x @ ps[0] + ps[1])
    h2 = xp.tanh(h1 @ ps[2] + ps[3])
    z = h2 @ ps[4] + ps[5]
    z = z - z.max(axis=1, keepdims=True) if xp is np else z - z.max(dim=1, keepdim=True).values
    e = xp.exp(z)
    logp = z - xp.log(e.sum(axis=1, keepdims=True) if xp is np else e.sum(dim=1, keepdim=True))
    return -(logp * onehot).sum() / x.shape[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_of_tensor_ops_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    sizes = [(12, 8), (8, 6), (6, 4)]
    params = []
    for i, o in sizes:
        params += [R.standard_normal((i, o)) / np.sqrt(i), R.standard_normal(o) * 0.1]
    params = [p.astype(dtype) for p in params]
    x = R.standard_normal((10, 12)).astype(dtype)
    onehot = np.eye(4, dtype=dtype)[R.integers(0, 4, 10)]
    tq = [torch.tensor(p, requires_grad=True) for p in params]
    mlp_step(torch, torch.from_numpy(x), torch.from_numpy(onehot), tq).backward()
    tp = [numdyn.tensor(p, requires_grad=True) for p in params]
    for step in range(3):                       # the same program each step
        for p in tp:
            p.grad = None
        before = aliased()
        loss = mlp_step(np, numdyn.tensor(x), onehot, tp)
        loss.backward()
        assert aliased() - before >= 12         # every step output the tape read
        rt = 1e-4 if dtype == np.float32 else 1e-10
        for p, q in zip(tp, tq):
            assert p.grad.dtype == dtype
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rt, atol=rt)


def eig_loss(m):
    w, V = np.linalg.eigh(m)
    return (w ** 3).sum() + (V[:, 1:3].T @ m @ V[:, 1:3]).sum() * 0.5


def test_named_tuple_results_stay_on_the_tape():
    """linalg's EighResult/SVDResult/QRResult/SlogdetResult of Tensors hold
    Tensors (they held ndarrays: their gradients were silently lost)"""
    A = numdyn.tensor(np.eye(3) * 2 + 0.1, requires_grad=True)
    for r in (np.linalg.eigh(A), np.linalg.svd(A), np.linalg.qr(A), np.linalg.slogdet(A)):
        assert type(r).__name__.endswith("Result")
        assert all(isinstance(v, numdyn.Tensor) and v.requires_grad for v in r)
    assert isinstance(np.linalg.eigh(A).eigenvalues, numdyn.Tensor)


def test_tuple_outputs_and_views_match_differences():
    a = R.standard_normal((4, 4))
    s = a + a.T
    A = numdyn.tensor(s, requires_grad=True)
    before = aliased()
    eig_loss(A).backward()
    assert aliased() - before >= 4
    G = A.grad.numpy()
    np.testing.assert_allclose(G, numdyn.grad(eig_loss)(s), rtol=1e-10, atol=1e-12)
    for _ in range(3):                          # symmetric directions (eigh's domain)
        d = R.standard_normal((4, 4))
        d = d + d.T
        e = 1e-6
        fd = (eig_loss(s + e * d) - eig_loss(s - e * d)) / (2 * e)
        np.testing.assert_allclose((G * d).sum(), fd, rtol=1e-6)


def test_inplace_on_computed_tensors_use_the_right_versions():
    """an older version's array is a placeholder: it is recomputed, the
    current ones are saved"""
    torch = pytest.importorskip("torch")
    a = R.standard_normal(6)
    w = numdyn.tensor(a, requires_grad=True)
    y = w * 3
    z = y * y
    y += np.sin(z)
    s = y.sum()
    s += (y * z).max()
    s.backward()
    tw = torch.tensor(a, requires_grad=True)
    ty = tw * 3
    tz = ty * ty
    ty = ty + torch.sin(tz)
    ts = ty.sum() + (ty * tz).max()
    ts.backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
