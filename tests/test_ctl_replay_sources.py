"""Warm calls never return a stale result when the arrays or Python data a
function reads reach it from outside its arguments (issue 15, point 1).

A compiled function's later calls may replay a recorded trace without running
its Python code. Whatever the function reads from globals, closure cells,
defaults, object attributes, and Python lists turned into arrays
(`np.asarray(list)`, `np.array(...)`) may change between calls -- rebound,
mutated in place -- and each call must see the new values, exactly as NumPy
does. Every case below is called five times with a change between calls; the
floor is off so numdyn's own path (capture, replay, kernels) is what runs."""
import types

import numpy as np
import pytest

import numdyn

OPTS = {"floor": False}

G = np.arange(4.0)
S = 2.0
L = [1.0, 2.0, 3.0, 4.0]
NL = [[1.0, 2.0], [3.0, 4.0]]
T = (1.0, 2.0, 3.0, 4.0)
D = {"k": np.ones(4), "s": 1.0}
MOD = types.ModuleType("ctl_probe_mod")
MOD.C, MOD.A = 2.0, np.ones(4)


class Obj:
    w = np.ones(4)
    s = 3.0


def _rebind(name, value):
    globals()[name] = value


def _closure():
    c = np.ones(4)

    def f(x):
        return x + c

    def set_all(i):
        c[:] = i * 3.0

    return f, set_all


def _closure_rebound():
    c = np.ones(4)

    def f(x):
        return x + c

    def rebind(i):
        nonlocal c
        c = np.full(4, i * 9.0)

    return f, rebind


def _default_list(x, l=[1.0, 2.0, 3.0, 4.0]):  # noqa: B006 -- the mutable default is the point
    return x + np.asarray(l)


def _cases():
    c1, m1 = _closure()
    c2, m2 = _closure_rebound()
    return {
        "global array rebound": (lambda x: x * G + 1, lambda i: _rebind("G", np.arange(4.0) * (i + 2))),
        "global array written": (lambda x: x * G + 1, lambda i: G.__setitem__(1, i + 100.0)),
        "global float rebound": (lambda x: x * S, lambda i: _rebind("S", S + 1.0)),
        "closure array written": (c1, m1),
        "closure cell rebound": (c2, m2),
        "default list written": (_default_list, lambda i: _default_list.__defaults__[0].__setitem__(0, i * 5.0)),
        "object attribute rebound": (lambda x: x * Obj.w + Obj.s, lambda i: setattr(Obj, "w", np.full(4, i + 5.0))),
        "object attribute written": (lambda x: x * Obj.w + Obj.s, lambda i: Obj.w.__setitem__(2, i * 7.0)),
        "object float attribute": (lambda x: x * Obj.w + Obj.s, lambda i: setattr(Obj, "s", i * 7.0)),
        "module attributes": (lambda x: x * MOD.C + MOD.A,
                              lambda i: (setattr(MOD, "C", i + 3.0), setattr(MOD, "A", MOD.A + 1))),
        "dict item rebound": (lambda x: x + D["k"] * D["s"], lambda i: D.__setitem__("k", np.full(4, i * 2.0))),
        "dict float item": (lambda x: x + D["k"] * D["s"], lambda i: D.__setitem__("s", i + 0.5)),
        "asarray(list) element": (lambda x: x + np.asarray(L), lambda i: L.__setitem__(0, i * 11.0)),
        "asarray(list) rebound": (lambda x: x + np.asarray(L), lambda i: _rebind("L", [i * 1.0, 2.0, 3.0, 5.0])),
        "array(list, dtype)": (lambda x: x + np.array(L, dtype=np.float32), lambda i: L.__setitem__(3, i * 0.5)),
        "array(tuple) rebound": (lambda x: x * np.array(T), lambda i: _rebind("T", (float(i), 2.0, 3.0, 4.0))),
        "nested list written": (lambda x: x.reshape(2, 2) @ np.array(NL), lambda i: NL[1].__setitem__(1, i * 13.0)),
        "array of a global float": (lambda x: x * np.array([S, 1.0, S, 1.0]), lambda i: _rebind("S", i + 7.0)),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_warm_calls_see_changed_outside_data(name):
    f, change = _cases()[name]
    cf = numdyn.compile(f, options=OPTS)
    x = np.linspace(0.5, 2.0, 4)
    for i in range(5):
        want = f(x.copy())
        got = cf(x)
        assert type(got) is type(want) and got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: call {i}")
        change(i)


def test_python_data_arguments_and_attributes_of_arguments():
    class P:
        pass

    p = P()
    p.a = np.ones(4)
    lst = [1.0, 2.0, 3.0, 4.0]

    def f(x, q, l):
        return x + q.a * np.asarray(l)

    cf = numdyn.compile(f, options=OPTS)
    x = np.ones(4)
    for i in range(6):
        np.testing.assert_array_equal(cf(x, p, lst), f(x, p, lst), err_msg=f"call {i}")
        if i % 3 == 0:
            p.a = np.full(4, i * 8.0)      # rebound attribute
        elif i % 3 == 1:
            p.a[0] = i * 8.0 + 1           # written in place
        else:
            lst[2] = -i                    # the list argument changed in place


def test_guarded_globals_are_replayed_and_a_rebinding_misses():
    """The guards do work: calls with unchanged guarded globals replay (no
    Python runs), a rebound global misses and is traced again."""
    def f(x):
        return x * S + 1.0

    cf = numdyn.compile(f, options=OPTS)
    x = np.ones(4)
    cf(x)
    numdyn.utils.wait_compiles()
    cf(x)
    c = numdyn.utils.counters
    r0, m0 = c["replays"], c["replay_misses"]
    np.testing.assert_array_equal(cf(x), f(x))
    assert c["replays"] == r0 + 1
    _rebind("S", S + 1.0)
    np.testing.assert_array_equal(cf(x), f(x))
    assert c["replay_misses"] >= m0 + 1
