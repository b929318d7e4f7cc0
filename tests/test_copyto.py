"""np.copyto in-graph: a functionalized write of dst (no graph break), with
NumPy's casting rules, broadcasting and where= masks, errors as NumPy's."""
import numpy as np
import pytest

import numdyn
from oracle import check

BACKENDS = ["eager", "native"]


def no_breaks(fn, *args):
    e = numdyn.explain(fn, *args)
    assert e.graph_break_count == 0, e.break_reasons


def basic(a, b):
    np.copyto(a[0], 7.0)
    np.copyto(a[1:3], b[0])
    np.copyto(a[3:], a[:-3] * 2)
    return a.sum()


def masked(a, b):
    np.copyto(a, b, where=a > 0.5)
    np.copyto(a[:, 1], -1.0, where=[True, False, True, False])
    return a


def overlapping(a):
    np.copyto(a[1:], a[:-1])
    np.copyto(a[:, ::-1], a)
    return a


def casting(a, f):
    np.copyto(a, f, casting="unsafe")
    np.copyto(a[0], 3)
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["C", "F", "strided", "negative"])
def test_copyto_values(backend, layout):
    rng = np.random.default_rng(0)
    base = rng.random((8, 10))
    make = {
        "C": lambda: np.ascontiguousarray(base[:4, :4]),
        "F": lambda: np.asfortranarray(base[:4, :4]),
        "strided": lambda: base[::2, 1::2][:4, :4],
        "negative": lambda: base[::-2, ::-2][:4, :4],
    }[layout]
    b = rng.random((4, 4))
    check(basic, make(), b, backend=backend)
    check(masked, make(), b, backend=backend)
    check(overlapping, make(), backend=backend)
    check(casting, np.zeros((4, 4), np.int32), b * 100, backend=backend)
    no_breaks(basic, make(), b)
    no_breaks(masked, make(), b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_copyto_dtypes_and_caller_buffer(backend):
    for dt in ["bool", "int8", "uint16", "int64", "float32", "complex64"]:
        a = np.zeros((3, 4), dt)
        src = (np.arange(12).reshape(3, 4) % 3).astype(dt)
        check(lambda a, s: (np.copyto(a, s), a)[1], a, src, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_copyto_errors_are_numpys(backend):
    def bad_cast(a, f):
        np.copyto(a, f)  # same_kind: float64 -> int32 refused
        return a

    def bad_shape(a, b):
        np.copyto(a, b)
        return a

    def overflow(a):
        np.copyto(a, 300)
        return a

    def bad_where(a, b):
        np.copyto(a, b, where=np.ones((2, 2), bool))
        return a

    check(bad_cast, np.zeros((2, 3), np.int32), np.ones((2, 3)), backend=backend)
    check(bad_shape, np.zeros((2, 3)), np.ones((3, 2)), backend=backend)
    check(bad_shape, np.zeros((3,)), np.ones((1, 1, 3)), backend=backend)
    check(overflow, np.zeros(3, np.uint8), backend=backend)
    check(bad_where, np.zeros((2, 3)), np.ones((2, 3)), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_copyto_read_only_destination(backend):
    def f(a):
        v = np.broadcast_to(a[0], (2, 3))
        np.copyto(v, 1.0)
        return v

    check(f, np.zeros((2, 3)), backend=backend)


def test_copyto_replays():
    def f(a, b):
        c = np.empty_like(a)
        np.copyto(c, a + b, where=b > 0)
        np.copyto(c, 0.0, where=b <= 0)
        return c

    cf = numdyn.compile(f, backend="native")
    rng = np.random.default_rng(1)
    for _ in range(3):
        a, b = rng.standard_normal(50), rng.standard_normal(50)
        np.testing.assert_array_equal(cf(a, b), f(a, b))
    assert cf._replay_info()["hits"] == 2
