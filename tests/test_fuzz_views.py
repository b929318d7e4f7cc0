"""Differential testing of views and in-place statements, numdyn vs NumPy.

The program generator (tests/fuzz_gen.py, mode "views") adds to the
arithmetic/reduction statements: basic indexing with ints, slices of any
step (negative too), None and Ellipsis; .T, transpose, reshape (a view or a
copy exactly as NumPy decides), ravel, flip, swapaxes, expand_dims,
squeeze, diagonal and broadcast_to (read-only views), real/imag, copy; and
in-place statements: `x[idx] = y`, `x[idx] op= y`, `x[...] = y`, `x op= y`,
`np.ufunc(a, b, out=x)` / `out=x[idx]`, `np.ufunc(x, out=x)`, `x.fill(v)`
-- preferably into the caller's arrays and views of them. The oracle checks
returned values and the caller's arrays after the call (numdyn must write
back exactly what NumPy left there), and exceptions such as writing into a
read-only view or a same_kind casting error.
"""
import os

import numpy as np
import pytest
from hypothesis import settings

import fuzz_gen as fg

FUZZ = bool(os.environ.get("NUMDYN_FUZZ")) or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
VARIANTS = 2
# generated programs per backend in CI (each + VARIANTS value variants):
# the same corpus test_fuzz_programs' replays of "views" check (fg.corpus,
# one generation), so the replays load these batches' kernels. 300 since
# session 28 (500 before; BENCHMARKS.md "CI time", ci11): `make fuzz`
# searches as long as before.
N_CI = 300
BATCH = 32   # programs per compiled call (see test_fuzz_programs.py)


def _corpus(n):
    return fg.corpus("views", n, VARIANTS)


def test_fuzz_views(backend):
    report = fg.Report(backend, batch_size=BATCH)
    if FUZZ:
        total = max(N_CI, settings().max_examples // 3)
        fg.collect_programs("views", total, derandomize=False, variants=VARIANTS,
                            sink=report.check)
    else:
        for prog in _corpus(N_CI):
            report.check(prog)
    report.assert_ok()
    if backend == "native":
        import numdyn
        c = dict(numdyn.utils.counters)
        assert c["kernels_compiled"] + c["kernel_cache_hits"] + c["disk_cache_hits"] > 0, c


# Hand-written programs for the classic traps, run through the same harness
# (so a failure prints the same reproducer). Each: (args, statements, return).
_F = np.arange(12, dtype=np.float64).reshape(3, 4)
_I = np.arange(10, dtype=np.int32)
CLASSICS = {
    "overlap-shift": ([_I], ["a[1:] = a[:-1] + 1"], "a"),
    "overlap-reverse": ([_I], ["a[:] = a[::-1]"], "a"),
    "overlap-inplace-add": ([_I], ["a[2:] += a[:-2]"], "a"),
    "write-through-transpose": ([_F], ["v0 = a.T", "v0[0] = -1.0"], "(a, v0)"),
    "write-negative-step": ([_F], ["v0 = a[::-1, ::-2]", "v0 *= 2"], "(v0, a)"),
    "reshape-view-write": ([_F], ["v0 = a.reshape(4, 3)", "v0[1:, 0] = 0.5"], "a"),
    "reshape-copy-no-write": ([_F], ["v0 = a.T.reshape(12)", "v0[:] = 0"], "(a, v0)"),
    "ravel-of-view-is-copy": ([_F], ["v0 = a[:, ::2].ravel()", "v0 += 1"], "(a, v0)"),
    "out-into-slice": ([_F, _F], ["np.add(a, 1, out=b)", "np.multiply(b[:, :2], 3, out=a[:, 2:])"], "(a, b)"),
    "out-self": ([_F], ["np.sqrt(a, out=a)"], "a"),
    "view-sees-later-write": ([_F], ["v0 = a[1]", "a[1, 2] = 100", "v1 = v0 * 2"], "v1"),
    "write-then-reduce": ([_F], ["a[:, 0] = -5", "v0 = a.sum(axis=0)"], "v0"),
    "int-setitem-unsafe-cast": ([_I], ["a[:3] = np.array([1.7, -2.2, 3.9])"], "a"),
    "inplace-same-kind-error": ([_I], ["a += 1.5"], "a"),
    "broadcast-to-readonly": ([_I], ["v0 = np.broadcast_to(a, (2, 10))", "v0[0, 0] = 1"], "v0"),
    "diagonal-readonly": ([_F], ["v0 = a.diagonal()", "v0 += 1"], "v0"),
    "fill-view": ([_F], ["a[1:, 1:].fill(7)"], "a"),
    "newaxis-ellipsis": ([_F], ["v0 = a[None, ..., ::-1]", "v0[0, -1] = 9"], "(v0, a)"),
    "zero-d-view": ([np.array(3.5)], ["v0 = a[...]", "v0 += 1"], "(a, v0)"),
    "empty-slice-write": ([_F], ["a[3:] = 1", "v0 = a[:, 4:]", "v0 += 1"], "(a, v0)"),
    "swap-rows-needs-temp": ([_F], ["a[[0, 1]] = a[[1, 0]]"], "a"),
    "complex-real-imag-write": ([np.array([1 + 2j, 3 - 4j])], ["v0 = a.imag", "v0[:] = 0", "a.real[1] = 5"], "a"),
}


@pytest.mark.parametrize("name", sorted(CLASSICS))
def test_view_classics(backend, name):
    args, body, ret = CLASSICS[name]
    meta = [(fg._assigned_names(s), "setitem") for s in body]
    prog = fg.Program([p for p in "abc"[:len(args)]], [a.copy() for a in args],
                      list(body), ret, mode="views", meta=meta)
    with fg.quiet():
        try:
            prog.function()(*prog.fresh_args())
            prog.raises = False
        except Exception:
            prog.raises = True
    fg.check_program(prog, backend, shrink=False)


def test_aliased_arguments(backend):
    """The same array passed twice: a write through one name is seen through
    the other, and the caller's array ends as NumPy leaves it."""
    import oracle

    def f(a, b):
        b[0] = 99
        v0 = a + b
        a[1:] += b[:-1]
        return v0

    def make():
        x = np.arange(6, dtype=np.int64)
        return (x, x)
    oracle.check(f, make_args=make, backend=backend)


def test_view_arguments_of_one_base(backend):
    """Two arguments that are overlapping views of one caller array."""
    import oracle

    def f(a, b):
        a *= 2
        return b + 0

    def make():
        x = np.arange(10, dtype=np.float32)
        return (x[2:8], x[::3])
    oracle.check(f, make_args=make, backend=backend)
