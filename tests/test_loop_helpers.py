"""Loops in helper functions the compiled function calls are captured too
(loop_rewrite.c, rewrite_calls): real programs keep their loops in helpers,
which the tracer used to run in the interpreter. Each call of a global
Python function of the user's goes through __numdyn_callee__, which hands
back the helper's own rewritten copy (loops as C, its calls rewritten the
same way), or the helper itself."""
import warnings

import numpy as np
import pytest

import numdyn
from numpy.linalg import norm
from oracle import check


def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def scaled(a, k):
    return sumsq(a) * k          # a helper calling a helper


def fact_sum(a, n):
    if n == 0:
        return 0.0
    return sumsq(a[:n]) + fact_sum(a, n - 1)   # recursion through the rewrite


def kernel(a):
    return scaled(a, 2.0) + norm(a) + fact_sum(a, 3)


def test_helper_loops_run_as_c_with_numpys_answer():
    a = np.linspace(-1.0, 2.0, 257)
    cf = numdyn.compile(kernel)
    check(kernel, a, compiled=cf)
    numdyn.utils.wait_compiles()
    before = numdyn.utils.counters["loop_runs"]
    check(kernel, a, compiled=cf)
    assert numdyn.utils.counters["loop_runs"] - before >= 4   # sumsq via scaled, and 3 via fact_sum


def policy_helper(a):
    t = 0.0
    for i in range(a.shape[0]):
        t += a[i]
    return t


def uses_policy(a):
    return policy_helper(a) * 2


def test_rebinding_and_policies_are_respected():
    global sumsq
    a = np.arange(6.0)
    cf = numdyn.compile(scaled)
    check(scaled, a, 3.0, compiled=cf)
    old = sumsq
    try:
        sumsq = lambda v: float(v.max())       # the name is looked up at each call
        check(scaled, a, 3.0, compiled=cf)
    finally:
        sumsq = old
    numdyn.disallow_in_graph(policy_helper)   # policy_helper is only used here
    cp = numdyn.compile(uses_policy)
    check(uses_policy, a, compiled=cp)
    assert numdyn.explain(uses_policy)(a).graph_break_count >= 1   # still a break


def shuffle_rows(m, rng):
    rng.shuffle(m)
    return m


def shuffles_in_a_helper(x, seed):
    rng = np.random.default_rng(seed)
    m = x.reshape(-1, 2) * 2
    shuffle_rows(m, rng)
    return m, rng.random()


def test_a_shuffle_in_a_helper_shuffles_rows_as_numpy():
    # the helper's copy routes the shuffle as the compiled function's own
    # calls are (numdyn/_rng_calls.py): NumPy's ndarray path, not its
    # generic path over a LazyArray (which duplicates rows, with a warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(shuffles_in_a_helper, np.arange(12.0), 3)
