"""for/while loops with an else clause, captured (issue 17.1): the else
clause runs when the loop ends without a break -- a break of a loop nested
inside does not count, a break inside a nested loop's own else clause
belongs to the outer loop. Plain Python/NumPy is the oracle
(tests/loop_gen.py: check_calls); every loop here must be captured.
"""
import numpy as np
import pytest

import numdyn
from loop_gen import check_calls, make_function

PROGRAMS = {
    "search": """
def f(A, x):
    found = -1
    for i in range(len(A)):
        if A[i] == x:
            found = i
            break
    else:
        found = -2
        A[0] = 99
    return found, A
""",
    "while_else": """
def f(A, x):
    i = 0
    while i < len(A):
        if A[i] > x:
            break
        A[i] += 1
        i += 1
    else:
        i = -i
    return i, A
""",
    "nested_inner_break_does_not_count": """
def f(A, x):
    hits = 0
    for i in range(len(A)):
        for j in range(len(A)):
            if A[j] == x:
                break
        if A[i] < 0:
            break
        hits += 1
    else:
        hits += 100
    return hits
""",
    "break_in_inner_else_belongs_to_outer": """
def f(M, x):
    r = 0
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] == x:
                break
        else:
            r = i
            break
    else:
        r = -1
    return r
""",
    "primes": """
def f(P, n):
    k = 0
    for m in range(2, n):
        for d in range(2, m):
            if m % d == 0:
                break
        else:
            P[k] = m
            k += 1
    return k, P
""",
    "enumerate_continue": """
def f(A, x):
    s = 0.0
    for i, a in enumerate(A):
        if a < x:
            continue
        s += a
        if s > 10 * x:
            break
    else:
        s = -s
    return s
""",
    "while_true_else_never_runs": """
def f(A, x):
    i = 0
    while True:
        i += 1
        if i >= len(A) or A[i] > x:
            break
    else:
        i = 1000
    return i
""",
    "else_raises": """
def f(A, n):
    for i in range(n):
        if A[i] < 0:
            break
    else:
        A[n] = 7
    return A
""",
}


def _args(name, seed):
    rng = np.random.default_rng(seed)
    if name == "break_in_inner_else_belongs_to_outer":
        return (rng.integers(0, 4, (4, 3)), 3)
    if name == "primes":
        return (np.zeros(40, np.int64), 30 + seed)
    if name == "else_raises":
        return (rng.integers(0, 5, 5), 4 + seed % 2)   # n = 5: IndexError in the else clause
    if name == "enumerate_continue":
        return (rng.random(9) * 4, 0.5 + seed)
    if name == "nested_inner_break_does_not_count":
        return (rng.integers(-1 if seed else 0, 5, 6), 2)
    return (rng.integers(0, 6, 7), 3 + seed)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_else_clause(name):
    fn = make_function(PROGRAMS[name])
    sets = [_args(name, s) for s in range(3)]
    check_calls(fn, *sets)
    cf = numdyn.compile(fn)
    import copy
    try:
        cf(*copy.deepcopy(sets[0]))
    except IndexError:
        pass
    info = cf._loop_info()
    assert info and info[0]["captured"], info
