"""numdyn.mark_static_address (issue 15; torch._dynamo.mark_static_address):
an array's data pointer is a constant of the programs compiled for it.
guard=True guards on it -- another array at another address in its place is
a recompile with the reason "data_ptr changed", and the program's exported
guards name the pointer; guard=False (torch's default) changes no program.
Anything that is not an array raises torch's TypeError."""
import numpy as np
import pytest

import numdyn
from numdyn import utils


def affine(x):
    return np.sin(x) * 2.0 + 1.0


def _compiles(f, arrays):
    g0 = utils.counters["graph_compiles"]
    for a in arrays:
        np.testing.assert_allclose(f(a), affine(a), rtol=1e-12)
    return utils.counters["graph_compiles"] - g0


@pytest.mark.parametrize("bad", [[1.0, 2.0], 3.0, None, (np.ones(2),)])
def test_non_tensor_raises_torchs_type_error(bad):
    with pytest.raises(TypeError, match=r"^mark_static_address expects a tensor but received "
                       + repr(type(bad)).replace("(", r"\(").replace(")", r"\)") + "$"):
        numdyn.mark_static_address(bad)


def test_guarded_address_is_a_recompile_with_its_reason():
    fails, exported = [], []
    f = numdyn.optimize("native", guard_fail_fn=fails.append,
                        guard_export_fn=exported.append)(affine)
    x = np.linspace(0, 1, 7)
    numdyn.mark_static_address(x, guard=True)
    assert numdyn._C._static_address_mark(x) == "guarded"
    y = np.linspace(1, 2, 7)          # same signature, another address
    numdyn.mark_static_address(y, guard=True)
    assert _compiles(f, [x, x]) == 1
    assert fails == []
    assert any(f"data_ptr == 0x{x.ctypes.data:x}" in g for g in exported[0]), exported
    assert _compiles(f, [y]) == 1     # the guard failed: a new program
    assert len(fails) == 1 and "L['x']" in fails[0].reason
    assert "data_ptr changed" in fails[0].reason
    assert f"0x{x.ctypes.data:x} -> 0x{y.ctypes.data:x}" in fails[0].reason
    assert _compiles(f, [x, y]) == 0  # both addresses have programs now


def test_unguarded_mark_changes_no_program():
    fails = []
    f = numdyn.optimize("native", guard_fail_fn=fails.append)(affine)
    x, y = np.linspace(0, 1, 9), np.linspace(1, 2, 9)
    numdyn.mark_static_address(x)     # torch's default: guard=False
    assert numdyn._C._static_address_mark(x) == "unguarded"
    numdyn.mark_static_address(y)
    assert _compiles(f, [x, y, x]) == 1
    assert fails == []


def test_unmarked_array_in_a_marked_place_recompiles():
    # the mark is part of the guard: the program compiled for a marked
    # array does not serve an unmarked one, and the reason says so
    fails = []
    f = numdyn.optimize("native", guard_fail_fn=fails.append)(affine)
    x = np.linspace(0, 1, 5)
    numdyn.mark_static_address(x, guard=True)
    assert _compiles(f, [x, np.linspace(0, 2, 5)]) == 2
    assert "mark_static_address(guard=True) changed" in fails[0].reason


def test_marks_keep_dim_marks_and_go_with_the_array():
    x = np.ones((3, 4))
    numdyn.mark_static(x, 1)
    numdyn.mark_static_address(x, guard=True)
    assert numdyn._marked_dims(x) == (frozenset(), frozenset({1}))
    numdyn.mark_dynamic(x, 0)         # a dim mark later keeps the address mark
    assert numdyn._C._static_address_mark(x) == "guarded"
    assert numdyn._marked_dims(x) == (frozenset({0}), frozenset({1}))


def test_tensor_marks_its_array():
    t = numdyn.tensor(np.linspace(0, 1, 6))
    numdyn.mark_static_address(t, guard=True)
    assert numdyn._C._static_address_mark(t.numpy()) == "guarded"
