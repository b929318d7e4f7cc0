"""Operands an extern (a NumPy call such as np.matmul) reads are live values.

The return flush computes values nothing reads (so their warnings are
NumPy's); it did not count an extern's operands as read, so `-X` of
`(-X) @ w` was such a "dead" value: a target of the flush, kept as an
output of the program until its end. A loop of 100 steps held 100 copies
of X (logistic regression's `1 / (1 + np.exp(-X @ w))`) and spent most of
its time in page faults: 10x NumPy's time.
"""
import tracemalloc

import numpy as np
import pytest

import numdyn
from oracle import check


def steps(X, w, n):
    for _ in range(n):
        w = w - 0.1 * ((-X) @ w)[: w.shape[0]]
    return w


@pytest.mark.parametrize("call", [0, 1])   # traced, then replayed
def test_extern_operands_are_not_kept(call):
    X = np.random.default_rng(0).standard_normal((500, 20))   # 80 kB
    w = np.ones(20) * 1e-3
    f = numdyn.compile(steps, options={"floor": False})
    for _ in range(call):
        f(X, w, 50)
    tracemalloc.start()
    try:
        f(X, w, 50)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one or two copies of X at a time; 50 kept copies are 4 MB
    assert peak < 1_000_000, peak


def dead_extern(a):
    np.sort(np.log(a))   # dropped: NumPy still computes log and warns
    return a + 1


def test_dead_extern_operand_still_warns():
    with np.errstate(all="warn"):
        check(dead_extern, np.array([-1.0, 2.0]), warnings=True)


def test_values():
    X = np.random.default_rng(1).standard_normal((50, 4))
    check(steps, X, np.ones(4), 7)


def scaled_transpose_product(X, r):
    return 0.1 * X.T @ r     # (0.1 * X.T) @ r: NumPy's 0.1 * X.T keeps X's memory order


def test_extern_operand_in_numpys_memory_order():
    # the product's operand is laid out as NumPy lays it out (Fortran order
    # over X.T's dims): a kernel writing it in C order walked X transposed
    # (logistic regression's `lr * X.T @ (p - y)`, 8x slower there)
    seen = []

    def keep(graph, example_inputs):
        seen.append(graph)
        return graph

    X, r = np.random.default_rng(2).standard_normal((40, 3)), np.ones(40)
    got = numdyn.compile(scaled_transpose_product, backend=keep)(X, r)
    np.testing.assert_allclose(got, scaled_transpose_product(X, r), rtol=1e-12)
    (g,) = seen
    mul = [g[i] for i in range(len(g)) if g[i].op == "ufunc" and g[i].shape == (3, 40)]
    assert mul and mul[0].attrs.get("memory_order") == (1, 0), [n.attrs for n in mul]
