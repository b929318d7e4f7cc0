"""numdyn.Tensor and wrap_numpy (issue 14): NumPy vs numdyn vs torch side by
side, interleaved in one process, warm median seconds per call; the ratio
column is numpy/numdyn (above 1: numdyn faster).

    python bench/bench_tensor.py [--quick]

- elementwise: `a + b` and `np.exp(a)` on ndarrays, on numdyn.Tensors and on
  torch tensors (the Tensor's cost over NumPy is its wrapper);
- softmax through wrap_numpy, small (1, 8) and large (256, 1024): the plain
  NumPy function, wrap_numpy on numdyn.Tensors and on torch tensors
  (zero-copy in and out), torch.softmax;
- a 3-layer MLP loss, forward + backward: NumPy with a hand-written
  backward, numdyn (the NumPy forward through wrap_numpy, torch parameters
  that require grad, loss.backward() through the torch bridge), numdyn's
  own tape (Tensor parameters, backward()), and plain torch.

Every result is checked against NumPy before it is timed. OpenMP's wait
policy changes torch's figures (src/toolchain/cache_disk.c); the machine's
load is printed with the table.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import report, timeit_interleaved  # noqa: E402

import numdyn  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp_loss(x, labels, W1, b1, W2, b2, W3, b3):
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), labels].mean()


def mlp_numpy_grad(x, labels, W1, b1, W2, b2, W3, b3):
    """the same loss and its gradients, backward written by hand"""
    n = x.shape[0]
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), labels]).mean()
    dz = p
    dz[np.arange(n), labels] -= 1
    dz /= n
    gW3, gb3 = h2.T @ dz, dz.sum(0)
    dh2 = (dz @ W3.T) * (1 - h2 * h2)
    gW2, gb2 = h1.T @ dh2, dh2.sum(0)
    dh1 = (dh2 @ W2.T) * (1 - h1 * h1)
    gW1, gb1 = x.T @ dh1, dh1.sum(0)
    return loss, (gW1, gb1, gW2, gb2, gW3, gb3)


def _close(a, b, rtol):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol * 1e-3)


def elementwise_rows(n, repeat):
    r = np.random.default_rng(0)
    a, b = r.random(n), r.random(n)
    ta, tb = numdyn.tensor(a), numdyn.tensor(b)
    rows = []
    for label, f_np, f_nd, f_t in [
        ("a + b", lambda: a + b, lambda: ta + tb, None),
        ("np.exp(a)", lambda: np.exp(a), lambda: np.exp(ta), None),
    ]:
        fns = {"numpy": f_np, "numdyn": f_nd}
        _close(f_nd().numpy(), f_np(), 1e-15)
        if torch is not None:
            xa, xb = torch.from_numpy(a), torch.from_numpy(b)
            fns["torch"] = (lambda: xa + xb) if label == "a + b" else (lambda: torch.exp(xa))
        t = timeit_interleaved(fns, repeat=repeat)
        rows.append({"benchmark": f"Tensor {label} float64 ({n},)", **t,
                     "note": "numdyn.Tensor runs NumPy on its array; numdyn = the wrapper's cost"})
    return rows


def softmax_rows(shape, repeat):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    w = numdyn.wrap_numpy(softmax)
    tx = numdyn.tensor(x)
    want = softmax(x)
    _close(w(tx).numpy(), want, 1e-5)
    fns = {"numpy": lambda: softmax(x), "numdyn": lambda: w(tx)}
    rows = []
    if torch is not None:
        xt = torch.from_numpy(x)
        _close(w(xt).numpy(), want, 1e-5)
        fns["numdyn(torch in/out)"] = lambda: w(xt)
        fns["torch"] = lambda: torch.softmax(xt, -1)
    t = timeit_interleaved(fns, repeat=repeat)
    rows.append({"benchmark": f"wrap_numpy softmax f32 {shape}", **t,
                 "note": "numdyn: numdyn.Tensor in/out; numdyn(torch in/out): torch tensors"})
    return rows


def mlp_rows(batch, repeat):
    r = np.random.default_rng(2)
    sizes = [(784, 256), (256, 128), (128, 10)]
    params = []
    for i, o in sizes:
        params += [r.standard_normal((i, o)) / np.sqrt(i), np.zeros(o)]
    params = [p.astype(np.float32) for p in params]
    x = r.standard_normal((batch, 784)).astype(np.float32)
    labels = r.integers(0, 10, batch)
    loss_np, grads_np = mlp_numpy_grad(x, labels, *[p.copy() for p in params])

    # numdyn's own tape: Tensors that require grad
    tparams = [numdyn.tensor(p, requires_grad=True) for p in params]
    tx, tl = numdyn.tensor(x), labels
    wl = numdyn.wrap_numpy(mlp_loss)

    def numdyn_tape():
        for p in tparams:
            p.grad = None
        loss = wl(tx, tl, *tparams)
        loss.backward()
        return loss

    l = numdyn_tape()
    _close(l.item(), loss_np, 1e-4)
    for p, g in zip(tparams, grads_np):
        _close(p.grad.numpy(), g, 2e-3)
    # a tape of individual Tensor operations (no wrap_numpy): backward()
    # runs from the step outputs the tape holds, no forward op again
    onehot = np.eye(10, dtype=np.float32)[labels]

    def numdyn_ops():
        for p in tparams:
            p.grad = None
        h1 = np.tanh(tx @ tparams[0] + tparams[1])
        h2 = np.tanh(h1 @ tparams[2] + tparams[3])
        z = h2 @ tparams[4] + tparams[5]
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -(logp * onehot).sum() / batch
        loss.backward()
        return loss

    l = numdyn_ops()
    _close(l.item(), loss_np, 1e-4)
    for p, g in zip(tparams, grads_np):
        _close(p.grad.numpy(), g, 2e-3)
    name = f"MLP 784-256-128-10 f32 batch {batch} fwd+bwd"
    t = timeit_interleaved({"numpy": lambda: mlp_numpy_grad(x, labels, *params),
                            "numdyn": numdyn_tape, "numdyn Tensor ops": numdyn_ops}, repeat=repeat)
    rows = [{"benchmark": name, **t,
             "note": "numpy: hand-written backward; numdyn: wrap_numpy + Tensor tape, backward(); "
                     "numdyn Tensor ops: each op on Tensors, backward()"}]
    if torch is None:
        return rows
    torch.manual_seed(0)
    qs = [torch.tensor(p, requires_grad=True) for p in params]
    xt, lt = torch.from_numpy(x), torch.from_numpy(labels)

    def bridge():
        for q in qs:
            q.grad = None
        loss = wl(xt, lt, *qs)          # torch tensors through wrap_numpy
        loss.backward()
        return loss

    def plain():
        for q in qs:
            q.grad = None
        h1 = torch.tanh(xt @ qs[0] + qs[1])
        h2 = torch.tanh(h1 @ qs[2] + qs[3])
        loss = torch.nn.functional.cross_entropy(h2 @ qs[4] + qs[5], lt)
        loss.backward()
        return loss

    l = bridge()
    _close(l.item(), loss_np, 1e-4)
    for q, g in zip(qs, grads_np):
        _close(q.grad.numpy(), g, 2e-3)
    l = plain()
    _close(l.item(), loss_np, 1e-4)
    # a group of its own: torch's OpenMP team and NumPy's OpenBLAS threads
    # timed in turns slow each other (NumPy's step 0.49 -> 4.2 ms measured on
    # 2 loaded cores), which would say nothing about either
    t = timeit_interleaved({"numdyn(torch bridge)": bridge, "torch": plain}, repeat=repeat)
    rows.append({"benchmark": name + " (torch parameters)", **t,
                 "note": "numdyn(torch bridge): the NumPy loss through wrap_numpy, "
                         "loss.backward() in torch; torch: the same math in torch"})
    return rows


def run(quick=False):
    repeat = 5 if quick else 15
    rows = []
    rows += elementwise_rows(1000, repeat)
    rows += elementwise_rows(1_000_000, repeat)
    rows += softmax_rows((1, 8), repeat)
    rows += softmax_rows((256, 1024), repeat)
    rows += mlp_rows(64, repeat)
    if not quick:
        rows += mlp_rows(512, repeat)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    rows = run(ns.quick)
    report(rows, title="numdyn.Tensor / wrap_numpy")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')!r}")
