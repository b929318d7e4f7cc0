"""VJPs of views, in-place updates and joins over non-contiguous layouts
(issue 14, point 3; the session-24 audit left them open): the same
program differentiated by numdyn.grad (and numdyn.Tensor's tape) and by
torch.autograd, on arguments that are C, Fortran, strided, reversed and
transposed views. Values against NumPy's forward, gradients against
torch: values, dtype, shape (the argument's)."""
import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")

R = np.random.default_rng(1416)
B = R.standard_normal((8, 12))
C = R.standard_normal((4, 6))
LAYOUTS = {
    "c": lambda: B[:4, :6].copy(),
    "f": lambda: np.asfortranarray(B[:4, :6]),
    "strided": lambda: B[::2, ::2],
    "reversed": lambda: B[::-1, ::-1][:4, :6],
    "T": lambda: B[:6, :4].T,
}


def program(name, lib):
    t = lib == "torch"
    flip0 = (lambda a: torch.flip(a, (0,))) if t else (lambda a: a[::-1])
    cat = torch.cat if t else np.concatenate
    stack = torch.stack if t else np.stack
    sin = torch.sin if t else np.sin
    c = torch.tensor(C) if t else C

    def views(x):
        v = x.T[1:5:2, ::3] * 2.0
        w = x.reshape(6, 4)[::2]
        return (sin(v) * v).sum() + (w ** 2).sum() + (flip0(x)[1:, 2:] * c[:3, :4]).sum()

    def inplace(x):
        y = x * 1.0
        y[::2, 1:4] += sin(x[1::2, :3])
        y[:, 2] = x[:, 0] * 3.0
        y[1:3] *= 2.0
        return (y * y * c).sum()

    def joins(x):
        a = cat([x.T, x[:, :4].T * 2.0], 0)
        b = stack([x[:, ::2], sin(x[:, 1::2])], 2)
        return (a * a).sum() + (b.sum(2) * c[:, :3]).sum() + cat([x, flip0(x)], 0)[::3].sum()

    return {"views": views, "inplace": inplace, "joins": joins}[name]


def torch_grad(name, x):
    tx = torch.tensor(np.ascontiguousarray(x), requires_grad=True)
    y = program(name, "torch")(tx)
    y.backward()
    return y.item(), tx.grad.numpy()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["views", "inplace", "joins"])
def test_grad_over_layouts_matches_torch(name, layout):
    x = LAYOUTS[layout]()
    before = x.copy()
    value, want = torch_grad(name, x)
    f = program(name, "numpy")
    v, g = numdyn.value_and_grad(f)(x)
    np.testing.assert_array_equal(x, before)  # the argument is not written
    np.testing.assert_allclose(v, f(x.copy()), rtol=1e-13)  # NumPy's forward
    np.testing.assert_allclose(v, value, rtol=1e-12)
    assert g.shape == x.shape and g.dtype == np.float64
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["views", "joins"])
def test_tensor_tape_over_layouts_matches_torch(name):
    for layout in ("reversed", "T"):
        x = LAYOUTS[layout]()
        _, want = torch_grad(name, x)
        t = numdyn.tensor(x, requires_grad=True)
        program(name, "numpy")(t).backward()
        assert t.grad.shape == x.shape and t.grad.dtype == np.float64
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=1e-12)


def test_float32_gradient_keeps_dtype_over_a_strided_argument():
    x = LAYOUTS["strided"]().astype(np.float32)[:, ::-1]
    _, want = torch_grad("joins", x.astype(np.float64))
    g = numdyn.grad(program("joins", "numpy"))(x)
    assert g.dtype == np.float32 and g.shape == x.shape
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_tensor_inplace_through_views_matches_torch(layout):
    """y[::2, 1:4] += v, y[:, 2] = w, y[1:3] *= 2 on a Tensor of the tape
    (its memory laid out as NumPy lays out x * 1.0 of each layout): torch's
    CopySlices, the gradient through y's history"""
    x = LAYOUTS[layout]()
    _, want = torch_grad("inplace", x)
    t = numdyn.tensor(x, requires_grad=True)
    program("inplace", "numpy")(t).backward()
    assert t.grad.shape == x.shape and t.grad.dtype == np.float64
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=1e-12)