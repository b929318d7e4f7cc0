"""rng.shuffle / np.random.shuffle of arrays inside compiled code.

NumPy's shuffle tests its argument for np.ndarray; a traced array took its
generic path (x[i], x[j] = x[j], x[i]), which duplicated rows of a 2-D array
computed in the function (a wrong answer), warned that a 'LazyArray' is not a
Sequence, and raised NotImplementedError for axis=. numdyn's rewrite routes
the call through numdyn/_rng_calls.py, which hands NumPy the real memory.
"""
import random
import warnings

import numpy as np

import numdyn


def _shuffles(x, arg, seed):
    rng = np.random.default_rng(seed)
    X = (x - x.mean(0)) / x.std(0)
    rng.shuffle(X)                      # rows of a computed 2-D array
    W = (x * 3).T.copy()
    rng.shuffle(W, axis=1)              # axis= (NotImplementedError before)
    z = x[:, 0] + 1
    np.random.seed(seed)
    np.random.shuffle(z)                # the legacy RandomState
    rng.shuffle(arg)                    # an argument: shuffled for the caller
    L = list(range(6))
    random.seed(seed)
    random.shuffle(L)                   # Python's random on a list: untouched
    s = 0.0
    for i in range(len(z)):             # a captured loop next to the rewrite
        s += z[i] * i
    return X, W, z, L, s, X.sum(0) + W.sum(1).sum()


def test_shuffle_of_traced_arrays_is_numpys():
    x = np.random.default_rng(1).standard_normal((9, 3))
    cf = numdyn.compile(_shuffles)
    for seed in range(2):
        a1, a2 = np.arange(12.0).reshape(4, 3), np.arange(12.0).reshape(4, 3)
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            want = _shuffles(x, a1, seed)
        with warnings.catch_warnings(record=True) as w2:
            warnings.simplefilter("always")
            got = cf(x, a2, seed)
        assert [str(m.message) for m in w1] == [str(m.message) for m in w2] == []
        for u, v in zip(want[:4], got[:4]):     # the shuffled values: exactly
            if isinstance(u, np.ndarray):
                assert u.dtype == v.dtype and np.array_equal(u, v)
            else:
                assert u == v
        for u, v in zip(want[4:], got[4:]):     # sums of them: within rounding
            np.testing.assert_allclose(v, u, rtol=1e-12)
        assert np.array_equal(a1, a2)
    assert any(i["captured"] for i in cf._loop_info())


# A helper module's function with no source numdyn could rewrite (exec'd:
# a REPL, generated code): numdyn remaps its `np`, and the shim's
# np.random.shuffle hands NumPy the real array (a recorded graph break).
_NOSRC = {"np": np}
exec("def shuffle_rows(x, seed):\n"
     "    np.random.seed(seed)\n"
     "    np.random.shuffle(x)\n"
     "    return x\n", _NOSRC)
shuffle_rows = _NOSRC["shuffle_rows"]


def _factory(helper):
    def via_closure(x, arg, seed):
        y = x * 2 + 1          # a computed 2-D array
        helper(y, seed)        # a helper held by a closure variable
        shuffle_rows(arg, seed + 1)  # an argument, by the no-source helper
        z = x - 1
        shuffle_rows(z, seed + 2)
        return y, z, y.sum(0) + z.sum(0)
    return via_closure


def _shuffle_in_user_code(x, seed):
    np.random.seed(seed)
    np.random.shuffle(x)


def test_shuffle_from_helpers_is_numpys():
    x = np.random.default_rng(2).standard_normal((7, 3))
    for helper in (_shuffle_in_user_code, shuffle_rows):
        fn = _factory(helper)
        cf = numdyn.compile(fn)
        for seed in range(2):
            a1, a2 = np.arange(12.0).reshape(4, 3), np.arange(12.0).reshape(4, 3)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # NumPy's "not a Sequence" warning fails
                want, got = fn(x, a1, seed), cf(x, a2, seed)
            for u, v in zip(want, got):
                assert u.dtype == v.dtype and np.array_equal(u, v)
            assert np.array_equal(a1, a2)
    e = numdyn.explain(cf, x, np.zeros((4, 3)), 0)
    assert any("numpy.random.shuffle" in b.reason for b in e.break_reasons)
