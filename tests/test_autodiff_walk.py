"""Issue 14's list of differentiable operations walked item by item:
every NumPy ufunc with a derivative (NumPy's conventions at kinks), the
reductions, scans, views, indexing (np.add.at), in-place writes, joins,
matmul/dot/inner/einsum (diagonals, many operands)/tensordot/multi_dot,
linalg solve/inv/det/slogdet/norm/matrix_power -- numdyn.grad against
central differences in float64 and jax.grad; operations without a rule
raise NotImplementedError naming them, never a wrong gradient."""
import numpy as np
import pytest

import numdyn
from grad_check import check_grad, check_terms

R = np.random.default_rng(11)


check = check_grad


def sample(dom, shape):
    if dom == "pos":
        return R.random(shape) + 0.5
    if dom == "unit":
        return R.uniform(-0.8, 0.8, shape)
    if dom == "gt1":
        return R.random(shape) + 1.5
    if dom == "small":
        return R.uniform(-1, 1, shape)
    return R.standard_normal(shape)


W6 = np.arange(1.0, 7.0).reshape(2, 3)
UNARY = {
    "negative": None, "positive": None, "absolute": None, "fabs": None, "sign": None, "exp": None,
    "exp2": None, "expm1": None, "log": "pos", "log2": "pos", "log10": "pos", "log1p": "pos",
    "sqrt": "pos", "cbrt": "pos", "square": None, "reciprocal": "pos", "sin": None, "cos": None,
    "tan": "small", "arcsin": "unit", "arccos": "unit", "arctan": None, "sinh": None, "cosh": None,
    "tanh": None, "arcsinh": None, "arccosh": "gt1", "arctanh": "unit", "deg2rad": None,
    "rad2deg": None, "degrees": None, "radians": None, "floor": None, "ceil": None, "trunc": None,
    "rint": None, "conjugate": None,
}
BINARY = {
    "add": None, "subtract": None, "multiply": None, "divide": "pos", "true_divide": "pos",
    "power": "pos", "float_power": "pos", "maximum": None, "minimum": None, "fmax": None,
    "fmin": None, "arctan2": None, "hypot": None, "logaddexp": None, "logaddexp2": None,
    "copysign": None, "fmod": "pos", "remainder": "pos", "heaviside": None,
}


def test_unary_ufuncs():
    # all of them, a few compiled functions (grad_check.check_terms), each
    # input in its own domain, a warm (replayed) call checked too
    names = sorted(UNARY)
    terms = [(n, lambda x, uf=getattr(np, n): uf(x) * W6, slice(k, k + 1)) for k, n in enumerate(names)]
    check_terms(terms, [sample(UNARY[n], (2, 3)) for n in names], replay=True)


def test_binary_ufuncs_broadcasting():
    names = sorted(BINARY)
    args, terms = [], []
    for k, n in enumerate(names):
        dom = BINARY[n]
        args += [sample(dom, (2, 3)), sample(None if dom == "pos" and n in ("power", "float_power") else dom, (3,))]
        terms.append((n, lambda a, b, uf=getattr(np, n): uf(a, b) * W6, slice(2 * k, 2 * k + 2)))
    check_terms(terms, args, chunk=8, replay=True)


def test_ldexp_and_kinks():
    x = np.array([-1.5, 0.0, 0.0, 2.0, 3.0])
    check(lambda a: np.sum(np.ldexp(a, np.array([1, 2, 0, 3, 1])) * np.arange(5.0)), R.standard_normal(5))
    # at kinks: abs'(0) = 1, maximum's ties split (JAX)
    assert numdyn.grad(lambda a: np.sum(np.abs(a)))(x).tolist() == [-1.0, 1.0, 1.0, 1.0, 1.0]
    assert numdyn.grad(lambda a: np.sum(np.maximum(a, 0.0)))(x).tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    # np.clip: 1 on the closed interval [min, max] (torch.clamp)
    assert numdyn.grad(lambda a: np.sum(np.clip(a, 0.0, 2.0)))(x).tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("name", ["spacing", "nextafter"])
def test_ufuncs_without_derivative_refused(name):
    uf = getattr(np, name)
    f = (lambda x: np.sum(uf(x))) if name == "spacing" else (lambda x: np.sum(uf(x, 1.0)))
    with pytest.raises(NotImplementedError, match=name):
        numdyn.grad(f)(np.ones(3))


A = R.standard_normal((3, 4))
S = R.standard_normal((3, 3)) + 3 * np.eye(3)
V = R.standard_normal(4)
B3 = R.standard_normal((2, 3, 4))
W12 = np.arange(1.0, 13.0).reshape(3, 4)


def add_at(a):
    z = np.zeros((3, 3))
    np.add.at(z, [0, 2, 0], a[:, :3])
    return (z ** 2).sum()


def inplace(a):
    b = a.copy()
    b *= 2.0
    b += a
    b[1:, ::2] -= a[:2, 1::2] ** 2
    return (b ** 2).sum()


FUNCS = {
    "nansum": (lambda a: np.nansum(a * W12), A),
    "nanmean_axis": (lambda a: np.nanmean(a ** 2, axis=0).sum(), A),
    "nanmax_axis": (lambda a: np.nanmax(a * W12, axis=1).sum(), A),
    "average_weights": (lambda a: np.average(a, axis=1, weights=np.arange(1.0, 5.0)).sum(), A),
    "sort": (lambda a: (np.sort(a, axis=1) * W12).sum(), A),
    "var_ddof": (lambda a: a.var(ddof=1, axis=0).sum(), A),
    "std": (lambda a: a.std(axis=1).sum(), A),
    "ptp": (lambda a: np.ptp(a * W12, axis=1).sum(), A),
    "logsumexp": (lambda a: np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)).sum(), A),
    "prod_with_zero": (lambda a: np.prod(np.where(W12 == 6.0, 0.0, a), axis=1).sum(), A),
    "cumsum_reversed": (lambda a: (np.cumsum(a[:, ::-1], axis=1) ** 2).sum(), A),
    "cumprod": (lambda a: np.cumprod(a, axis=0).sum(), A),
    "sum_where": (lambda a: np.sum(a ** 2, where=a > 0), A),
    "flip_roll": (lambda a: (np.roll(np.flip(a, 0), 2, axis=1) * W12).sum(), A),
    "tile_repeat": (lambda a: (np.tile(a, (2, 1)) ** 2).sum() + np.repeat(a, 2, axis=1).sum(), A),
    "moveaxis_swapaxes": (lambda a: (np.moveaxis(a[None], 0, 2) * 1.3).sum() + np.swapaxes(a, 0, 1)[0].sum(), A),
    "broadcast_to": (lambda v: (np.broadcast_to(v, (3, 4)) * W12).sum(), V),
    "expand_squeeze": (lambda v: (np.squeeze(np.expand_dims(v, 0)) ** 3).sum(), V),
    "triu_diagonal": (lambda s: (np.triu(s) ** 2).sum() + (np.diagonal(s) ** 3).sum(), S),
    "diff": (lambda a: (np.diff(a, axis=1) ** 2).sum(), A),
    "split": (lambda a: sum((p ** 2).sum() * (i + 1) for i, p in enumerate(np.split(a, 2, axis=1))), A),
    "take_along_axis": (lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1)[:, -1].sum(), A),
    "fancy_and_basic_index": (lambda a: (a[[0, 2, 2]][:, 1:] ** 2).sum() + a[1, ::-2].sum(), A),
    "add_at": (add_at, A),
    "inplace_through_views": (inplace, A),
    "outer_vdot": (lambda v: (np.outer(v, v) * 1.5).sum() + np.vdot(v, v), V),
    "dot_matmul_vec": (lambda v: (A @ v).sum() + v @ v + np.dot(A, v).sum(), V),
    "tensordot": (lambda a: np.tensordot(a, a, axes=([1], [1])).sum(), A),
    "inv_solve": (lambda s: np.linalg.inv(s).sum() + np.linalg.solve(s, np.arange(3.0)).sum(), S),
    "det_slogdet": (lambda s: np.linalg.det(s) + np.linalg.slogdet(s)[1], S),
    "norm_fro_1_inf": (lambda a: np.linalg.norm(a) + np.linalg.norm(a, 1) + np.linalg.norm(a, np.inf), A),
    "norm_vector_axis": (lambda a: np.linalg.norm(a, 3, axis=1).sum() + np.linalg.norm(a[0], 1), A),
    "sinc": (lambda v: np.sinc(v).sum(), V),
    "clip_array_bounds": (lambda a: np.clip(a, -0.5, a.mean()).sum(), A),
    # added this session: einsum diagonals and many operands, inner,
    # multi_dot, matrix_power
    "einsum_trace": (lambda s: np.einsum("ii->", s @ s), S),
    "einsum_diagonal": (lambda s: (np.einsum("ii->i", s) ** 2).sum(), S),
    "einsum_batch_diagonal": (lambda b: (np.einsum("...ii->...i", b[:, :, :3]) ** 3).sum(), B3),
    "einsum_three_operands": (lambda s: np.einsum("ij,jk,ki->", s, s, s), S),
    "einsum_four_implicit": (lambda s: np.einsum("ij,jk,kl,li", s, s, s, s), S),
    "einsum_diagonal_and_other": (lambda a: (np.einsum("ii,ij->j", a[:, :3], a) ** 2).sum(), A),
    "inner": (lambda b: np.inner(b, A).sum() + (np.inner(b, b) ** 2).sum(), B3),
    "inner_vector_matrix": (lambda v: (np.inner(v, A) ** 2).sum(), V),
    "multi_dot": (lambda s: (np.linalg.multi_dot([s, s, A]) ** 2).sum(), S),
    "multi_dot_vectors": (lambda v: np.linalg.multi_dot([V, A.T, S, S, A, v]), V),
    "matrix_power": (lambda s: (np.linalg.matrix_power(s, 3) ** 2).sum()
                     + np.linalg.matrix_power(s, 1).sum() + np.linalg.matrix_power(s, 0).sum(), S),
    "matrix_power_batch": (lambda b: np.linalg.matrix_power(b[:, :, :3], 4).sum(), B3),
    "matrix_power_negative": (lambda s: (np.linalg.matrix_power(s, -2) ** 2).sum()
                              + np.linalg.matrix_power(s, -1).sum(), S),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_functions(name):
    f, x = FUNCS[name]
    check(f, x)


def test_new_rules_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    pairs = [
        (lambda xp: lambda s: xp.einsum("ij,jk,ki->", s, s, s) + xp.einsum("ii->", s) ** 2, S),
        (lambda xp: lambda b: (xp.inner(b, b) ** 2).sum(), B3),
        (lambda xp: lambda s: (xp.linalg.multi_dot([s, s.T, s]) ** 2).sum(), S),
        (lambda xp: lambda s: (xp.linalg.matrix_power(s, 5) ** 2).sum(), S / 3),
        (lambda xp: lambda s: (xp.linalg.matrix_power(s, -3) ** 2).sum(), S),
    ]
    for make, x in pairs:
        g = numdyn.grad(make(np))(x)
        gj = np.asarray(jax.grad(make(jnp))(jnp.asarray(x)))
        np.testing.assert_allclose(g, gj, rtol=1e-9, atol=1e-11)


def test_float32_gradients_keep_their_dtype():
    x = A.astype(np.float32)
    for f in (lambda s: np.einsum("ij,jk,ki->", s[:, :3], s[:, :3], s[:, :3]),
              lambda a: (np.inner(a, a) ** 2).sum(), lambda a: np.sum(np.arctan2(a, 1.0 + a * a))):
        g = numdyn.grad(f)(x)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, numdyn.grad(f)(x.astype(np.float64)), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("f,what", [
    (lambda a: np.sum(np.interp(0.5, np.cumsum(a[0] ** 2), a[1])), "interp.*xp"),
    (lambda a: np.sum(np.interp(a, [0.0, 1.0], [2.0, 3.0], period=2.0)), "interp.*period"),
    # (power.accumulate has a rule since session 19: test_autodiff_refused_rules.py)
    # (complex svd/eigh/qr have rules since session 20: test_autodiff_complex_decomp.py)
    # (complex cholesky has a rule since session 21: test_autodiff_complex_order.py)
])
def test_operations_without_a_rule_refused(f, what):
    with pytest.raises(NotImplementedError, match=what):
        numdyn.grad(f)(A.copy())


def test_integer_and_bool_inputs_get_no_gradient():
    x, k, m = A.copy(), np.arange(4), A > 0
    f = lambda x, k, m: np.sum(x * k * m)
    with pytest.raises(TypeError, match="allow_int"):          # JAX's refusal
        numdyn.grad(f, argnums=(0, 1, 2))(x, k, m)
    gx, gk, gm = numdyn.grad(f, argnums=(0, 1, 2), allow_int=True)(x, k, m)
    np.testing.assert_allclose(gx, k * m)
    assert gk is None and gm is None
    out, pull = numdyn.vjp(f, x, k, m)
    gx2, gk2, gm2 = pull(1.0)
    np.testing.assert_allclose(gx2, k * m)
    assert gk2 is None and gm2 is None
