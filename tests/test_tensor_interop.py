"""numdyn.Tensor and wrap_numpy with torch and JAX: DLPack both ways with
shared memory (checked by addresses), tensors of the caller's kind coming
back, values against the same math in torch/NumPy."""
import sys

import numpy as np
import pytest

import numdyn
from numdyn import Tensor


def addr(x):
    return np.asarray(x.numpy() if isinstance(x, Tensor) else x).__array_interface__["data"][0]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------ numdyn

def test_wrap_numpy_numdyn_tensors():
    w = numdyn.wrap_numpy(softmax)
    x = np.random.default_rng(0).standard_normal((4, 7))
    t = numdyn.tensor(x)
    r = w(t)
    assert isinstance(r, Tensor) and r.dtype == np.float64 and r.shape == (4, 7)
    np.testing.assert_allclose(r.numpy(), softmax(x), rtol=1e-12)
    assert w.__name__ == "softmax" and w.__wrapped__ is softmax


def test_wrap_numpy_result_kinds():
    @numdyn.wrap_numpy
    def stats(x, k):
        return x.sum(), x * k, k + 1, (x.max(), [x[0]]), "label"

    t = numdyn.tensor(np.arange(4.0))
    s, y, k, (m, [first]), label = stats(t, 2)
    assert isinstance(s, Tensor) and s.ndim == 0 and s.item() == 6.0   # NumPy scalar -> 0-d
    assert isinstance(y, Tensor) and (y.numpy() == np.arange(4.0) * 2).all()
    assert k == 3 and type(k) is int                                   # Python scalars stay
    assert isinstance(m, Tensor) and m.item() == 3.0
    assert isinstance(first, Tensor) and first.item() == 0.0
    assert label == "label"


def test_wrap_numpy_zero_copy_and_mutation():
    @numdyn.wrap_numpy
    def ident(x):
        return x

    @numdyn.wrap_numpy
    def bump(x):
        x += 1
        return x[1:]

    t = numdyn.tensor(np.zeros(5))
    assert addr(ident(t)) == addr(t)
    v = bump(t)
    assert (t.numpy() == 1).all() and addr(v) == addr(t) + 8


def test_wrap_numpy_plain_arrays_and_options():
    w = numdyn.wrap_numpy(backend="eager")(softmax)
    x = np.random.default_rng(1).standard_normal((3, 5))
    r = w(x)                   # no tensor argument: ndarrays come back
    assert type(r) is np.ndarray
    np.testing.assert_allclose(r, softmax(x), rtol=1e-12)
    with pytest.raises(TypeError, match="callable"):
        numdyn.wrap_numpy(3)


def test_wrap_numpy_errors_are_numpys():
    @numdyn.wrap_numpy
    def bad(x, y):
        return x @ y

    a, b = np.ones((2, 3)), np.ones((2, 3))
    with pytest.raises(ValueError) as e:
        bad(numdyn.tensor(a), numdyn.tensor(b))
    with pytest.raises(ValueError) as f:
        a @ b
    assert str(e.value) == str(f.value)


def test_wrap_numpy_method():
    class Model:
        scale = 2.0

        @numdyn.wrap_numpy
        def forward(self, x):
            return x * self.scale

    r = Model().forward(numdyn.tensor(np.ones(3)))
    assert isinstance(r, Tensor) and (r.numpy() == 2).all()


# ------------------------------------------------------------------ torch

def test_torch_dlpack_both_ways():
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = numdyn.from_dlpack(x)
    assert isinstance(t, Tensor) and t.dtype == np.float32 and t.shape == (3, 4)
    assert addr(t) == x.data_ptr()
    t[0, 0] = 100
    assert x[0, 0].item() == 100
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr() and y.dtype == torch.float32
    xt = x.t()                                    # strided
    tt = numdyn.from_dlpack(xt)
    np.testing.assert_array_equal(tt.numpy(), xt.numpy())
    assert addr(tt) == xt.data_ptr()
    for dt in (torch.float64, torch.int64, torch.int32, torch.bool, torch.complex64, torch.uint8,
               torch.float16):
        v = torch.ones(3, dtype=dt)
        nv = numdyn.from_dlpack(v)
        assert addr(nv) == v.data_ptr()
        back = torch.from_dlpack(nv)
        assert back.dtype == dt and back.data_ptr() == v.data_ptr()
    with pytest.raises(BufferError, match="dtype"):
        numdyn.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


def test_torch_wrap_numpy():
    torch = pytest.importorskip("torch")
    w = numdyn.wrap_numpy(softmax)
    for dt in (torch.float32, torch.float64):
        x = torch.randn(5, 9, dtype=dt)
        r = w(x)
        assert isinstance(r, torch.Tensor) and r.dtype == dt and r.shape == x.shape
        torch.testing.assert_close(r, torch.softmax(x, -1))

    @numdyn.wrap_numpy
    def parts(x):
        return x, x.sum(), x.shape[0]

    x = torch.randn(4)
    same, s, n = parts(x)
    assert same.data_ptr() == x.data_ptr()        # no copies either way
    assert isinstance(s, torch.Tensor) and s.ndim == 0
    torch.testing.assert_close(s, x.sum(), rtol=1e-6, atol=1e-6)
    assert n == 4 and type(n) is int
    # a read-only result goes back through DLPack (torch.from_numpy refuses it)
    ro = numdyn.wrap_numpy(lambda x: np.broadcast_to(x, (2, 4)))(x)
    assert isinstance(ro, torch.Tensor) and ro.shape == (2, 4)


def test_torch_mixed_with_numdyn():
    torch = pytest.importorskip("torch")

    @numdyn.wrap_numpy
    def add(a, b):
        return a + b

    r = add(torch.ones(3), numdyn.tensor(np.ones(3, dtype=np.float32)))
    assert isinstance(r, torch.Tensor)            # the first tensor argument decides
    r = add(numdyn.tensor(np.ones(3, dtype=np.float32)), torch.ones(3))
    assert isinstance(r, Tensor)


def test_wrap_numpy_tensors_inside_lists_tuples_dicts():
    """Tensors inside list/tuple/dict arguments enter as ndarrays sharing
    their memory, and ndarrays inside list/tuple/dict results leave as the
    caller's kind (torch.compiler.wrap_numpy maps both pytrees): they
    entered as torch tensors, so the function ran torch's semantics, and
    dict results stayed ndarrays. A container without tensors is passed as
    it is (changes the function makes reach the caller); a torch tensor
    that requires grad inside one raises (its gradient would be lost)."""
    torch = pytest.importorskip("torch")

    @numdyn.wrap_numpy
    def kinds(d, ts):
        return {"types": [type(d["x"]).__name__, type(ts[0]).__name__, type(ts[1][0]).__name__],
                "sum": d["x"] + ts[1][0], "ints": d["x"] // 2, "n": len(ts)}

    x, y = torch.arange(4.0), torch.ones(4)
    r = kinds({"x": x, "k": 3}, (y, [y]))
    assert r["types"] == ["ndarray", "ndarray", "ndarray"] and r["n"] == 2
    assert isinstance(r["sum"], torch.Tensor) and torch.equal(r["sum"], x + 1)
    assert isinstance(r["ints"], torch.Tensor) and torch.equal(r["ints"], x // 2)

    @numdyn.wrap_numpy
    def stack(ts):
        ts[0][0] = 7.0                  # writes through to the caller's tensor: no copies
        return np.stack(ts)

    a = torch.zeros(3)
    out = stack([a, torch.ones(3)])
    assert isinstance(out, torch.Tensor) and out.shape == (2, 3) and a[0].item() == 7.0

    @numdyn.wrap_numpy
    def grow(lst, t):
        lst.append(1)
        return t * 2

    lst = [0]
    grow(lst, torch.ones(2))
    assert lst == [0, 1]

    nd = numdyn.wrap_numpy(lambda d: {"y": d["a"] * 2})({"a": numdyn.tensor(np.ones(2))})
    assert isinstance(nd["y"], Tensor)
    # a tensor that requires grad inside a list gets its gradient
    # (tests/test_wrap_numpy_containers.py)
    w = torch.ones(2, requires_grad=True)
    numdyn.wrap_numpy(lambda ts: ts[0] * 2)([w]).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------ JAX

def test_jax_dlpack_and_wrap_numpy():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)
    t = numdyn.from_dlpack(x)
    assert isinstance(t, Tensor) and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.asarray(x))
    # read-only (JAX's legacy capsule cannot say so; np.from_dlpack's is
    # read-only too), so it cannot go back through a legacy capsule, as NumPy's
    assert not t.numpy().flags.writeable
    with pytest.raises(BufferError):
        jnp.from_dlpack(np.from_dlpack(x))
    with pytest.raises(BufferError):
        jnp.from_dlpack(t)
    w = numdyn.tensor(np.asarray(x))
    back = jnp.from_dlpack(w)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    same = numdyn.wrap_numpy(lambda v: (v, v.T, np.broadcast_to(v[0], (2, 4))))(x)
    assert all(isinstance(v, jax.Array) for v in same)   # read-only results leave as copies
    np.testing.assert_array_equal(np.asarray(same[1]), np.asarray(x).T)
    r = numdyn.wrap_numpy(softmax)(x)
    assert isinstance(r, jax.Array) and r.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(r), np.asarray(jax.nn.softmax(x, axis=-1)), rtol=1e-5)
    s = numdyn.wrap_numpy(lambda v: (v * v).sum())(x)
    assert isinstance(s, jax.Array) and s.ndim == 0

    # JAX exports a legacy capsule: its arrays enter read-only, as NumPy's
    # np.from_dlpack makes them, so a write raises NumPy's error instead of
    # changing the (immutable) JAX array
    def write(v):
        v[0] = 100.0
        return v * 2

    def add_in_place(v):
        v += 1
        return v

    for fn in (write, add_in_place):
        with pytest.raises(ValueError, match="read-only") as ours:
            numdyn.wrap_numpy(fn)(x)
        with pytest.raises(ValueError) as numpys:
            fn(np.from_dlpack(x))
        assert str(ours.value) == str(numpys.value)
    np.testing.assert_array_equal(np.asarray(x), np.arange(12.0).reshape(3, 4))


# ------------------------------------------------------- OpenMP's wait policy

def _omp_spincount(code, **env):
    """libgomp's spin count as it reports it (OMP_DISPLAY_ENV) in a fresh
    interpreter running `code`: 0 is PASSIVE, 300000 its default."""
    import os
    import re
    import subprocess
    e = dict(os.environ, OMP_DISPLAY_ENV="VERBOSE", **env)
    for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        if k not in env:
            e.pop(k, None)
    out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    m = re.search(r"GOMP_SPINCOUNT = '(\d+)'", out.stderr)
    assert m, out.stderr[-2000:]
    return int(m.group(1))


KERNEL = ("import numdyn, numpy as np\n"
          "numdyn.compile(lambda x: np.sin(x) + 1)(np.ones(100000))\n")


def test_omp_policy_leaves_other_runtimes_alone():
    """numdyn never changes the OpenMP runtime another library loaded (torch
    relies on its spinning); it asks for PASSIVE when its own kernel brings
    OpenMP in; the user's setting always wins."""
    pytest.importorskip("torch")
    assert _omp_spincount("import torch\n" + KERNEL) == 300000
    assert _omp_spincount(KERNEL) == 0
    assert _omp_spincount(KERNEL, OMP_WAIT_POLICY="ACTIVE") == 30000000000
    assert _omp_spincount(KERNEL, GOMP_SPINCOUNT="1234") == 1234


# ------------------------------------------------------- torch autograd bridge

def test_torch_bridge_gradcheck():
    torch = pytest.importorskip("torch")

    @numdyn.wrap_numpy
    def f(x, W, b):
        h = np.tanh(x @ W + b)
        return (h * h).sum(axis=1)          # a vector: torch passes its cotangent

    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    W = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (x, W, b), eps=1e-6, atol=1e-6)


def test_torch_bridge_loss_backward_matches_torch():
    torch = pytest.importorskip("torch")

    @numdyn.wrap_numpy
    def xent(logits, labels):
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return -logp[np.arange(logits.shape[0]), labels].mean()

    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 4).double()
    x, y = torch.randn(8, 6, dtype=torch.float64), torch.randint(0, 4, (8,))
    loss = xent(lin(x), y)                              # torch -> numdyn -> torch
    assert loss.grad_fn is not None and loss.ndim == 0
    loss.backward()
    g_nd = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad()
    torch.nn.functional.cross_entropy(lin(x), y).backward()
    for a, b in zip(g_nd, (p.grad for p in lin.parameters())):
        torch.testing.assert_close(a, b)
    # y (int64, no grad) entered as an ndarray; a float32 model works too
    lin32 = torch.nn.Linear(6, 4)
    l32 = xent(lin32(x.float()), y)
    assert l32.dtype == torch.float32
    l32.backward()
    assert lin32.weight.grad.dtype == torch.float32


def test_torch_bridge_outputs_and_modes():
    torch = pytest.importorskip("torch")

    @numdyn.wrap_numpy
    def two(x, scale):
        return x * scale, (x ** 2).sum()

    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    a, s = two(x, 3.0)
    (a.sum() + s).backward()
    torch.testing.assert_close(x.grad, 3.0 + 2 * x.detach())
    with torch.no_grad():
        a, s = two(x, 3.0)
    assert a.grad_fn is None and isinstance(s, torch.Tensor)
    x.grad = None
    a, s = two(x=x, scale=2.0)  # by keyword too, as torch.compiler.wrap_numpy (it raised)
    (a.sum() + s).backward()
    torch.testing.assert_close(x.grad, 2.0 + 2 * x.detach())
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    x.grad = None
    loss = numdyn.wrap_numpy(lambda u, v=None, k=1.0: (np.tanh(u * v) * k).sum())(x, v=w, k=3.0)
    loss.backward()
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (torch.tanh(x2 * w2) * 3.0).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)
    x.grad = None
    a, s = two(x, 2.0)
    s.backward()                # torch gives the unused output a zero cotangent
    torch.testing.assert_close(x.grad, 2 * x.detach())


def test_torch_dlpack_writes_seen_both_ways_and_lifetimes():
    """zero copy proved by writes in each direction: torch -> numdyn (numdyn
    writes, torch reads; torch writes in place, numdyn reads) and numdyn ->
    torch (torch.from_dlpack of a Tensor, torch's in-place ops seen by the
    Tensor and by np.from_dlpack of it); the producer may die first"""
    torch = pytest.importorskip("torch")
    for tdt, ndt in ((torch.float32, np.float32), (torch.float64, np.float64),
                     (torch.complex128, np.complex128), (torch.int64, np.int64)):
        x = torch.zeros((3, 4), dtype=tdt)
        t = numdyn.from_dlpack(x)
        assert t.dtype == ndt and addr(t) == x.data_ptr()
        x.add_(2)                                     # torch writes, numdyn sees
        assert np.all(t.numpy() == 2)
        t[1] = 5                                      # numdyn writes, torch sees
        assert x[1, 0].item() == 5
        y = torch.from_dlpack(numdyn.tensor(np.arange(6, dtype=ndt).reshape(2, 3)))
        src = numdyn.from_dlpack(y)
        n = np.from_dlpack(src)
        assert n.__array_interface__["data"][0] == y.data_ptr() == addr(src)
        y.mul_(3)                                     # torch in-place on numdyn's memory
        np.testing.assert_array_equal(src.numpy(), np.arange(6).reshape(2, 3) * 3)
        np.testing.assert_array_equal(n, np.arange(6).reshape(2, 3) * 3)
        nt = numdyn.tensor(np.ones(4, dtype=ndt))
        z = torch.from_dlpack(nt)
        del nt                                        # the capsule keeps the memory
        z += 1
        assert z.tolist() == [2, 2, 2, 2]
    xs = torch.arange(12.0).reshape(3, 4)[:, 1::2]    # strided view of torch memory
    ts = numdyn.from_dlpack(xs)
    assert ts.strides == (16, 8) and addr(ts) == xs.data_ptr()
    xs.zero_()
    assert not ts.numpy().any()
