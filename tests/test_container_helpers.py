"""Helper functions reached through containers -- a dict or list of
functions (`ops["act"](x)`, `fns[k](x)`), a container held by an object
(`self.layers[i](x)`, `self.blocks[0].forward(x)`) -- see numdyn's np as
helpers called by name and methods do (loop_rewrite.c wraps such calls
in __numdyn_callee__ too). Before, they ran with NumPy's np: a helper
that makes its output with np.zeros and fills it took the value out of
the graph (a break, and numdyn.grad refused the gradient)."""
import numpy as np
import pytest

import numdyn


def shift(x):
    out = np.zeros(x.shape)
    out[1:] = x[:-1] * 2.0
    return out


def relu(x):
    out = np.zeros(x.shape)
    np.maximum(x, 0.0, out=out)
    return out


OPS = {"shift": shift, "relu": relu}
FNS = [shift, relu]


class Block:
    def forward(self, x):
        return shift(x) + 1.0


class Model:
    act = staticmethod(relu)  # a class attribute holding a function

    def __init__(self):
        self.layers = [shift, relu]
        self.ops = dict(OPS)
        self.blocks = [Block()]

    def __call__(self, x):
        y = self.layers[0](x)
        y = self.ops["relu"](y - 1.0)
        y = self.blocks[0].forward(y)
        return self.act(y - 2.0)


def through_dict(x):
    return OPS["shift"](x) + OPS["relu"](x)


def through_list(x):
    y = x
    for k in range(2):
        y = FNS[k](y)
    return y * 3.0


def through_local_dict(x):
    ops = {"act": relu, "sh": shift}
    return ops["act"](ops["sh"](x) - 1.0)


M = Model()


def through_object(x):
    return M(x) + 1.0


@pytest.mark.parametrize("fn", [through_dict, through_list, through_local_dict, through_object])
def test_one_graph_and_numpys_values(fn):
    x = np.linspace(-2, 2, 9)
    want = fn(x)
    f = numdyn.compile(fn)
    np.testing.assert_array_equal(f(x), want)
    e = numdyn.explain(f, x)
    assert e.graph_break_count == 0, [str(b) for b in e.break_reasons]
    np.testing.assert_array_equal(f(x + 1), fn(x + 1))


@pytest.mark.parametrize("fn", [through_dict, through_list, through_object])
def test_gradient_flows_through_container_helpers(fn):
    x = np.linspace(-2, 2, 9) + 0.05

    def loss(x):  # fn: a closure variable holding the function
        return np.sum(fn(x) ** 2)
    g = numdyn.grad(loss)(x)
    eps = 1e-6
    num = np.array([(np.sum(fn(x + eps * e) ** 2) - np.sum(fn(x - eps * e) ** 2)) / (2 * eps)
                    for e in np.eye(x.size)])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6)


def test_numpy_functions_in_containers_stay_numpys():
    fns = {"exp": np.exp, "sum": np.sum}

    def f(x):
        return fns["sum"](fns["exp"](x))
    x = np.arange(4.0)
    np.testing.assert_allclose(numdyn.compile(f)(x), f(x), rtol=1e-14)
