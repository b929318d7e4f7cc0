"""The control surface (issue 15): programs per argument signature,
recompiles under control (cache_size_limit, guard hooks, error_on_recompile,
stances, logs, compile times), frozen mode (numdyn.run), specialization
(mark_static / mark_dynamic / dynamic=False) and the policies. NumPy is the
oracle for every value."""
import logging
import os
import subprocess
import sys
import warnings

import builtins

import numpy as np
import pytest

import numdyn

from cc_wrap import editing_cc, fake_cc

C = numdyn.utils.counters


def saw(kinds):
    """A function that records whether numdyn traced it (it saw a LazyArray)."""
    def f(x):
        kinds.append(builtins.type(x).__name__)  # the real type: not numdyn's NumPy-faithful type()
        return np.sin(x) * 2.0 + 1.0
    return f


def ref(x):
    return np.sin(x) * 2.0 + 1.0


# ------------------------------------------------------------ programs


def test_one_program_per_signature_sizes_do_not_recompile():
    f = numdyn.compile(ref, backend="eager")  # programs per signature: the backends' same
    g0 = C["graph_compiles"]
    for n in (3, 4, 5, 17):
        np.testing.assert_allclose(f(np.arange(float(n))), ref(np.arange(float(n))))
    assert C["graph_compiles"] - g0 == 1
    f(np.ones(3, np.float32))
    f(np.ones((2, 3)))
    assert C["graph_compiles"] - g0 == 3
    assert len(f._programs()) == 3


def test_cache_size_limit_config_runs_eagerly_with_one_warning(monkeypatch):
    monkeypatch.setattr(numdyn.config, "cache_size_limit", 2)
    kinds = []
    f = numdyn.compile(saw(kinds))
    f(np.ones(3))
    f(np.ones(3, np.float32))
    assert kinds == ["LazyArray", "LazyArray"]
    e0 = C["eager_calls"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for dt in (np.int32, np.int64, np.int8):
            x = np.arange(4, dtype=dt)
            r = f(x)
            np.testing.assert_allclose(r, ref(x))
            assert r.dtype == ref(x).dtype
    msgs = [str(m.message) for m in w if issubclass(m.category, UserWarning)]
    assert len(msgs) == 1, msgs
    assert "saw.<locals>.f" in msgs[0] and "cache_size_limit (2" in msgs[0]
    assert "dtype changed" in msgs[0] and "int32" in msgs[0]
    assert kinds[2:] == ["ndarray"] * 3
    assert C["eager_calls"] - e0 == 3
    # seen signatures still run compiled
    f(np.ones(5))
    assert kinds[-1] == "LazyArray"


def test_cache_size_limit_per_function_option(caplog):
    kinds, fails = [], []
    f = numdyn.compile(saw(kinds), options={"cache_size_limit": 1})
    f(np.ones(3))
    with pytest.warns(UserWarning, match="cache_size_limit \\(1 programs\\)"):
        f(np.ones((2, 2)))
    assert kinds == ["LazyArray", "ndarray"]
    # the call that meets the limit is the last one reported: later unseen
    # inputs run eagerly with no "Recompiling" log and no guard_fail_fn call
    g = numdyn.optimize("eager", guard_fail_fn=fails.append)(saw(kinds))
    was_on = "recompiles" in numdyn._log_kinds
    numdyn.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"), \
                warnings.catch_warnings(record=True), pytest.MonkeyPatch.context() as mp:
            warnings.simplefilter("always")
            mp.setattr(numdyn.config, "cache_size_limit", 1)
            for dt in (np.float64, np.float32, np.int32, np.int8):
                g(np.ones(3, dt))
    finally:
        numdyn.set_logs(recompiles=was_on)
    assert kinds[2:] == ["LazyArray", "ndarray", "ndarray", "ndarray"]
    assert [gf.reason.split(": ")[-1] for gf in fails] == ["float64 -> float32"]
    recompiles = [r.getMessage() for r in caplog.records if "Recompiling" in r.getMessage()]
    assert len(recompiles) == 1, recompiles
    with pytest.raises(ValueError):
        numdyn.compile(ref, options={"cache_size_limit": -1})


def test_guard_fail_fn_and_guard_export_fn():
    fails, exported = [], []
    f = numdyn.optimize("native", guard_fail_fn=fails.append,
                        guard_export_fn=exported.append)(ref)
    f(np.ones(3))
    assert fails == [] and len(exported) == 1
    assert any("L['x']" in g and "float64" in g for g in exported[0])
    f(np.ones(3, np.float32))
    assert len(fails) == 1
    gf = fails[0]
    assert isinstance(gf, numdyn.GuardFail)
    assert "L['x']" in gf.reason and "float64 -> float32" in gf.reason
    assert "dtype float64" in gf.guard
    assert gf.orig_code is ref.__code__ and gf.fn is ref  # torch: the frame's code object
    assert tuple(gf) == (gf.reason, ref.__code__, gf.guard)
    f(np.ones((3, 1)))
    assert "ndim changed: 1 -> 2" in fails[1].reason
    f(np.ones(4, np.float32))  # seen: no failure
    assert len(fails) == 2 and len(exported) == 3
    with pytest.raises(TypeError):
        numdyn.optimize(guard_fail_fn=3)(ref)


def test_layout_and_broadcast_reasons():
    fails = []
    f = numdyn.optimize(guard_fail_fn=fails.append)(ref)
    a = np.ones((3, 4))
    f(a)
    f(np.asfortranarray(a))
    f(a[:, ::2])
    f(np.ones((1, 4)))
    reasons = [g.reason for g in fails]
    assert "layout changed: C-contiguous -> F-contiguous" in reasons[0]
    assert "layout changed" in reasons[1] and "strided" in reasons[1]
    assert "size-1 dims" in reasons[2]


def test_optimize_assert_is_fullgraph():
    def brk(x):
        if x.sum() > 0:
            return x + 1
        return x

    f = numdyn.optimize_assert("eager")(brk)
    with pytest.raises(numdyn.GraphBreakError):
        f(np.ones(3))


def test_error_on_recompile(monkeypatch):
    f = numdyn.compile(ref)
    monkeypatch.setattr(numdyn.config, "error_on_recompile", True)
    f(np.ones(3))  # the first program is not a recompile
    with pytest.raises(numdyn.RecompileError, match="float64 -> int64"):
        f(np.arange(3))
    assert issubclass(numdyn.RecompileError, RuntimeError)
    f(np.ones(7))


def test_recompile_logs(caplog):
    f = numdyn.compile(ref)
    numdyn.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            f(np.ones(3))
            f(np.ones(3, np.float32))
    finally:
        numdyn.set_logs(recompiles=False)
    text = caplog.text
    assert "Recompiling function ref" in text and "float64 -> float32" in text
    with pytest.raises(ValueError):
        numdyn.set_logs(nonsense=True)


def test_numdyn_logs_all_includes_recompiles():
    code = ("import numpy as np, numdyn\n"
            "f = numdyn.compile(lambda x: x * 2, backend='eager')\n"  # the log is the guards': no C needed
            "f(np.ones(2)); f(np.ones(2, np.int32))\n")
    for spec in ("recompiles", "all"):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "NUMDYN_LOGS": spec}, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "Recompiling function <lambda>" in p.stderr and "int32" in p.stderr


def test_compile_times_and_explain():
    numdyn.reset()
    f = numdyn.compile(ref)
    f(np.ones(3))
    f(np.ones(3, np.float32))
    s = numdyn.utils.compile_times()
    assert "ref," in s and "Runtimes (s)" in s
    names, vals = numdyn.utils.compile_times(repr="csv")
    assert names == ["ref"] and len(vals[0]) == 2 and all(v > 0 for v in vals[0])
    _, agg = numdyn.utils.compile_times(repr="csv", aggregate=True)
    assert agg[0] == pytest.approx(sum(vals[0]))
    out = numdyn.explain(f)(np.ones(3))
    assert any("dtype float64" in g for g in out.out_guards)
    assert "ref," in out.compile_times
    assert "Guards:" in str(out)
    numdyn.reset()
    assert numdyn.utils.compile_times(repr="csv") == ([], [])


def test_counters_present():
    for k in ("graph_compiles", "eager_calls"):
        assert k in dict(C)


# ------------------------------------------------------------ switches


def test_config_enabled_switch(monkeypatch):
    kinds = []
    f = numdyn.compile(saw(kinds))
    monkeypatch.setattr(numdyn.config, "enabled", False)
    e0 = C["eager_calls"]
    np.testing.assert_allclose(f(np.ones(3)), ref(np.ones(3)))
    assert kinds == ["ndarray"] and C["eager_calls"] - e0 == 1
    monkeypatch.setattr(numdyn.config, "enabled", True)
    f(np.ones(3))
    assert kinds[-1] == "LazyArray"


def test_numdyn_disable_env():
    code = ("import numpy as np, numdyn\n"
            "seen = []\n"
            "f = numdyn.compile(lambda x: seen.append(type(x).__name__) or x + 1)\n"
            "f(np.ones(2)); print(numdyn.config.enabled, seen)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "NUMDYN_DISABLE": "1"}, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False ['ndarray']"


def test_set_stance():
    kinds = []
    f = numdyn.compile(saw(kinds))
    with numdyn.set_stance("force_eager"):
        f(np.ones(3))
    assert kinds == ["ndarray"]
    f(np.ones(3))
    assert kinds[-1] == "LazyArray"
    with numdyn.set_stance("eager_on_recompile"):
        r = f(np.ones(3, np.float32))
        assert r.dtype == np.float32
        f(np.ones(4))  # seen: compiled
    assert kinds[-2:] == ["ndarray", "LazyArray"]
    with numdyn.set_stance("fail_on_recompile"):
        with pytest.raises(numdyn.RecompileError, match="fail_on_recompile"):
            f(np.ones(3, np.int16))
    numdyn.set_stance("force_eager")
    try:
        f(np.ones(3))
        assert kinds[-1] == "ndarray"
    finally:
        numdyn.set_stance("default")

    @numdyn.set_stance("force_eager")
    def run_plain(x):
        return f(x)

    run_plain(np.ones(3))
    assert kinds[-1] == "ndarray"
    f(np.ones(3))
    assert kinds[-1] == "LazyArray"
    with pytest.raises(ValueError, match="unknown stance"):
        numdyn.set_stance("sometimes")


def test_disable_context_manager_and_recursive_false():
    kinds = []
    f = numdyn.compile(saw(kinds))
    with numdyn.disable():
        f(np.ones(3))
    assert kinds == ["ndarray"]
    inner_kinds = []
    g = numdyn.compile(saw(inner_kinds))

    def helper(x):
        kinds.append("helper:" + type(x).__name__)
        return g(x)

    deep = numdyn.disable(helper)
    shallow = numdyn.disable(helper, recursive=False)

    @numdyn.compile
    def outer(x, which):
        return which(x * 1.0) + 1.0

    x = np.ones(3)
    np.testing.assert_allclose(outer(x, deep), ref(x) + 1.0)
    assert kinds[-1] == "helper:ndarray" and inner_kinds[-1] == "ndarray"
    np.testing.assert_allclose(outer(x, shallow), ref(x) + 1.0)
    assert kinds[-1] == "helper:ndarray" and inner_kinds[-1] == "LazyArray"


def test_register_existing_backend_name_raises():
    def be1(graph, example_inputs):
        return graph

    numdyn.register_backend(be1, name="ctl_dup_backend")
    with pytest.raises(ValueError, match="duplicate backend name"):
        numdyn.register_backend(be1, name="ctl_dup_backend")
    with pytest.raises(ValueError):
        numdyn.register_backend(be1, name="native")


# ------------------------------------------------------------ frozen mode


def test_run_frozen_uses_compiled_programs_only():
    kinds = []
    f = numdyn.compile(saw(kinds))
    x = np.linspace(0, 1, 1000)
    f(x)
    f(x)
    k0 = C["kernels_compiled"]
    with numdyn.run():
        np.testing.assert_allclose(f(x + 1), ref(x + 1))   # seen signature: compiled
        np.testing.assert_allclose(f(np.ones(5, np.float32)), ref(np.ones(5, np.float32)))
    assert C["kernels_compiled"] == k0
    assert kinds[-1] == "ndarray"   # the unseen float32 call ran plainly
    assert numdyn.run(f)(x).shape == x.shape
    f(np.ones(5, np.float32))       # outside run(): compiles
    assert kinds[-1] == "LazyArray"


def test_run_frozen_never_compiles_a_new_graph():
    def poly(x, n):
        for _ in range(n):
            x = x * 1.5 + 0.25
        return x

    f = numdyn.compile(poly)
    x = np.linspace(0, 1, 64)
    np.testing.assert_allclose(f(x, 2), poly(x, 2))
    k0, g0 = C["kernels_compiled"], C["graph_compiles"]

    @numdyn.run
    def frozen(x, n):
        return f(x, n)

    # same signature, a graph never compiled: it runs op by op, compiles nothing
    np.testing.assert_allclose(frozen(x, 7), poly(x, 7))
    assert C["kernels_compiled"] == k0 and C["graph_compiles"] == g0
    np.testing.assert_allclose(f(x, 7), poly(x, 7))
    assert C["kernels_compiled"] > k0


_LOOP_DATA = np.arange(40.0)


def _loop_over_global(x):
    s = 0.0
    for i in range(_LOOP_DATA.shape[0]):
        s += _LOOP_DATA[i] * 2.0
    return x + s


def test_run_frozen_never_compiles_a_new_loop():
    global _LOOP_DATA
    f = numdyn.compile(_loop_over_global)
    x = np.ones(3)
    np.testing.assert_allclose(f(x), _loop_over_global(x))
    runs, falls = C["loop_runs"], C["loop_fallbacks"]
    with numdyn.run():  # the loop's signature seen: its C runs
        np.testing.assert_allclose(f(x), _loop_over_global(x))
    assert C["loop_runs"] == runs + 1
    _LOOP_DATA = np.arange(40, dtype=np.int32)  # the program's signature holds, the loop's not
    try:
        with numdyn.run():
            for _ in range(2):  # Python runs it, and nothing is left compiled behind
                np.testing.assert_allclose(f(x), _loop_over_global(x))
        assert C["loop_fallbacks"] == falls + 2 and C["loop_runs"] == runs + 1
        assert f._loop_info()[0]["last_fallback"] == "frozen mode (numdyn.run) compiles no new loop"
        np.testing.assert_allclose(f(x), _loop_over_global(x))  # unfrozen: compiles it
        assert C["loop_runs"] == runs + 2
        with numdyn.run():
            np.testing.assert_allclose(f(x), _loop_over_global(x))
        assert C["loop_runs"] == runs + 3 and C["loop_fallbacks"] == falls + 2
    finally:
        _LOOP_DATA = np.arange(40.0)


def test_every_kernel_build_is_frozen_aware():
    """Frozen mode compiles nothing: the disk cache's builders are called only
    from the two places that honour it (the native backend's programs and
    the captured loops' nd__ctl_loop_kernel); a new caller must too."""
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    callers = set()
    for top in ("src", "guards", "numpy_shim"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith(".c") or "toolchain" in d:
                    continue
                text = re.sub(r"/\*.*?\*/", "", open(os.path.join(d, name), encoding="utf-8").read(),
                              flags=re.S)
                if re.search(r"\bnd_disk_load_or_build(_many)?\s*\(|\bnd_cc_compile\w*\s*\(", text):
                    callers.add(name)
    assert callers == {"backend_native.c", "trace_control.c"}, callers


# ------------------------------------------------------------ specialization


def test_mark_static_changes_signature_and_graph_key():
    fails = []
    f = numdyn.optimize(guard_fail_fn=fails.append)(ref)
    a, b = np.ones(4), np.ones(5)
    numdyn.mark_static(a, 0)
    numdyn.mark_static(b)
    g0 = C["graph_compiles"]
    np.testing.assert_allclose(f(a), ref(a))
    np.testing.assert_allclose(f(b), ref(b))
    assert C["graph_compiles"] - g0 == 2
    assert "size of static dim 0 changed: 4 -> 5" in fails[0].reason
    assert numdyn._marked_dims(b) == (frozenset(), frozenset({0}))
    c = np.ones(6)  # unmarked: its own (generic) program
    f(c)
    f(np.ones(9))
    assert C["graph_compiles"] - g0 == 3


def test_mark_static_all_dims_and_dynamic_false():
    x = np.ones((2, 3))
    numdyn.mark_static(x)
    assert numdyn._marked_dims(x) == (frozenset(), frozenset({0, 1}))
    numdyn.mark_dynamic(x, [0, 1])
    assert numdyn._marked_dims(x) == (frozenset({0, 1}), frozenset())
    f = numdyn.compile(ref, dynamic=False)
    g0 = C["graph_compiles"]
    for n in (3, 4, 3):
        f(np.ones(n))
    assert C["graph_compiles"] - g0 == 2
    y = np.ones(7)
    numdyn.mark_dynamic(y, 0)  # overrides dynamic=False for that dim
    f(y)
    z = np.ones(8)
    numdyn.mark_dynamic(z, 0)
    f(z)
    assert C["graph_compiles"] - g0 == 3


def test_static_dims_key_the_graph_cache():
    """Sizes of static dims are in the graph (program cache) key as well as in
    the signature: a new static size schedules its own graph, where a generic
    dim of a new size finds the graph cached."""
    def hits(fn, x):
        h = C["graph_cache_hits"]
        np.testing.assert_allclose(fn(x), ref(x))
        return C["graph_cache_hits"] - h

    f = numdyn.compile(ref)
    f(np.ones(4))
    assert hits(f, np.ones(5)) == 1          # generic: the same graph
    for n, want in ((23, 0), (24, 0)):
        x = np.ones(n)
        numdyn.mark_static(x, 0)
        assert hits(f, x) == want            # static: a graph per size
    g = numdyn.compile(ref, dynamic=False)
    assert [hits(g, np.ones(s)) for s in ((2, 13), (2, 14), (5, 13))] == [0, 0, 0]
    y, z = np.ones((9, 13)), np.ones((10, 13))
    numdyn.mark_dynamic(y, 0)
    numdyn.mark_dynamic(z, 0)
    assert [hits(g, y), hits(g, z)] == [0, 1]  # marked dynamic: generic again
    h = numdyn.compile(ref)
    out = []
    for shape in ((3, 17), (3, 18), (4, 18)):  # mark_static(x): every dim
        x = np.ones(shape)
        numdyn.mark_static(x)
        out.append(hits(h, x))
    assert out == [0, 0, 0]


def test_mark_errors():
    with pytest.raises(IndexError):
        numdyn.mark_static(np.ones(2), 3)
    with pytest.raises(TypeError):
        numdyn.mark_dynamic([1, 2], 0)

    @numdyn.compile
    def marks_inside(x):
        numdyn.mark_dynamic(x, 0)
        return x + 1

    with pytest.raises(RuntimeError, match="inside a compiled function"):
        marks_inside(np.ones(3))


def test_marks_die_with_their_array():
    import gc
    x = np.ones(3)
    numdyn.mark_static(x, 0)
    live = numdyn._C._marked_dims(x)
    assert live[1] == frozenset({0})
    del x
    gc.collect()
    y = np.ones(3)
    assert numdyn._marked_dims(y) == (frozenset(), frozenset())


def test_mark_dynamic_forced_constant_raises():
    def branchy(x):
        if x.shape[0] == 3:
            return x + 1.0
        return x - 1.0

    def generic(x):
        n, m = x.shape
        if n > 1 and m != 0:  # true of every size >= 2: no constraint
            return x.reshape(n * m) * 2.0
        return x

    f, g = numdyn.compile(branchy), numdyn.compile(generic)
    x = np.ones((3, 4))
    numdyn.mark_dynamic(x, 0)
    with pytest.raises(numdyn.ConstraintViolationError, match="inferred to be a constant \\(3\\)"):
        f(x)
    assert issubclass(numdyn.ConstraintViolationError, RuntimeError)
    np.testing.assert_allclose(g(x), generic(np.ones((3, 4))))
    y = np.ones((3, 4))
    numdyn.mark_dynamic(y, 1)  # dim 0 is not marked: comparing it is fine
    np.testing.assert_allclose(f(y), branchy(np.ones((3, 4))))
    np.testing.assert_allclose(f(np.ones((3, 4))), branchy(np.ones((3, 4))))


# ------------------------------------------------------------ policies


def test_disallow_in_graph_numpy_ufunc_function_and_operator():
    def prog(a, b):
        c = a * 2.0
        d = c - b
        e = np.subtract(d, 1.0)
        a -= b
        return e + a

    numdyn.disallow_in_graph(np.subtract)
    try:
        a, b = np.arange(4.0), np.ones(4)
        a_ref = a.copy()
        want = prog(a_ref, b)
        out = numdyn.explain(numdyn.compile(prog))(a, b)
        np.testing.assert_allclose(out.result, want)
        np.testing.assert_array_equal(a, a_ref)  # the in-place write reached the caller
        reasons = [r.reason for r in out.break_reasons]
        assert len(reasons) == 3 and all("numpy.subtract" in r and "disallow_in_graph" in r
                                         for r in reasons)
        assert [r.lineno for r in out.break_reasons] == sorted(
            {r.lineno for r in out.break_reasons})
        # int a -= float b: NumPy's casting error, as NumPy raises it
        with pytest.raises(TypeError) as want_exc:
            prog(np.arange(3), np.full(3, 0.5))
        with pytest.raises(type(want_exc.value), match="Cannot cast ufunc 'subtract' output"):
            numdyn.compile(prog)(np.arange(3), np.full(3, 0.5))
    finally:
        numdyn.allow_in_graph(np.subtract)
    out = numdyn.explain(numdyn.compile(prog))(np.arange(4.0), np.ones(4))
    assert out.graph_break_count == 0


SCALE = 2.0


def test_allow_in_graph_never_replays_stale_globals():
    global SCALE

    def helper(x):
        return x * SCALE

    helper = numdyn.allow_in_graph(helper)

    @numdyn.compile
    def f(x):
        return helper(x) + 1.0

    x = np.ones(3)
    f(x)
    np.testing.assert_array_equal(f(x), np.full(3, 3.0))
    assert f._replay_info()["hits"] >= 1
    SCALE = 5.0
    try:
        np.testing.assert_array_equal(f(x), np.full(3, 6.0))
    finally:
        SCALE = 2.0
    table = [1.0]

    @numdyn.allow_in_graph
    def reads_list(x):
        return x * table[0]

    g = numdyn.compile(lambda x: reads_list(x) + 1.0)
    g(x)
    g(x)
    table[0] = 7.0
    np.testing.assert_array_equal(g(x), np.full(3, 8.0))


# ------------------------------------------------------------ compiled objects


class Affine:
    def __init__(self, n):
        self.w = np.arange(float(n))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.w + 1.0


class Scaler:
    def __init__(self):
        self.k = 2.0

    def __call__(self, x):
        return x * self.k


def test_compiled_module_keeps_attributes_live():
    m = Affine(3)
    cm = numdyn.compile(m)
    assert isinstance(cm, numdyn.CompiledModule) and cm._orig_mod is m
    x = np.ones(3)
    np.testing.assert_array_equal(cm(x), m.w + 1.0)
    assert cm.calls == 1 and m.calls == 1
    cm.w = np.full(3, 5.0)          # writes reach the wrapped object
    assert m.w is cm.w
    np.testing.assert_array_equal(cm(x), np.full(3, 6.0))
    m.w = np.full(3, 7.0)           # and reads see its changes
    np.testing.assert_array_equal(cm(x), np.full(3, 8.0))
    assert isinstance(cm.forward, numdyn.CompiledFunction)
    np.testing.assert_array_equal(cm.forward(x), np.full(3, 8.0))
    s = numdyn.compile(Scaler())
    np.testing.assert_array_equal(s(x), np.full(3, 2.0))
    s.k = 3.0
    np.testing.assert_array_equal(s(x), np.full(3, 3.0))
    # functions, ufuncs and classes stay CompiledFunctions
    assert isinstance(numdyn.compile(ref), numdyn.CompiledFunction)
    assert isinstance(numdyn.compile(np.add), numdyn.CompiledFunction)


@numdyn.compile
def pool_fn(x):
    return np.sin(x) * 2.0 + 1.0


def _plain_for_pickle(x):
    return x * 3.0


def test_pickle_compiled_by_reference():
    import pickle
    assert pickle.loads(pickle.dumps(pool_fn)) is pool_fn
    g = numdyn.compile(_plain_for_pickle, backend="eager", fullgraph=True)
    g2 = pickle.loads(pickle.dumps(g))
    assert isinstance(g2, numdyn.CompiledFunction) and g2._fn is _plain_for_pickle
    assert g2.backend == "eager" and g2.fullgraph
    np.testing.assert_array_equal(g2(np.ones(2)), np.full(2, 3.0))
    cm = pickle.loads(pickle.dumps(numdyn.compile(Affine(2))))
    np.testing.assert_array_equal(cm(np.ones(2)), np.array([1.0, 2.0]))
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(numdyn.compile(lambda x: x, backend=lambda g, ex: g))


def test_spawn_pool_runs_compiled_function():
    import multiprocessing as mp
    xs = [np.linspace(0, 1, 5), np.ones(3)]
    with mp.get_context("spawn").Pool(1) as pool:  # one worker: its spawn and unpickling are the point
        got = pool.map(pool_fn, xs)
    for x, g in zip(xs, got):
        np.testing.assert_allclose(g, ref(x))


# ------------------------------------------------------------ debugging


def test_debug_dir_artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    f = numdyn.compile(softmax)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    f(x)
    d = next(p for p in tmp_path.iterdir() if "softmax" in p.name)
    progs = [p for p in d.iterdir() if p.name.startswith("program_")]
    assert progs, list(d.iterdir())
    files = {p.name for p in progs[0].iterdir()}
    assert {"graph.txt", "schedule.txt", "compile.txt", "kernel_0.c"} <= files
    assert "exp" in (progs[0] / "graph.txt").read_text()
    assert "kernel 0" in (progs[0] / "schedule.txt").read_text()
    assert "-O3" in (progs[0] / "compile.txt").read_text()
    assert "void ndk_" in (progs[0] / "kernel_0.c").read_text()
    repro = d / "repro.py"
    src = repro.read_text()
    assert "def softmax" in src and "(4, 8)" in src and "float32" in src
    env = {k: v for k, v in os.environ.items() if k != "NUMDYN_DEBUG_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "results agree" in p.stdout


def test_logs_output_code(caplog):
    numdyn.utils.reset()

    def cube_plus(x):
        return x * x * x + 0.125

    f = numdyn.compile(cube_plus)
    numdyn.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            f(np.ones(5, np.float32))
    finally:
        numdyn.set_logs(output_code=False)
    assert "output code: kernel 0 of program" in caplog.text
    assert "void ndk_" in caplog.text


def test_compile_profiler():
    def brk(x):
        y = x * 2.0
        if y.sum() > 0:
            y = y + 1.0
        return y

    # a compile of the same name before the profiler (it once hid the later ones)
    numdyn.compile(brk)(np.ones(3))
    f = numdyn.compile(brk)
    with numdyn.CompileProfiler() as prof:
        f(np.ones(3))
        f(np.ones(3, np.float32))
        f(np.ones(4))
    rep = prof.report()
    assert prof.counters["graph_compiles"] == 2
    name = "test_compile_profiler.<locals>.brk"
    assert len(prof.compile_times[name]) == 2
    assert prof.recompiles[name] == ["L['x']: dtype changed: float64 -> float32"]
    assert len(prof.graph_breaks) == 3 and "bool() of an array" in prof.graph_breaks[0]
    assert "brk: 2 program(s) compiled" in rep and "recompile: L['x']" in rep
    f(np.ones(3, np.int64))  # after the profiler: not recorded
    assert len(prof.recompiles[name]) == 1


# ------------------------------------------------------------ capture never stops silently

G_ARR = np.arange(4.0)


class _Holder:
    pass


_HOLD = _Holder()
_HOLD.w = np.full(4, 0.5)


def _capture_prog():
    c = np.full(4, 3.0)

    def f(x):
        a = x + G_ARR                              # a global array
        b = a * c                                  # a closure array
        d = b - _HOLD.w                            # an attribute
        e = d + np.asarray([1.0, 2.0, 3.0, 4.0])   # Python data
        g = e * np.array(2.0)
        if g.sum() > 0:                            # a graph break ...
            g = g + 1.0
        return np.sqrt(g * 2.0)                    # ... and tracing goes on
    return f


def test_capture_reads_globals_closures_attributes_and_python_data():
    x = np.ones(4)
    want = _capture_prog()(x)
    out = numdyn.explain(numdyn.compile(_capture_prog()))(x)
    np.testing.assert_allclose(out.result, want)
    assert out.graph_count == 2 and out.graph_break_count == 1
    first, second = out.ops_per_graph
    assert first.count("add") >= 2 and "subtract" in first and "multiply" in first
    assert "sqrt" in second  # resumed after the break
    for g in out.graphs:     # every input a graph reads is an array it traced
        assert all(isinstance(a, np.ndarray) for a in g.inputs)


class _Sub(np.ndarray):
    pass


class _Wrap(np.ndarray):
    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr


def test_ndarray_subclass_is_traced_or_a_reported_break():
    # a plain subclass is traced with NumPy's result type (tests/test_subclass_trace.py)
    s = np.ones(4).view(_Sub)
    f = numdyn.compile(lambda x: np.sin(x) + 1.0)
    want = np.sin(s) + 1.0
    out = numdyn.explain(f)(s)
    assert type(out.result) is _Sub and np.allclose(out.result, want)
    assert out.graph_break_count == 0, out.break_reasons
    # one with its own __array_wrap__ runs with NumPy, said where
    w = np.ones(4).view(_Wrap)
    out = numdyn.explain(f)(w)
    assert type(out.result) is np.ndarray and np.allclose(out.result, want)  # its wrap's
    assert out.graph_break_count == 1
    b = out.break_reasons[0]
    assert "ndarray subclass (_Wrap)" in b.reason and "__array_wrap__" in b.reason
    assert b.filename == __file__ and "numdyn.explain(f)(w)" in b.source
    m = np.ma.masked_array(np.ones(3), mask=[0, 1, 0])
    got = f(m)
    assert type(got) is np.ma.MaskedArray and got.mask.tolist() == [False, True, False]
    g = numdyn.compile(lambda x: np.sin(x) * 2.0 + x * x)
    with warnings.catch_warnings():  # np.matrix warns that it is not recommended
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        mat = np.matrix([[1.0, 2.0], [3.0, 4.0]])  # matrix semantics: x * x is a matrix product
        out = numdyn.explain(g)(mat)
        want = np.sin(mat) * 2.0 + mat * mat
    assert type(out.result) is np.matrix and np.allclose(out.result, want)
    assert out.graph_break_count == 1 and "ndarray subclass (matrix)" in out.break_reasons[0].reason
    assert "numdyn.explain(g)(mat)" in out.break_reasons[0].source
    with pytest.raises(numdyn.GraphBreakError, match="ndarray subclass"):
        numdyn.compile(lambda x: x + 1.0, fullgraph=True)(w)
    with pytest.raises(numdyn.GraphBreakError, match="does not trace"):
        numdyn.compile(lambda x: x, fullgraph=True)(np.array(["a"]))


def test_export():
    def prog(x, y):
        return np.tanh(x) * y + 1.0

    x, y = np.linspace(0, 1, 6), np.full(6, 2.0)
    res = numdyn.export(prog)(x, y)
    graph, guards = res
    assert graph is res.graph and isinstance(graph, numdyn.Graph)
    assert any("L['x']" in g for g in res.guards)
    x2 = np.linspace(1, 2, 6)
    np.testing.assert_allclose(graph(x2, y)[0], prog(x2, y))

    def brk(x):
        return x + 1.0 if x.sum() > 0 else x

    with pytest.raises(numdyn.GraphBreakError):
        numdyn.export(brk)(x)


def test_run_frozen_loads_kernels_from_the_disk_cache():
    def curve(x):
        return np.exp(-x * x) * 0.75 + np.cos(x) * 0.5

    f = numdyn.compile(curve)
    x = np.linspace(-2, 2, 300)
    f(x)
    numdyn.utils.reset()  # the memory caches go; the disk cache and f's programs stay
    k0, d0 = C["kernels_compiled"], C["disk_cache_hits"]
    with numdyn.run():
        np.testing.assert_allclose(f(x), curve(x))
    assert C["kernels_compiled"] == k0
    assert C["disk_cache_hits"] > d0


def test_run_frozen_never_calls_a_custom_compiler_for_a_new_graph():
    calls = []

    def counting(graph, example_inputs):
        calls.append(graph)
        return graph

    def poly(x, n):
        for _ in range(n):
            x = x * 0.5 + 1.0
        return x

    f = numdyn.compile(poly, backend=counting)
    x = np.arange(5.0)
    f(x, 1)
    assert len(calls) == 1
    with numdyn.run():
        np.testing.assert_allclose(f(x, 1), poly(x, 1))   # cached: runs it
        np.testing.assert_allclose(f(x, 3), poly(x, 3))   # new graph: NumPy, no compile
    assert len(calls) == 1
    f(x, 3)
    assert len(calls) == 2


def test_maybe_mark_dynamic_unmarks():
    x = np.ones((3, 4))
    numdyn.mark_static(x)
    numdyn.mark_dynamic(x, 1)
    numdyn.maybe_mark_dynamic(x, [0, 1])
    assert numdyn._marked_dims(x) == (frozenset(), frozenset())

    @numdyn.compile
    def branchy(a):
        return a + 1.0 if a.shape[1] == 4 else a

    np.testing.assert_array_equal(branchy(x), np.full((3, 4), 2.0))  # no constraint error


def test_recompile_limit_alias():
    # set and restored by hand: the alias is no attribute of its own, so
    # monkeypatch's undo must not see it
    old = numdyn.config.cache_size_limit
    try:
        numdyn.config.recompile_limit = 1
        assert numdyn.config.cache_size_limit == 1 and numdyn.config.recompile_limit == 1
        f = numdyn.compile(ref)
        f(np.ones(2))
        with pytest.warns(UserWarning, match="cache_size_limit"):
            f(np.ones(2, np.float32))
    finally:
        numdyn.config.cache_size_limit = old
    assert numdyn.config.recompile_limit == old
    with pytest.raises(AttributeError):
        numdyn.config.no_such_setting


# ------------------------------------------------------------ the minifier

_MIN_PROG = '''
import numpy as np, numdyn
def prog(x, y):
    a = x * 2.0 + y
    b = np.sqrt(np.abs(a)) - 1.0
    c = np.tanh(b) * 3.0
    return (c + a).sum(axis=0), b
def clean(x):
    return np.sqrt(x) * 2.0 + 1.0
try:
    numdyn.compile(clean)(np.linspace(0, 1, 12))  # compiles and agrees: leaves no repro
    r = numdyn.compile(prog)(np.linspace(0, 1, 12).reshape(3, 4), np.ones(4))
    print("ran")
except numdyn.CompileError:
    print("CompileError")
'''

# compilers with an injected bug in kernels that call tanh
# a C compiler (tests/cc_wrap.py) that fails on, or miscompiles, tanh
_BAD_CC = {
    "compile": lambda d: fake_cc(d, "cc.sh", per_source='if grep -q nd_tanh "$a"; then '
                                 'echo "injected failure" >&2; exit 1; fi'),
    "accuracy": lambda d: editing_cc(d, "s/= nd_tanh(/= 0.5 * (/"),
}


def _run_minifier(tmp_path, mode, cc=None):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    # the compiling call waits for its kernels: one that ran NumPy meanwhile
    # (a compile slower than the default budget on a loaded machine) would
    # give the minifier nothing to see
    env = {**os.environ, "NUMDYN_CACHE_DIR": str(cache), "NUMDYN_REPRO_AFTER": mode,
           "NUMDYN_DEBUG_DIR": str(tmp_path / "dbg"), "NUMDYN_COMPILE_BUDGET": "inf",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    if cc:
        env["CC"] = cc(tmp_path)
    p = subprocess.run([sys.executable, "-c", _MIN_PROG], capture_output=True, text=True,
                       env=env, timeout=600, cwd=tmp_path)
    repros = sorted((tmp_path / "dbg" / "minifier").glob("*/repro.py")) \
        if (tmp_path / "dbg" / "minifier").exists() else []
    return p, repros, env


@pytest.mark.parametrize("mode", ["compile", "accuracy"])
def test_minifier_shrinks_to_the_failing_op(tmp_path, mode):
    p, repros, env = _run_minifier(tmp_path, mode, _BAD_CC[mode])
    assert p.returncode == 0, p.stderr
    assert ("CompileError" if mode == "compile" else "ran") in p.stdout
    assert len(repros) == 1, p.stderr  # the failing program's only: `clean` agrees, quietly
    src = repros[0].read_text()
    body = src[src.index("def repro"):src.index("here =")]
    assert "np.tanh(" in body and "np.sqrt" not in body and "sum" not in body, body
    assert (repros[0].parent / "inputs.npz").exists()
    # the search's own compiles leave no debug artifacts of their own
    assert not list((tmp_path / "dbg").glob("repro_*")), list((tmp_path / "dbg").iterdir())
    q = subprocess.run([sys.executable, str(repros[0])], capture_output=True, text=True,
                       env=env, timeout=300)
    assert q.returncode == 1 and "reproduced" in q.stdout, (q.stdout, q.stderr)


