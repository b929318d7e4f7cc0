"""In-place writes through views of Tensors on the tape (torch's CopySlices):
`v = t[1:3]; v *= 2` or `t[0] += x` where t is computed from Tensors that
require grad. The write reaches t's memory, so t's gradient history must
include it: numdyn gives torch's gradients, or torch's error -- never a
gradient computed from the value t had before the write. torch (CPU) is
the oracle."""
import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(14)


def both(prog, *arrays):
    """prog(lib, *leaves) run on numdyn Tensors and on torch tensors that
    require grad; returns ([numdyn grads], [torch grads]) as ndarrays"""
    nd_leaves = [numdyn.tensor(a.copy(), requires_grad=True) for a in arrays]
    th_leaves = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    prog("nd", *nd_leaves).backward()
    prog("torch", *th_leaves).backward()
    return ([None if x.grad is None else x.grad.numpy() for x in nd_leaves],
            [None if x.grad is None else x.grad.numpy() for x in th_leaves])


def check(prog, *arrays):
    got, want = both(prog, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def kept(lib, v):
    """v as an operand whose value a later in-place write must not change:
    torch saves operands for backward and refuses writes into them (numdyn
    recomputes them from the tape), so torch's program reads a clone --
    the same math"""
    return v.clone() if lib == "torch" else v


def test_slice_view_scaled_in_place():
    def prog(lib, x):
        t = x * 2.0
        v = t[1:3]
        v *= 3.0                        # writes t's memory
        return (t * t).sum()
    check(prog, RNG.standard_normal(5))


def test_row_of_2d_added_in_place():
    def prog(lib, x, y):
        t = x * 1.5
        t[0] += y                       # getitem view, iadd, setitem back
        return (t ** 2).sum()
    check(prog, RNG.standard_normal((3, 4)), RNG.standard_normal(4))


def test_element_of_1d_added_in_place():
    def prog(lib, x, y):
        t = x * 1.0
        t[2] += y[0] * y[1]
        return (t * x).sum()
    check(prog, RNG.standard_normal(4), RNG.standard_normal(2))


def test_item_assignment_into_a_view():
    def prog(lib, x, y):
        t = x * 2.0
        v = t[:, 1]                     # a column: strided view
        v[1:] = y * 2.0
        return (t * t).sum()
    check(prog, RNG.standard_normal((4, 3)), RNG.standard_normal(3))


def test_other_views_see_the_write():
    """a second view of the same base, read after the write through the
    first: its value and its gradient are the base's new ones"""
    def prog(lib, x):
        t = x * 1.0
        a = t[0:3]
        b = t[2:5]
        a *= 3.0
        return (b * b).sum()
    check(prog, RNG.standard_normal(6))


def test_view_read_before_the_write_keeps_its_old_value():
    def prog(lib, x):
        t = x * 1.0
        v = t[1:4]
        s = (kept(lib, v) ** 2).sum()   # reads v before the write
        v *= 2.0
        return s + (t * t).sum()
    check(prog, RNG.standard_normal(5))


def test_base_written_while_a_view_lives():
    def prog(lib, x):
        t = x * 1.0
        v = t[1:3]
        t *= 2.0                        # v's memory changes with t's
        return (v * v * x[1:3]).sum()
    check(prog, RNG.standard_normal(4))


def test_transposed_and_chained_views():
    def prog(lib, x, y):
        t = x + 0.0
        v = t.T                         # a transposed view
        w = v[1:, :2]                   # a view of a view: t's memory still
        w *= y
        return (t ** 3).sum()
    check(prog, RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2)))


def test_reshaped_view():
    def prog(lib, x):
        t = x * 2.0
        r = t.reshape(2, 3)
        r[1] -= 1.0
        r[:, 0] *= kept(lib, r[:, 2])
        return (t * np.arange(1.0, 7.0) if lib == "nd"
                else t * torch.arange(1.0, 7.0, dtype=torch.float64)).sum()
    check(prog, RNG.standard_normal(6))


def test_grad_value_written_into_a_constant_through_a_view():
    """a Tensor that does not require grad takes a value that does"""
    def prog(lib, x):
        buf = (numdyn.tensor(np.zeros(5)) if lib == "nd"
               else torch.zeros(5, dtype=torch.float64))
        v = buf[1:4]
        v += x * x
        return (buf * np.arange(5.0) if lib == "nd"
                else buf * torch.arange(5.0, dtype=torch.float64)).sum()
    check(prog, RNG.standard_normal(3))


def test_values_match_numpy_after_view_writes():
    x = RNG.standard_normal(5)
    t = numdyn.tensor(x, requires_grad=True) * 2.0
    v = t[1:3]
    v *= 3.0
    ref = x * 2.0
    ref[1:3] *= 3.0
    np.testing.assert_allclose(t.numpy(), ref)
    assert t._version == v._version == 1   # one counter for a base and its views


def test_view_of_a_leaf_raises_torchs_error():
    x = numdyn.tensor(np.ones(4), requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                       "being used in an in-place operation"):
        v = x[1:3]
        v *= 2.0
    tx = torch.ones(4, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                       "being used in an in-place operation"):
        tv = tx[1:3]
        tv *= 2.0


def test_view_made_under_no_grad_raises_torchs_error():
    for lib, mod in (("nd", numdyn), ("torch", torch)):
        x = (numdyn.tensor(np.ones(4), requires_grad=True) if lib == "nd"
             else torch.ones(4, dtype=torch.float64, requires_grad=True))
        t = x * 2.0
        with mod.no_grad():
            v = t[1:3]
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is "
                           "being modified inplace with grad mode enabled"):
            v *= 2.0


def test_write_through_a_view_under_no_grad_is_not_differentiated():
    """as a write into the base under no_grad: the tape keeps computing the
    value it recorded (torch: the same gradient where it saved nothing
    that the write changed, else its version error)"""
    a = RNG.standard_normal(4)
    x = numdyn.tensor(a, requires_grad=True)
    t = x * 2.0
    loss = (t * x).sum()
    with numdyn.no_grad():
        v = t[1:3]
        v *= 5.0
    np.testing.assert_allclose(t.numpy()[1:3], a[1:3] * 10.0)   # the memory is written
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * a, rtol=1e-12)


def test_write_through_a_view_of_a_read_constant_raises():
    """a constant the tape read, written through a view: its value is the
    tape's (not recomputed), so the write is torch's version error"""
    for lib in ("nd", "torch"):
        c = (numdyn.tensor(np.ones(4)) if lib == "nd" else torch.ones(4, dtype=torch.float64))
        x = (numdyn.tensor(np.ones(4), requires_grad=True) if lib == "nd"
             else torch.ones(4, dtype=torch.float64, requires_grad=True))
        w = c[0:2]
        loss = (x[0:2] * w).sum()      # reads the view w
        v = c[1:3]
        v *= 5.0                       # changes w's memory
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_view_of_memory_shared_with_numpy_still_refused():
    w = numdyn.tensor(np.ones(4), requires_grad=True)
    z = w * 3.0
    arr = z.numpy()
    v = z[1:3]
    with pytest.raises(RuntimeError, match="shares its memory"):
        v += 1.0
    del arr


def test_training_loop_with_view_writes_replays():
    """the same tape shape each step: same program, right gradients"""
    x0 = RNG.standard_normal(6)
    grads = []
    for step in range(3):
        x = numdyn.tensor(x0 + step, requires_grad=True)
        t = x * 1.0
        t[1:4] *= x[0:3]
        (t * t).sum().backward()
        grads.append(x.grad.numpy())
        xt = torch.tensor(x0 + step, requires_grad=True)
        tt = xt * 1.0
        tt[1:4] *= xt[0:3]
        (tt * tt).sum().backward()
        np.testing.assert_allclose(grads[-1], xt.grad.numpy(), rtol=1e-12)
