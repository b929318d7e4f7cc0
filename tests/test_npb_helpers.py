"""Helpers a compiled function calls see the shim as their `np`
(trace_remap.c nd_trace_remap_callee, through loop_rewrite.c's
__numdyn_callee__): an output made with np.empty/np.zeros inside a helper
is lazy, so filling it slice by slice in a loop stays in the graph. Before,
the helper made a real array and every store of a lazy value into it was a
graph break (a small CNN: 800 breaks a call).

The same programs once put 64 reductions of products into one graph, where
row fusion joined every product to the first reduction's kernel as a side
output: a kernel of 192 operands that could not run ("kernel with too many
operands"); pass_rowfuse.c bounds what optional joins add."""
import numpy as np
import pytest

import numdyn
from numpy import zeros as np_zeros
from oracle import check

# the bench's helpers (bench/ is on sys.path, conftest): a valid 2-d correlation
# written as NumPy code (one reduction per output pixel) and a 2x2 max-pool, each
# filling an np.empty output window by window
from bench_realprograms import pool as pool2, window_conv as window_sums


def small_cnn(img, w, bias):
    return np.maximum(window_sums(img, w) + bias, 0)


def pooled(x):
    return pool2(np.maximum(x, 0))


def _inputs(layout):
    rng = np.random.default_rng(7)
    img = rng.standard_normal((2, 12, 12, 1)).astype(np.float32)   # 8 x 8 = 64 output pixels
    w = rng.standard_normal((5, 5, 1, 2)).astype(np.float32)
    if layout == "F":
        img = np.asfortranarray(img)
    elif layout == "strided":
        img = np.repeat(img, 2, axis=2)[:, :, ::2]
    elif layout == "reversed":
        img = img[:, ::-1, ::-1].copy()[:, ::-1, ::-1]
    return img, w, np.float32(0.25)


@pytest.fixture(scope="module")
def cnn():
    return numdyn.compile(small_cnn, options={"floor": False})


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed"])
def test_helper_filled_outputs_stay_in_the_graph(cnn, layout):
    args = _inputs(layout)
    for _ in range(2):   # the traced call, then the replayed one
        check(small_cnn, *args, compiled=cnn)
    ex = numdyn.explain(cnn)(*args)
    assert ex.graph_break_count == 0, ex.break_reasons[:2]
    assert ex.graph_count == 1


def make_with_zeros(n):
    z = np_zeros(n)          # `from numpy import zeros`: renamed to the shim's
    return z, type(z)        # type() answers ndarray for a lazy array


def caller_zeros(x):
    z, t = make_with_zeros(x.shape[0])
    z[1:] = x[:-1] * 2
    return z, t


def test_helper_globals_are_guarded_and_rebinding_is_seen():
    global np_zeros
    x = np.arange(5.0)
    cf = numdyn.compile(caller_zeros)
    check(caller_zeros, x, compiled=cf)
    saved = np_zeros
    try:
        np_zeros = lambda n: np.full(n, 7.0)   # noqa: E731 -- the helper must see the new binding
        check(caller_zeros, x, compiled=cf)
        z, _ = cf(x)
        assert z[0] == 7.0
    finally:
        np_zeros = saved
    check(caller_zeros, x, compiled=cf)


def bad_empty(n):
    return np.empty((n, 2))


def caller_bad(x, n):
    return bad_empty(n) * 0 + x[0]


def test_helper_errors_and_plain_arguments_are_numpys():
    cf = numdyn.compile(caller_bad)
    x = np.ones(3)
    check(caller_bad, x, 2, compiled=cf)
    check(caller_bad, x, -1, compiled=cf)    # ValueError: negative dimensions are not allowed
    check(caller_bad, x, 0, compiled=cf)     # an empty result


def test_pool_helper_stays_in_the_graph():
    x = np.random.default_rng(1).standard_normal((2, 4, 6, 3)).astype(np.float32)
    cf = numdyn.compile(pooled, options={"floor": False})
    check(pooled, x, compiled=cf)
    check(pooled, np.asfortranarray(x), compiled=cf)
    assert numdyn.explain(cf)(x).graph_break_count == 0
