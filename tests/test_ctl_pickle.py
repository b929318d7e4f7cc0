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


_SCRIPT = '''
import pickle, subprocess, sys
import numpy as np, numdyn, cloudpickle
K = 3.0
@numdyn.compile
def f(x):
    return np.tanh(x) * K
@numdyn.disable
def d(x):
    return x - 1.0
code = ("import pickle, sys, numpy as np; fns = pickle.loads(sys.stdin.buffer.read()); "
        "print(*[type(g).__name__ + ':' + repr(float(g(np.ones(2))[0])) for g in fns])")
blob = cloudpickle.dumps([f, numdyn.run(f), d])
p = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True)
print(p.stdout.decode().strip(), p.stderr.decode().strip().splitlines()[-1:])
assert pickle.loads(pickle.dumps(f)) is f   # plain pickle: still by name
'''


def test_decorated_script_functions_ship_with_cloudpickle(tmp_path):
    """A function decorated in the user's script (__main__) pickled by
    cloudpickle -- what Dask's and Ray's process workers and joblib's loky
    use -- loads in a process that never ran the script: the wrapped
    function goes by value (cloudpickle's way for __main__ functions). It
    pickled as the name `f`, which that process cannot find (AttributeError
    on load); plain pickle keeps the name (spawn pools re-import the
    script)."""
    import os
    import subprocess
    import sys
    pytest.importorskip("cloudpickle")  # a test dependency (Makefile's TEST_DEPS)
    prog = tmp_path / "script.py"
    prog.write_text(_SCRIPT)
    p = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr
    k = float(np.tanh(1.0) * 3.0)
    assert p.stdout.split("[")[0].split() == [f"CompiledFunction:{k!r}", f"_FrozenRunner:{k!r}",
                                              "PolicyWrapper:0.0"], p.stdout
