"""Loop capture (issue 17): loops over array elements compile to C loops.

Each test checks NumPy's/Python's answer (values, exact types, argument
state, exceptions, warnings) AND that the loop was captured (or, for the
constructs loop capture leaves to the tracer, that it says why)."""
import math
import warnings

import numpy as np
import pytest

import numdyn


def run_both(fn, *args):
    """plain call and compiled call on copies; returns (expected, got, args_p, args_c, cf)"""
    ap = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ac = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    exp = fn(*ap)
    cf = numdyn.compile(fn)
    got = cf(*ac)
    return exp, got, ap, ac, cf


def same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b or (a != a and b != b), (a, b)


def captured(cf, n=1):
    info = cf._loop_info()
    assert sum(1 for i in info if i["captured"]) == n, info
    return info


def captured_close(fn, *args, rtol=1e-12):
    """fn's compiled call gives the plain call's results (to rtol) with its
    one loop captured"""
    exp, got, _, _, cf = run_both(fn, *args)
    for x, y in zip(exp if isinstance(exp, tuple) else (exp,), got if isinstance(got, tuple) else (got,)):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=rtol)
    return captured(cf)


def sum_sq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def test_reduction_loop_type_changes_float_to_numpy():
    a = np.arange(7.0)
    exp, got, _, _, cf = run_both(sum_sq, a)
    same(exp, got)
    assert type(got) is np.float64
    captured(cf)


def test_empty_loop_keeps_python_float():
    exp, got, _, _, cf = run_both(sum_sq, np.zeros(0))
    same(exp, got)
    assert type(got) is float
    captured(cf)


def poly_hash(a):
    h = 7
    for i in range(a.shape[0]):
        h = h * 31 + int(a[i])
    return h


def test_python_int_past_int64_deoptimizes_exactly():
    a = np.arange(40, dtype=np.int64)
    before = numdyn.utils.counters["loop_deopts"]
    exp, got, _, _, cf = run_both(poly_hash, a)
    assert exp > 2 ** 63 and type(got) is int and got == exp
    captured(cf)
    assert numdyn.utils.counters["loop_deopts"] > before


def poly_hash_writes(a, out):
    h = 7
    for i in range(a.shape[0]):
        out[i] = a[i] * 2
        h = h * 31 + int(a[i])
    return h


def test_deopt_restores_arrays_written_before_rerun():
    a = np.arange(40, dtype=np.int64)
    out = np.zeros(40, np.int64)
    exp, got, ap, ac, cf = run_both(poly_hash_writes, a, out)
    same(exp, got)
    np.testing.assert_array_equal(ap[1], ac[1])


def oob(a, out, k):
    for i in range(k):
        out[i] = a[i] + 1.0
    return out


def test_index_error_at_the_same_iteration_with_state():
    a = np.arange(5.0)
    outp, outc = np.zeros(8), np.zeros(8)
    with pytest.raises(IndexError) as ep:
        oob(a, outp, 7)
    cf = numdyn.compile(oob)
    with pytest.raises(IndexError) as ec:
        cf(a, outc, 7)
    assert str(ep.value) == str(ec.value) == "index 5 is out of bounds for axis 0 with size 5"
    np.testing.assert_array_equal(outp, outc)
    captured(cf)


def div_loop(a, d):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + 1.0 / d
    return s


def test_python_float_zero_division():
    with pytest.raises(ZeroDivisionError):
        div_loop(np.zeros(3), 0.0)
    cf = numdyn.compile(div_loop)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        cf(np.zeros(3), 0.0)


def int8_wrap(a):
    acc = np.int8(0)
    for i in range(a.shape[0]):
        acc = acc + a[i]
    return acc


def test_numpy_scalar_overflow_wraps_and_warns():
    a = np.full(10, 100, np.int8)
    with warnings.catch_warnings(record=True) as wp:
        warnings.simplefilter("always")
        exp = int8_wrap(a)
    cf = numdyn.compile(int8_wrap)
    with warnings.catch_warnings(record=True) as wc:
        warnings.simplefilter("always")
        got = cf(a)
    same(exp, got)
    assert {str(w.message) for w in wp} == {str(w.message) for w in wc}
    assert any(issubclass(w.category, RuntimeWarning) for w in wc)
    captured(cf)


def f32_mix(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc = acc * 0.5 + a[i]
    return acc


def test_nep50_float32_with_python_float():
    a = (np.arange(9) / 7).astype(np.float32)
    exp, got, _, _, cf = run_both(f32_mix, a)
    same(exp, got)
    assert type(got) is np.float32
    captured(cf)


def errstate_raise(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] / a[i - 1]
    return out


def test_errstate_raise_stops_at_the_same_element():
    a = np.array([1.0, 2.0, 0.0, 4.0, 5.0])
    outp, outc = np.zeros(5), np.zeros(5)
    cf = numdyn.compile(errstate_raise)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            errstate_raise(a, outp)
        with pytest.raises(FloatingPointError):
            cf(a, outc)
    np.testing.assert_array_equal(outp, outc)


def helper(x):
    return x + 1


def calls_python(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += helper(a[i])
    return s


def helper_with_loop(x):
    t = 0.0
    for _ in range(2):
        t += x
    return t


def calls_python_loop(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += helper_with_loop(a[i])
    return s


def test_user_function_call_is_inlined_and_right():
    # a helper of assignments and a return is compiled into the loop's C
    # (tests/test_loops_helpers.py has the rest)
    exp, got, _, _, cf = run_both(calls_python, np.arange(4.0))
    same(exp, got)
    info = cf._loop_info()
    assert len(info) == 1 and info[0]["captured"], info


def test_user_function_call_is_not_captured_but_right():
    # a helper holding a loop is not inlined: the loop runs in Python
    exp, got, _, _, cf = run_both(calls_python_loop, np.arange(4.0))
    same(exp, got)
    info = cf._loop_info()
    assert len(info) == 1 and not info[0]["captured"]
    assert "helper_with_loop" in info[0]["reason"] and "line" in info[0]["reason"]


def readonly_store(a):
    for i in range(a.shape[0]):
        a[i] = 0.0
    return a


def test_store_into_read_only_array_raises_numpys_error():
    a = np.arange(3.0)
    a.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        readonly_store(a)
    with pytest.raises(ValueError, match="read-only"):
        numdyn.compile(readonly_store)(a)


def setitem_edges(a, vals):
    for i in range(vals.shape[0]):
        a[i] = vals[i]
    return a


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint64, np.float32, np.bool_])
def test_element_store_conversions_are_numpys(dt):
    vals = np.array([-1.5, 3.7, 300.0, -2.5, 1e20, 0.25])
    for k in range(len(vals)):
        ap, ac = np.zeros(1, dt), np.zeros(1, dt)
        v = vals[k:k + 1]
        with warnings.catch_warnings(record=True) as wp:
            warnings.simplefilter("always")
            try:
                setitem_edges(ap, v)
                ep = None
            except Exception as e:  # noqa: BLE001 - the oracle's exception is compared
                ep = e
        with warnings.catch_warnings(record=True) as wc:
            warnings.simplefilter("always")
            try:
                numdyn.compile(setitem_edges)(ac, v)
                ec = None
            except Exception as e:  # noqa: BLE001
                ec = e
        assert type(ep) is type(ec) and str(ep) == str(ec), (ep, ec)
        np.testing.assert_array_equal(ap, ac)
        assert [str(w.message) for w in wp] == [str(w.message) for w in wc]


def unbound_after(a):
    for i in range(a.shape[0]):
        last = a[i]
    return last


def test_loop_variable_unbound_after_empty_loop():
    with pytest.raises(UnboundLocalError):
        unbound_after(np.zeros(0))
    cf = numdyn.compile(unbound_after)
    with pytest.raises(UnboundLocalError):
        cf(np.zeros(0))
    same(unbound_after(np.arange(3.0)), cf(np.arange(3.0)))


def test_explain_names_each_loop():
    out = numdyn.explain(numdyn.compile(calls_python_loop))(np.arange(3.0))
    assert "Loops:" in str(out) and "not captured" in str(out)
    out = numdyn.explain(numdyn.compile(sum_sq))(np.arange(3.0))
    assert "captured (compiled to a C loop)" in str(out)


def test_config_off_leaves_loops_to_the_tracer():
    def g(a):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i]
        return s
    old = numdyn.config.loop_capture
    numdyn.config.loop_capture = False
    try:
        cf = numdyn.compile(g)
        assert cf(np.arange(4.0)) == 6.0
        assert not any(i["captured"] for i in cf._loop_info())
    finally:
        numdyn.config.loop_capture = old


def lazy_around(a):
    b = a * 2.0          # pending lazy work before the loop
    n = b.shape[0]
    for i in range(1, n):
        b[i] = b[i] + b[i - 1]
    return b + 1.0       # and after


def test_pending_lazy_work_before_and_after_the_loop():
    exp, got, ap, ac, cf = run_both(lazy_around, np.arange(6.0))
    same(exp, got)
    np.testing.assert_array_equal(ap[0], ac[0])
    captured(cf)
