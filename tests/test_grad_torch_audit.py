"""A generated audit of autodiff's rules against torch.autograd (issue 14,
point 3): every ufunc with a derivative, where/clip, the reductions
(var/std/prod with zeros, logsumexp, cumsum/cumprod), np.add.at,
einsum/tensordot and linalg solve/inv/det/slogdet/cholesky/norm of every
ord, in float32 and float64 over odd shapes. Inputs stay away from kinks
and ties, where the conventions differ (numdyn keeps JAX's, autodiff.h);
those are pinned in test_kink_conventions. Terms are summed into one function per
chunk (one compile), each term reading only its own arguments, so each
argument's gradient is its own term's."""
import zlib

import numpy as np
import pytest

import numdyn

torch = pytest.importorskip("torch")

R = np.random.default_rng(1414)


def U(*s, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, s)


def away(*s, lo=0.2, hi=2.0):  # |x| in [lo, hi], random signs
    return R.uniform(lo, hi, s) * R.choice([-1.0, 1.0], s)


def spd(n, k=()):
    a = R.standard_normal(k + (n, n))
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


T = torch
# name: (numpy term, torch term, args); each term returns an array/scalar
# summed into the loss with a fixed weight vector of its shape
TERMS = {
    # unary ufuncs
    "exp": (np.exp, T.exp, [U(3, 5)]),
    "exp2": (np.exp2, T.exp2, [U(3, 5)]),
    "expm1": (np.expm1, T.expm1, [U(3, 5)]),
    "log": (np.log, T.log, [U(3, 5, lo=0.3)]),
    "log2": (np.log2, T.log2, [U(3, 5, lo=0.3)]),
    "log10": (np.log10, T.log10, [U(3, 5, lo=0.3)]),
    "log1p": (np.log1p, T.log1p, [U(3, 5, lo=-0.5)]),
    "sqrt": (np.sqrt, T.sqrt, [U(3, 5, lo=0.3)]),
    "cbrt": (np.cbrt, lambda x: T.sign(x) * T.abs(x) ** (1 / 3), [away(3, 5)]),
    "square": (np.square, T.square, [U(3, 5)]),
    "reciprocal": (np.reciprocal, T.reciprocal, [away(3, 5)]),
    "abs": (np.abs, T.abs, [away(3, 5)]),
    "sin": (np.sin, T.sin, [U(3, 5)]),
    "cos": (np.cos, T.cos, [U(3, 5)]),
    "tan": (np.tan, T.tan, [U(3, 5, lo=-1.2, hi=1.2)]),
    "arcsin": (np.arcsin, T.asin, [U(3, 5, lo=-0.9, hi=0.9)]),
    "arccos": (np.arccos, T.acos, [U(3, 5, lo=-0.9, hi=0.9)]),
    "arctan": (np.arctan, T.atan, [U(3, 5)]),
    "sinh": (np.sinh, T.sinh, [U(3, 5)]),
    "cosh": (np.cosh, T.cosh, [U(3, 5)]),
    "tanh": (np.tanh, T.tanh, [U(3, 5)]),
    "arcsinh": (np.arcsinh, T.asinh, [U(3, 5)]),
    "arccosh": (np.arccosh, T.acosh, [U(3, 5, lo=1.2, hi=3.0)]),
    "arctanh": (np.arctanh, T.atanh, [U(3, 5, lo=-0.9, hi=0.9)]),
    "deg2rad": (np.deg2rad, T.deg2rad, [U(3, 5)]),
    "rad2deg": (np.rad2deg, T.rad2deg, [U(3, 5)]),
    "sign_floor": (lambda x: np.sign(x) + np.floor(x) + np.ceil(x) + np.rint(x) + np.trunc(x),
                   lambda x: T.sign(x) + T.floor(x) + T.ceil(x) + T.round(x) + T.trunc(x),
                   [U(3, 5) + 0.1]),
    # binary ufuncs (with broadcasting)
    "add": (np.add, T.add, [U(3, 5), U(1, 5)]),
    "subtract": (np.subtract, T.sub, [U(3, 5), U(3, 1)]),
    "multiply": (np.multiply, T.mul, [U(3, 5), U(5)]),
    "divide": (np.divide, T.div, [U(3, 5), away(3, 5)]),
    "power": (np.power, T.pow, [U(3, 5, lo=0.3), U(3, 5)]),
    "maximum": (np.maximum, T.maximum, [U(3, 5), U(3, 5)]),
    "minimum": (np.minimum, T.minimum, [U(3, 5), U(1, 5)]),
    "fmax": (np.fmax, T.fmax, [U(3, 5), U(3, 5)]),
    "arctan2": (np.arctan2, T.atan2, [U(3, 5), away(3, 5)]),
    "hypot": (np.hypot, T.hypot, [away(3, 5), away(3, 5)]),
    "logaddexp": (np.logaddexp, T.logaddexp, [U(3, 5), U(3, 5)]),
    "logaddexp2": (np.logaddexp2, T.logaddexp2, [U(3, 5), U(3, 5)]),
    "copysign": (np.copysign, T.copysign, [away(3, 5), away(3, 5)]),
    "fmod": (np.fmod, T.fmod, [U(3, 5, lo=0.1, hi=5), U(3, 5, lo=0.7, hi=0.9)]),
    "remainder": (np.remainder, T.remainder, [U(3, 5, lo=0.1, hi=5), U(3, 5, lo=0.7, hi=0.9)]),
    # selections
    "where": (lambda x, y: np.where(x > 0.1, x * y, y), lambda x, y: T.where(x > 0.1, x * y, y),
              [U(3, 5), U(3, 5)]),
    "clip": (lambda x: np.clip(x, -0.5, 0.7), lambda x: T.clip(x, -0.5, 0.7), [away(3, 5, lo=0.05)]),
    # reductions
    "sum_axis": (lambda x: np.sum(x, axis=1), lambda x: T.sum(x, 1), [U(3, 5)]),
    "mean_axis0": (lambda x: np.mean(x, axis=0), lambda x: T.mean(x, 0), [U(3, 5)]),
    "var": (lambda x: np.var(x, axis=1), lambda x: T.var(x, 1, correction=0), [U(3, 5)]),
    "var_ddof": (lambda x: np.var(x, axis=0, ddof=1), lambda x: T.var(x, 0, correction=1), [U(3, 5)]),
    "std": (lambda x: np.std(x), lambda x: T.std(x, correction=0), [U(3, 5)]),
    "std_ddof": (lambda x: np.std(x, axis=1, ddof=1), lambda x: T.std(x, 1, correction=1), [U(3, 5)]),
    "prod": (lambda x: np.prod(x, axis=1), lambda x: T.prod(x, 1), [U(3, 5)]),
    "prod_zeros": (lambda x: np.prod(x * ZMASK, axis=1), lambda x: T.prod(x * T.tensor(ZMASK), 1),
                   [U(3, 5)]),
    "max_axis": (lambda x: np.max(x, axis=1), lambda x: T.amax(x, 1), [U(3, 5)]),
    "min_all": (np.min, T.amin, [U(3, 5)]),
    "logsumexp": (lambda x: np.log(np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)), axis=1))
                  + np.max(x, axis=1), lambda x: T.logsumexp(x, 1), [U(3, 5) * 3]),
    "log_softmax": (lambda x: x - np.max(x, axis=-1, keepdims=True)
                    - np.log(np.sum(np.exp(x - np.max(x, axis=-1, keepdims=True)), -1, keepdims=True)),
                    lambda x: T.log_softmax(x, -1), [U(3, 5) * 3]),
    "cumsum": (lambda x: np.cumsum(x, axis=1), lambda x: T.cumsum(x, 1), [U(3, 5)]),
    "cumprod": (lambda x: np.cumprod(x, axis=0), lambda x: T.cumprod(x, 0), [U(3, 5)]),
    "cumprod_zeros": (lambda x: np.cumprod(x * ZMASK, axis=1), lambda x: T.cumprod(x * T.tensor(ZMASK), 1),
                      [U(3, 5)]),
    # gathers and scatters
    "add_at": (lambda x, v: add_at(np, x, v), lambda x, v: add_at(T, x, v), [U(3, 5), U(4, 5)]),
    "fancy": (lambda x: x[[2, 0, 2], 1:4], lambda x: x[[2, 0, 2], 1:4], [U(3, 5)]),
    # contractions
    "einsum": (lambda a, b: np.einsum("ij,kj->ik", a, b), lambda a, b: T.einsum("ij,kj->ik", a, b),
               [U(3, 5), U(4, 5)]),
    "einsum_trace": (lambda a: np.einsum("ii->i", a), lambda a: T.einsum("ii->i", a), [U(5, 5)]),
    "tensordot": (lambda a, b: np.tensordot(a, b, axes=([1, 2], [0, 1])),
                  lambda a, b: T.tensordot(a, b, dims=([1, 2], [0, 1])), [U(3, 5, 2), U(5, 2, 3)]),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [U(2, 3, 5), U(5, 3)]),
    # linalg
    "solve": (np.linalg.solve, T.linalg.solve, [spd(5), U(5, 3)]),
    "solve_batched": (np.linalg.solve, T.linalg.solve, [spd(3, (2,)), U(2, 3, 2)]),
    "inv": (np.linalg.inv, T.linalg.inv, [spd(5)]),
    "det": (np.linalg.det, T.linalg.det, [spd(3, (2,)) + U(2, 3, 3) * 0.3]),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], lambda a: T.linalg.slogdet(a)[1], [U(5, 5) + 3 * np.eye(5)]),
    "cholesky": (lambda a: np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(5)),
                 lambda a: T.linalg.cholesky(a @ a.mT + T.eye(5, dtype=a.dtype)), [U(5, 5)]),
}
for o in [None, 1, 2, 3.5, np.inf, -np.inf, -1, 0.5]:
    TERMS[f"vnorm_{o}"] = (lambda x, o=o: np.linalg.norm(x, o), lambda x, o=o: T.linalg.vector_norm(
        x, 2 if o is None else o), [away(7)])
for o in [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
    TERMS[f"mnorm_{o}"] = (lambda x, o=o: np.linalg.norm(x, o), lambda x, o=o: T.linalg.matrix_norm(
        x, "fro" if o is None else o), [U(4, 3)])
TERMS["norm_axis"] = (lambda x: np.linalg.norm(x, axis=1), lambda x: T.linalg.vector_norm(x, dim=1),
                      [away(3, 5)])
TERMS["norm_keepdims3"] = (lambda x: np.linalg.norm(x, 3, axis=0, keepdims=True),
                           lambda x: T.linalg.vector_norm(x, 3, dim=0, keepdim=True), [away(3, 5)])

ZMASK = np.ones((3, 5))
ZMASK[0, 1] = 0.0  # one zero in a row
ZMASK[2, 0] = ZMASK[2, 3] = 0.0  # two zeros in a row
IDX = np.array([0, 2, 0, 1])


def add_at(xp, x, v):
    if xp is np:
        y = x.copy()
        np.add.at(y, IDX, v * x[0])
        return y
    return x.index_add(0, T.tensor(IDX), v * x[0])


NAMES = sorted(TERMS)
WEIGHTS = {}


def weight(name, shape):
    if name not in WEIGHTS:
        WEIGHTS[name] = np.random.default_rng(zlib.crc32(name.encode())).uniform(0.5, 1.5, shape)
    return WEIGHTS[name]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk", range(0, len(NAMES), 16))
def test_rules_match_torch(dtype, chunk):
    names = NAMES[chunk:chunk + 16]
    args, spans = [], []
    for n in names:
        a = [np.asarray(x, dtype=dtype) for x in TERMS[n][2]]
        spans.append((len(args), len(args) + len(a)))
        args += a
    ws = {n: weight(n, np.shape(TERMS[n][0](*[np.asarray(x, dtype=np.float64) for x in TERMS[n][2]])))
          for n in names}

    def total(*a):
        return sum(np.sum(TERMS[n][0](*a[s:e]) * ws[n].astype(dtype)) for n, (s, e) in zip(names, spans))
    value, grads = numdyn.value_and_grad(total, argnums=tuple(range(len(args))))(*args)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    for n, (s, e) in zip(names, spans):
        ts = [torch.tensor(x, requires_grad=True) for x in args[s:e]]
        out = (TERMS[n][1](*ts) * torch.tensor(ws[n].astype(dtype))).sum()
        want = torch.autograd.grad(out, ts, allow_unused=True)
        for j, (g, w) in enumerate(zip(grads[s:e], want)):
            assert g.dtype == dtype and g.shape == args[s + j].shape, n
            w = np.zeros_like(g) if w is None else w.numpy()
            np.testing.assert_allclose(g, w, **tol, err_msg=f"{n}, argument {j}")
    np.testing.assert_allclose(value, total(*args), rtol=1e-4 if dtype == np.float32 else 1e-10)


def test_kink_conventions():
    """at kinks and ties numdyn keeps JAX's conventions (autodiff.h), some
    of them torch's too: pinned here, torch's value alongside"""
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    g = numdyn.grad(lambda x: np.sum(np.abs(x)))(x.copy())
    np.testing.assert_array_equal(g, [-1.0, 1.0, 1.0, 1.0])  # abs'(0) = 1 (JAX); torch: 0
    ga, gb = numdyn.grad(lambda a, b: np.sum(np.maximum(a, b)), argnums=(0, 1))(x.copy(), x[::-1].copy() * 0 + 0.5)
    np.testing.assert_array_equal(ga, [0.0, 0.0, 0.5, 1.0])  # a tie: half each (JAX and torch)
    np.testing.assert_array_equal(gb, [1.0, 1.0, 0.5, 0.0])
    tx = torch.tensor([0.5], requires_grad=True)
    torch.maximum(tx, torch.tensor([0.5])).sum().backward()
    assert tx.grad.item() == 0.5
    g = numdyn.grad(lambda x: np.sum(np.clip(x, 0.0, 0.5)))(x.copy())
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 0.0])  # at a bound: 1 (torch.clamp)
    g = numdyn.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])  # tied maxima share (JAX); torch amax too
    tx = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    torch.amax(tx).backward()
    np.testing.assert_array_equal(tx.grad.numpy(), [0.0, 0.5, 0.5, 0.0])


W = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])


@pytest.mark.parametrize("lo, hi", [("a", "a"), ("a", None), (None, "a"), ("s", "s"), ("s", None),
                                     ("e", "e")],
                         ids=["arrays", "min-array", "max-array", "scalars", "min-scalar",
                              "equal-scalars"])
def test_clip_at_its_bounds_is_torch_clamp(lo, hi):
    """np.clip's gradient on the closed interval [min, max] is 1, its
    bounds' where they win strictly, min > max gives max (torch.clamp,
    every operand a float64 array, or Python float bounds); a plain
    maximum/minimum tie still halves (test_kink_conventions); min == max
    gives x and both bounds 0 unless x == min (then x's 1)"""
    # the last three: min == max with x below, above and at it
    x = np.array([-1.0, 0.0, 0.25, 0.5, 2.0, 1.0, 0.7, -0.3, 0.9, 0.4])
    a_lo = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.7, 0.2, 0.2, 0.4])  # [5:7]: min > max, and min == x
    a_hi = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 0.6, 0.2, 0.2, 0.4])
    s_lo, s_hi = (0.25, 0.25) if lo == "e" else (0.0, 0.5)
    if lo in ("s", "e"):
        names = (0,)
        args = (x.copy(),)
        lv, hv = s_lo, (s_hi if hi else None)
        f = lambda x: np.sum(np.clip(x, lv, hv) * W)
        ft = lambda x: (torch.clamp(x, lv, hv) * torch.tensor(W)).sum()
    else:
        ops = [x] + ([a_lo] if lo else []) + ([a_hi] if hi else [])
        names = tuple(range(len(ops)))
        args = tuple(o.copy() for o in ops)

        def f(*a):
            it = iter(a[1:])
            return np.sum(np.clip(a[0], next(it) if lo else None, next(it) if hi else None) * W)

        def ft(*a):
            it = iter(a[1:])
            return (torch.clamp(a[0], next(it) if lo else None, next(it) if hi else None)
                    * torch.tensor(W)).sum()
    gs = numdyn.grad(f, argnums=names)(*args)
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    ft(*ts).backward()
    np.testing.assert_allclose(f(*args), ft(*[t.detach() for t in ts]).item(), rtol=1e-14)
    for g, t in zip(gs, ts):
        assert g.dtype == np.float64 and g.shape == t.shape
        np.testing.assert_array_equal(g, t.grad.numpy())
    # the same program through numdyn.Tensor.backward
    nt = [numdyn.tensor(a.copy(), requires_grad=True) for a in args]
    f(*nt).backward()
    for n, t in zip(nt, ts):
        np.testing.assert_array_equal(n.grad.numpy(), t.grad.numpy())
