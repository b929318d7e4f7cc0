"""Jacobi-style while loops over whole 2-D slices (issue 17): a stencil
statement on slices, a norm test on the change (np.max(np.abs(...)),
np.sqrt(np.sum(...)), the .max() method), two grids swapped by name, a
while condition or a break ending it. Plain Python/NumPy is the oracle.
The form that makes a new grid each step (new = u.copy(); ...; u = new) is
captured too (test_loops_newarrays.py: the arrays a loop makes)."""
import os
import sys

import numpy as np
import pytest

import numdyn
from loop_gen import check_calls

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import programs_loops as L  # noqa: E402


def jacobi_sum_norm(u0, f, tol, max_iter):
    u = u0.copy()
    new = u0.copy()
    h2 = 1.0 / (u.shape[0] - 1) ** 2
    it = 0
    res = tol + 1.0
    while res > tol and it < max_iter:
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] + h2 * f[1:-1, 1:-1])
        res = np.sqrt(np.sum((new - u) ** 2))
        u, new = new, u
        it += 1
    return u, it, res


def jacobi_for_break(u0, f, tol, max_iter):
    u = u0.copy()
    new = u0.copy()
    h2 = 1.0 / (u.shape[0] - 1) ** 2
    it = 0
    for it in range(max_iter):
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] + h2 * f[1:-1, 1:-1])
        diff = np.abs(new - u).max()
        u, new = new, u
        if diff < tol:
            break
    return u, it


def grids(n, m, seed):
    rng = np.random.default_rng(seed)
    u0 = np.zeros((n, m))
    u0[0, :] = 1.0
    return u0, rng.random((n, m))


def loop_info(fn, *args):
    cf = numdyn.compile(fn, options={"floor": False})
    cf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return cf._loop_info()


@pytest.mark.parametrize("fn", [L.jacobi_until_converged_swap, jacobi_sum_norm, jacobi_for_break],
                         ids=["max-abs", "sqrt-sum", "method-break"])
def test_jacobi_swap_forms_captured_and_exact(fn):
    u0, f = grids(20, 20, 1)
    u1, f1 = grids(9, 13, 2)
    outs = check_calls(fn, (u0, f, 1e-5, 400), (u1, f1, 1e-3, 30), (u0, f, 1e-2, 0))
    assert outs[0].value[1] > 10          # ran many sweeps before converging or stopping
    info = loop_info(fn, u0, f, 1e-5, 400)
    assert info and all(i["captured"] and i.get("last_fallback") is None for i in info), info


def test_jacobi_strided_grid():
    u0, f = grids(30, 30, 3)
    check_calls(L.jacobi_until_converged_swap, (u0[::2, ::2], f[1::2, ::2], 1e-4, 100))


def test_jacobi_new_grid_each_step_captured_and_exact():
    # new = u.copy(); ...; u = new: the loop makes a grid each step (a buffer
    # of its pool, reused once no name holds it) and hands back new arrays
    u0, f = grids(12, 12, 4)
    outs = check_calls(L.jacobi_until_converged_copy, (u0, f, 1e-4, 100), (u0, f, 1e-2, 0))
    assert outs[0].value[1] > 10
    info = loop_info(L.jacobi_until_converged_copy, u0, f, 1e-4, 100)
    assert len(info) == 1 and info[0]["captured"] and info[0].get("last_fallback") is None, info
