"""Differential testing of views and in-place statements on arguments of
every layout and on aliased arguments, numdyn vs NumPy.

Programs come from tests/fuzz_views_extra.py: fuzz_gen's "views" programs
plus more view / in-place / join / extern statement kinds, with arguments
in C, Fortran, strided or negative-stride layouts, or views of one base
(the same array twice, reversed, transposed, shifted overlapping views).
The oracle compares results, exceptions, the arguments and their base
arrays after the call. The hypothesis seed is fixed; `make fuzz`
(NUMDYN_FUZZ=1) searches longer with random seeds.
"""
import functools
import os
import re

import numpy as np
import pytest
from hypothesis import settings

import fuzz_views_extra as fx

FUZZ = bool(os.environ.get("NUMDYN_FUZZ")) or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
N_CI = 360      # generated programs per backend (each + VARIANTS value variants)
VARIANTS = 1
SEED = 20251105


@functools.lru_cache(maxsize=None)
def _corpus(n):
    return tuple(fx.collect_programs(n, seed=SEED, variants=VARIANTS))


def test_corpus_covers_layouts_and_aliasing():
    """The fixed corpus really holds every layout, aliased arguments and
    the added statement kinds (a generator change that loses them fails
    here, not silently)."""
    progs = _corpus(N_CI)
    assert len([p for p in progs]) >= N_CI
    lays = {lay for p in progs for _, lay in p.bases}
    assert lays == {"C", "F", "strided", "neg"}, lays
    suffixes = {r[2] for p in progs for r in p.recipes if r[0] == "base"}
    assert {"", "[::-1]", ".T", "[:-1]", "[1:]"} <= suffixes, suffixes
    aliased = [p for p in progs
               if len({r[1] for r in p.recipes if r[0] == "base"}) <
               len([r for r in p.recipes if r[0] == "base"])]
    assert len(aliased) >= N_CI // 10, len(aliased)
    src = "\n".join(s for p in progs for s in p.body)
    for kind in ["np.moveaxis(", "np.copyto(", "out=", ".sort(axis", "np.put(", "np.einsum(",
                 "split(", "np.tile(", "np.pad(", "np.roll(", "np.take(", "np.linalg.solve(",
                 "[1:] = ", "np.fliplr(", ".diagonal(", "np.squeeze(", ".at("]:
        assert kind in src, kind


# Known product bugs (see the reasons): programs that can meet them are
# checked apart, in test_fuzz_layouts_known_gaps (strict xfail: when the
# bugs are fixed it passes, and these filters go).
KNOWN_GAPS = {
    "alias-F": "trace_compile.c alias_proxies(): overlapping view arguments of a "
               "Fortran-ordered base are traced as independent arrays",
    "reshape-pending": "shim_views.c/tracer: ravel()/reshape() of a storage with pending "
                       "lazy work decides view-vs-copy over the C-order index, not NumPy's "
                       "memory strides",
    "reshape-of-view": "trace_functionalize.c nd_proxy_view(): a reshape of a view is "
                       "composed over the view's own dims, so one that crosses them "
                       "(a[1:].reshape(-1), a.reshape(2, 6).reshape(4, 3)) is a copy where "
                       "NumPy makes a view: writes through either side are lost",
    "fallback-mutation": "a graph break that hands a caller's array to NumPy code that "
                         "mutates it (np.put with cyclic values...) runs before pending lazy "
                         "readers of the old contents are computed",
}


def known_gap(prog):
    """The KNOWN_GAPS key prog may meet, or None."""
    bases = [r[1] for r in prog.recipes if r[0] == "base"]
    for k in set(bases):
        if bases.count(k) > 1 and prog.bases[k][1] == "F":
            return "alias-F"
    mutates = any(fx.fg.stmt_mutates(stmt) for stmt in prog.body)
    if mutates and any(re.search(r"(v\d+|\]|\))\.reshape\(|(v\d+|\]|\))\.ravel\(|np\.(reshape|ravel)\(v\d+",
                                 stmt) for stmt in prog.body):
        return "reshape-of-view"
    wrote = False
    for stmt in prog.body:
        if wrote and ("ravel(" in stmt or "reshape(" in stmt):
            return "reshape-pending"
        wrote = wrote or fx.fg.stmt_mutates(stmt)
    if any("put(" in stmt for stmt in prog.body):
        return "fallback-mutation"
    return None


def test_fuzz_layouts(backend):
    report = fx.Report(backend)
    skipped = []

    def check(prog):
        if known_gap(prog):
            skipped.append(prog)
        else:
            report.check(prog)
    if FUZZ:
        total = max(N_CI, settings().max_examples // 3)
        fx.collect_programs(total, derandomize=False, variants=VARIANTS, sink=check)
    else:
        for prog in _corpus(N_CI):
            check(prog)
    report.assert_ok()
    assert report.ran >= N_CI, (report.ran, len(skipped))


@pytest.mark.xfail(strict=True, reason="; ".join(KNOWN_GAPS.values()))
def test_fuzz_layouts_known_gaps():
    # (the bugs are in the tracer, shared by both backends: eager is enough
    # to tell when they are fixed, and compiles nothing)
    report = fx.Report("eager", max_reports=len(KNOWN_GAPS))
    for prog in _corpus(N_CI):
        if known_gap(prog):
            report.check(prog)
    report.assert_ok()


def test_repro_is_self_contained():
    """A reproducer runs on its own and rebuilds the layouts and aliasing."""
    progs = [p for p in _corpus(N_CI) if any(lay != "C" for _, lay in p.bases)]
    prog = progs[0]
    ns = {}
    exec(compile(prog.repro("eager").split("import warnings")[0], "<repro>", "exec"), ns)
    args, bases = ns["make"]()
    want, want_bases = prog.build()
    for x, y in zip(args, want):
        if isinstance(y, np.ndarray):
            assert x.strides == y.strides and np.array_equal(x, y, equal_nan=True)
