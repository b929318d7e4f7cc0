"""Arrays a captured loop makes and names it rebinds (issue 17, point 1):
`new = u.copy()`, `np.copy(u)`, `np.empty_like(u)`, `np.zeros_like(u)` in the
loop and `u = new` after it. NumPy's aliasing exactly: after the loop each
name refers to the array Python would have bound it to (`u is new`, an old
reference still sees the old grid), arguments are left as NumPy leaves them,
new arrays have NumPy's layout (order 'C' for .copy(), 'K' for the others),
and an exception or a deoptimization in the middle leaves the names as
Python does. Plain Python/NumPy is the oracle; compiles are shared across
cases (a mode argument picks the form)."""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls


def compiled(fn):
    return numdyn.compile(fn, options={"floor": False})


def loop_info(cf):
    info = cf._loop_info()
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info
    return info


def rebind_mix(a, steps, mode):
    u = a.copy()
    first = u
    prev = u
    for t in range(steps):
        if mode == 0:
            nxt = u.copy()
        elif mode == 1:
            nxt = np.copy(u)
        elif mode == 2 or mode == 4:
            nxt = np.zeros_like(u)
        else:
            nxt = np.empty_like(u)
        for i in range(u.shape[0]):
            for j in range(u.shape[1]):
                if mode == 3:
                    nxt[i, j] = 0.0
                nxt[i, j] = 0.25 * nxt[i, j] + 0.5 * u[i - 1, j] + t
        prev = u
        u = nxt
        if mode == 4:
            u = u.copy()
            u[0, 0] += 1.0
    return u, prev, first, u is prev, prev is first, u is a, first is a


def test_rebind_forms_identity_and_old_references():
    a = (np.arange(20, dtype=np.float64).reshape(4, 5) % 7) * 0.5
    cf = compiled(rebind_mix)
    for mode in range(5):
        for steps in (0, 1, 2, 5):
            try:
                check_calls(rebind_mix, (a, steps, mode), repeat=False, compiled=cf)
            except AssertionError as e:
                raise AssertionError(f"mode {mode}, steps {steps}: {e}") from None
            got = cf(a.copy(), steps, mode)
            exp = rebind_mix(a.copy(), steps, mode)
            # the identities Python sees after the loop (names holding one array)
            assert got[3:] == exp[3:], (mode, steps)
            assert got[0].flags.owndata and got[0].flags.c_contiguous and got[0].flags.writeable
    loop_info(cf)


def like_layouts(a, k):
    for t in range(k):
        b = np.copy(a)
        c = np.zeros_like(a)
        d = a.copy()
        e = np.empty_like(a)
    return b, c, d, e.shape, e.strides, e.dtype


def layout(x):
    return (x.shape, x.strides, x.flags.c_contiguous, x.flags.f_contiguous, x.flags.owndata, x.dtype)


def test_new_arrays_take_numpys_layout():
    base = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    m = np.arange(30, dtype=np.int16).reshape(5, 6)
    # (three signatures: 2-D rows contiguous or not, 3-D strided)
    cases = [m, m[:0], m[1:, :2], np.asfortranarray(m), m.T, m[::2, ::-1], m[:, 1:2],
             base.transpose(1, 2, 0), base[:, ::-1, ::2], np.asfortranarray(base), base[:, :, ::3]]
    cf = compiled(like_layouts)
    for a in cases:
        got, exp = cf(a, 2), like_layouts(a, 2)
        for g, e in zip(got[:3], exp[:3]):
            assert layout(g) == layout(e), (a.shape, a.strides, layout(g), layout(e))
            np.testing.assert_array_equal(g, e)
        assert got[3:] == exp[3:]
    loop_info(cf)


def copy_until_index_error(a, idx):
    u = a.copy()
    i = -1
    try:
        for i in range(idx.shape[0]):
            v = u.copy()
            v[idx[i]] += 1.0
            u = v
    except IndexError as exc:
        return u, i, str(exc), u is a
    return u, i, "done", u is a


def copy_then_raise(a, idx):
    u = a
    for i in range(idx.shape[0]):
        v = np.zeros_like(u)
        v[idx[i]] = u[idx[i] - 1] + 1.0
        u = v
    return u


def test_exception_after_rebinding_leaves_names_as_python():
    a = np.arange(6, dtype=np.float64)
    cf = compiled(copy_until_index_error)
    check_calls(copy_until_index_error, (a, np.array([0, 3, 5, 2])), (a, np.array([1, 2, 9, 0])),
                (a, np.array([], dtype=np.int64)), compiled=cf)
    loop_info(cf)
    check_calls(copy_then_raise, (a, np.array([1, 4, 2])), (a, np.array([1, 6, 2])))


def copy_with_bigint(a, n):
    u = a.copy()
    s = 1
    for t in range(n):
        w = u.copy()
        w[t % w.shape[0]] = w[0] * 2.0
        u = w
        s = s * 1000
    return u, s, u is a


def test_deopt_after_rebinding_reruns_from_the_start():
    # s leaves int64 at t = 7: Python reruns the loop on the restored arguments
    a = np.arange(4, dtype=np.float64) + 1.0
    before = numdyn.utils.counters.get("loop_deopts", 0)
    check_calls(copy_with_bigint, (a, 5), (a, 9), repeat=False)
    assert numdyn.utils.counters.get("loop_deopts", 0) > before


def automaton_new_rows(cells, rule, steps):
    orig = cells
    for t in range(steps):
        nxt = np.zeros_like(cells)
        for i in range(1, cells.shape[0] - 1):
            nxt[i] = rule[4 * cells[i - 1] + 2 * cells[i] + cells[i + 1]]
        cells = nxt
    return cells, cells is orig


@pytest.mark.parametrize("dtype", ["uint8", "int64", "bool"])
def test_element_loops_on_new_rows(dtype):
    rng = np.random.default_rng(3)
    cells = (rng.random(40) < 0.5).astype(dtype)
    rule = np.array([(110 >> k) & 1 for k in range(8)], dtype=dtype)
    if dtype == "bool":
        # (bool arithmetic indexes with a bool: NumPy's error, compared too)
        check_calls(automaton_new_rows, (cells, rule, 3), repeat=False)
        return
    cf = compiled(automaton_new_rows)
    check_calls(automaton_new_rows, (cells, rule, 0), (cells, rule, 1), (cells, rule, 30), compiled=cf)
    loop_info(cf)
