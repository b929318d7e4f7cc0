"""Differential testing of loop capture (issue 17.5): random small loop
programs (tests/loop_gen.py), plain Python/NumPy vs numdyn.compile.

Each program (1-3 nested for/while loops over small ranges; scalar locals
of Python and NumPy scalar types; element loads and stores of 1-D/2-D
arrays of nine dtypes, with indices derived from the loop variables, in
range and sometimes out of it; if/elif/else, break/continue; arithmetic
including // and % by zero) is compiled once and called on two argument
sets of the same types (the second with other values and sizes), then on
the first again. Every call must agree with the plain function on the
result (type, dtype, value), the exception (type and message), the
arguments' contents afterwards (at the exception, for a raising call) and
the warning categories.

CI (hypothesis profile "ci": derandomized, fixed seed) runs PROGRAMS
distinct programs, in PARTS tests; `make fuzz` (profile "fuzz",
NUMDYN_FUZZ_EXAMPLES) searches longer with random seeds. A failing part
lists every failing program with a self-contained reproducer, smallest
first.
"""
import copy
import functools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loop_gen as lg

FUZZ = bool(os.environ.get("NUMDYN_FUZZ")) or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
PROGRAMS = 56
PARTS = 4


def _n_programs():
    if FUZZ:
        return max(PROGRAMS, settings().max_examples)
    return PROGRAMS


@functools.lru_cache(maxsize=None)
def corpus(n, derandomize=True):
    """n distinct generated programs (a fixed seed when derandomize)."""
    out, seen = [], set()
    if derandomize:
        import fuzz_gen
        fuzz_gen.pin_hypothesis_constants()

    @settings(max_examples=6 * n, deadline=None, derandomize=derandomize,
              database=None, suppress_health_check=list(HealthCheck))
    @given(lg.loop_programs())
    def collect(prog):
        if len(out) < n and prog.source not in seen:
            seen.add(prog.source)
            out.append(prog)
    collect()
    return tuple(out)


def _failures(progs, compiler=None, known=None):
    """(program, AssertionError) for each program compiled fn gets wrong.
    With known (a dict), a program whose every disagreeing argument set is
    explained by a wrong answer numdyn is known to give today outside
    captured loops (loop_gen.KNOWN_BUGS, while its reproducer still fails)
    is counted in known[name] instead."""
    bad = []
    for prog in progs:
        fn = prog.function()
        try:
            lg.check_calls(fn, prog.args, prog.args2,
                           compiled=None if compiler is None else compiler(fn))
        except AssertionError as e:
            if known is not None:
                names = set()
                for args in (prog.args, prog.args2):
                    try:
                        lg.check_calls(fn, args)
                    except AssertionError:
                        names.add(lg.known_bug(fn, args))
                if names and None not in names:
                    for n in names:
                        known[n] = known.get(n, 0) + 1
                    continue
            bad.append((prog, e))
    return bad


def _report(bad, total):
    bad = sorted(bad, key=lambda pe: len(pe[0].source))
    lines = [f"{len(bad)} of {total} loop programs disagree with plain Python/NumPy:"]
    for prog, e in bad[:int(os.environ.get("NUMDYN_FUZZ_REPORTS", "5"))]:
        lines += ["", "-" * 70, str(e), "reproducer:", prog.repro()]
    return "\n".join(lines)


@pytest.mark.parametrize("part", range(PARTS))
def test_loop_programs(part):
    progs = corpus(_n_programs(), not FUZZ)[part::PARTS]
    assert len(progs) >= _n_programs() // PARTS - 1
    known = {}
    bad = _failures(progs, known=known)
    if known:
        print(f"programs hitting known wrong answers (loop_gen.KNOWN_BUGS): {known}")
    if bad:
        pytest.fail(_report(bad, len(progs)), pytrace=False)
    assert sum(known.values()) <= len(progs) // 4, known


# ---- the corpus covers what it is there to cover ------------------------

def test_corpus_covers_the_constructs():
    progs = corpus(_n_programs(), not FUZZ)
    assert len(progs) == _n_programs()
    src = [p.source for p in progs]

    def count(pred):
        return sum(1 for s in src if pred(s))
    n = len(progs)
    assert count(lambda s: "while" in s) >= n // 10
    assert count(lambda s: "break" in s) >= n // 10
    assert count(lambda s: "continue" in s) >= n // 20
    assert count(lambda s: "elif" in s) >= n // 20
    assert count(lambda s: "enumerate(" in s) >= n // 20
    assert count(lambda s: ", -1)" in s or ", -2)" in s) >= n // 20  # downward ranges
    assert count(lambda s: s.count("for ") + s.count("while ") >= 3) >= n // 10
    assert count(lambda s: "//" in s or "%" in s) >= n // 2
    assert count(lambda s: "][" in s) >= n // 20  # A[i][j]
    assert count(lambda s: "T = " in s) >= n // 10  # arrays made in the function
    dtypes = {a.dtype.name for p in progs for a in p.args if isinstance(a, np.ndarray)}
    assert dtypes == set(lg.FUZZ_DTYPES), dtypes
    assert any(a.ndim == 2 for p in progs for a in p.args if isinstance(a, np.ndarray))
    # what plain Python does with them: mostly values, and each error kind
    kinds = {}
    for p in progs:
        o = lg.run(p.function(), copy.deepcopy(p.args))
        k = "ok" if o.exc is None else type(o.exc).__name__
        kinds[k] = kinds.get(k, 0) + 1
    assert kinds.get("ok", 0) >= n // 2, kinds
    for k in ("IndexError", "ZeroDivisionError"):
        assert kinds.get(k, 0) >= 3, kinds


def test_programs_are_deterministic_under_ci_seed():
    if FUZZ:
        pytest.skip("random seeds under the fuzz profile")
    a = corpus(20, True)
    corpus.cache_clear()
    b = corpus(20, True)
    assert [p.source for p in a] == [p.source for p in b]


# ---- the harness catches what it is there to catch ----------------------

def _wrong(kind):
    """Deliberately wrong 'compilers' the harness must reject."""
    def compiler(fn):
        def run(*args):
            r = fn(*args)
            if kind == "type" and isinstance(r, tuple):
                return tuple(np.float64(v) if type(v) is float else v for v in r)
            if kind == "args":
                for a in args:
                    if isinstance(a, np.ndarray) and a.size and a.dtype.kind in "iu":
                        a.flat[0] = a.flat[0] ^ 1
            return r
        return run
    return compiler


def test_harness_rejects_wrong_types_and_writes():
    progs = corpus(_n_programs(), not FUZZ)[:40]
    def value(p):
        return lg.run(p.function(), copy.deepcopy(p.args)).value
    floats = [p for p in progs if isinstance(value(p), tuple)
              and any(type(v) is float for v in value(p))]
    assert floats and len(_failures(floats, _wrong("type"))) == len(floats)
    ints = [p for p in progs if any(isinstance(a, np.ndarray) and a.size and a.dtype.kind in "iu"
                                    for a in p.args)
            and lg.run(p.function(), copy.deepcopy(p.args)).exc is None]
    assert ints and len(_failures(ints, _wrong("args"))) == len(ints)


def test_harness_rejects_wrapped_python_ints():
    """A compiled loop that wrapped a Python int at int64 would be caught."""
    fn = lg.make_function("""
        def f(A):
            h = 7
            for i in range(len(A)):
                h = h * 31 + int(A[i])
            return h
    """)

    def wrapping(fn):
        def run(A):
            h = 7
            for i in range(len(A)):
                h = (h * 31 + int(A[i]) + 2 ** 63) % 2 ** 64 - 2 ** 63
            return h
        return run
    A = np.arange(20, dtype=np.int64)
    with pytest.raises(AssertionError, match="result"):
        lg.check_calls(fn, (A,), compiled=wrapping(fn))
    lg.check_calls(fn, (A,), compiled=fn)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_generated_programs_run_plainly(data):
    """Every generated program is valid Python that finishes quickly under
    plain Python/NumPy on both argument sets (no unbounded int growth, no
    infinite while loop), and its reproducer rebuilds its arguments."""
    prog = data.draw(lg.loop_programs())
    fn = prog.function()
    for args in (prog.args, prog.args2):
        o = lg.run(fn, args)
        assert o.exc is None or isinstance(o.exc, (ArithmeticError, LookupError, TypeError,
                                                   ValueError)), o
    env = {}
    rep = prog.repro()
    exec(rep.split("from loop_gen")[0], env)
    for a, b in zip(env["args"], prog.args):
        assert type(a) is type(b)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
