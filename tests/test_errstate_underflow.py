"""np.errstate(under=...) with numdyn's kernels: NumPy's answer.

NumPy reports "underflow" as its loop raises the flag, and its float loops
of transcendental functions differ by machine: without AVX-512 they are
glibc's, which raise it for a subnormal operand of asinh, sin, tanh,
expm1, ... (the result is the operand); NumPy's AVX-512 SVML loops do not.
numdyn's own vector forms follow neither, so a graph computing such a
ufunc is run by NumPy's loops when the error state watches underflow
(src/runtime/runtime_native.c, libm_ufunc); arithmetic (+ - * /) raises
the flag as NumPy's loops do and keeps its kernel.
"""
import numpy as np
import pytest

import numdyn
from oracle import check

SUB64 = np.array([5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 0.5, -0.25, 1e-300, 0.0], np.float64)
SUB32 = np.array([1e-45, -1e-45, 1e-40, 1.1754944e-38, 0.5, -0.25, 1e-30, 0.0], np.float32)
FUNCS = [np.arcsinh, np.arctanh, np.tanh, np.sinh, np.sin, np.tan, np.arcsin, np.arctan, np.expm1, np.log1p,
         np.cbrt, np.exp, np.exp2]


@pytest.fixture(autouse=True)
def _no_budget():
    old = numdyn.config.compile_budget
    numdyn.config.compile_budget = float("inf")
    yield
    numdyn.config.compile_budget = old


def _under(mode, fn):
    def run(a):
        with np.errstate(under=mode):
            return fn(a * 1.0) + 0.0   # a kernel of its own, not one ufunc
    return run


@pytest.mark.parametrize("mode", ["raise", "warn"])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_underflow_reports_are_numpys(fn, dt, mode):
    a = SUB64 if dt == np.float64 else SUB32
    if fn in (np.exp, np.exp2):
        a = np.concatenate([a, np.array([-800.0, -1070.0, -20.0], dt)])   # subnormal and zero results
    # exceptions (FloatingPointError's text), warnings and values: NumPy's
    for args in ((a,), (a[4:7],)):   # with subnormal operands, and without
        check(_under(mode, fn), *args, warnings=True, compile_kwargs={"options": {"floor": False}})


def test_arithmetic_keeps_its_kernel_and_numpys_underflow():
    f = numdyn.compile(lambda a, b: a * b + 1.0, options={"floor": False})
    tiny = np.full(8, 1e-300)
    with np.errstate(under="raise"):
        f(np.ones(8), tiny)
        k0, r0 = numdyn.utils.counters["kernel_runs"], numdyn.utils.counters["errstate_reruns"]
        f(np.ones(8), tiny)
        assert numdyn.utils.counters["kernel_runs"] - k0 == 1
        assert numdyn.utils.counters["errstate_reruns"] == r0
        with pytest.raises(FloatingPointError, match="underflow encountered in multiply"):
            f(tiny, tiny)


def test_libm_graph_runs_numpys_loops_only_when_underflow_is_watched():
    f = numdyn.compile(lambda a: np.arcsinh(a) * 2.0, options={"floor": False})
    a = np.linspace(-1, 1, 64)
    f(a)
    k0, r0 = numdyn.utils.counters["kernel_runs"], numdyn.utils.counters["errstate_reruns"]
    np.testing.assert_allclose(f(a), np.arcsinh(a) * 2.0, rtol=1e-15)
    with np.errstate(all="raise", under="ignore"):
        f(a)
    assert numdyn.utils.counters["kernel_runs"] - k0 == 2
    assert numdyn.utils.counters["errstate_reruns"] == r0
    with np.errstate(under="warn"):
        np.testing.assert_array_equal(f(a), np.arcsinh(a) * 2.0)   # NumPy's own loop: its bits
    assert numdyn.utils.counters["errstate_reruns"] == r0 + 1
