"""Loop regions called by position (loop_rewrite.c io_facts): the template
passes the locals a loop may read before assigning them, by position, when
each is certainly bound where the loop starts (else `locals()`), and takes
back only the names read again after the loop. Each case compares with
the plain function (Python and NumPy): values, types, exceptions, and the
names left behind."""
import numpy as np
import pytest

import numdyn


def regions(fn):
    """the loop regions of fn's module made for fn's lines"""
    code = fn.__code__
    lo, hi = code.co_firstlineno, max(ln for _, _, ln in code.co_lines() if ln is not None)
    last = {}   # each compile rewrites again: the newest region of each line
    for k, v in list(fn.__globals__.items()):
        if k.startswith("__numdyn_loop_") and hasattr(v, "passed") and lo <= v.line <= hi:
            n = int(k[len("__numdyn_loop_"):-2])
            if v.line not in last or last[v.line][0] < n:
                last[v.line] = (n, v)
    return [last[ln][1] for ln in sorted(last)]


def same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b, (a, b)


def check(fn, *args):
    cf = numdyn.compile(fn)
    for _ in range(3):   # traced, then the speed floor's paths
        try:
            want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        except Exception as e:   # the same exception, then
            with pytest.raises(type(e)):
                cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            continue
        got = cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        same(got, want)
    return cf


def mixed(x, y, out, a, b, flag, k32, f32):
    s = 0.0
    t = 0
    u = np.float32(1.0)
    m = k32
    hit = False
    row = out[1:]
    for i in range(x.shape[0]):
        s += x[i] * a
        t += i * b
        u = u * f32 + np.float32(y[i])
        m = m + k32
        if flag and x[i] > 0.5:
            hit = True
        row[i % row.shape[0]] = s
    return s, t, u, m, hit, out


def test_many_mixed_live_ins_and_outs():
    rng = np.random.default_rng(0)
    x, y = rng.random(9), rng.random(9).astype(np.float32)
    out = np.zeros(5)
    args = (x, y, out, 2.0, 3, True, np.int32(7), np.float32(0.5))
    check(mixed, *args)
    (r,) = regions(mixed)
    assert r.passed is not None
    # every name the loop reads first, by position; i is not read again
    assert set(r.passed) == {"x", "y", "a", "b", "flag", "k32", "f32", "s", "t", "u", "m", "hit", "row"}
    assert "i" not in r.handed_back
    assert {"s", "t", "u", "m", "hit"} <= set(r.handed_back)
    # other values and types of the same names
    check(mixed, x, y, out, 1, 2.5, False, np.int32(-3), np.float32(2.0))
    check(mixed, x[:0], y[:0], out, 1.0, 1, True, np.int32(1), np.float32(1.0))


def loop_var_after(x, n):
    i = 99
    for i in range(n):
        x[i] = i
    return i, x


def test_name_read_after_is_handed_back_and_kept_when_unassigned():
    x = np.zeros(6)
    for n in (0, 1, 6):
        check(loop_var_after, x, n)
    (r,) = regions(loop_var_after)
    assert "i" in r.handed_back and "i" in r.passed   # bound before: its entry type is the signature's


def found_index(x, v):
    found = -1
    for i in range(x.shape[0]):
        if x[i] == v:
            found = i
            break
    return found


def test_conditionally_assigned_output():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    for v in (1.0, 5.0, 7.0):
        check(found_index, x, v)


def carried_across_inner(x, reps):
    acc = 0.0
    for r in range(reps):
        for i in range(x.shape[0]):
            acc += x[i] * r
    return acc


def test_value_carried_between_runs_of_an_inner_loop():
    check(carried_across_inner, np.arange(5.0), 4)


def maybe_unbound(x, pre):
    if pre:
        s = 10.0
    for i in range(x.shape[0]):
        s = s + x[i]
    return s


def test_maybe_unbound_live_in_uses_locals():
    check(maybe_unbound, np.arange(4.0), True)
    (r,) = regions(maybe_unbound)
    assert r.passed is None   # `s` may be unbound: locals()
    cf = numdyn.compile(maybe_unbound)
    with pytest.raises(UnboundLocalError):
        maybe_unbound(np.arange(4.0), False)
    with pytest.raises(UnboundLocalError):
        cf(np.arange(4.0), False)
    # no iteration: no read, Python's own error at the return
    with pytest.raises(UnboundLocalError):
        cf(np.arange(0.0), False)


def deleted_then_loop(x):
    s = 1.0
    del s
    s2 = 0.0
    for i in range(x.shape[0]):
        s2 += x[i]
    return s2


def except_name_then_loop(x):
    e = 2.0
    try:
        raise ValueError("x")
    except ValueError as e:   # noqa: F841  (e is deleted after the clause)
        pass
    t = 0.0
    for i in range(x.shape[0]):
        if i > 10:
            t += e
        t += x[i]
    return t


def test_deleted_names_are_not_certainly_bound():
    check(deleted_then_loop, np.arange(3.0))
    check(except_name_then_loop, np.arange(3.0))
    (r,) = regions(except_name_then_loop)
    assert r.passed is None   # `e` was deleted by the except clause
    cf = numdyn.compile(except_name_then_loop)
    with pytest.raises(UnboundLocalError):
        except_name_then_loop(np.arange(12.0))
    with pytest.raises(UnboundLocalError):
        cf(np.arange(12.0))


def read_by_closure(x):
    get = lambda: j  # noqa: E731
    j = -1
    for j in range(x.shape[0]):
        x[j] = 2 * j
    return get(), x


def read_by_locals(x):
    q = 0.0
    for k in range(x.shape[0]):
        q += x[k]
    return sorted(n for n in locals() if not n.startswith("__nd"))


def test_names_seen_by_closures_or_locals_are_handed_back():
    check(read_by_closure, np.zeros(4))
    (r,) = regions(read_by_closure)
    assert set(r.passed) == {"x", "j"} and "j" in r.handed_back   # a cell: handed back
    check(read_by_locals, np.arange(3.0))
    (r,) = regions(read_by_locals)
    assert "k" in r.handed_back


def unbound_read_in_loop(n):
    for i in range(n):
        t = w  # noqa: F821, F841  (w assigned below: unbound at first)
        w = i
    return n


def test_unbound_read_raises_as_python():
    cf = numdyn.compile(unbound_read_in_loop)
    with pytest.raises(UnboundLocalError):
        unbound_read_in_loop(3)
    with pytest.raises(UnboundLocalError):
        cf(3)
    assert cf(0) == 0


def params_rebound_in_loop(x, s, n):
    for i in range(n):
        s = s * 2 + x[i]
    return s


def test_parameter_changing_type_in_loop():
    check(params_rebound_in_loop, np.arange(4.0), 1, 4)        # int then np.float64
    check(params_rebound_in_loop, np.arange(4.0), 1, 0)        # stays the int
    check(params_rebound_in_loop, np.arange(4, dtype=np.int64), 2 ** 61, 3)   # NumPy's OverflowError
    check(params_rebound_in_loop, [1, 2, 3], 2 ** 62, 3)   # Python ints past int64 (a list: Python runs it)


def tuple_swap_dead_temps(a):
    for j in range(a.shape[0] - 1):
        if a[j] > a[j + 1]:
            a[j], a[j + 1] = a[j + 1], a[j]
    return a


def test_tuple_temporaries_not_handed_back():
    check(tuple_swap_dead_temps, np.array([3, 1, 2, 5, 4]))
    (r,) = regions(tuple_swap_dead_temps)
    assert all(not n.startswith("__numdyn") for n in r.handed_back)
    assert "j" not in r.handed_back


def two_loops_same_var(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    for i in range(1, x.shape[0]):
        s -= x[i - 1]
    return s, i


def test_two_loops_sharing_a_name():
    check(two_loops_same_var, np.arange(5.0))
    r1, r2 = regions(two_loops_same_var)
    assert "i" in r2.handed_back   # read at the return
    assert set(r1.passed) == {"s", "x"} and set(r2.passed) == {"s", "x"}


def in_outer_python_loop(x, m):
    tot = 0
    for r in range(m):
        y = [r]              # a list: the outer loop stays Python
        y0 = y[0]
        for i in range(x.shape[0]):
            tot += int(x[i]) + y0
    return tot


def test_inner_loop_of_a_python_loop():
    check(in_outer_python_loop, np.arange(4.0), 3)
    (r,) = regions(in_outer_python_loop)
    assert set(r.passed) == {"x", "tot", "y0"} and r.handed_back == ("tot",)
