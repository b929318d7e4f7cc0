"""JAX arrays through numdyn.wrap_numpy inside JAX transformations (issue 14,
item 2/5 for JAX): jax.grad, jax.jit, jax.vmap of a function that calls a
wrap_numpy'd NumPy function. The call becomes a jax.custom_vjp whose
backward is numdyn.vjp (src/numdyn/_jax.py). Oracle: the same math written
in jax.numpy.
"""
import numpy as np
import pytest

import numdyn

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(3)


@numdyn.wrap_numpy
def layer(x, w, b):
    return np.tanh(x @ w + b) * 2.0


def layer_jax(x, w, b):
    return jnp.tanh(x @ w + b) * 2.0


def args():
    return (jnp.asarray(RNG.standard_normal((6, 4))), jnp.asarray(RNG.standard_normal((4, 3))),
            jnp.asarray(RNG.standard_normal(3)))


@pytest.mark.parametrize("jit", [False, True])
def test_grad_through_wrap_numpy(jit):
    def loss(f):
        return lambda x, w, b: jnp.sum(f(x, w, b) ** 2 * jnp.arange(3.0))
    g = jax.grad(loss(layer), argnums=(0, 1, 2))
    if jit:
        g = jax.jit(g)
    for _ in range(2):
        a = args()
        got = g(*a)
        want = jax.grad(loss(layer_jax), argnums=(0, 1, 2))(*a)
        for u, v in zip(got, want):
            assert isinstance(u, jax.Array)
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


def test_vjp_tuple_outputs_and_static_arguments():
    @numdyn.wrap_numpy
    def f(x, scale, mode):
        y = np.exp(x) * scale
        return (y, np.sum(y * y)) if mode == "both" else y

    x = jnp.asarray(RNG.standard_normal(5))
    out, pull = jax.vjp(lambda x: f(x, 1.5, "both"), x)
    np.testing.assert_allclose(np.asarray(out[0]), np.exp(np.asarray(x)) * 1.5)
    ct = (jnp.asarray(RNG.standard_normal(5)), jnp.asarray(2.0))
    (g,) = pull(ct)
    _, pj = jax.vjp(lambda x: (jnp.exp(x) * 1.5, jnp.sum((jnp.exp(x) * 1.5) ** 2)), x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(pj(ct)[0]), rtol=1e-10)


def test_integer_input_gets_float0():
    @numdyn.wrap_numpy
    def f(x, idx):
        return x[idx] * 3.0

    x, idx = jnp.asarray(RNG.standard_normal(6)), jnp.asarray([0, 2, 2, 5])
    gx, gi = jax.grad(lambda x, i: jnp.sum(f(x, i) ** 2), argnums=(0, 1), allow_int=True)(x, idx)
    want = jax.grad(lambda x: jnp.sum((x[idx] * 3.0) ** 2))(x)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(want), rtol=1e-12)
    assert gi.dtype == jax.dtypes.float0


def test_complex_holomorphic_matches_jax():
    @numdyn.wrap_numpy
    def f(z):
        return np.fft.fft(np.exp(z) * z)

    z = jnp.asarray(RNG.standard_normal(6) + 1j * RNG.standard_normal(6))
    ct = jnp.asarray(RNG.standard_normal(6) + 1j * RNG.standard_normal(6))
    _, p1 = jax.vjp(f, z)
    _, p2 = jax.vjp(lambda z: jnp.fft.fft(jnp.exp(z) * z), z)
    np.testing.assert_allclose(np.asarray(p1(ct)[0]), np.asarray(p2(ct)[0]), rtol=1e-10)
    # and a real loss: jax.grad's convention (conj of torch's)
    g1 = jax.grad(lambda z: jnp.sum(jnp.abs(f(z)) ** 2))(z)
    g2 = jax.grad(lambda z: jnp.sum(jnp.abs(jnp.fft.fft(jnp.exp(z) * z)) ** 2))(z)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), rtol=1e-9)


def test_vmap_runs_per_example():
    x = jnp.asarray(RNG.standard_normal((3, 6, 4)))
    _, w, b = args()
    got = jax.vmap(lambda x: layer(x, w, b))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.vmap(lambda x: layer_jax(x, w, b))(x)),
                               rtol=1e-12)


def test_shape_probe_failure_is_reported():
    @numdyn.wrap_numpy
    def f(x):
        if not np.any(x == 0.0):  # no probe has a zero: each raises
            raise ValueError("needs a zero")
        return x * 2

    with pytest.raises(NotImplementedError, match="ones of the inputs' shapes.*needs a zero"):
        jax.jit(lambda x: f(x))(jnp.zeros(3))


def test_shape_probe_of_a_solve():
    # a matrix of ones is singular: the shapes come from the next probe
    @numdyn.wrap_numpy
    def f(a, b):
        return np.sum(np.linalg.solve(a, b) ** 2) + np.linalg.slogdet(a)[1]

    def fj(a, b):
        return jnp.sum(jnp.linalg.solve(a, b) ** 2) + jnp.linalg.slogdet(a)[1]
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 2))
    want = jax.grad(fj, (0, 1))(a, b)
    got = jax.jit(jax.grad(f, (0, 1)))(jnp.asarray(a), jnp.asarray(b))
    for u, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-9, atol=1e-12)


def test_concrete_jax_arrays_still_go_through_dlpack():
    x, w, b = args()
    out = layer(x, w, b)  # no transformation: a JAX array out, zero-copy in
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(np.asarray(out), np.asarray(layer_jax(x, w, b)), rtol=1e-12)


def test_jax_arrays_inside_list_and_dict_arguments():
    # under jax.grad / jax.jit, tracers inside list and dict arguments (a
    # parameter pytree) get their gradients, as JAX's on the same math;
    # an integer leaf (traced under jit) gets none
    @numdyn.wrap_numpy
    def f(params, x, cfg):
        h = np.tanh(x @ params["w"] + params["b"])
        return np.sum(h ** cfg["p"]) * params["s"][0]

    def fj(params, x, cfg):
        return jnp.sum(jnp.tanh(x @ params["w"] + params["b"]) ** cfg["p"]) * params["s"][0]

    x, w, b = args()
    params = {"w": w, "b": b, "s": [jnp.float64(1.5)]}
    cfg = {"p": 2}
    want = jax.grad(fj, (0, 1))(params, x, cfg)
    for run in (jax.grad(f, (0, 1)), jax.jit(jax.grad(f, (0, 1)))):
        got = run(params, x, cfg)
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
        for u, v in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)
    # the only tracers inside the dict (x stays a concrete array)
    got = jax.grad(f)(params, x, cfg)
    for u, v in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want[0])):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)
