"""Common subexpressions computed once (src/passes/cse.h).

A trace unrolls the user's loops, so a loop-invariant expression is in the
graph once an iteration: pagerank's `0.85 * M @ r` scaled the whole matrix
each iteration, as NumPy does. The native run computes each value once --
and stays NumPy's in everything a user can see: results, the warnings of
each operation in order, two results that are two arrays, errors at the
first operation that fails, random draws that are not values."""
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import numdyn
from numdyn import utils


def _delta(f, *args):
    before = dict(utils.counters)
    r = f(*args)
    after = dict(utils.counters)
    return r, {k: after[k] - before.get(k, 0) for k in after}


def pagerank(M, it):
    n = M.shape[0]
    r = np.full(n, 1.0 / n)
    for _ in range(it):
        r = 0.15 / n + 0.85 * M @ r
    return r


def test_loop_invariant_product_is_computed_once():
    rng = np.random.default_rng(0)
    M = rng.random((300, 300)) / 300
    cf = numdyn.compile(pagerank, options={"floor": False})
    reads = {}
    for it in (4, 12):
        want = pagerank(M, it)
        cf(M, it)
        numdyn.utils.wait_compiles()
        got, d = _delta(cf, M, it)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        reads[it] = d["bytes_read"]
    # each iteration's 0.85 * M read M (720 kB): 8 more iterations read it
    # 8 more times when nothing merges, never with the product computed once
    assert reads[12] - reads[4] < M.nbytes, reads


def gd(X, y, it):
    w = np.zeros(X.shape[1])
    lr = 0.1
    for _ in range(it):
        p = 1 / (1 + np.exp(-(X @ w)))
        w = w - lr * X.T @ (p - y) / len(y)
    return w


def test_replayed_program_with_merges_is_numpys_and_hashes_once():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    y = (rng.random(200) > 0.5).astype(float)
    cf = numdyn.compile(gd, options={"floor": False})
    want = gd(X, y, 30)
    keyed = []
    for _ in range(5):
        got, d = _delta(cf, X, y, 30)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        keyed.append((d["replays"], d["key_nodes"]))
    # replayed: the merged graph and its program key are kept with the entry
    assert keyed[-1][0] == 1 and keyed[-1][1] == 0, keyed
    X2 = rng.normal(size=(200, 5))
    np.testing.assert_allclose(cf(X2, y, 30), gd(X2, y, 30), rtol=1e-12)


def twice_warns(a):
    x = np.log(a) * 2.0
    y = np.log(a) * 2.0      # the same value: NumPy warns at each log
    return x + y


def test_merged_operations_warn_as_numpy_each_time():
    a = np.array([1.0, -1.0, 0.0, 4.0])
    cf = numdyn.compile(twice_warns, options={"floor": False})
    for _ in range(3):
        with warnings.catch_warnings(record=True) as wn:
            warnings.simplefilter("always")
            want = twice_warns(a)
        with warnings.catch_warnings(record=True) as wg:
            warnings.simplefilter("always")
            got = cf(a)
        np.testing.assert_array_equal(got, want)
        assert [str(w.message) for w in wg] == [str(w.message) for w in wn]
        assert len(wn) == 4  # divide and invalid, at each log
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            cf(a)


def two_results(a):
    s = a * 3.0 + 1.0
    t = a * 3.0 + 1.0
    return s, t, (a * 3.0 + 1.0).sum()


def test_equal_results_are_two_arrays():
    a = np.arange(6.0)
    cf = numdyn.compile(two_results, options={"floor": False})
    for _ in range(3):
        s, t, tot = cf(a)
        assert s is not t and not np.shares_memory(s, t)
        s[0] = -5.0
        assert t[0] == 1.0 and tot == 51.0


def first_error(a, idx):
    u = a[idx] * 2.0
    v = a[idx] * 2.0
    return u + v


def test_index_error_as_numpy():
    a = np.arange(5.0)
    cf = numdyn.compile(first_error, options={"floor": False})
    np.testing.assert_array_equal(cf(a, np.array([0, 4])), first_error(a, np.array([0, 4])))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        cf(a, np.array([1, 7]))


def in_place_after(a):
    b = a + 1.0
    c = a + 1.0
    b *= 2.0                 # a write to b, never seen through c
    return b, c, (a + 1.0) @ (a + 1.0)


def test_in_place_write_to_one_of_equal_values():
    a = np.linspace(0.0, 1.0, 7)
    cf = numdyn.compile(in_place_after, options={"floor": False})
    for _ in range(3):
        got = cf(a)
        want = in_place_after(a)
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=1e-14)


def draws(n):
    rng = np.random.default_rng(5)
    return rng.random(n) * 2.0, rng.random(n) * 2.0


def test_random_draws_are_not_merged():
    cf = numdyn.compile(draws, options={"floor": False})
    a, b = cf(4)
    wa, wb = draws(4)
    np.testing.assert_array_equal(a, wa)
    np.testing.assert_array_equal(b, wb)
    assert not np.array_equal(a, b)


def scalars_differ(x, s, t):
    return (x * s).sum() + (x * t).sum()


def test_equal_scalars_merge_only_while_equal():
    # one call's equal scalars merge; a later call with different values
    # must not run the merged program (the structure differs)
    x = np.arange(10.0)
    cf = numdyn.compile(scalars_differ, options={"floor": False})
    for s, t in [(2.0, 2.0), (2.0, 3.0), (3.0, 3.0), (1.5, -1.5), (0.5, 0.5)]:
        assert cf(x, s, t) == scalars_differ(x, s, t)


def test_cse_off_by_environment_gives_the_same_results():
    code = textwrap.dedent("""
        import numpy as np, numdyn
        def pagerank(M, it):
            n = M.shape[0]; r = np.full(n, 1.0 / n)
            for _ in range(it):
                r = 0.15 / n + 0.85 * M @ r
            return r
        M = np.random.default_rng(0).random((64, 64)) / 64
        cf = numdyn.compile(pagerank, options={"floor": False})
        cf(M, 6); numdyn.utils.wait_compiles()
        c0 = numdyn.utils.counters["bytes_read"]
        r = cf(M, 6)
        print(repr(r.tolist()), numdyn.utils.counters["bytes_read"] - c0)
    """)
    outs = []
    for flag in ("0", "1"):
        env = dict(__import__("os").environ, NUMDYN_CSE=flag)
        env.pop("NUMDYN_SPLIT_PASSES", None)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        vals, nread = p.stdout.rsplit(" ", 1)
        outs.append((vals, int(nread)))
    assert outs[0][0] == outs[1][0]
    # without merging each of the 6 iterations reads M (32 kB); merged, once
    assert outs[0][1] - outs[1][1] >= 4 * 64 * 64 * 8, outs
