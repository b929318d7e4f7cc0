"""Methods of user objects a compiled function calls (`self.helper(x)`,
`obj.helper(x)`) see the shim as their `np`, as helpers called by a global
name do (loop_rewrite.c wraps such calls in __numdyn_callee__, which binds
the method's remapped copy to the same object). Before, the method ran with
NumPy's np: `out = np.zeros(...)` made a real array, and storing a lazy
value into it was a graph break at that line."""
import numpy as np
import pytest

import numdyn


class Base:
    def pre(self, x):
        return x * 1.0


class Shifter(Base):
    def __init__(self, k):
        self.k = k
        self.calls = 0

    def helper(self, x):
        self.calls += 1  # an attribute write lands on the object itself
        out = np.zeros(x.shape)
        out[1:] = x[:-1] * self.k
        return out

    def forward(self, x):
        return self.helper(super().pre(x)) + 1

    def __call__(self, x):
        return self.forward(x)


OBJ = Shifter(3.0)


def through_global(x):
    return OBJ.helper(x * 2) - 1


def assert_one_graph(fn, x, want):
    np.testing.assert_array_equal(fn(x), want)
    e = numdyn.explain(fn, x)
    assert e.graph_break_count == 0, [str(b) for b in e.break_reasons]
    assert e.graph_count == 1
    return e


def test_method_of_a_global_object():
    x = np.arange(6.0)
    want = through_global(x)
    f = numdyn.compile(through_global)
    calls = OBJ.calls
    assert_one_graph(f, x, want)
    assert OBJ.calls > calls


def test_self_method_in_a_compiled_bound_method_and_object():
    x = np.linspace(-1, 1, 7)
    for obj_k in (2.0, 5.0):
        m = Shifter(obj_k)
        want = m.forward(x)
        assert_one_graph(numdyn.compile(m.forward), x, want)
        assert_one_graph(numdyn.compile(m), x, want)
        assert m.calls >= 3


def test_array_methods_and_errors_are_untouched():
    class Bad:
        def helper(self, x):
            return np.zeros(3) + x  # NumPy's broadcast error, raised as NumPy raises it

    b = Bad()

    def f(x):
        return b.helper(x).sum() + x.reshape(-1).sum()
    try:
        f(np.ones(4))
    except ValueError as e:
        msg = str(e)
    fc = numdyn.compile(f)
    with pytest.raises(ValueError, match=msg.split("(")[0].strip()):
        fc(np.ones(4))
    np.testing.assert_allclose(fc(np.ones(3)), f(np.ones(3)))
