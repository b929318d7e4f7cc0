"""Errors that depend on the data are raised inside the user's try/with
block (trace_handlers.c), and lazy values the function leaves in its
caller's objects become NumPy's values when the call ends
(trace_escapes.c). Every case is compared with plain NumPy, on several
calls (the first traces, later ones may replay)."""
import contextlib
import dataclasses
import json

import numpy as np
import pytest

import numdyn


def _cholesky_or_none(A):
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    return L.sum()


def _inv_or_zeros(A):
    try:
        r = np.linalg.inv(A * 2.0)
    except np.linalg.LinAlgError:
        r = np.zeros_like(A)
    return r + 1


def _solve_in_helper(A, b):
    def helper(M, v):
        return np.linalg.solve(M, v)
    try:
        x = helper(A, b) * 3
        ok = True
    except np.linalg.LinAlgError as e:
        x, ok = b * 0, False
    return x, ok


def _errstate_raise(a, b):
    with np.errstate(divide="raise", invalid="raise"):
        try:
            r = a / b
            caught = False
        except FloatingPointError:
            r, caught = np.zeros_like(a), True
    return r, caught


def _suppress(A):
    out = np.eye(A.shape[0])
    with contextlib.suppress(np.linalg.LinAlgError):
        out = np.linalg.inv(A)
    return out * 2


def _bincount(x):
    try:
        return np.bincount(x)
    except ValueError as e:
        return str(e)


def _int_power(a, b):
    try:
        return a ** b
    except ValueError as e:
        return str(e)


SINGULAR = np.ones((3, 3))
SPD = np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]])


@pytest.mark.parametrize("fn,argsets", [
    (_cholesky_or_none, [(SPD,), (SINGULAR,), (-SPD,), (SPD,)]),
    (_inv_or_zeros, [(SPD,), (SINGULAR,), (SPD,), (SINGULAR,)]),
    (_solve_in_helper, [(SPD, np.ones(3)), (SINGULAR, np.ones(3)), (SPD, np.ones(3))]),
    (_errstate_raise, [(np.ones(4), np.ones(4)), (np.ones(4), np.array([1.0, 0, 2, 3])),
                       (np.ones(4), np.full(4, 2.0))]),
    (_suppress, [(SPD,), (SINGULAR,), (SINGULAR,), (SPD,)]),
    (_bincount, [(np.array([0, 1, 1, 3]),), (np.array([0, -1, 2]),), (np.array([2, 2]),)]),
    (_int_power, [(np.arange(4), np.array([1, 2, 0, 3])), (np.arange(4), np.array([1, -2, 0, 3])),
                  (np.arange(4), np.array([2, 2, 2, 2]))]),
])
def test_data_dependent_errors_reach_the_users_handler(fn, argsets):
    cf = numdyn.compile(fn)
    for _ in range(2):
        for args in argsets:
            want = fn(*args)
            got = cf(*args)
            if isinstance(want, tuple):
                assert type(got) is tuple and len(got) == len(want)
                for w, g in zip(want, got):
                    np.testing.assert_allclose(np.asarray(g), np.asarray(w))
            elif isinstance(want, np.ndarray):
                np.testing.assert_allclose(got, want)
                assert got.dtype == want.dtype
            else:
                assert got == want or (want is None and got is None)


def test_error_outside_any_handler_still_raises():
    def f(A):
        return np.linalg.inv(A) + 1
    with pytest.raises(np.linalg.LinAlgError):
        numdyn.compile(f)(SINGULAR)


class _Obj:
    pass


_GLOBAL_LOG = {}


def _leaves_values(a, hist, obj):
    loss = ((a - 1.0) ** 2).mean()
    hist.append(loss)
    hist.append(a * 2)
    obj.last = loss
    obj.arr = a.cumsum()
    _GLOBAL_LOG["max"] = a.max()
    return a.sum()


@pytest.mark.parametrize("floor", [True, False])
def test_values_left_in_callers_objects_are_numpys(floor):
    cf = numdyn.compile(_leaves_values, options={"floor": floor})
    h1, h2, o1, o2 = [], [], _Obj(), _Obj()
    for i in range(6):
        a = np.arange(5.0) + i
        r1 = _leaves_values(a, h1, o1)
        g1 = dict(_GLOBAL_LOG)
        r2 = cf(a, h2, o2)
        assert r2 == r1 and type(r2) is type(r1)
        assert dict(_GLOBAL_LOG).keys() == g1.keys()
        assert type(_GLOBAL_LOG["max"]) is np.float64 and _GLOBAL_LOG["max"] == g1["max"]
    assert len(h1) == len(h2) == 12
    for x, y in zip(h1, h2):
        assert type(x) is type(y)
        np.testing.assert_array_equal(x, y)
    assert type(o2.last) is np.float64 and type(o2.arr) is np.ndarray
    np.testing.assert_array_equal(o2.arr, o1.arr)
    # np.float64 is a Python float: json takes it, as it takes NumPy's
    assert json.dumps([float(x) for x in h1[::2]]) == json.dumps(h2[::2])


def test_nonlocal_cell_gets_the_value():
    best = None

    def step(a):
        nonlocal best
        best = a.min()
        return a * 2
    cf = numdyn.compile(step)
    cf(np.array([3.0, 1.0, 2.0]))
    assert type(best) is np.float64 and best == 1.0


def _mutates_containers(lst, d):
    lst.append(lst[0] * 2)
    lst[0] = lst[0] + 1
    d["y"] = d["x"] * 3
    del d["x"]
    return len(lst)


def test_list_and_dict_arguments_take_the_functions_changes():
    cf = numdyn.compile(_mutates_containers)
    for _ in range(3):
        l1, d1 = [np.ones(3)], {"x": np.ones(2)}
        l2, d2 = [np.ones(3)], {"x": np.ones(2)}
        assert _mutates_containers(l1, d1) == cf(l2, d2)
        assert len(l1) == len(l2) and list(d1) == list(d2)
        for x, y in zip(l1 + list(d1.values()), l2 + list(d2.values())):
            assert type(y) is np.ndarray
            np.testing.assert_array_equal(x, y)


def _sgd_step(params, grads, lr):
    for k in params:
        params[k] = params[k] - lr * grads[k]
    params["b"] += 1
    return sum(float(v.sum()) for v in params.values())


def test_params_dict_update_reaches_the_caller():
    cf = numdyn.compile(_sgd_step)
    g = {"W": np.full((2, 2), 0.5), "b": np.ones(2)}
    p1 = {"W": np.ones((2, 2)), "b": np.zeros(2)}
    p2 = {"W": np.ones((2, 2)), "b": np.zeros(2)}
    for _ in range(5):
        assert _sgd_step(p1, g, 0.1) == cf(p2, g, 0.1)
        for k in p1:
            np.testing.assert_array_equal(p1[k], p2[k])


def test_arrays_in_a_list_keep_their_identity():
    def f(lst):
        lst[0] += 1
        lst[1][...] = 7
    a, b = np.zeros(2), np.zeros(3)
    lst = [a, b]
    numdyn.compile(f)(lst)
    assert lst[0] is a and lst[1] is b
    np.testing.assert_array_equal(a, [1, 1])
    np.testing.assert_array_equal(b, [7, 7, 7])


def test_values_left_on_a_callable_object_are_numpys():
    class Model:  # callable, like a torch module
        def __init__(self):
            self.w = np.ones(3)

        def __call__(self, x):
            self.last = (x * self.w).sum()
            self.act = np.tanh(x)
            return x * 2
    m = Model()
    step = numdyn.compile(m.__call__)
    step(np.arange(3.0))
    assert type(m.last) is np.float64 and m.last == 3.0
    assert type(m.act) is np.ndarray


@dataclasses.dataclass
class _Fit:
    coef: np.ndarray
    loss: float
    extra: tuple


class _Report:
    pass


def _returns_objects(a):
    rep = _Report()
    rep.parts = {"scaled": a * 2, "peaks": [a.max(), a.min()]}
    rep.span = (np.ptp(a), (a.sum(),))
    return [_Fit(a.cumsum(), a.mean(), (a.std(),)), rep], a.var()


@pytest.mark.parametrize("floor", [True, False])
def test_objects_returned_hold_numpys_values(floor):
    """A dataclass or plain object built in the function and returned (even
    inside a list) holds ndarrays and NumPy scalars, never LazyArray:
    its attributes, and the dicts, lists and tuples under them."""
    cf = numdyn.compile(_returns_objects, options={"floor": floor})
    for i in range(4):
        a = np.arange(6.0) * (i + 1) - 2
        (f1, r1), v1 = _returns_objects(a)
        (f2, r2), v2 = cf(a)
        assert type(v2) is type(v1) and v2 == v1
        for x, y in [(f1.coef, f2.coef), (f1.loss, f2.loss), (f1.extra[0], f2.extra[0]),
                     (r1.parts["scaled"], r2.parts["scaled"]), (r1.parts["peaks"][0], r2.parts["peaks"][0]),
                     (r1.parts["peaks"][1], r2.parts["peaks"][1]), (r1.span[0], r2.span[0]),
                     (r1.span[1][0], r2.span[1][0])]:
            assert type(y) is type(x), (type(x), type(y))
            np.testing.assert_array_equal(y, x)
