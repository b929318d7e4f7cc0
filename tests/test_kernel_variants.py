"""A column reduction's kernel holds the tall-array variant (codegen_loops.c
split_across: a tall array's rows in 16 parallel chunks, in register tiles
of several widths) only when the call that generates it may take it: for
other sizes that C was ~80% of the kernel's compile time and never ran.
Such a kernel reports ND_ERR_VARIANT when later sizes need the walk; the
runtime then builds the kernel with every variant and runs that
(runtime_native.c run_kernel, counter kernel_variants). Results are NumPy's
either way, in every order of sizes."""
import logging

import numpy as np
import pytest

import numdyn
from oracle import check

NOFLOOR = {"floor": False}
CHUNKED = "nch_ = 16"   # split_across's chunk count: the tall walk's text


def cols(x):
    return (np.argmax(x, axis=0) + 1, np.argmin(x * 2, axis=0), x.sum(axis=0), x.max(axis=0),
            x.min(axis=0, keepdims=True))


def _code(caplog, cf, x):
    numdyn.set_logs(output_code=True)
    caplog.clear()
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            got = cf(x)
    finally:
        numdyn.set_logs(output_code=False)
    return got, caplog.text


def _data(shape, dt, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 50
    x = x.astype(dt)
    if x.dtype.kind == "f":
        x.flat[::97] = np.nan   # NaNs: the first one wins argmax/argmin and max/min
    return x


@pytest.mark.parametrize("dt", ["float64", "float32", "int32"])
def test_small_then_tall_then_small(dt):
    """one compiled function called with sizes on both sides of the tall
    walk's threshold (4096 rows, at most 512 columns), back and forth: the
    kernel generated for the small call is rebuilt once, with the walk, when
    a tall call meets it, and every result is NumPy's"""
    cf = numdyn.compile(cols, options=NOFLOOR)
    c = numdyn.utils.counters
    before = c["kernel_variants"]
    for shape in ((120, 7), (10000, 7), (120, 7), (9000, 3), (4095, 5), (20000, 100), (4096, 1)):
        x = _data(shape, dt, seed=shape[0])
        check(cols, x, compiled=cf)
    assert c["kernel_variants"] - before >= 1


def test_the_small_kernel_has_no_tall_walk(caplog):
    x = _data((120, 7), "float64")
    cf = numdyn.compile(cols, options=NOFLOOR)
    got, text = _code(caplog, cf, x)
    assert "ndk_" in text
    assert CHUNKED not in text and "ND_ERR_VARIANT" in text, text[-3000:]
    for g, w in zip(got, cols(x)):
        np.testing.assert_array_equal(g, w)
    # the same structure on a tall array, the program cache emptied:
    # generated with the walk at once
    numdyn.reset()
    t = _data((10000, 7), "float64", seed=1)
    cf2 = numdyn.compile(lambda x: cols(x), options=NOFLOOR)
    c = numdyn.utils.counters
    before = c["kernel_variants"]
    got, text = _code(caplog, cf2, t)
    assert CHUNKED in text, text[-3000:]
    assert c["kernel_variants"] == before   # nothing rebuilt: it had it
    for g, w in zip(got, cols(t)):
        np.testing.assert_array_equal(g, w)


def test_a_replayed_call_on_tall_sizes_rebuilds_once():
    """warm calls replay the program made for the small sizes: the first tall
    one rebuilds its kernel, later ones run the rebuilt kernel"""
    cf = numdyn.compile(cols, options=NOFLOOR)
    c = numdyn.utils.counters
    small = _data((200, 6), "float32", seed=2)
    for _ in range(3):
        check(cols, small, compiled=cf)
    before = c["kernel_variants"]
    tall = _data((12000, 6), "float32", seed=3)
    for _ in range(3):
        check(cols, tall, compiled=cf)
    assert c["kernel_variants"] - before == 1
    check(cols, small, compiled=cf)


def test_frozen_run_of_a_tall_call_gives_numpys_answer():
    """numdyn.run never compiles: a kernel without the walk met by tall
    sizes lets NumPy run the graph"""
    x = _data((100, 4), "float64", seed=4)
    cf = numdyn.compile(cols, options=NOFLOOR)
    check(cols, x, compiled=cf)
    t = _data((9000, 4), "float64", seed=5)
    frozen = numdyn.run(cols)
    for g, w in zip(frozen(t), cols(t)):
        np.testing.assert_array_equal(g, w)
