"""numdyn.CompileProfiler's report per function (issue 15, point 7): calls and
run time, graphs run, replayed and eager calls, programs compiled, recompiles
with reasons, and the function's own graph breaks (counted, with lines);
a compiled function called inside another counts as part of the outer call."""
import numpy as np
import pytest

import numdyn


def _inner(x):
    return x * 3.0


_INNER = numdyn.compile(_inner)


def _profiled_branchy(x):
    y = _INNER(x) + 1.0
    if y.sum() > 0:
        y = y - 1.0
    return np.sqrt(y)


def _profiled_pure(x):
    return x * 2.0 + 1.0


def test_profiler_reports_per_function():
    b = numdyn.compile(_profiled_branchy)
    p = numdyn.compile(_profiled_pure, options={"cache_size_limit": 1})
    x = np.ones(4)
    p(x)
    numdyn.utils.wait_compiles()
    with numdyn.CompileProfiler() as prof:
        for _ in range(3):
            b(x)
        p(x)                          # replayed
        with pytest.warns(UserWarning, match="cache_size_limit"):
            p(np.ones(4, np.float32))  # past its cache_size_limit: eager
        b(np.ones(4, np.float32))     # a recompile
    fb, fp = prof.functions["_profiled_branchy"], prof.functions["_profiled_pure"]
    assert fb["calls"] == 4 and fb["graph_breaks"] == 4 and fb["graphs"] == 8 and fb["seconds"] > 0
    assert fp["calls"] == 2 and fp["replayed"] == 1 and fp["eager"] == 1
    assert "_inner" not in prof.functions           # inlined into _profiled_branchy's capture
    (brk, times), = prof.breaks_by_function["_profiled_branchy"].items()
    assert times == 4 and "bool() of an array" in brk and "if y.sum() > 0:" in brk
    rep = prof.report()
    assert "_profiled_branchy: 2 program(s) compiled" in rep and "4 call(s) in" in rep
    assert "graph break (x4): bool() of an array" in rep and "test_ctl_profiler.py:20" in rep
    assert "recompile: L['x']: dtype changed: float64 -> float32" in rep
    assert "_profiled_pure: 0 program(s) compiled" in rep and "replayed 1, run eagerly 1" in rep
    b(x)                                             # after the profiler: not counted
    assert prof.functions["_profiled_branchy"]["calls"] == 4




def _step(x):
    return x * 2.0


_F1 = _step


def _step(x):  # noqa: F811 -- a second function of the same qualname
    return x + 1.0


_F2 = _step


def _make(k):
    def step(x):
        return x * k
    return step


def test_functions_of_one_name_report_apart():
    f, g = numdyn.compile(_F1), numdyn.compile(_F2)
    x = np.ones(3)
    with numdyn.CompileProfiler() as prof:
        f(x); f(x); g(x)
        f(np.ones(3, np.float32))  # a recompile of f alone
    assert _F1.__qualname__ == _F2.__qualname__
    assert len(prof.functions) == 2
    assert sorted(v["calls"] for v in prof.functions.values()) == [1, 3]
    (rname, reasons), = prof.recompiles.items()
    assert prof.functions[rname]["calls"] == 3 and "float64 -> float32" in reasons[0]
    assert len(prof.compile_times[rname]) == 2
    other, = set(prof.functions) - {rname}
    assert len(prof.compile_times[other]) == 1 and "test_ctl_profiler.py:" in rname + other
    # closures of one def are one function
    h1, h2 = numdyn.compile(_make(2.0)), numdyn.compile(_make(3.0))
    with numdyn.CompileProfiler() as prof2:
        h1(x); h2(x)
    assert list(prof2.functions) == ["_make.<locals>.step"]
