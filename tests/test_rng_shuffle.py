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
