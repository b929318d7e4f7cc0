"""config.automatic_dynamic_shapes (issue 15; torch._dynamo.config's name):
what compile(dynamic=None) means. True (default): shape-generic programs,
another size reuses them; False: every size specialized as dynamic=False,
a new size is a recompile with its reason."""
import numpy as np
import pytest

import numdyn
from numdyn import utils


def sine_affine(x):
    return np.sin(x) * 2.0 + 1.0


def sizes_compiled(f, sizes):
    g0 = utils.counters["graph_compiles"]
    for n in sizes:
        x = np.linspace(0, 1, n)
        np.testing.assert_allclose(f(x), sine_affine(x), rtol=1e-12)
    return utils.counters["graph_compiles"] - g0


def test_default_is_true_and_generic():
    assert numdyn.config.automatic_dynamic_shapes is True
    assert sizes_compiled(numdyn.compile(sine_affine), (5, 6, 7, 5)) == 1


def test_false_specializes_every_size(monkeypatch):
    monkeypatch.setattr(numdyn.config, "automatic_dynamic_shapes", False)
    fails = []
    f = numdyn.optimize("native", guard_fail_fn=fails.append)(sine_affine)
    assert f.dynamic is None  # dynamic=None, read against the config
    assert sizes_compiled(f, (5, 6, 7, 5, 6)) == 3
    assert len(fails) == 2 and all("L['x']" in g.reason for g in fails), fails
    assert "size" in fails[0].reason and "5" in fails[0].reason and "6" in fails[0].reason
    # a dim marked dynamic is generic again (as under dynamic=False)
    y, z = np.linspace(0, 1, 11), np.linspace(0, 1, 12)
    numdyn.mark_dynamic(y, 0)
    numdyn.mark_dynamic(z, 0)
    g0 = utils.counters["graph_compiles"]
    f(y)
    f(z)
    assert utils.counters["graph_compiles"] - g0 == 1


def test_explicit_dynamic_wins_over_the_config(monkeypatch):
    monkeypatch.setattr(numdyn.config, "automatic_dynamic_shapes", False)
    assert sizes_compiled(numdyn.compile(sine_affine, dynamic=True), (5, 6, 7)) == 1
    monkeypatch.setattr(numdyn.config, "automatic_dynamic_shapes", True)
    assert sizes_compiled(numdyn.compile(sine_affine, dynamic=False), (5, 6, 7)) == 3


def test_read_when_compile_is_called(monkeypatch):
    f = numdyn.compile(sine_affine)
    monkeypatch.setattr(numdyn.config, "automatic_dynamic_shapes", False)
    assert sizes_compiled(f, (5, 6, 7)) == 1  # compiled under True
    g = numdyn.compile(sine_affine)
    monkeypatch.setattr(numdyn.config, "automatic_dynamic_shapes", True)
    assert sizes_compiled(g, (5, 6, 7)) == 3  # compiled under False


def test_unknown_config_names_still_refused():
    with pytest.raises(AttributeError):
        numdyn.config.automatic_dynamic_shape = False


# ---------------------------------------------------------------- mark_unbacked

def branchy(x):
    if x.shape[0] == 3:
        return x + 1.0
    return x - 1.0


def test_mark_unbacked_strict_refuses_specialization():
    f = numdyn.compile(branchy)
    x = np.ones((3, 4))
    numdyn.mark_unbacked(x, 0, strict=True)
    assert numdyn._marked_dims(x)[0] == frozenset({0})
    with pytest.raises(numdyn.ConstraintViolationError, match="inferred to be a constant \\(3\\)"):
        f(x)
    # torch's default (strict=False): specialization proceeds without error
    y = np.ones((3, 4))
    numdyn.mark_unbacked(y, [0, 1])
    np.testing.assert_array_equal(f(y), y + 1.0)
    assert numdyn._marked_dims(y) == (frozenset(), frozenset())


def test_mark_unbacked_strict_keeps_dims_generic_and_bounded():
    f = numdyn.compile(sine_affine, dynamic=False)
    g0 = utils.counters["graph_compiles"]
    for n in (5, 6, 7):
        x = np.linspace(0, 1, n)
        numdyn.mark_unbacked(x, 0, strict=True, hint_override=64, max=10)
        np.testing.assert_allclose(f(x), sine_affine(x), rtol=1e-12)
    assert utils.counters["graph_compiles"] - g0 == 1  # generic under dynamic=False
    x = np.linspace(0, 1, 12)
    numdyn.mark_unbacked(x, 0, strict=True, max=10)
    with pytest.raises(numdyn.ConstraintViolationError):
        f(x)


def test_mark_unbacked_refusals():
    x = np.ones(4)
    with pytest.raises(NotImplementedError, match="specialize_on and shape_id"):
        numdyn.mark_unbacked(x, 0, shape_id="batch")
    with pytest.raises(NotImplementedError, match="strict=True"):
        numdyn.mark_unbacked(x, 0, min=2)

    def marks_inside(x):
        numdyn.mark_unbacked(x, 0)
        return x * 2

    with pytest.raises(RuntimeError, match="mark_unbacked was called inside a compiled function"):
        numdyn.compile(marks_inside)(x)
