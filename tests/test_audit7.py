"""Session 24 audit of issues 14 and 15 (gradients, wrap_numpy, Tensor, and
the control surface): each test fails without the fix it names."""
import numpy as np
import pytest

import numdyn


# ---- builtin max()/min() of lazy scalars stay in the graph ---------------

def _mm(a):
    b = a * 2
    return (max(b[0], b[1]) * b, min(b[0], b[1], b[2]), max([b[2], b[1]]),
            min((b[1], b[0])))


@pytest.mark.parametrize("vals", [[1.0, 3.0, 2.0], [np.nan, 3.0, 2.0], [3.0, np.nan, 2.0],
                                  [2.0, 2.0, -0.0]])
def test_builtin_max_min_in_graph_fullgraph(vals):
    # Python's semantics: the first maximal item; `item > best` with a NaN
    # is false, so max(nan, 1) is nan and max(1, nan) is 1
    a = np.array(vals)
    got = numdyn.compile(_mm, fullgraph=True)(a)
    want = _mm(a)
    np.testing.assert_array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:]):
        assert type(g) is type(w)
        np.testing.assert_array_equal(g, w)
        assert np.signbit(g) == np.signbit(w)


def test_builtin_max_replays_with_other_values():
    f = numdyn.compile(_mm)
    for vals in ([1.0, 3.0, 2.0], [5.0, 3.0, 2.0], [1.0, 3.0, 2.0], [1.0, 0.5, 9.0]):
        a = np.array(vals)
        got, want = f(a), _mm(a)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_builtin_max_int_and_mixed_types_keep_the_builtin():
    def f(a, x):
        b = a + 1
        # one dtype of lazy scalars: in the graph; a Python float with them:
        # the builtin (its result's type depends on the values)
        return max(b[0], b[2]), max(b[0], x), min(b[1], b[2], key=abs)
    a = np.array([4, -7, 2])
    for x in (1.0, 9.0):
        got, want = numdyn.compile(f)(a, x), f(a, x)
        for g, w in zip(got, want):
            assert type(g) is type(w) and g == w


def test_builtin_max_gradient_follows_the_chosen_item():
    import torch

    def h(a):
        b = a * 2
        return np.sum(max(b[0], b[1]) * b + min(b[2], b[0]))
    for vals in ([1.0, 3.0, 2.0], [3.0, 3.0, 2.0], [4.0, 1.0, 2.0]):
        a = np.array(vals)
        g = numdyn.grad(h)(a)
        t = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        b = t * 2
        (max(b[0], b[1]) * b + min(b[2], b[0])).sum().backward()
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12)


def test_shadowed_max_is_not_renamed():
    ns = {"np": np}
    exec("def max(*a):\n    return 'mine'\n"
         "def f(a):\n    b = a * 2\n    return max(b[0], b[1])\n", ns)
    assert numdyn.compile(ns["f"])(np.ones(3)) == "mine"


# ---- JAX arrays by keyword under JAX transformations --------------------

def test_wrap_numpy_jax_keyword_arrays_under_transformations():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    @numdyn.wrap_numpy
    def f(x, w=None, scale=1.0):
        return np.sum(np.tanh(x * w["a"]) * scale + w["b"] ** 2)

    x = jnp.array([0.5, -1.0, 2.0])
    w = {"a": jnp.array([1.5, 2.0, -0.5]), "b": jnp.array([0.25, 1.0, -2.0])}

    def ref(x, w):
        return jnp.sum(jnp.tanh(x * w["a"]) * 2.0 + w["b"] ** 2)
    gx, gw = jax.grad(lambda x, w: f(x, w=w, scale=2.0), argnums=(0, 1))(x, w)
    rx, rw = jax.grad(ref, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, rx, rtol=1e-12)
    np.testing.assert_allclose(gw["a"], rw["a"], rtol=1e-12)
    np.testing.assert_allclose(gw["b"], rw["b"], rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda x, w: f(x, w=w, scale=2.0))(x, w), ref(x, w), rtol=1e-12)
    xs = jnp.stack([x, 2 * x])
    got = jax.vmap(lambda x: f(x, w=w, scale=2.0))(xs)
    np.testing.assert_allclose(got, [ref(x, w), ref(2 * x, w)], rtol=1e-12)


# ---- m[k] with k computed, leaving dims, under fullgraph=True ------------

def _row(m, v):
    return m[np.argmax(v)] * 2, m[np.argmin(v) - 3, :].sum() + m[:, 1]


def _row_view(m, v):
    r = m[np.argmax(v)]
    return r, r[1:3] + 1


@pytest.mark.parametrize("v", [[1.0, 5.0, 2.0], [9.0, 1.0, 2.0]])
def test_fullgraph_row_at_computed_index_is_a_gather(v):
    m, v = np.arange(12.0).reshape(3, 4), np.array(v)
    for fn in (_row, _row_view):
        got, want = numdyn.compile(fn, fullgraph=True)(m, v), fn(m, v)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_fullgraph_row_at_computed_index_returned_is_numpy_view():
    m, v = np.arange(12.0).reshape(3, 4).copy(), np.array([1.0, 5.0, 2.0])
    r, _ = numdyn.compile(_row_view, fullgraph=True)(m, v)
    assert r.base is m and np.shares_memory(r, m)
    m[1, 0] = -5.0
    assert r[0] == -5.0


def test_fullgraph_row_at_computed_index_writes_are_reads():
    # the gather would not see these writes: NumPy's view needs the index
    def w_base(m, v):
        r = m[np.argmax(v)]
        m[0] = 1.0
        return r * 2

    def w_row(m, v):
        r = (m * 2)[np.argmax(v)]
        r[0] = 7.0
        return r
    m, v = np.arange(12.0).reshape(3, 4), np.array([1.0, 5.0, 2.0])
    for fn in (w_base, w_row):
        with pytest.raises(numdyn.GraphBreakError, match="computed index"):
            numdyn.compile(fn, fullgraph=True)(m.copy(), v)
        np.testing.assert_array_equal(numdyn.compile(fn)(m.copy(), v), fn(m.copy(), v))
