"""The IR verifier (src/graph/graph_verify.c, src/passes/pass_verify.c):
Graph.verify() on captured graphs, and NUMDYN_DEBUG=1 runs the same checks
after tracing and after scheduling without changing any result."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import numdyn


def capture(fn, *args):
    seen = []

    def backend(graph, example_inputs):
        seen.append(graph)
        return graph

    numdyn.compile(fn, backend=backend)(*args)
    return seen


def test_captured_graphs_verify():
    a = np.arange(12.0).reshape(3, 4)
    b = np.asfortranarray(np.ones((3, 4), np.float32))

    def f(x, y):
        x[1:, :2] = y[1:, :2] * 2          # setitem
        z = np.sum(np.exp(x) * y, axis=0)  # ufunc + reduce
        w = np.cumsum(x.T[::-1], axis=1)   # views + scan
        return z, w, x @ y.T, np.sort(z)   # externs

    graphs = capture(f, a.copy(), b)
    assert graphs
    for g in graphs:
        assert g.verify() is None


PROGRAM = textwrap.dedent("""
    import numpy as np, numdyn

    def f(x, y):
        x[1:, :2] = y[1:, :2] * 2
        z = np.sum(np.exp(x) * y, axis=0, keepdims=True)
        w = np.cumsum(x.T[::-1], axis=1)
        m = np.where(x > 3, x, -y)
        return z, w, x @ y.T, np.sort(m, axis=0), (x ** 2).max()

    a = np.arange(12.0).reshape(3, 4)
    b = np.asfortranarray(np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4))
    for backend in ("eager", "native"):
        want = f(a.copy(), b.copy())
        for _ in range(2):  # second call: graph cache / replay paths
            got = numdyn.compile(f, backend=backend)(a.copy(), b.copy())
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-6)
                assert np.asarray(g).dtype == np.asarray(w).dtype
    print("ok")
""")


def test_numdyn_debug_runs_the_checks_and_changes_nothing():
    env = dict(os.environ, NUMDYN_DEBUG="1")
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok")


# Files whose programs cover setitem, views, reductions, joins and externs:
# run again with NUMDYN_DEBUG=1, every captured graph and every scheduled
# program is checked, and the results must still be NumPy's.
DEBUG_SLICE = ["test_mutation.py", "test_view_rules.py", "test_join.py", "test_extern.py"]


def test_a_slice_of_the_suite_passes_under_numdyn_debug():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, NUMDYN_DEBUG="1")
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         *[os.path.join(here, f) for f in DEBUG_SLICE]],
        env=env, capture_output=True, text=True, timeout=1800, cwd=os.path.dirname(here))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout
