"""In-place writes into numdyn.Tensors that take part in differentiation
(issue 14), by torch's version counters: a write into a computed Tensor is
recorded as its functional form; a leaf that requires grad is never written
(except under no_grad(), where a tape that read it then raises at
backward); a constant the tape read keeps the value the tape saw; a write
through shared memory is refused. Oracles: torch.autograd where torch
accepts the same program, else the gradient written by hand.
"""
import numpy as np
import pytest

import numdyn

RNG = np.random.default_rng(11)


def leaf(a):
    return numdyn.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_inplace_operators_on_computed_tensor_match_torch(dt):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal(6).astype(dt)
    b = RNG.standard_normal(6).astype(dt)
    w, v = leaf(a), leaf(b)
    y = w * 2
    y += v
    y -= w * w
    y *= v
    y /= 3.0
    (y * y).sum().backward()
    tw, tv = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ty = tw * 2
    ty += tv
    ty -= tw * tw
    ty *= tv
    ty /= 3.0
    (ty * ty).sum().backward()
    tol = 1e-5 if dt == np.float32 else 1e-12
    assert w.grad.dtype == dt
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol)


def test_item_assignment_matches_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((4, 3))
    w = leaf(a)
    y = w * 1.5
    y[1:3] = w[0:2] ** 2
    y[:, 0] = 7.0
    (y * y).sum().backward()
    tw = torch.tensor(a, requires_grad=True)
    ty = tw * 1.5
    ty[1:3] = tw[0:2] ** 2
    ty[:, 0] = 7.0
    (ty * ty).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_self_operand_reads_old_value():
    a = RNG.standard_normal(5)
    w = leaf(a)
    y = w * 2
    y += w          # 3w
    y *= y          # 9w^2 (torch refuses this one: its Mul saved y)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 18 * a, rtol=1e-12)


def test_earlier_reader_keeps_old_value():
    a = RNG.standard_normal(5)
    w = leaf(a)
    y = w * 3
    z = y * y       # reads y before the write: 9 w^2
    y += 1          # y is 3w + 1 from here
    (z.sum() + y.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 18 * a + 3, rtol=1e-12)


def test_constant_plus_gradient_value_becomes_tape_tensor():
    a = RNG.standard_normal(4)
    c = numdyn.tensor(np.ones(4))
    w = leaf(a)
    c += w * 3
    assert c.requires_grad and not c.is_leaf
    (c * c).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * (1 + 3 * a), rtol=1e-12)


def test_constant_written_after_use_keeps_the_value_the_tape_read():
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    c = numdyn.tensor(b.copy())
    w = leaf(a)
    loss = (w * c * w).sum()
    c += 10.0       # not differentiated; the tape saw b
    c[0] = -5.0
    c.fill(2.0)
    assert c._version == 3
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * a * b, rtol=1e-12)


def test_leaf_refused_but_sgd_step_under_no_grad():
    a = RNG.standard_normal(3)
    w = leaf(a)
    with pytest.raises(RuntimeError, match="leaf Tensor that requires grad"):
        w += 1
    with pytest.raises(RuntimeError, match="leaf Tensor that requires grad"):
        w[0] = 1.0
    for _ in range(3):   # a training loop: forward, backward, update in place
        w.grad = None
        (w * w).sum().backward()
        with numdyn.no_grad():
            w -= 0.25 * w.grad
    np.testing.assert_allclose(w.numpy(), a * 0.5 ** 3, rtol=1e-12)
    assert w._version == 3 and w.is_leaf and w.requires_grad


def test_stale_tape_after_leaf_update_raises():
    """torch's message (and numdyn's own words): a leaf written under
    no_grad after the tape read it"""
    torch = pytest.importorskip("torch")
    for lib in ("nd", "torch"):
        w = leaf(np.ones(3)) if lib == "nd" else torch.ones(3, dtype=torch.float64,
                                                              requires_grad=True)
        loss = (w * w).sum()
        with (numdyn if lib == "nd" else torch).no_grad():
            w -= 1.0
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                           "computation has been modified by an inplace operation.*is at "
                           "version 1; expected version 0"):
            loss.backward()


def test_shared_memory_refused():
    """memory shared with an ndarray the tape cannot see (views that are
    Tensors are torch's CopySlices: tests/test_tensor_view_writes.py)"""
    w = leaf(RNG.standard_normal(4))
    z = w * 3
    arr = z.numpy()
    with pytest.raises(RuntimeError, match="shares its memory"):
        z[0] = 1.0
    del arr


def test_history_is_bounded():
    c = numdyn.tensor(np.ones(2))
    w = leaf(np.full(2, 2.0))
    loss = (w * c).sum()
    for k in range(9):  # more rewrites of a read constant than are kept
        _ = (w * c).sum()
        c += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_no_grad_write_into_computed_tensor_is_not_recorded():
    w = leaf(np.arange(3.0))
    y = w * 2
    with numdyn.no_grad():
        y += 100.0     # outside differentiation: y's node still computes 2w
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0, 2.0])
