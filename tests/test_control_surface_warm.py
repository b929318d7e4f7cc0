"""Warm calls pay for what they do, not for what the module holds.

A traced call ends by settling lazy values it left in its caller's objects
(trace_escapes.c). The walk that finds them covers arguments, cells and the
function's globals; it now runs only when some lazy value of the call has a
reference its result does not explain. These tests check both sides: a
module full of data is not walked on a warm call that left nothing behind,
and every way of leaving a lazy value behind is still settled (compared
with plain NumPy's types and values)."""
import copy
import dataclasses

import numpy as np
import pytest

import numdyn

# module data a walk of the globals would visit on every call
BIG = [float(i) for i in range(5000)]
TABLE = {f"k{i}": [i, i + 1] for i in range(200)}
HIST = []
STATS = {}
PAIR = None
ALIAS = None


def _walks():
    return numdyn.utils.counters["escape_walks"]


def _break(x):
    # a graph break: the function is traced on every call (no replay)
    if x.sum() > 0:
        return x * 2.0 + 1.0
    return x - 1.0


def _returns_containers(x):
    y = x + 1.0
    return [y, (y * 2.0, {"s": y.sum()})], y.max()


@pytest.mark.parametrize("fn", [_break, _returns_containers])
def test_warm_call_does_not_walk_module_globals(fn):
    c = numdyn.compile(fn, options={"floor": False})
    x = np.arange(6.0)
    c(x)
    before = _walks()
    for _ in range(5):
        r = c(x)
    assert _walks() == before
    expect = fn(x)
    assert type(r) is type(expect)
    np.testing.assert_equal(r, expect)


def _appends_global_and_returns_it(x):
    y = x * 3.0
    HIST.append(y.sum())
    return HIST


def _global_alias_of_result(x):
    global ALIAS
    y = x - 2.0
    ALIAS = y
    return y


def _tuple_in_global(x):
    global PAIR
    PAIR = (x + 1.0, x.mean())
    return x * 0.5


def _dict_in_global(x):
    s = x.sum()
    STATS["s"] = s
    return [s]


@dataclasses.dataclass
class _Res:
    a: object
    b: object


def _returns_dataclass(x):
    return _Res(x + 1.0, (x * 2.0).sum())


def _same_list_twice(x, lst):
    lst.append(x * 4.0)
    return (lst, lst)


def _reset():
    global PAIR, ALIAS
    HIST.clear()
    STATS.clear()
    PAIR = ALIAS = None


def _plain_types(o):
    if isinstance(o, (list, tuple)):
        return [_plain_types(v) for v in o]
    if isinstance(o, dict):
        return {k: _plain_types(v) for k, v in o.items()}
    if dataclasses.is_dataclass(o):
        return [_plain_types(o.a), _plain_types(o.b)]
    return type(o)


@pytest.mark.parametrize("fn,where", [
    (_appends_global_and_returns_it, lambda: HIST),
    (_global_alias_of_result, lambda: ALIAS),
    (_tuple_in_global, lambda: PAIR),
    (_dict_in_global, lambda: STATS),
    (_returns_dataclass, None),
])
def test_values_left_behind_are_still_settled(fn, where):
    x = np.arange(5.0)
    c = numdyn.compile(fn, options={"floor": False})
    for _ in range(3):
        _reset()
        expect = fn(x)
        same = where is not None and where() is expect
        want = _plain_types(expect)
        left = copy.deepcopy(where()) if where else None
        _reset()
        before = _walks()
        got = c(x)
        assert _plain_types(got) == want
        if where:
            assert (got is where()) == same
            assert _plain_types(where()) == _plain_types(left)
            np.testing.assert_equal(where(), left)
        assert _walks() > before


def test_list_argument_returned_twice_is_settled():
    c = numdyn.compile(_same_list_twice, options={"floor": False})
    x = np.arange(3.0)
    lst = []
    before = _walks()
    a, b = c(x, lst)
    assert a is b is lst
    assert [type(v) for v in lst] == [np.ndarray]
    np.testing.assert_equal(lst[0], x * 4.0)
    assert _walks() > before


class _Model:
    def __init__(self):
        self.w = np.full(6, 0.5)

    def __call__(self, x):
        # w * x reaches the trace through w's __array_ufunc__, x - 1.0
        # through the proxy's operator: both ask whether arithmetic may raise
        return np.sqrt(self.w * x - 1.0)


def _queries():
    return numdyn.utils.counters["errstate_queries"]


def test_errstate_is_asked_once_per_state_not_per_operation():
    m = _Model()
    c = numdyn.compile(m.__call__, options={"floor": False})
    x = np.arange(6.0) + 3.0
    c(x)
    before = _queries()
    for _ in range(5):
        r = c(x)
    assert _queries() == before
    np.testing.assert_allclose(r, m(x))
    # a new error state is asked about again, and decides as NumPy does
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            m(-x)
        with pytest.raises(FloatingPointError):
            c(-x)
    assert _queries() > before
    with pytest.warns(RuntimeWarning, match="invalid value"):
        r = c(-x)
    assert np.isnan(r).all()


def _caught(w, x):
    with np.errstate(divide="raise"):
        try:
            return w / x, False
        except FloatingPointError:
            return np.zeros_like(x), True


def test_errstate_raise_inside_the_function_is_caught_there():
    c = numdyn.compile(_caught, options={"floor": False})
    w = np.ones(4)
    for x in (np.arange(1.0, 5.0), np.arange(4.0), np.arange(1.0, 5.0)):
        r, caught = c(w, x)
        r0, caught0 = _caught(w, x)
        assert caught == caught0
        np.testing.assert_array_equal(r, r0)


def _reads_params(p, x):
    return np.tanh(x * p["w"] + p["b"])


def _reorders(p, x):
    w = p.pop("w")       # same keys, same values, another order
    p["w"] = w
    return x * p["b"]


def _replaces(p, x):
    p["b"] = p["b"] + 1.0  # same keys, a new value
    return x * p["w"]


def _nested(p, x):
    p["inner"]["s"] = x.sum()  # the outer dict unchanged, the inner one not
    return x * p["w"]


@pytest.mark.parametrize("fn", [_reads_params, _reorders, _replaces, _nested])
def test_dict_argument_changes_reach_the_caller(fn):
    c = numdyn.compile(fn, options={"floor": False})
    x = np.arange(4.0)
    for _ in range(3):
        pa = {"w": np.full(4, 0.5), "b": np.ones(4), "inner": {}}
        pb = {"w": pa["w"], "b": pa["b"], "inner": {}}
        w_id = id(pa["w"])
        ra, rb = fn(pa, x), c(pb, x)
        np.testing.assert_allclose(rb, ra, rtol=1e-15)
        assert list(pb) == list(pa)
        assert id(pb["w"]) == w_id
        for k in pa:
            if k == "inner":
                assert pb[k].keys() == pa[k].keys()
                assert all(type(pb[k][j]) is type(pa[k][j]) for j in pa[k])
            else:
                assert type(pb[k]) is np.ndarray
                np.testing.assert_array_equal(pb[k], pa[k])
