"""Tuple assignments in captured loops bind names the loop has not bound yet.

`lo, hi = -1.0, 1.0` as the first binding of lo/hi inside a loop body raised
UnboundLocalError: the codegen specialized the statement on the types of its
*targets* (written, not read) as if they were operands, and a target with no
value yet sent the loop to its "unbound local" exit.
"""
import numpy as np

import numdyn

from test_loop_capture import captured, run_both, same


def first_bound_in_body(x):
    out = np.zeros(len(x))
    for i in range(len(x)):
        lo, hi = -1.0, 1.0
        out[i] = lo + hi * x[i]
    return out


def pair_of_elements(x):
    s = 0.0
    for i in range(len(x) - 1):
        a, b = x[i], x[i + 1]
        s += a * b
    return s


def bisect_cube_roots(x):
    out = np.zeros(len(x))
    for i, c in enumerate(x):
        lo, hi = -10.0, 10.0
        while hi - lo > 1e-9:
            mid = (lo + hi) / 2
            if mid ** 3 - c > 0:
                hi = mid
            else:
                lo = mid
        out[i] = lo
    return out, lo, hi


def fib_mod(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % 1000003
    return a, b


def test_tuple_assignment_binds_new_names():
    x = np.linspace(-2.0, 3.0, 11)
    for fn in (first_bound_in_body, pair_of_elements, bisect_cube_roots):
        exp, got, ap, ac, cf = run_both(fn, x)
        same(exp, got)
        same(tuple(ap), tuple(ac))
        captured(cf)
    exp, got, _, _, cf = run_both(fib_mod, 50)
    same(exp, got)
    captured(cf)
    # a second call reuses the compiled loop
    assert numdyn.compile(first_bound_in_body)(x).tolist() == first_bound_in_body(x).tolist()
