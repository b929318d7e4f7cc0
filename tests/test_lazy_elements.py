"""Element reads (a[i], a[i, j]) while a call is recorded for replay.

They stay lazy (a snapshot node, no value in Python), so functions with
scalar reads -- Levinson-Durbin, recurrences over a few coefficients -- can
still be replayed without running Python. Replayed calls must read the *new*
arguments' elements, reads are snapshots (later writes do not change them),
Python code that looks at an element's value makes the function fall back to
eager NumPy scalars, and a long scalar loop stays bounded.
"""
import numpy as np
import pytest

import numdyn
from oracle import assert_same, check
from test_loops import levinson_durbin

BACKENDS = ["eager", "native"]


def calls(fn, arg_sets, backend):
    """Compile once, call with each argument tuple: every result (and what the
    call leaves in its arguments) must be NumPy's. Returns the compiled fn."""
    cf = numdyn.compile(fn, backend=backend)
    for args in arg_sets:
        exp_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        exp = fn(*exp_args)
        got = cf(*got_args)
        assert_same(got, exp)
        for g, e in zip(got_args, exp_args):
            if isinstance(e, np.ndarray):
                assert_same(g, e)
    return cf


levinson = levinson_durbin  # the recursion of tests/test_loops.py


@pytest.mark.parametrize("backend", BACKENDS)
def test_levinson_replays_with_new_data(backend, monkeypatch):
    # with loop capture on, its loop (slices with negative steps) compiles to
    # C instead (tests/test_loops*.py); here the replay of a traced call is
    # what is tested
    monkeypatch.setattr(numdyn.config, "loop_capture", False)
    rng = np.random.default_rng(1)
    sets = []
    for _ in range(4):
        r = np.sort(rng.random(21))[::-1].copy()
        r[0] += 2.0
        sets.append((r, 20))
    cf = calls(levinson, sets, backend)
    info = cf._replay_info()
    assert info["entries"] == 1 and info["hits"] == 3, info


@pytest.mark.parametrize("backend", BACKENDS)
def test_element_is_a_snapshot(backend):
    def f(a):
        b = a * 2
        x = b[1]
        b[1] = -7.0
        y = b[1]
        b[:] = 0
        return x, y, b

    cf = calls(f, [(np.arange(4.0),), (np.arange(4.0) + 10,), (np.ones(4),)], backend)
    assert cf._replay_info()["hits"] == 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float32", "float64",
                                   "complex64", "bool"])
def test_element_types_follow_numpy(backend, dtype):
    def f(a):
        return a[0, 1], a[-1, -1] + a[0, 0], a[1][2], a[()] if a.ndim == 0 else a[1, 0] * 2

    rng = np.random.default_rng(2)
    sets = [((rng.random((3, 4)) * 50).astype(dtype),) for _ in range(3)]
    calls(f, sets, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_d_and_strided_elements(backend):
    def f(a, s):
        t = a[::-2, 1:]
        return s[()], t[1, 0], a.T[2, 1], s * t[0, -1]

    base = np.arange(24.0).reshape(4, 6)
    calls(f, [(base, np.array(3.5)), (base + 1, np.array(-1.0))], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_on_element_falls_back(backend):
    def f(a):
        if a[0] > 0:
            return a * 2
        return a - 1

    sets = [(np.array([1.0, 2.0]),), (np.array([-1.0, 2.0]),), (np.array([3.0, 2.0]),)]
    cf = calls(f, sets, backend)
    info = cf._replay_info()
    assert info["entries"] == 0 and info["hits"] == 0, info


@pytest.mark.parametrize("backend", BACKENDS)
def test_element_as_python_number_falls_back(backend):
    def f(a, b):
        n = int(a[0])
        return b[:n].sum(), float(b[1]) * 2

    sets = [(np.array([2, 0]), np.arange(5.0)), (np.array([4, 0]), np.arange(5.0) * 3)]
    calls(f, sets, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_long_scalar_loop_is_bounded(backend):
    def f(a):
        s = 0.0
        for i in range(a.shape[0]):
            s = s + a[i] * a[i]
        return s

    n = 5000  # more reads than a capture keeps lazy: the rest are NumPy scalars
    rng = np.random.default_rng(3)
    calls(f, [(rng.random(n),), (rng.random(n),)], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_element_of_mutated_argument(backend):
    def f(a):
        a[0] = a[1] + a[2]
        return a[0] * 2

    calls(f, [(np.arange(3.0),), (np.arange(3.0) + 5,)], backend)


def test_oracle_element_reads_single_call():
    def f(a):
        return a[2] - a[0], a[1, ...], a[-1]

    check(f, np.linspace(0, 1, 7), backend="native")
    check(f, np.arange(7, dtype=np.int16), backend="eager")


def test_out_of_range_element_raises_like_numpy():
    def f(a):
        return a[5] + 1

    check(f, np.arange(3.0), backend="native")
    check(f, np.arange(3.0), backend="eager")


@pytest.mark.parametrize("backend", BACKENDS)
def test_lazy_integer_index_gives_a_view(backend):
    # a[k] with k computed in the graph is integer indexing in NumPy: a view
    # (writes through it reach a) and IndexError at that line when out of range
    def f(a, idx):
        k = idx[0]
        row = a[k]
        row += 100
        j = idx.sum()
        a[j - 3, k] = -1.0
        return a, a[j - 3, k], a[:, k]

    a = np.arange(12.0).reshape(4, 3)
    calls(f, [(a, np.array([1, 3])), (a, np.array([2, 2])), (a, np.array([0, 3]))], backend)
    check(f, a, np.array([7, 1]), backend=backend)
    check(f, a, np.array([1, 9]), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lazy_integer_index_in_setitem_and_tuple(backend):
    def f(a, n):
        k = n.sum() - 1
        a[k] = 5
        a[0, k] += 1
        return a[..., k]

    calls(f, [(np.zeros((3, 3), np.int32), np.array([1, 1])),
              (np.zeros((3, 3), np.int32), np.array([0, 1]))], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_computed_index_error_leaves_numpys_state(backend):
    # NumPy raises at the indexing line: writes before it have landed in the
    # caller's arrays, writes after it have not
    def before(a, b):
        a += 1
        c = a[b * 2]
        a *= 10
        return c

    def after(a, b):
        c = a[b * 2]
        a[0] = 5
        a[1:] += 1
        return c

    def in_setitem(a, b):
        a += 1
        a[b * 2] = 0
        return a

    def in_take(a, b):
        a += 1
        return np.take(a, b * 2)

    def in_add_at(a, b):
        a += 1
        np.add.at(a, b * 2, 1.0)
        return a

    def in_put(a, b):
        a += 1
        np.put(a, b * 2, -1.0)
        return a

    for fn in (before, after, in_setitem, in_take, in_add_at, in_put):
        check(fn, np.arange(5.0), np.array([1, 3]), backend=backend)
        check(fn, np.arange(5.0), np.array([1, 2]), backend=backend)


def test_computed_index_replays_and_checks_each_call():
    def f(x, k):
        return x[np.argsort(x)[:2] + k]

    cf = numdyn.compile(f, backend="native")
    x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    for k in (0, 1):
        assert_same(cf(x, np.int64(k)), f(x, np.int64(k)))
    with pytest.raises(IndexError):
        cf(x, np.int64(3))
    assert_same(cf(x, np.int64(0)), f(x, np.int64(0)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_elements_hash_like_numpy_scalars(backend):
    def f(a):
        d = {}
        for i in range(a.shape[0]):
            d[a[i]] = i
        s = {a.sum(), a[0]}
        try:
            hash(a)
            err = None
        except TypeError as e:
            err = str(e)
        return sorted(d.items()), len(s), err

    calls(f, [(np.array([1.0, 2.0, 1.0]),), (np.array([3.0, 3.0, 3.0]),)], backend)
