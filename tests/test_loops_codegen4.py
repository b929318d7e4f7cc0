"""The C of captured loops against numba's (issue 17), session 23: what the
error exits of a loop's checks keep alive. Each test pins one property of the
generated C (NUMDYN_LOOP_DEBUG) and checks the loop against plain
Python/NumPy where that property could go wrong: values, the arrays after
the call, the exception and the iteration it stops at, the locals a handler
sees."""
import re
import warnings

import numpy as np
import pytest

from loop_gen import arr, check_calls


def loop_c(fn, args, monkeypatch, capfd):
    """the C of fn's loops (NUMDYN_LOOP_DEBUG), after one checked call"""
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    check_calls(fn, args, repeat=False)
    out = capfd.readouterr().err
    assert "nd_loop_main" in out, out[-2000:]
    return out[out.index("int nd_loop_main"):]


def automaton(h, rule, steps):
    # rule 110's cell: a data-dependent index (rule[idx]) whose check can
    # fail at any cell, an unsigned chain (4 * a + 2 * b + c), a 2-D store
    n = h.shape[1]
    for t in range(steps):
        for i in range(1, n - 1):
            idx = 4 * h[t, i - 1] + 2 * h[t, i] + h[t, i + 1]
            h[t + 1, i] = rule[idx]
    return h


def automaton_in_try(h, rule, steps):
    n = h.shape[1]
    t = i = idx = -1
    try:
        for t in range(steps):
            for i in range(1, n - 1):
                idx = 4 * h[t, i - 1] + 2 * h[t, i] + h[t, i + 1]
                h[t + 1, i] = rule[idx]
    except IndexError as e:
        # the handler sees the locals as Python left them at the failing cell
        return h, t, i, idx, str(e)
    return h, t, i, idx, ""


def cells(dtype, steps, n, seed, hi=2):
    h = np.zeros((steps + 1, n), dtype=dtype)
    h[0] = arr(dtype, (n,), seed=seed, lo=0, hi=hi)
    return h


def rule110(dtype, size=8):
    return np.array([(110 >> (k % 8)) & 1 for k in range(size)], dtype=dtype)


def writeback_and_err(c):
    """positions of the scalar locals' write-back and of the nd_err label"""
    wb = [m.start() for m in re.finditer(r"^\s*F->tag\[\d+\] = v\d+_t;", c, re.M)]
    err = re.search(r"^\s*nd_err:", c, re.M)
    out = re.search(r"^\s*nd_out:", c, re.M)
    assert wb and err and out, c[-3000:]
    return wb, err.start(), out.start()


def test_error_exits_skip_the_locals_outside_try(monkeypatch, capfd):
    # outside a try the runner reads no local after an exception or a
    # deoptimization: the error exits jump past the locals' write-back, so
    # the loop's values are not kept alive for them
    c = loop_c(automaton, (cells(np.uint8, 6, 30, 1), rule110(np.uint8), 6), monkeypatch, capfd)
    wb, err, out = writeback_and_err(c)
    assert out < min(wb) and max(wb) < err, c[-3000:]
    assert "goto nd_out" not in c and "goto nd_err" in c
    # the arrays the loop made or viewed still go back on every exit
    # (nothing here), and the loop's own C reads no tag after nd_err
    assert not re.search(r"F->tag\[\d+\] =", c[err:]), c[err:]


def test_error_exits_write_back_the_locals_inside_try(monkeypatch, capfd):
    c = loop_c(automaton_in_try, (cells(np.uint8, 6, 30, 1), rule110(np.uint8), 6), monkeypatch, capfd)
    wb, err, out = writeback_and_err(c)
    assert err < min(wb) and out < min(wb), c[-3000:]


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int64"])
def test_automaton_values_and_index_errors(dtype):
    # a rule table one short of the largest index: IndexError at the first
    # cell whose neighbourhood is 7, with the rows written so far as NumPy
    # left them; a long table: no error. C order and a strided view.
    big = cells(dtype, 5, 41, 3)
    strided = cells(dtype, 5, 81, 3)[:, ::2]
    check_calls(automaton, (cells(dtype, 5, 41, 2), rule110(dtype), 5),
                (cells(dtype, 5, 41, 2), rule110(dtype, 7), 5),
                (big, rule110(dtype, 12), 5), (strided, rule110(dtype), 5),
                (strided, rule110(dtype, 7), 5))
    check_calls(automaton_in_try, (cells(dtype, 5, 41, 2), rule110(dtype), 5),
                (cells(dtype, 5, 41, 2), rule110(dtype, 7), 5),
                (strided, rule110(dtype, 6), 5))


def test_automaton_errors_at_the_same_cell():
    # the handler's locals: the step, the cell and the index of the failing
    # lookup (C and Python agree on where it stopped)
    import numdyn
    h, rule = cells(np.uint8, 8, 50, 4), rule110(np.uint8, 5)
    want = automaton_in_try(h.copy(), rule, 8)
    got = numdyn.compile(automaton_in_try, options={"floor": False})(h.copy(), rule, 8)
    assert want[4] and got[1:] == want[1:] and type(got[3]) is type(want[3])
    np.testing.assert_array_equal(got[0], want[0])


def test_unsigned_chain_cold_path_reloads(monkeypatch, capfd):
    # the chain's cold path (its exact value does not fit uint8: operation
    # by operation, with NumPy's warnings) loads the elements again rather
    # than keeping the hot path's loaded values alive into it
    c = loop_c(automaton, (cells(np.uint8, 4, 30, 5), rule110(np.uint8, 256), 4), monkeypatch, capfd)
    assert re.search(r"if \(NDL_UNLIKELY\(wt\d+ > UINT8_MAX\)\) \{\n\s*NDL_RELOAD\(\);", c), c[-3000:]
    # and hands its result back through the wide value, narrowed once after
    # the join (no else branch): the zero-extension for rule[idx] goes away
    m = re.search(r"uint8_t (t\d+);\n\s*if \(NDL_UNLIKELY\((w\1) > UINT8_MAX\)\) \{", c)
    assert m, c[-3000:]
    t, w = m.group(1), m.group(2)
    assert re.search(r"^\s*%s = \(uint64_t\)t\d+;\n\s*\}\n\s*%s = \(uint8_t\)%s;" % (w, t, w), c, re.M), c[-3000:]


def test_unsigned_chain_overflow_values():
    # cells up to 255: 4 * a + 2 * b + c overflows uint8 (wraps, warns) in
    # the cold path, whose reloaded elements are the hot path's
    h = cells(np.uint8, 3, 30, 6, hi=256)
    check_calls(automaton, (h, np.arange(256, dtype=np.uint8)[::-1].copy(), 3))


# ------------------------------------------------- the call around the loop
def sum_sq(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def float_events(f, x, action):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        try:
            r, e = f(x), None
        except Exception as ex:
            r, e = None, ex
    return r, type(e), str(e) if e else None, [(c.category, str(c.message)) for c in w]


@pytest.mark.parametrize("action", ["always", "error"])
def test_a_loop_that_stores_nothing_reruns_float_events_as_numpy(action):
    # nothing stored: nothing to restore, however NumPy's run ends (a
    # warnings filter 'error' included), so on the untraced path (the speed
    # floor's, taken after the first calls) the runner does not read the
    # warnings filters on each call; Python's rerun gives NumPy's warning or
    # exception, on both paths
    import numdyn
    from numdyn import utils
    f = numdyn.compile(sum_sq, options={"floor": True})
    f(np.arange(4.0))
    utils.wait_compiles()
    big, small = np.array([1.0, 1e200, 2.0, 1e200]), np.arange(5.0)
    snap = utils.counters["loop_snapshot_bytes"]
    for k in range(24):
        x = big if k % 3 == 0 else small
        assert float_events(f, x, action) == float_events(sum_sq, x, action), k
    assert utils.counters["loop_snapshot_bytes"] == snap


def test_float_flags_set_before_the_call_do_not_deoptimize():
    # Python float arithmetic leaves the overflow flag set (CPython does
    # not clear it); the runner clears the flags it finds set before the C
    # loop runs, so the loop's own clean run is not taken for an event
    import numdyn
    from numdyn import utils
    f = numdyn.compile(sum_sq, options={"floor": False})
    x = np.arange(6.0)
    f(x)
    utils.wait_compiles()
    runs, deopts = utils.counters["loop_runs"], utils.counters["loop_deopts"]
    for _ in range(3):
        big = 1e308
        assert big * 10.0 == float("inf")       # sets FE_OVERFLOW
        assert f(x) == sum_sq(x)
    assert utils.counters["loop_runs"] == runs + 3
    assert utils.counters["loop_deopts"] == deopts
