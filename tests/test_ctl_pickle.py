"""Pickling the control surface's wrappers (issue 15, point 6): besides
compiled functions (test_control_surface.py), numdyn.disable / allow_in_graph
wrappers and numdyn.run(fn) runners pickle by reference -- the module
attribute when the wrapper is one (a decorator), else the wrapped function
and the policy, applied again on load -- so they go to spawn pools too; a
lambda fails as plain pickle does."""
import pickle

import numpy as np
import pytest

import numdyn


def _plain(x):
    return np.cos(x) + x


@numdyn.disable
def _disabled(x):
    return x - 1.0


_compiled = numdyn.compile(_plain)


def test_policy_wrappers_and_run_pickle_by_reference():
    x = np.linspace(0.0, 1.0, 5)
    assert pickle.loads(pickle.dumps(_disabled)) is _disabled
    for kind, w in (("disable", numdyn.disable(_plain)),
                    ("disable_shallow", numdyn.disable(_plain, recursive=False)),
                    ("allow_in_graph", numdyn.allow_in_graph(_plain))):
        w2 = pickle.loads(pickle.dumps(w))
        assert w2._numdyn_policy == kind and w2.__wrapped__ is _plain
        np.testing.assert_array_equal(w2(x), _plain(x))
    r = pickle.loads(pickle.dumps(numdyn.run(_compiled)))
    np.testing.assert_array_equal(r(x), _plain(x))
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(numdyn.disable(lambda v: v))
