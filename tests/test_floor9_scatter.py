"""np.bincount in the graph (its length from the argument's data, a replay
data guard) and ufunc.at's direct loop (add/subtract/multiply/maximum/
minimum in index order), against NumPy: values, dtypes, exceptions,
repeated / negative / out-of-range indices, empty inputs, other dtypes."""
import numpy as np
import pytest

import numdyn

from oracle import assert_same

OWN = {"floor": False}


def _same(a, b):
    # sequential accumulation in index order, as NumPy: bit-identical
    assert_same(a, b, rtol=0, atol=0)


def _check(fn, *args):
    cf = numdyn.compile(fn, options=OWN)
    want = fn(*args)
    for _ in range(3):  # traced, then replayed
        _same(want, cf(*args))
    return cf


def _raises(fn, *args):
    with pytest.raises(Exception) as e_np:
        fn(*args)
    cf = numdyn.compile(fn, options=OWN)
    with pytest.raises(type(e_np.value)) as e_nd:
        cf(*args)
    assert str(e_nd.value) == str(e_np.value)


def _breaks(fn, *args):
    return numdyn.explain(fn)(*args).graph_break_count


# ---------------------------------------------------------------- bincount

def groupby(keys, vals, k):
    cnt = np.bincount(keys, minlength=k)
    s = np.bincount(keys, weights=vals, minlength=k)
    s2 = np.bincount(keys, weights=vals * vals, minlength=k)
    return cnt, s / np.maximum(cnt, 1), s2


def counts(x):
    return np.bincount(x)


def counts_w(x, w):
    return np.bincount(x, w) * 2


def counts_min(x, w, k):
    return np.bincount(x, weights=w, minlength=k) + 1


rng = np.random.default_rng(9)
KEYS = rng.integers(0, 50, 300)
VALS = rng.standard_normal(300)


def test_bincount_groupby_in_graph_and_replayed():
    cf = _check(groupby, KEYS, VALS, 50)
    assert _breaks(groupby, KEYS, VALS, 50) == 0
    info = cf._replay_info()
    assert info["entries"] == 1 and info["hits"] >= 2, info


def test_bincount_replay_guard_retraces_on_another_length():
    cf = _check(counts_min, KEYS, VALS, 10)  # max(keys) + 1 > minlength: data's length
    k2 = KEYS.copy()
    k2[7] = 60                                # a longer result
    _same(counts_min(k2, VALS, 10), cf(k2, VALS, 10))
    k3 = KEYS % 5                             # a shorter one (minlength wins)
    _same(counts_min(k3, VALS, 10), cf(k3, VALS, 10))
    assert cf._replay_info()["last_miss"] is not None
    _same(counts_min(KEYS, VALS, 10), cf(KEYS, VALS, 10))  # the first entry again


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.uint8, np.int16, np.uint32])
def test_bincount_index_dtypes(dt):
    _check(counts, KEYS.astype(dt))


@pytest.mark.parametrize("wdt", [np.float64, np.float32, np.float16, np.int64, np.bool_])
def test_bincount_weight_dtypes(wdt):
    _check(counts_w, KEYS, (VALS * 3).astype(wdt))


def test_bincount_repeated_and_nan_weights():
    x = np.array([3, 3, 3, 0, 3, 1])
    w = np.array([1e16, 1.0, -1e16, np.nan, 1.0, np.inf])
    _check(counts_w, x, w)


def test_bincount_empty():
    _check(counts, np.array([], dtype=np.int64))
    _check(counts_min, np.array([], dtype=np.int64), np.array([]), 4)


def test_bincount_errors_are_numpys():
    _raises(counts, np.array([1, -2, 3]))                           # negative
    _raises(counts_w, np.array([1, 2, 3]), np.array([1.0, 2.0]))    # lengths
    _raises(counts_w, np.array([1, 2]), np.array([1j, 2j]))         # complex weights
    _raises(counts, np.array([1.5, 2.0]))                           # float x
    _raises(counts, np.array([[1, 2]]))                             # 2-D x
    _raises(counts_min, np.array([1, 2]), None, -1)                 # negative minlength


def test_bincount_of_a_computed_array_breaks_and_is_right():
    def f(x):
        return np.bincount(x // 2, minlength=3)
    _check(f, KEYS)


def test_bincount_of_a_global_is_not_replayed_stale():
    g = {"X": KEYS.copy()}
    exec("import numpy as np\ndef f(w):\n    return np.bincount(X, w)\n", g)
    f = g["f"]
    cf = numdyn.compile(f, options=OWN)
    _same(f(VALS), cf(VALS))
    g["X"][5] = 77   # same object, longer result
    _same(f(VALS), cf(VALS))


# ---------------------------------------------------------------- ufunc.at

def at_op(uf):
    def f(n, idx, v):
        y = np.ones(n, dtype=v.dtype) * 3
        uf.at(y, idx, v * 2)
        return y
    return f


IDX = np.array([0, 5, 5, -1, 2, 5, -10, 0])


@pytest.mark.parametrize("uf", [np.add, np.subtract, np.multiply, np.maximum, np.minimum])
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int32])
def test_ufunc_at_direct(uf, dt):
    v = np.array([1.5, -2.0, 7.0, 0.25, 3.0, -8.5, 4.0, 11.0]).astype(dt)
    _check(at_op(uf), 10, IDX, v)


@pytest.mark.parametrize("uf", [np.add, np.maximum, np.minimum])
def test_ufunc_at_nan_and_signed_zero(uf):
    v = np.array([np.nan, -0.0, 1.0, np.nan, -np.inf, 0.0, 2.0, -0.0])
    with np.errstate(invalid="ignore"):
        _check(at_op(uf), 10, IDX, v)


@pytest.mark.parametrize("uf", [np.add, np.maximum])
def test_ufunc_at_fp_errors_follow_errstate(uf):
    # NaN compared (maximum), inf - inf (add): NumPy's FP flags, by errstate
    v = np.array([np.nan, np.inf, -np.inf, 1.0, 0.0, 2.0, 3.0, 4.0])
    _raises_in(at_op(uf), 10, IDX, v)
    with np.errstate(invalid="ignore"):
        _check(at_op(uf), 10, IDX, v)
    cf = numdyn.compile(at_op(uf), options=OWN)
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="invalid value"):
            cf(10, IDX, v)


def _raises_in(fn, *args):
    with np.errstate(invalid="raise"):
        _raises(fn, *args)


@pytest.mark.parametrize("dt", [np.float16, np.complex128, np.int8, np.uint16])
def test_ufunc_at_other_dtypes(dt):
    v = np.array([1, 2, 3, 4, 5, 6, 7, 100]).astype(dt)
    _check(at_op(np.add), 10, IDX, v)


def test_ufunc_at_int_wraps():
    v = np.array([2**62, 2**62, 2**62, 1, 1, 1, 1, 1], dtype=np.int64)
    _check(at_op(np.add), 10, np.array([1, 1, 1, 1, 1, 1, 1, 1]), v)
    _check(at_op(np.multiply), 10, np.array([1, 1, 1, 1, 1, 1, 1, 1]), v)


def test_ufunc_at_empty_and_scalar_value():
    _check(at_op(np.add), 10, np.array([], dtype=np.int64), np.array([]))

    def f(idx):
        y = np.zeros(6)
        np.add.at(y, idx, 2.5)
        return y
    _check(f, IDX % 6)


def test_ufunc_at_out_of_range_raises_numpys_error():
    v = np.arange(8.0)
    _raises(at_op(np.add), 10, np.array([0, 1, 2, 3, 10, 5, 6, 7]), v)
    _raises(at_op(np.maximum), 10, np.array([0, 1, 2, 3, -11, 5, 6, 7]), v)


def coo(rows, cols, data, x, n):
    y = np.zeros(n)
    np.add.at(y, rows, data * x[cols])
    return y


def test_coo_matvec():
    r, c = rng.integers(0, 40, 400), rng.integers(0, 40, 400)
    _check(coo, r, c, rng.standard_normal(400), rng.standard_normal(40), 40)
