"""A dim marked dynamic that the captured graph pins to a constant size
raises torch's ConstraintViolationError, naming the dim (issue 15, point 4).

Constant are dims marked static (every dim under dynamic=False) and the
arrays a function reads from outside its arguments (globals, closure cells,
a model's attributes); arrays made during the call (np.zeros(n),
np.random) are not, nor are unmarked arguments (numdyn is shape-generic).
The check is the tracer's, before anything of the graph runs, so the eager
backend shows it without compiling C."""
import numpy as np
import pytest

import numdyn

_B = np.arange(4.0)
_W = np.ones((4, 3))


class _Model:
    def __init__(self):
        self.w = np.linspace(0.0, 1.0, 4)

    def forward(self, x):
        return (x * self.w).sum(axis=-1)


def _closure():
    c = np.ones(4)
    return lambda x: np.maximum(x, c)


def _marked(shape, dims):
    x = np.random.default_rng(0).random(shape)
    numdyn.mark_dynamic(x, dims)
    return x


def _fresh(x):
    return x + np.zeros(x.shape[0]) + np.random.default_rng(1).random(len(x))


def test_graph_pinning_a_dynamic_dim_raises_naming_it():
    pinned = [
        (lambda x: x + _B, (4,), 0, "broadcasts it against"),          # a global
        (lambda x: x.T + _B, (4, 3), 0, "broadcasts it against"),      # through a view
        (lambda x: x @ _W, (2, 4), 1, "contracts it with"),            # matmul with fixed weights
        (_closure(), (4,), 0, "broadcasts it against"),                # a closure cell
    ]
    for fn, shape, dim, how in pinned:
        x = _marked(shape, dim)
        with pytest.raises(numdyn.ConstraintViolationError,
                           match=rf"dim {dim} of argument 0 of .*marked with numdyn.mark_dynamic.*\n"
                                 rf".*inferred to be a constant \(4\): the graph {how}"):
            numdyn.compile(fn, backend="eager")(x)
    # a model's weights (numdyn.compile of an object; argument 0 is x)
    m = numdyn.compile(_Model(), backend="eager")
    with pytest.raises(numdyn.ConstraintViolationError, match=r"dim 1 of argument 0 of _Model.forward"):
        m(_marked((3, 4), 1))
    # a dim marked static, or dynamic=False, is a constant too
    y = np.ones(4)
    numdyn.mark_static(y)
    mul = lambda x, y: x * y  # noqa: E731
    with pytest.raises(numdyn.ConstraintViolationError, match="dim 0 of argument 0"):
        numdyn.compile(mul, backend="eager")(_marked((4,), 0), y)
    with pytest.raises(numdyn.ConstraintViolationError, match="dim 0 of argument 0"):
        numdyn.compile(mul, backend="eager", dynamic=False)(_marked((4,), 0), np.ones(4))


def test_what_does_not_pin_runs_as_numpy():
    ok = [
        (lambda x: x @ _W, (5, 4), 0),            # the batch dim is free
        (_fresh, (4,), 0),                        # arrays the call makes from its size
        (lambda x: x - x.mean(0), (4, 3), 0),     # reduced, then broadcast back
        (lambda x: x + x.T, (4, 4), [0, 1]),      # two dynamic dims meeting
        (lambda x, y: x * y, (4,), 0),            # an unmarked argument (shape-generic)
    ]
    for fn, shape, dims in ok:
        x = _marked(shape, dims)
        args = (x, np.ones(4)) if fn.__code__.co_argcount == 2 else (x,)
        np.testing.assert_allclose(numdyn.compile(fn, backend="eager")(*args), fn(*args))
    m = _Model()
    x = _marked((3, 4), 0)
    np.testing.assert_allclose(numdyn.compile(m, backend="eager")(x), m.forward(x))
    # an attribute array marked dynamic itself is no constant
    m.w = _marked((4,), 0)
    x = _marked((3, 4), 1)
    np.testing.assert_allclose(numdyn.compile(m, backend="eager")(x), m.forward(x))


def test_sizes_written_as_constants_pin_a_dynamic_dim():
    # numdyn has no symbolic sizes: a literal in the code (np.zeros(8), x[:7],
    # x.reshape(4, -1)) fixes a dim marked dynamic as torch's guards would
    pinned = [
        (lambda x: x.reshape(4, -1), "reshapes it with sizes written as constants"),
        (lambda x: np.reshape(x, (2, 12)), "reshapes it to sizes written as constants"),
        (lambda x: np.zeros(8) + x[:, 0], r"graph broadcasts it against"),
        (lambda x: x + np.ones((8, 3)), r"graph broadcasts it against"),
        (lambda x: x[:7] * 2, "slices it with bounds written as constants"),
        (lambda x: x[2:5] * 2, "slices it with bounds written as constants"),
        (lambda x: x[-3:] * 2, "slices it with bounds written as constants"),
        (lambda x: x[3] * 2, "indexes it at a position written as a constant"),
        (lambda x: x[-4, 1] * 2, "indexes it at a position written as a constant"),
    ]
    for fn, how in pinned:
        with pytest.raises(numdyn.ConstraintViolationError,
                           match=rf"dim 0 of argument 0 of .*\n.*inferred to be a constant .*: (the )?.*{how}"):
            numdyn.compile(fn, backend="eager")(_marked((8, 3), 0))
    # sizes from the dim itself, and what holds for every size, run as NumPy
    free = [
        lambda x: x.reshape(-1, 3), lambda x: x.reshape(-1), lambda x: x.reshape(x.shape[0], 3),
        lambda x: x.reshape(len(x) // 2, -1), lambda x: np.zeros(len(x)) + x[:, 0],
        lambda x: np.zeros(x.shape[0]) + x[:, 0], lambda x: np.ones(3) + x, lambda x: x[1:] * 2,
        lambda x: x[:-1] * 2, lambda x: x[::2] * 2, lambda x: x[:, :2] * 2,
        lambda x: x[: len(x) - 1] * 2, lambda x: x[0] + x[1] + x[-1] + x[-2], lambda x: x[:, 2],
        lambda x: x[len(x) - 3],
    ]
    for fn in free:
        x = _marked((8, 3), 0)
        np.testing.assert_allclose(numdyn.compile(fn, backend="eager")(x), fn(x))
