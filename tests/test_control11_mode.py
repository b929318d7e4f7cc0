"""compile(mode=...) (issue 15: torch.compile's modes): accepted with a
documented meaning for numdyn, unknown modes and mode together with options
refused with torch.compile's errors."""
import numpy as np
import pytest

import numdyn
from numdyn import utils


def tiny(x):
    # a graph far too small to beat NumPy: the speed floor picks NumPy
    return x + 1.0


def test_mode_table_is_torchs_names():
    modes = numdyn.list_mode_options()
    assert list(modes) == ["default", "reduce-overhead", "max-autotune-no-cudagraphs",
                           "max-autotune"]
    assert numdyn.list_mode_options("default") == {}
    assert numdyn.list_mode_options("reduce-overhead") == {"floor": False}
    assert numdyn.list_mode_options("max-autotune") == {"floor": True}
    # a copy: changing it changes no mode
    numdyn.list_mode_options("max-autotune")["floor"] = False
    assert numdyn.list_mode_options("max-autotune") == {"floor": True}


@pytest.mark.parametrize("mode", ["fast", "Default", "lite-ish", 3])
def test_unknown_mode_raises_as_torch(mode):
    msg = (f"Unrecognized mode={mode}, should be one of: default, reduce-overhead, "
           "max-autotune-no-cudagraphs, max-autotune")
    with pytest.raises(RuntimeError) as e:
        numdyn.compile(tiny, mode=mode)
    assert str(e.value) == msg
    with pytest.raises(RuntimeError):
        numdyn.compile(mode=mode)  # the decorator form checks at once too
    with pytest.raises(RuntimeError):
        numdyn.list_mode_options(mode)


def test_mode_and_options_together_raise_as_torch():
    with pytest.raises(RuntimeError, match="^Either mode or options can be specified, but both "
                       "can't be specified at the same time.$"):
        numdyn.compile(tiny, mode="default", options={"floor": True})


def test_reduce_overhead_turns_the_floor_off(monkeypatch):
    monkeypatch.setattr(numdyn.config, "floor", True)  # the suite runs with it off
    x = np.arange(3.0)
    cf = numdyn.compile(tiny, mode="reduce-overhead")
    assert cf.options == {"floor": False}
    before = utils.counters["floor_numpy_calls"]
    for _ in range(40):
        np.testing.assert_array_equal(cf(x), x + 1.0)
    assert cf._floor_info() == []  # nothing measured
    assert utils.counters["floor_numpy_calls"] == before
    # the default mode measures the same function
    d = numdyn.compile(tiny, mode="default", options=None)
    assert d.options is None
    for _ in range(40):
        d(x)
    assert d._floor_info() != []


def test_max_autotune_measures_under_floor_off(monkeypatch):
    monkeypatch.setattr(numdyn.config, "floor", False)
    x = np.arange(3.0)
    plain = numdyn.compile(tiny)
    tuned = numdyn.compile(tiny, mode="max-autotune")
    tuned2 = numdyn.compile(mode="max-autotune-no-cudagraphs")(tiny)
    for _ in range(40):
        plain(x)
        np.testing.assert_array_equal(tuned(x), x + 1.0)
        tuned2(x)
    assert plain._floor_info() == []
    assert tuned._floor_info() != [] and tuned2._floor_info() != []


def test_mode_reaches_wrap_numpy_and_pickles():
    import pickle
    w = numdyn.wrap_numpy(tiny, mode="reduce-overhead")
    t = numdyn.tensor(np.arange(3.0))
    np.testing.assert_array_equal(w(t).numpy(), np.arange(3.0) + 1.0)
    with pytest.raises(RuntimeError, match="Unrecognized mode=x"):
        numdyn.wrap_numpy(tiny, mode="x")
    cf = numdyn.compile(tiny, mode="reduce-overhead")
    back = pickle.loads(pickle.dumps(cf))
    assert back.options == {"floor": False}
    np.testing.assert_array_equal(back(np.arange(2.0)), [1.0, 2.0])
