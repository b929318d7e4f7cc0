"""numdyn.grad / value_and_grad / vjp (issue 14, items 3-4).

Every rule is checked against central finite differences in float64 (the
function run by plain NumPy), on both the eager and the native backend;
conventions at kinks and ties are checked against JAX where it is
installed (those tests alone skip without it).
"""
import types

import numpy as np
import pytest

import numdyn
from grad_check import check_terms, numeric_grad

RNG = np.random.default_rng(1234)


def check_grad(f, *args, argnums=None, backend="native", rtol=1e-5, atol=1e-6, eps=1e-6):
    """numdyn's gradient of the scalar f w.r.t. every float array argument
    (or argnums) against finite differences; the value against NumPy's"""
    if argnums is None:
        argnums = tuple(k for k, a in enumerate(args)
                        if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    fn = f if backend == "native" else numdyn.compile(f, backend=backend)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    value, grads = numdyn.value_and_grad(fn, argnums=tuple(argnums))(*args)
    for a, c in zip(args, copies):  # the arguments are left as they were
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(value, f(*copies), rtol=1e-10, atol=1e-12)
    for k, g in zip(argnums, grads):
        assert g.shape == np.shape(args[k]) and g.dtype == np.asarray(args[k]).dtype
        num = numeric_grad(f, copies, k, eps)
        np.testing.assert_allclose(g, num, rtol=rtol, atol=atol, err_msg=f"argument {k}")
    return grads


def r(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


@pytest.fixture(params=["eager", "native"])
def be(request):
    return request.param


# ------------------------------------------------------------------ ufuncs

UNARY = [
    ("negative", lambda x: -x, (-2, 2)),
    ("positive", lambda x: +x, (-2, 2)),
    ("exp", np.exp, (-2, 2)),
    ("exp2", np.exp2, (-2, 2)),
    ("expm1", np.expm1, (-2, 2)),
    ("log", np.log, (0.5, 3)),
    ("log2", np.log2, (0.5, 3)),
    ("log10", np.log10, (0.5, 3)),
    ("log1p", np.log1p, (0.5, 3)),
    ("sqrt", np.sqrt, (0.5, 3)),
    ("square", np.square, (-2, 2)),
    ("cbrt", np.cbrt, (0.5, 3)),
    ("reciprocal", np.reciprocal, (0.5, 3)),
    ("sin", np.sin, (-2, 2)),
    ("cos", np.cos, (-2, 2)),
    ("tan", np.tan, (-1, 1)),
    ("arcsin", np.arcsin, (-0.8, 0.8)),
    ("arccos", np.arccos, (-0.8, 0.8)),
    ("arctan", np.arctan, (-2, 2)),
    ("sinh", np.sinh, (-2, 2)),
    ("cosh", np.cosh, (-2, 2)),
    ("tanh", np.tanh, (-2, 2)),
    ("arcsinh", np.arcsinh, (-2, 2)),
    ("arccosh", np.arccosh, (1.5, 3)),
    ("arctanh", np.arctanh, (-0.8, 0.8)),
    ("deg2rad", np.deg2rad, (-2, 2)),
    ("rad2deg", np.rad2deg, (-2, 2)),
    ("abs", np.abs, (0.1, 2)),
    ("abs_neg", np.abs, (-2, -0.1)),
    ("fabs", np.fabs, (-2, -0.1)),
    ("pow3", lambda x: x ** 3, (-2, 2)),
    ("pow_half", lambda x: x ** 0.5, (0.5, 2)),
    ("pow2", lambda x: x ** 2, (-2, 2)),
    ("rpow", lambda x: 2.0 ** x, (-2, 2)),
]


W34 = np.arange(1.0, 13.0).reshape(3, 4)


def test_unary_ufuncs(be):
    # every rule of the list in one function: each input in its own domain
    xs = [r(3, 4, lo=dom[0], hi=dom[1]) for _, _, dom in UNARY]
    terms = [(name, lambda x, op=op: op(x) * W34, slice(k, k + 1))
             for k, (name, op, _) in enumerate(UNARY)]
    check_terms(terms, xs, be)


BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("power", np.power), ("arctan2", np.arctan2),
    ("hypot", np.hypot), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
    ("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin),
    ("copysign", np.copysign), ("remainder", np.remainder), ("fmod", np.fmod),
]


def test_binary_ufuncs_broadcast(be):
    # every rule of the list in one function, each on its own (3, 4) and (4,)
    args, terms = [], []
    for k, (name, op) in enumerate(BINARY):
        args += [r(3, 4, lo=0.5, hi=2.0), r(4, lo=0.6, hi=1.9)]
        terms.append((name, lambda x, y, op=op: op(x, y) ** 2, slice(2 * k, 2 * k + 2)))
    check_terms(terms, args, be, chunk=8)


def test_same_operand_twice(be):
    x = r(5)
    check_grad(lambda x: np.sum(x * x + x / (x + 3.0)), x, backend=be)


def test_float32_inputs_keep_dtype(be):
    x = r(4).astype(np.float32)
    g = numdyn.grad(numdyn.compile(lambda x: np.sum(np.sin(x) * 2.0), backend=be))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-5)


def test_casts(be):
    x = r(6)
    check_grad(lambda x: np.sum(x.astype(np.float32).astype(np.float64) ** 2), x,
               backend=be, rtol=1e-3, atol=1e-4, eps=1e-3)
    # a cast to int stops the gradient (as JAX)
    g = numdyn.grad(lambda x: np.sum(x * x.astype(np.int64)))(np.array([1.5, 2.5]))
    np.testing.assert_allclose(g, [1.0, 2.0])


def test_where_and_comparisons(be):
    x = r(3, 5)
    check_grad(lambda x: np.sum(np.where(x > 0, x ** 2, np.sin(x))), x, backend=be)
    check_grad(lambda x: np.sum(np.where(x > 0, x, 0.0)), x, backend=be)


def test_clip(be):
    x = r(20, lo=-2, hi=2)
    check_grad(lambda x: np.sum(np.clip(x, -0.5, 0.7) * x), x, backend=be)


def test_rounding_has_zero_gradient(be):
    x = r(8, lo=0.1, hi=5)
    g = numdyn.grad(numdyn.compile(lambda x: np.sum(np.floor(x) + np.ceil(x) + np.sign(x)
                                                    + np.rint(x) + np.trunc(x) + x),
                                   backend=be))(x)
    np.testing.assert_array_equal(g, np.ones(8))


# ----------------------------------------------------------- reductions

def test_sum_axes_keepdims(be):
    x = r(3, 4, 5)
    check_grad(lambda x: np.sum(np.sum(x, axis=1) ** 2), x, backend=be)
    check_grad(lambda x: np.sum(np.sum(x, axis=(0, 2), keepdims=True) * x), x, backend=be)


def test_mean_var_std(be):
    # one compiled function for the three forms (distinct weights: no term
    # can hide another's error); CI time
    x = r(4, 6)
    check_grad(lambda x: (np.mean(x ** 2) + np.var(x) + np.std(x)
                          + 2.0 * np.sum(x.var(axis=0) * x.std(axis=0, ddof=1))
                          + 3.0 * np.sum(x.mean(axis=1, keepdims=True) * x)), x, backend=be)


def test_max_min(be):
    x = r(4, 7)
    check_grad(lambda x: (np.sum(x.max(axis=1) * 2) + np.sum(x.min(axis=0) ** 2)
                          + 3.0 * (np.max(x) - np.min(x))), x, backend=be)


def test_max_ties_split(be):
    x = np.array([1.0, 3.0, 3.0, 2.0])
    g = numdyn.grad(numdyn.compile(lambda x: np.max(x), backend=be))(x)
    np.testing.assert_allclose(g, [0.0, 0.5, 0.5, 0.0])


def test_prod_with_and_without_zeros(be):
    check_grad(lambda x: np.prod(x), r(5, lo=0.5, hi=1.5), backend=be)
    check_grad(lambda x: np.sum(np.prod(x, axis=1)), r(3, 4, lo=0.5, hi=1.5), backend=be)
    x = np.array([2.0, 0.0, 3.0, 4.0])
    g = numdyn.grad(numdyn.compile(lambda x: np.prod(x), backend=be))(x)
    np.testing.assert_allclose(g, [0.0, 24.0, 0.0, 0.0])
    x = np.array([2.0, 0.0, 3.0, 0.0])
    g = numdyn.grad(numdyn.compile(lambda x: np.prod(x), backend=be))(x)
    np.testing.assert_allclose(g, [0.0, 0.0, 0.0, 0.0])


def test_logsumexp_softmax(be):
    x = r(5, 7)

    def lse(x):
        m = x.max(axis=1, keepdims=True)
        return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0])

    def softmax_ce(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        return -np.mean(np.log(p[:, 2]))

    check_grad(lse, x, backend=be)
    check_grad(softmax_ce, x, backend=be)


def test_cumsum(be):
    x = r(4, 5)
    w = r(4, 5)
    check_grad(lambda x: np.sum(np.cumsum(x, axis=1) * w), x, backend=be)
    check_grad(lambda x: np.sum(np.cumsum(x, axis=0) ** 2), x, backend=be)


# ------------------------------------------------------------------ views

def test_views(be):
    x = r(4, 6)
    w = r(6, 4)
    check_grad(lambda x: np.sum(x.T * w), x, backend=be)
    check_grad(lambda x: np.sum(x[1:3, ::2] ** 2), x, backend=be)
    check_grad(lambda x: np.sum(x[::-1, 1] * np.arange(4.0)), x, backend=be)
    check_grad(lambda x: np.sum(x.reshape(3, 8)[1] ** 3), x, backend=be)
    check_grad(lambda x: np.sum(x[:, None, :] * x[None, :, :2].sum(axis=2)[..., None]),
               x, backend=be)
    check_grad(lambda x: np.sum(np.broadcast_to(x[0], (3, 6)) * w[:, :3].T), x, backend=be)
    check_grad(lambda x: np.sum(np.diagonal(x) ** 2) + np.sum(x.diagonal(1)), x, backend=be)


def test_fortran_and_strided_inputs(be):
    x = np.asfortranarray(r(4, 5))
    check_grad(lambda x: np.sum(np.sin(x) * x[:, :1]), x, backend=be)
    y = r(8, 6)[::2, 1::2]
    check_grad(lambda y: np.sum(np.exp(y) * y.sum(axis=0)), y, backend=be)


def test_zero_d_and_empty(be):
    x = np.array(0.7)
    check_grad(lambda x: np.sin(x) * x, x, backend=be)
    e = np.zeros((0, 3))
    g = numdyn.grad(numdyn.compile(lambda e, y: np.sum(e) + np.sum(y ** 2), backend=be),
                    argnums=(0, 1))(e, np.ones(3))
    assert g[0].shape == (0, 3)
    np.testing.assert_allclose(g[1], 2 * np.ones(3))


# --------------------------------------------------------- mutation, indexing

def test_setitem_basic(be):
    x = r(5, 4)
    y = r(4)

    def f(x, y):
        z = x.copy()
        z[1] = y * 2
        z[2:, 1:3] += np.sin(y[:2])
        return np.sum(z ** 2)

    check_grad(f, x, y, backend=be)


def test_inplace_on_argument_does_not_leak(be):
    x = r(6)
    keep = x.copy()

    def f(x):
        x *= 2.0
        x[0] = 1.0
        return np.sum(x ** 2)

    g = numdyn.grad(numdyn.compile(f, backend=be))(x)
    np.testing.assert_array_equal(x, keep)
    expect = 8 * keep
    expect[0] = 0.0
    np.testing.assert_allclose(g, expect)


def test_zeros_buffer_filled(be):
    x = r(5)

    def f(x):
        out = np.zeros(7)
        out[1:6] = x * 3
        out[0] = x[0] ** 2
        return np.sum(out * np.arange(7.0))

    check_grad(f, x, backend=be)


def test_gather(be):
    x = r(6, 3)
    idx = np.array([0, 2, 2, 5])
    check_grad(lambda x: np.sum(x[idx] ** 2), x, backend=be)
    check_grad(lambda x: np.sum(x[idx, 1] * np.arange(4.0)), x, backend=be)
    check_grad(lambda x: np.sum(np.take(x, idx, axis=0) * 2), x, backend=be)


def test_scatter_assignment(be):
    x = r(6)
    v = r(3)
    idx = np.array([4, 1, 4])  # repeated: the last write wins, as NumPy

    def f(x, v):
        z = x * 1.0
        z[idx] = v * 2
        return np.sum(z * np.arange(1.0, 7.0))

    check_grad(f, x, v, backend=be)


def test_add_at(be):
    x = r(5)
    v = r(4)
    idx = np.array([0, 3, 3, 1])

    def f(x, v):
        z = x * 1.0
        np.add.at(z, idx, v * v)
        return np.sum(z ** 2)

    check_grad(f, x, v, backend=be)


def _filled_in_helper(a, i):
    z = np.zeros(5)
    z += a
    np.add.at(z, i, a[:len(i)] ** 2)
    return z


_HELPERS = types.ModuleType("_helpers")
exec("import numpy as np\ndef filled(a):\n    z = np.zeros(a.shape)\n    z += a\n    return z\n",
     _HELPERS.__dict__)


def test_helper_writes_in_place_from_lambda(monkeypatch):
    """a helper that makes an array and writes into it sees numdyn's np
    whatever calls it: a lambda, a def with loop capture off, and through
    a module's attribute"""
    a = r(5)
    i = np.array([0, 3, 3])
    check_grad(lambda a: np.sum(_filled_in_helper(a, i[:2]) ** 2 + _HELPERS.filled(a) ** 3), a)
    monkeypatch.setattr(numdyn.config, "loop_capture", False)

    @numdyn.compile(fullgraph=True)  # no break: the helper's arrays are lazy
    def g(a):
        return _filled_in_helper(a, i) * 2

    np.testing.assert_allclose(g(a), _filled_in_helper(a, i) * 2)
    np.testing.assert_allclose(g(a + 1), _filled_in_helper(a + 1, i) * 2)


def test_boolean_mask_read(be):
    x = r(8)
    m = x > 0

    def f(x):
        return np.sum(x[m] ** 2)

    check_grad(f, x, backend=be)


def test_joins(be):
    x, y = r(2, 3), r(4, 3)
    check_grad(lambda x, y: np.sum(np.concatenate([x, y, x]) ** 2 * np.arange(24.0).reshape(8, 3)),
               x, y, backend=be)
    check_grad(lambda x, y: np.sum(np.stack([x, y[:2]], axis=1) ** 3), x, y, backend=be)
    check_grad(lambda x: np.sum(np.hstack([x, x * 2]) ** 2), x, backend=be)


def test_sort(be):
    x = r(4, 6)
    w = r(4, 6)
    check_grad(lambda x: np.sum(np.sort(x, axis=1) * w), x, backend=be)
    check_grad(lambda x: np.sum(np.sort(x, axis=0) * w), x, backend=be)


# ------------------------------------------------------------ linear algebra

def test_matmul_shapes(be):
    a, b, v = r(3, 4), r(4, 5), r(4)
    check_grad(lambda a, b: np.sum((a @ b) ** 2), a, b, backend=be)
    check_grad(lambda a, v: np.sum((a @ v) ** 2), a, v, backend=be)
    check_grad(lambda v, b: np.sum((v @ b) ** 2), v, b, backend=be)
    check_grad(lambda v: v @ v, v, backend=be)
    A, B = r(2, 3, 4), r(4, 2)
    check_grad(lambda A, B: np.sum(np.matmul(A, B) ** 2), A, B, backend=be)


def test_dot_einsum_tensordot(be):
    a, b = r(3, 4), r(4, 5)
    check_grad(lambda a, b: np.sum(np.dot(a, b) ** 2), a, b, backend=be)
    check_grad(lambda a, b: np.sum(np.einsum("ij,jk->ik", a, b) ** 2), a, b, backend=be)
    check_grad(lambda a, b: np.sum(np.einsum("ij,jk", a, b) ** 2), a, b, backend=be)
    check_grad(lambda a, b: np.sum(np.tensordot(a, b, axes=1) ** 2), a, b, backend=be)
    c, d = r(2, 3, 4), r(3, 2, 5)
    check_grad(lambda c, d: np.sum(np.tensordot(c, d, axes=([0, 1], [1, 0])) ** 2), c, d,
               backend=be)
    check_grad(lambda a, b: np.sum(np.einsum("ij,jk->ki", a, b) ** 2), a, b, backend=be)


def test_linalg(be):
    A = r(3, 3) + 3 * np.eye(3)
    b = r(3)
    B = r(3, 2)
    check_grad(lambda A: np.sum(np.linalg.inv(A) ** 2), A, backend=be, rtol=1e-4)
    check_grad(lambda A: np.linalg.det(A), A, backend=be, rtol=1e-4)
    check_grad(lambda A: np.linalg.slogdet(A)[1], A, backend=be, rtol=1e-4)
    check_grad(lambda A, b: np.sum(np.linalg.solve(A, b) ** 2), A, b, backend=be, rtol=1e-4)
    check_grad(lambda A, B: np.sum(np.linalg.solve(A, B) ** 2), A, B, backend=be, rtol=1e-4)
    check_grad(lambda A: np.linalg.norm(A), A, backend=be)
    check_grad(lambda b: np.linalg.norm(b), b, backend=be)


def test_cholesky(be):
    X = r(3, 3)

    def f(X):
        S = X @ X.T + 3 * np.eye(3)
        L = np.linalg.cholesky(S)
        return np.sum(L * np.arange(1.0, 10.0).reshape(3, 3))

    check_grad(f, X, backend=be, rtol=1e-4)


# ------------------------------------------------------------- the API

def test_argnums_and_pytrees(be):
    W1, b1, W2 = r(4, 3), r(3), r(3, 2)
    x = r(5, 4)

    def loss(params, x):
        W1, b1, W2 = params["W1"], params["b1"], params["W2"]
        h = np.tanh(x @ W1 + b1)
        return np.mean((h @ W2) ** 2)

    fn = numdyn.compile(loss, backend=be)
    params = {"W1": W1, "b1": b1, "W2": W2}
    g = numdyn.grad(fn)(params, x)
    assert isinstance(g, dict) and set(g) == {"W1", "b1", "W2"}
    for k in g:
        def part(v, k=k):
            p = dict(params); p[k] = v
            return loss(p, x)
        np.testing.assert_allclose(g[k], numeric_grad(part, [params[k]], 0), rtol=1e-5, atol=1e-7)
    g2 = numdyn.grad(fn, argnums=(0, 1))([W1, b1, W2] and params, x)
    assert isinstance(g2, tuple) and len(g2) == 2 and g2[1].shape == x.shape
    gl = numdyn.grad(lambda ps: np.sum(ps[0] * ps[1]))([r(3), r(3)])
    assert isinstance(gl, list) and len(gl) == 2


def test_value_and_grad_and_has_aux(be):
    x = r(4)
    fn = numdyn.compile(lambda x: (np.sum(x ** 2), x * 2), backend=be)
    (v, aux), g = numdyn.value_and_grad(fn, has_aux=True)(x)
    np.testing.assert_allclose(v, np.sum(x ** 2))
    np.testing.assert_allclose(aux, x * 2)
    np.testing.assert_allclose(g, 2 * x)
    g2, aux2 = numdyn.grad(fn, has_aux=True)(x)
    np.testing.assert_allclose(g2, 2 * x)
    v3, g3 = numdyn.value_and_grad(lambda x: np.sum(x ** 3))(x)
    assert isinstance(v3, np.float64)
    np.testing.assert_allclose(g3, 3 * x ** 2)


def test_python_float_arguments(be):
    g = numdyn.grad(lambda a, x: np.sum(np.sin(a * x)), argnums=(0, 1))(0.5, r(3))
    assert isinstance(g[0], np.float64) and g[1].shape == (3,)
    x = r(3)
    np.testing.assert_allclose(g[0], 0)  if False else None
    ga = numdyn.grad(lambda a: np.sum(np.sin(a * x)))(0.5)
    np.testing.assert_allclose(ga, np.sum(x * np.cos(0.5 * x)))


def test_vjp(be):
    x = r(3, 4)
    fn = numdyn.compile(lambda x, y: (np.sin(x) * y, np.sum(x ** 2, axis=0)), backend=be)
    y = r(4)
    (o1, o2), pull = numdyn.vjp(fn, x, y)
    np.testing.assert_allclose(o1, np.sin(x) * y)
    np.testing.assert_allclose(o2, np.sum(x ** 2, axis=0))
    c1, c2 = r(3, 4), r(4)
    gx, gy = pull((c1, c2))
    np.testing.assert_allclose(gx, c1 * np.cos(x) * y + 2 * x * c2)
    np.testing.assert_allclose(gy, np.sum(c1 * np.sin(x), axis=0))
    # called again with another cotangent: the saved forward serves again
    gx2, _ = pull((2 * c1, 0 * c2))
    np.testing.assert_allclose(gx2, 2 * c1 * np.cos(x) * y)


def test_vjp_int_primal_gets_none(be):
    x = r(4)
    n = np.array([1, 2, 3, 4])
    out, pull = numdyn.vjp(numdyn.compile(lambda x, n: x * n, backend=be), x, n)
    gx, gn = pull(np.ones(4))
    assert gn is None
    np.testing.assert_allclose(gx, n)


def test_grad_of_compiled_and_compiled_grad():
    x = r(10)
    f = numdyn.compile(lambda x: np.sum(np.exp(x) * x))
    np.testing.assert_allclose(numdyn.grad(f)(x), np.exp(x) * (1 + x))
    cg = numdyn.compile(numdyn.grad(lambda x: np.sum(np.exp(x) * x)))
    for _ in range(2):
        np.testing.assert_allclose(cg(x), np.exp(x) * (1 + x))
    cvg = numdyn.compile(lambda x: numdyn.value_and_grad(lambda y: np.sum(y ** 3))(x * 2))
    v, g = cvg(x)
    np.testing.assert_allclose(v, np.sum((2 * x) ** 3))
    np.testing.assert_allclose(g, 3 * (2 * x) ** 2)


def test_grad_of_grad():
    x = r(5)
    gg = numdyn.grad(lambda x: np.sum(numdyn.grad(lambda y: np.sum(np.sin(y) * y))(x)))
    np.testing.assert_allclose(gg(x), 2 * np.cos(x) - x * np.sin(x))


def test_aot_eager_runs_op_by_op():
    x = r(6)
    f = numdyn.compile(lambda x: np.sum(np.tanh(x) ** 2), backend="aot_eager")
    np.testing.assert_allclose(numdyn.grad(f)(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2))
    assert f.backend == "aot_eager"


def test_second_call_replays_same_answer():
    f = lambda x, w: np.sum(np.tanh(x @ w) ** 2)
    gf = numdyn.grad(f, argnums=1)
    for n in (5, 5, 9):
        x, w = r(n, 3), r(3, 2)
        np.testing.assert_allclose(gf(x, w), numeric_grad(f, [x, w], 1), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------ graph breaks

def test_gradient_through_graph_breaks(be):
    x = r(6)

    def f(x):
        y = np.sin(x) * 3
        if y.sum() > 100:  # a data-dependent branch: a graph break
            y = y * 2
        numdyn.graph_break()
        print("between segments")
        z = y ** 2
        if (z > 1e9).any():
            z = -z
        return np.sum(z * x)

    check_grad(f, x, backend=be)


def test_gradient_through_break_in_loop(be):
    x = r(4, lo=0.1, hi=0.5)

    def f(x):
        s = x
        for _ in range(3):
            s = np.sqrt(s + 1.0)
            if s.max() > 10:  # never taken; a break every iteration
                break
        return np.sum(s)

    check_grad(f, x, backend=be)


# ------------------------------------------------------------ errors

def test_errors_non_scalar_and_int_output():
    with pytest.raises(TypeError, match="scalar-output"):
        numdyn.grad(lambda x: x * 2)(r(3))
    with pytest.raises(TypeError, match="real-valued outputs"):
        numdyn.grad(lambda x: np.sum(x > 0))(r(3))
    with pytest.raises(TypeError, match="real-valued inputs"):
        numdyn.grad(lambda x: np.sum(x * 1.0))(np.arange(3))
    g = numdyn.grad(lambda x, n: np.sum(x * n), argnums=(0, 1), allow_int=True)(r(3), np.arange(3))
    assert g[1] is None
    # JAX's error types: too few positional arguments is a TypeError, an index
    # below -len(args) a ValueError (a ValueError for both before)
    with pytest.raises(TypeError, match="argnums=3 requires at least 4 positional arguments"):
        numdyn.grad(lambda x: np.sum(x), argnums=3)(r(3))
    with pytest.raises(TypeError, match=r"argnums=\(0, 2\) requires at least 3"):
        numdyn.value_and_grad(lambda x, y: np.sum(x * y), argnums=(0, 2))(r(3), r(3))
    with pytest.raises(ValueError, match="argnums -2 is out of range"):
        numdyn.grad(lambda x: np.sum(x), argnums=-2)(r(3))
    with pytest.raises(TypeError, match="has_aux"):
        numdyn.grad(lambda x: np.sum(x), has_aux=True)(r(3))


def test_error_value_leaves_graph():
    def f(x):
        s = float(np.sum(x))
        return np.sum(x * s)

    with pytest.raises(NotImplementedError, match="leaves the graph"):
        numdyn.grad(f)(r(3))

    def g(x):
        return np.sum(x) * x.sum().item()

    with pytest.raises(NotImplementedError, match="leaves the graph"):
        numdyn.grad(g)(r(3))

    # a NumPy function run outside the graph on two lazy arrays, the first
    # made inside the function: the second (differentiated) one is caught
    # too, not handed over as data with a zero gradient
    def h(x):
        return np.sum(np.polyfit(np.ones(4) + np.arange(4.0), x, 1) ** 2)

    with pytest.raises(NotImplementedError, match="leaves the graph"):
        numdyn.grad(h)(r(4))


def test_cumprod(be):
    x = r(3, 5, lo=0.5, hi=1.5)
    w = r(3, 5)
    check_grad(lambda x: np.sum(np.cumprod(x, axis=1) * w), x, backend=be)
    check_grad(lambda x: np.sum(np.cumprod(x, axis=0) * w), x, backend=be)
    z = np.array([2.0, 0.0, 3.0, 0.5])  # exact at zeros
    check_grad(lambda z: np.sum(np.cumprod(z) * np.arange(1.0, 5.0)), z, backend=be)


def test_short_axes(be):
    """reductions over short axes inline into their consumers (issue 19)"""
    x = r(2, 3)
    check_grad(lambda x: (np.sum(x.max(axis=1)) + 2.0 * np.sum(x.min(axis=1) ** 2)
                          + 3.0 * np.sum(np.prod(x, axis=1))
                          + 5.0 * np.mean(x.max(axis=1, keepdims=True) * x)
                          + 7.0 * np.sum(np.exp(x - x.max(axis=0)) / x.sum(axis=0))), x, backend=be)


def test_error_unsupported_op_names_it():
    with pytest.raises(NotImplementedError, match="complex values in the scan: power"):
        numdyn.grad(lambda x: np.sum(np.abs(np.power.accumulate(x * (1 + 1j)))))(r(4) + 2)
    x = r(4)  # complex intermediates are differentiated (test_autodiff_complex.py)
    np.testing.assert_allclose(numdyn.grad(lambda x: np.sum(np.abs(x * 1j)))(x), np.sign(x))


def test_error_vjp_cotangent_shape():
    out, pull = numdyn.vjp(lambda x: x * 2, r(3))
    with pytest.raises(ValueError, match="cotangent"):
        pull(np.ones(4))


def test_exception_in_function_propagates():
    def f(x):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        numdyn.grad(f)(r(3))
    # the next call works
    np.testing.assert_allclose(numdyn.grad(lambda x: np.sum(x))(r(3)), np.ones(3))


def test_debug_verifier_path(monkeypatch):
    monkeypatch.setenv("NUMDYN_DEBUG", "1")
    x = r(4, 5)
    check_grad(lambda x: np.sum(np.tanh(x @ x.T)[1:] * np.max(x, axis=1)[1:, None]), x)


# ------------------------------------------------------------ JAX

def test_conventions_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    cases = [
        (lambda x: np.sum(np.abs(x)), lambda x: jnp.sum(jnp.abs(x)), np.array([0.0, -1.0, 2.0])),
        (lambda x: np.sum(np.maximum(x, 0.0)), lambda x: jnp.sum(jnp.maximum(x, 0.0)),
         np.array([0.0, -1.0, 2.0])),
        (lambda x: np.sum(np.minimum(x, 1.0)), lambda x: jnp.sum(jnp.minimum(x, 1.0)),
         np.array([1.0, -1.0, 2.0])),
        # np.clip at its bounds follows torch.clamp, not JAX (test_grad_torch_audit)
        (lambda x: np.max(x), lambda x: jnp.max(x), np.array([3.0, 1.0, 3.0, 3.0])),
        (lambda x: np.sum(np.min(x, axis=0)), lambda x: jnp.sum(jnp.min(x, axis=0)),
         np.array([[1.0, 2.0], [1.0, 0.0]])),
        (lambda x: np.sum(np.where(x > 0, x, 0.0)), lambda x: jnp.sum(jnp.where(x > 0, x, 0.0)),
         np.array([0.0, 1.0, -1.0])),
        (lambda x: np.prod(x), lambda x: jnp.prod(x), np.array([0.0, 2.0, 3.0])),
        (lambda x: np.sum(np.sqrt(x) * 0 + x ** 2), lambda x: jnp.sum(jnp.sqrt(x) * 0 + x ** 2),
         np.array([1.0, 4.0])),
    ]
    # one function of all the cases' inputs (one compile, not nine): each
    # term reads only its own input, so each input's gradient is its case's
    nfs, jfs, xs = zip(*cases)
    nums = tuple(range(len(cases)))
    got = numdyn.grad(lambda *a: sum(f(x) for f, x in zip(nfs, a)), argnums=nums)(*xs)
    want = jax.grad(lambda *a: sum(f(x) for f, x in zip(jfs, a)), argnums=nums)(*xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), atol=1e-12)


def test_random_programs_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def make(xp):
        def f(x, w):
            h = xp.tanh(x @ w)
            s = xp.sum(h * h, axis=1)
            e = xp.exp(h - xp.max(h, axis=1, keepdims=True))
            return xp.mean(s) + xp.sum(xp.log(xp.sum(e, axis=1))) + xp.sum(xp.cumsum(x, axis=0)[-1])
        return f

    for n in (3, 7):
        x, w = r(n, 4), r(4, 5)
        gn = numdyn.grad(make(np), argnums=(0, 1))(x, w)
        gj = jax.grad(make(jnp), argnums=(0, 1))(x, w)
        for a, b in zip(gn, gj):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ more shapes and API

def test_partition_saves_expensive_recomputes_pointwise():
    x = r(200, 50)
    w = r(50, 40)
    # the matmul's result is saved (an extern); the tanh chain on it is
    # recomputed in the backward from it, not saved
    out, pull = numdyn.vjp(lambda x, w: np.tanh(np.sin(x @ w) * 2.0), x, w)
    assert pull.saved_nbytes == 200 * 40 * 8
    gx, gw = pull(np.ones((200, 40)))
    z = x @ w
    d = (1 - np.tanh(np.sin(z) * 2) ** 2) * 2 * np.cos(z)
    np.testing.assert_allclose(gx, d @ w.T, rtol=1e-10)
    np.testing.assert_allclose(gw, x.T @ d, rtol=1e-10)
    # pointwise only: nothing is saved beyond the inputs
    out, pull = numdyn.vjp(lambda x: np.exp(np.sin(x)) * x, x)
    assert pull.saved_nbytes == 0


def test_vjp_dict_output_and_has_aux(be):
    x = r(3)
    fn = numdyn.compile(lambda x: ({"a": x * 2, "b": np.sum(x ** 2)}, "aux"), backend=be)
    out, pull, aux = numdyn.vjp(fn, x, has_aux=True)
    assert aux == "aux" and set(out) == {"a", "b"}
    (g,) = pull({"a": np.ones(3), "b": 2.0})
    np.testing.assert_allclose(g, 2 + 4 * x)
    with pytest.raises(TypeError, match="dict"):
        pull((np.ones(3), 1.0))


def test_big_endian_and_subclass_inputs():
    x = r(4).astype(">f8")
    g = numdyn.grad(lambda x: np.sum(x ** 2))(x)
    np.testing.assert_allclose(g, 2 * x)
    with pytest.raises(NotImplementedError, match="subclass"):
        numdyn.grad(lambda x: np.sum(x))(np.ma.masked_array(r(3)))


def test_float16_and_float32_reductions(be):
    x = r(64).astype(np.float16)
    g = numdyn.grad(numdyn.compile(lambda x: np.mean(x * x), backend=be))(x)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.astype(np.float64), 2 * x.astype(np.float64) / 64, rtol=2e-2, atol=1e-3)
    y = r(10, 30).astype(np.float32)
    g = numdyn.grad(numdyn.compile(lambda y: np.sum(np.var(y, axis=1)), backend=be))(y)
    expect = 2 * (y - y.mean(axis=1, keepdims=True)) / 30
    np.testing.assert_allclose(g, expect, rtol=1e-4, atol=1e-6)


def test_einsum_forms(be):
    a, b = r(3, 4), r(4, 5)
    w = r(4, 3)
    check_grad(lambda a: np.sum(np.einsum("ij->ji", a) * w), a, backend=be)
    check_grad(lambda a, b: np.einsum("ij,jk->", a, b), a, b, backend=be)
    check_grad(lambda a: np.einsum("ij,ij->", a, a), a, backend=be)
    check_grad(lambda a: np.sum(np.einsum("ii->i", a[:3, :3] @ a[:3, :3].T) ** 2), a, backend=be)
    A, B = r(2, 3, 4), r(2, 4, 5)
    check_grad(lambda A, B: np.sum(np.einsum("...ij,...jk->...ik", A, B) ** 2), A, B, backend=be)


def test_batched_matmul_both_sides(be):
    A, B = r(2, 1, 3, 4), r(5, 4, 2)
    check_grad(lambda A, B: np.sum(np.tanh(A @ B)), A, B, backend=be)
    v = r(4)
    check_grad(lambda A, v: np.sum((A @ v) ** 2), A, v, backend=be)
    check_grad(lambda v, B: np.sum((v @ B) ** 2), v, B, backend=be)


def test_kwargs_pass_through(be):
    fn = numdyn.compile(lambda x, scale=1.0: np.sum(x * scale), backend=be)
    g = numdyn.grad(fn)(r(3), scale=3.0)
    np.testing.assert_allclose(g, 3.0 * np.ones(3))


def test_constant_output_gives_zero_gradient():
    g = numdyn.grad(lambda x: np.float64(2.0) + np.sum(np.zeros(3)))(r(3))
    np.testing.assert_array_equal(g, np.zeros(3))
    g = numdyn.grad(lambda x, y: np.sum(y ** 2), argnums=(0, 1))(r(2), r(3))
    np.testing.assert_array_equal(g[0], np.zeros(2))


def test_nan_and_inf_propagate_like_numpy():
    with np.errstate(divide="ignore", invalid="ignore"):
        g = numdyn.grad(lambda x: np.sum(np.sqrt(x)))(np.array([0.0, 4.0]))
    assert np.isinf(g[0]) and g[1] == 0.25
    g = numdyn.grad(lambda x: np.sum(np.log(x)))(np.array([np.nan, 2.0]))
    assert np.isnan(g[0]) and g[1] == 0.5


def test_mlp_training_loop_matches_hand_gradient():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((32, 8)), rng.standard_normal((32, 2))
    params = [rng.standard_normal((8, 16)) * 0.3, np.zeros(16), rng.standard_normal((16, 2)) * 0.3]

    def loss(p, X, Y):
        h = np.maximum(X @ p[0] + p[1], 0.0)
        return np.mean((h @ p[2] - Y) ** 2)

    vg = numdyn.value_and_grad(loss)
    first = None
    for _ in range(30):
        v, g = vg(params, X, Y)
        first = v if first is None else first
        params = [p - 0.1 * gp for p, gp in zip(params, g)]
    assert v < first * 0.8


def test_element_reads_stay_in_graph(be):
    x = r(4)
    check_grad(lambda x: x[0] * x[1] + x[2] ** 2 - x[-1], x, backend=be)

    def rows(x):
        s = 0.0
        for v in x:  # iteration reads elements
            s = s + v * v
        return s

    check_grad(rows, x, backend=be)


def test_vjp_inside_compiled_function():
    x = r(5)

    @numdyn.compile
    def f(x):
        out, pull = numdyn.vjp(lambda y: np.sin(y) * y, x)
        (g,) = pull(np.ones_like(x) * 2.0)
        return out, g

    for _ in range(2):
        out, g = f(x)
        np.testing.assert_allclose(out, np.sin(x) * x)
        np.testing.assert_allclose(g, 2 * (np.cos(x) * x + np.sin(x)))


def test_pullback_of_inner_vjp_outside_its_capture_raises():
    x = r(3)
    keep = {}

    @numdyn.compile
    def f(x):
        out, pull = numdyn.vjp(lambda y: y * 2, x)
        keep["pull"] = pull
        return out

    f(x)
    with pytest.raises(RuntimeError, match="inside"):
        keep["pull"](np.ones(3))
