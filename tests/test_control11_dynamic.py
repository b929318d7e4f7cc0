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
