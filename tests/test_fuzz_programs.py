"""Differential testing: random NumPy programs, numdyn vs NumPy.

tests/fuzz_gen.py builds programs of 1 to 12 statements (operators, ufuncs,
reductions with axis/keepdims/dtype, where, clip, astype, round, creation
functions, multi-output ufuncs; in mode "all" also matmul/dot/sort/
concatenate/stack/outer, graph breaks -- a data-dependent `if`, float(),
.item(), boolean masks, integer-array gathers, nonzero, unique -- and
Python loops) over random dtypes (bool, ints, uints,
float16/32/64, complex64/128), random broadcasting shapes including 0-d and
empty arrays, NumPy scalars and 0-d arrays as arguments, weak Python scalars
and strong NumPy scalars as operands. Each program runs under NumPy and
under numdyn.compile(backend=...) and must agree on values (per-dtype
tolerance; the generator keeps float noise well inside it), dtypes, shapes,
returned types, exceptions (type and message) and the arguments' state.

Each generated program also runs on VARIANTS other argument values of the
same dtypes and shapes: the same kernels again, new data.

Programs run BATCH at a time in one compiled call (fuzz_gen.batch: each
program a nested function, unchanged), so their kernels compile in one
compiler run; a batch that disagrees with NumPy is checked again program by
program, so every failure is still reported as its own program's.

CI (hypothesis profile "ci": derandomized) runs EXAMPLES generated programs
per backend here and 300 more in test_fuzz_views.py; `make fuzz` (profile
"fuzz", NUMDYN_FUZZ_EXAMPLES) searches longer with random seeds. A failing
test lists every kind of disagreement with its count, and a minimized,
self-contained reproducer script for the most frequent ones
(NUMDYN_FUZZ_REPORTS=N for more).
"""
import functools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import fuzz_gen as fg

FUZZ = bool(os.environ.get("NUMDYN_FUZZ")) or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
VARIANTS = 2
BATCH = 32

# (mode, generated programs in CI): 1050 per backend (plus 300 in
# test_fuzz_views.py), each also run on up to VARIANTS other argument values
# (same kernels, new data): about 3000 checks per backend here; `make fuzz`
# runs the long random search. The programs
# are generated once (fixed seed) and shared by both backends.
CASES = [("arith", 300), ("reduce", 250), ("all", 350), ("rows", 150)]
EXAMPLES = sum(n for _, n in CASES)


def _corpus(mode, n):
    return fg.corpus(mode, n, VARIANTS)


@pytest.mark.parametrize("mode,n", CASES, ids=[m for m, _ in CASES])
def test_fuzz_programs(backend, mode, n):
    report = fg.Report(backend, batch_size=BATCH)
    if FUZZ:
        # the long search: random (not derandomized), streamed, sized by the
        # "fuzz" profile (NUMDYN_FUZZ_EXAMPLES)
        total = max(n, settings().max_examples * n // EXAMPLES)
        fg.collect_programs(mode, total, derandomize=False, variants=VARIANTS,
                            sink=report.check)
    else:
        for prog in _corpus(mode, n):
            report.check(prog)
    report.assert_ok()
    _assert_backend_used(backend)


# ---- replay: later calls skip the Python code (trace_replay.c), writes to
# caller arrays included. Each program is called three times by one
# compiled function: twice on copies of its arguments (the first traces and
# records, the second replays), then on the arguments NumPy's result is
# compared with -- a replayed call whenever the program is replayable.
# Small batches: one graph break anywhere in a batch makes it unreplayable.
# (mode, programs): the first programs (with their value variants) of a
# corpus the batch tests check -- "views" is test_fuzz_views.py's, "rows"
# and "all" this file's CASES -- so a replay compiles few kernels of its
# own (the batches' are in the disk cache's kernel index) and tests the
# replay path, not the compiler, again. Since session 28 (ci11); "all"
# drew 150 programs of its own before (~15 s of compiles in CI).
REPLAY_CASES = [("views", 300), ("rows", 150), ("all", 150)]
REPLAY_CORPUS = {"views": 300, "rows": 150, "all": 350}
REPLAY_BATCH = 4


def _replay_corpus(mode, n):
    """the first n programs of the batch tests' corpus of mode, each with
    its value variants (same source, other values)"""
    out, seen = [], 0
    for prog in _corpus(mode, REPLAY_CORPUS[mode]):
        if not out or prog.source() != out[-1].source():
            seen += 1
            if seen > n:
                break
        out.append(prog)
    return out


def _called_thrice(backend):
    import copy

    import numdyn

    def compiler(fn):
        cf = numdyn.compile(fn, backend=backend)

        def run(*args):
            for _ in range(2):
                try:
                    cf(*copy.deepcopy(args))
                except Exception:
                    pass  # a raising program: the third call must raise alike
            return cf(*args)
        return run
    return compiler


@pytest.mark.parametrize("mode,n", REPLAY_CASES, ids=[m for m, _ in REPLAY_CASES])
def test_fuzz_programs_replayed(backend, mode, n):
    import numdyn
    before = numdyn.utils.counters["replays"]
    report = fg.Report(backend, batch_size=REPLAY_BATCH, compiler=_called_thrice(backend))
    for prog in _replay_corpus(mode, n):
        report.check(prog)
    report.assert_ok()
    # many third calls really replayed (not all traced again)
    replays = numdyn.utils.counters["replays"] - before
    print(f"{mode}: {replays} replayed calls over {report.batches} batches")
    assert replays >= report.batches // 4, (replays, report.batches)


def _assert_backend_used(backend):
    """The native runs must really have run compiled kernels (not quietly
    the eager interpreter)."""
    if backend != "native":
        return
    import numdyn
    c = dict(numdyn.utils.counters)
    assert c["kernels_compiled"] + c["kernel_cache_hits"] + c["disk_cache_hits"] > 0, c


# ---- the harness itself: it must catch what it is there to catch ----------

# The harness tests' samples: one generation per mode, of the largest size
# a test asks for; a test asking for n programs gets its first n.
SAMPLE = {"views": 150, "all": 400}


@functools.lru_cache(maxsize=None)
def _programs_cached(mode):
    return tuple(_collect(mode, SAMPLE[mode]))


def _programs(mode, n):
    assert n <= SAMPLE[mode], (mode, n)
    return list(_programs_cached(mode)[:n])


def _collect(mode, n):
    out = []

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(fg.programs(mode))
    def collect(prog):
        out.append(prog)
    collect()
    return out


def test_generated_programs_run_under_numpy():
    """Every program runs under NumPy, raising exactly when it says it does,
    and its reproducer script is valid Python that rebuilds the arguments."""
    progs = _programs("views", 150) + _programs("all", 150)
    raised = 0
    for p in progs:
        fn = p.function()
        with fg.quiet():
            try:
                fn(*p.fresh_args())
                assert not p.raises, p
            except Exception:
                assert p.raises, p
                raised += 1
        ns = {}
        src = p.repro().split("\nimport copy")[0].replace("import numdyn\n", "")
        exec(compile(src, "<repro>", "exec"), ns)
        for name, a in zip(p.params, p.args):
            assert fg._same(ns[name], a), (name, ns[name], a)
    assert 0 < raised < len(progs) // 2


def test_generation_is_deterministic():
    """CI's corpus is the same on every run (fixed seed)."""
    a = fg.collect_programs("all", 40, variants=1)
    b = fg.collect_programs("all", 40, variants=1)
    assert [p.repro() for p in a] == [p.repro() for p in b]


def test_generator_covers_the_issue():
    """1 to 12 statements; all 14 dtypes, 0-d and empty arrays, NumPy and
    Python scalars all show up in a CI-sized sample."""
    progs = _programs("all", 400)
    lens = {len(p.body) for p in progs}
    assert min(lens) == 1 and max(lens) >= 10
    dts = set()
    zero_d = empty = np_scalar_arg = py_scalar_arg = 0
    for p in progs:
        for a in p.args:
            if isinstance(a, np.ndarray):
                dts.add(a.dtype.name)
                zero_d += a.ndim == 0
                empty += a.size == 0
            elif isinstance(a, np.generic):
                np_scalar_arg += 1
            else:
                py_scalar_arg += 1
    assert dts == set(fg.DTYPES)
    assert zero_d and empty and np_scalar_arg and py_scalar_arg
    text = "\n".join("\n".join(p.body) for p in progs)
    for needle in ("np.float32(", "np.int8(", "keepdims=True", "axis=", "np.where(",
                   " ** ", " // ", "astype(", "np.zeros(", "np.sum("):
        assert needle in text, needle


def _wrong_compiler(kind):
    """A fake 'compiled' function that is wrong in one way."""
    def make(fn):
        def wrong(*args):
            r = fn(*args)
            if kind == "value" and isinstance(r, np.ndarray) and r.size and r.dtype.kind in "iuf":
                r = r.copy()
                r.flat[0] += 1
            if kind == "dtype" and isinstance(r, np.ndarray) and r.dtype != np.float64 and r.dtype.kind in "iuf":
                r = r.astype(np.float64)
            if kind == "scalar-type" and isinstance(r, np.generic):
                r = np.asarray(r)
            if kind == "mutation":
                for a in args:
                    if isinstance(a, np.ndarray) and a.size and a.dtype.kind in "iuf":
                        a.flat[-1] = 7 if a.flat[-1] != 7 else 8
            return r
        return wrong
    return make


@pytest.mark.parametrize("kind", ["value", "dtype", "scalar-type", "mutation"])
def test_harness_catches_wrong_results(kind):
    progs = [p for p in _programs("all", 120) if not p.raises]
    caught = 0
    for p in progs:
        try:
            fg.check_program(p, "eager", shrink=False, compiler=_wrong_compiler(kind))
        except AssertionError as e:
            assert "minimized reproducer" in str(e)
            caught += 1
    assert caught >= 5, caught


def test_batched_report_blames_each_failing_program():
    """Checking in batches finds exactly the failures that checking program
    by program finds, each blamed on its own program."""
    def make(fn):
        return lambda *args: fg.bump_float64(fn(*args))
    fg.assert_batching_blames_like_alone(fg.Report, _programs("all", 120), make)


def test_batch_only_failure_is_reported():
    """A disagreement that shows only when programs share a call (each
    passes alone) still fails, with the batch as the reproducer."""
    def make(fn):
        if not fn.__code__.co_varnames[0].startswith("p0_"):
            return fn
        return lambda *args: ("wrong",) + tuple(fn(*args))[1:]
    rep = fg.Report("eager", compiler=make, batch_size=4)
    for p in [p for p in _programs("all", 120) if not p.raises][:8]:
        rep.check(p)
    with pytest.raises(AssertionError, match="only in a batch") as e:
        rep.assert_ok()
    assert "def prog0(" in str(e.value)


def test_harness_minimizes_failures():
    """A failure is shrunk to a smaller program that still fails."""
    def make(fn):
        def wrong(*args):
            r = fn(*args)
            if isinstance(r, np.ndarray) and r.dtype == np.float64 and r.size:
                r = r + 1.0
            return r
        return wrong
    for p in _programs("all", 200):
        if p.raises or len(p.body) < 6:
            continue
        if fg._failure(p, "eager", make) is None:
            continue
        small = fg.minimize(p, "eager", compiler=make)
        assert fg._failure(small, "eager", make) is not None
        assert len(small.body) < len(p.body)
        return
    pytest.fail("no program to shrink")


def test_error_analysis_rejects_unstable_statements():
    """floor() of a value carrying transcendental error is refused when the
    value sits next to an integer, accepted otherwise."""
    prog = fg.Program(["a"], [np.array([0.5, 2.0], dtype=np.float64)], [], "a", mode="all")
    near = fg.replay(prog, args=[np.array([np.log(np.e ** 3)], dtype=np.float64)],
                     body=["v0 = np.exp(a)", "v1 = np.log(v0)", "v2 = np.floor(v1)"],
                     meta=[(["v0"], "exp"), (["v1"], "log"), (["v2"], "floor")], ret="v2")
    assert near is None
    far = fg.replay(prog, args=[np.array([0.3], dtype=np.float64)],
                    body=["v0 = np.exp(a)", "v1 = np.log(v0)", "v2 = np.floor(v1)"],
                    meta=[(["v0"], "exp"), (["v1"], "log"), (["v2"], "floor")], ret="v2")
    assert far is not None
