"""assume_constant_result, nonstrict_trace, substitute_in_graph (issue 15:
torch._dynamo / torch.compiler's documented behaviour)."""
import pickle

import numpy as np
import pytest

import numdyn
from numdyn import _C, utils

C = utils.counters

# ---------------------------------------------------------------- assume_constant_result

_STATE = {"scale": 2.0}
_calls = []


@numdyn.assume_constant_result
def scale_const():
    _calls.append(1)
    return _STATE["scale"]


def scale_plain():
    _calls.append(1)
    return _STATE["scale"]


def uses_const(x):
    return x * scale_const() + 1.0


def uses_plain(x):
    return x * scale_plain() + 1.0


def test_assume_constant_result_is_called_once_and_baked_in():
    _calls.clear()
    _STATE["scale"] = 2.0
    x = np.arange(4.0)
    cf = numdyn.compile(uses_const)
    b0 = C["graph_breaks"]
    np.testing.assert_array_equal(cf(x), x * 2.0 + 1.0)
    assert C["graph_breaks"] == b0  # the call is no graph break
    assert _calls == [1]
    _STATE["scale"] = 5.0  # torch: the assumption is not checked
    r0 = C["replays"]
    for _ in range(3):
        np.testing.assert_array_equal(cf(x), x * 2.0 + 1.0)
    assert C["replays"] - r0 == 3 and _calls == [1]
    # outside compiled code the function runs as written
    assert scale_const() == 5.0 and len(_calls) == 2
    assert scale_const.__name__ == "scale_const" and scale_const._numdyn_policy == \
        "assume_constant_result"


def test_without_the_mark_the_result_is_recomputed():
    # the same helper unmarked: it reads a mutable global, so calls are
    # traced again (no replay) and see the new value
    _calls.clear()
    _STATE["scale"] = 2.0
    x = np.arange(4.0)
    cf = numdyn.compile(uses_plain)
    cf(x)
    _STATE["scale"] = 5.0
    np.testing.assert_array_equal(cf(x), x * 5.0 + 1.0)
    assert len(_calls) == 2


def test_assume_constant_result_gets_concrete_arrays():
    seen = []

    @numdyn.assume_constant_result
    def n_positive(a):
        seen.append(type(a))
        return int((a > 0).sum())  # a value read: a break if it were traced

    def f(x):
        return x * n_positive(x)

    cf = numdyn.compile(f)
    x = np.array([-1.0, 2.0, 3.0])
    b0 = C["graph_breaks"]
    np.testing.assert_array_equal(cf(x), x * 2)
    assert seen == [np.ndarray] and C["graph_breaks"] == b0


# ---------------------------------------------------------------- nonstrict_trace

_CFG = {"w": 3.0}


@numdyn.nonstrict_trace
def affine_nonstrict(x):
    return x * _CFG["w"] + 1.0


@numdyn.allow_in_graph
def affine_allowed(x):
    return x * _CFG["w"] + 1.0


def via_nonstrict(x):
    return np.sin(affine_nonstrict(x))


def via_allowed(x):
    return np.sin(affine_allowed(x))


def test_nonstrict_trace_fuses_and_replays_assuming_globals_constant():
    _CFG["w"] = 3.0
    x = np.linspace(0, 1, 16)
    cf = numdyn.compile(via_nonstrict)
    np.testing.assert_allclose(cf(x), np.sin(x * 3.0 + 1.0), rtol=1e-13)
    numdyn.utils.wait_compiles()
    k0, r0 = C["kernel_runs"], C["replays"]
    np.testing.assert_allclose(cf(x), np.sin(x * 3.0 + 1.0), rtol=1e-13)
    assert C["kernel_runs"] - k0 == 1  # traced into the caller's kernel
    assert C["replays"] - r0 == 1      # replayed: what it reads is not guarded
    _CFG["w"] = 4.0  # assumed constant (torch's documented assumption)
    np.testing.assert_allclose(cf(x), np.sin(x * 3.0 + 1.0), rtol=1e-13)
    # outside compiled code it runs as written
    np.testing.assert_allclose(affine_nonstrict(x), x * 4.0 + 1.0)


def test_allow_in_graph_guards_what_nonstrict_trace_assumes():
    _CFG["w"] = 3.0
    x = np.linspace(0, 1, 16)
    cf = numdyn.compile(via_allowed)
    cf(x)
    _CFG["w"] = 4.0
    np.testing.assert_allclose(cf(x), np.sin(x * 4.0 + 1.0), rtol=1e-13)


def test_policies_pickle_by_reference():
    assert pickle.loads(pickle.dumps(affine_nonstrict)) is affine_nonstrict
    assert pickle.loads(pickle.dumps(scale_const)) is scale_const


# ---------------------------------------------------------------- substitute_in_graph

@pytest.fixture
def unregister():
    made = []
    yield made
    for f in made:
        _C._policies.pop(f, None)


def test_substitute_numpy_function_the_shim_lacks(unregister):
    x = np.linspace(0, 1, 9) ** 2

    def f(x):
        return np.ediff1d(x) * 2.0

    assert numdyn.explain(f)(x).graph_break_count == 1  # NumPy's own, a break
    used = []

    @numdyn.substitute_in_graph(np.ediff1d)
    def ediff1d(ary, to_end=None, to_begin=None):
        used.append(1)
        flat = ary.ravel()
        return flat[1:] - flat[:-1]

    unregister.append(np.ediff1d)
    e = numdyn.explain(f)(x)
    assert e.graph_break_count == 0, e
    np.testing.assert_allclose(numdyn.compile(f)(x), np.ediff1d(x) * 2.0, rtol=1e-14)
    assert used
    # eagerly, the returned function is the original
    n = len(used)
    np.testing.assert_array_equal(ediff1d(x), np.ediff1d(x))
    assert len(used) == n


def slow_sum_sq(v):
    return float(sum(float(t) * float(t) for t in v))


def test_substitute_a_global_function(unregister):
    def f(x):
        return x / slow_sum_sq(x)

    x = np.arange(1.0, 5.0)
    # unmarked: a Python loop over the elements, outside the graph
    assert "multiply" not in str(numdyn.explain(f)(x))
    used = []

    @numdyn.substitute_in_graph(slow_sum_sq)
    def sum_sq(v):
        used.append(1)
        return np.sum(v * v)

    unregister.append(slow_sum_sq)
    e = str(numdyn.explain(f)(x))
    assert "multiply" in e and "add" in e, e  # the polyfill's work, traced
    np.testing.assert_allclose(numdyn.compile(f)(x), x / 30.0, rtol=1e-14)
    assert len(used) == 2
    assert sum_sq(x) == 30.0 and isinstance(sum_sq(x), float)  # the original, eagerly
    assert len(used) == 2


def test_substitute_errors_as_torch(unregister):
    with pytest.raises(TypeError, match="substitute_in_graph expects a function but got"):
        numdyn.substitute_in_graph(3)
    with pytest.raises(TypeError, match=r"@substitute_in_graph\(...\) expects a function"):
        numdyn.substitute_in_graph(slow_sum_sq)(3)
    with pytest.raises(TypeError, match="Signature mismatch between"):
        numdyn.substitute_in_graph(slow_sum_sq)(lambda a, b: a)
    numdyn.substitute_in_graph(slow_sum_sq, skip_signature_check=True)(lambda a, b=1: a)
    unregister.append(slow_sum_sq)
    with pytest.raises(ValueError, match="Duplicate polyfill handlers for"):
        numdyn.substitute_in_graph(slow_sum_sq)(lambda v: v)
    # (*args, **kwargs) fits any signature
    numdyn.substitute_in_graph(np.trim_zeros)(lambda *args, **kwargs: None)
    unregister.append(np.trim_zeros)
