"""Differential testing of views and in-place statements on arguments of
every layout and on aliased arguments, numdyn vs NumPy.

Programs come from tests/fuzz_views_extra.py: fuzz_gen's "views" programs
plus more view / in-place / join / extern statement kinds, with arguments
in C, Fortran, strided or negative-stride layouts, or views of one base
(the same array twice, reversed, transposed, shifted overlapping views).
The oracle compares results, exceptions, the arguments and their base
arrays after the call. Programs run BATCH at a time in one compiled call
(fuzz_views_extra.batch: each keeps its own arguments and bases); a batch
that disagrees with NumPy is checked again program by program. The
corpus runs in PARTS tests per backend (parallel under xdist). The
hypothesis seed is fixed; `make fuzz` (NUMDYN_FUZZ=1) searches longer with
random seeds.
"""
import functools
import os

import numpy as np
import pytest
from hypothesis import settings

import fuzz_views_extra as fx

FUZZ = bool(os.environ.get("NUMDYN_FUZZ")) or os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
N_CI = 360      # generated programs per backend (each + VARIANTS value variants)
VARIANTS = 1
BATCH = 32      # programs per compiled call (see test_fuzz_programs.py)
SEED = 20251105
# The corpus runs as PARTS tests per backend, which xdist spreads over its
# workers; together they check every program of the corpus once.
PARTS = 3


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


def _part(k):
    """The k-th of PARTS slices of the CI corpus, a program and its value
    variants always in one slice (they run in later batches of the same
    process, on the kernels their program's batch compiled)."""
    groups = []
    for prog in _corpus(N_CI):
        if groups and prog.source() == groups[-1][0].source():
            groups[-1].append(prog)
        else:
            groups.append([prog])
    return [p for g in groups[k::PARTS] for p in g]


@pytest.mark.parametrize("part", range(PARTS))
def test_fuzz_layouts(backend, part):
    report = fx.Report(backend, batch_size=BATCH)
    if FUZZ:  # `make fuzz`: each part a share of the long random search
        want = max(N_CI, settings().max_examples // 3) // PARTS
        fx.collect_programs(want, derandomize=False, variants=VARIANTS, sink=report.check)
    else:
        progs = _part(part)
        want = len(progs)
        for prog in progs:
            report.check(prog)
    report.assert_ok()
    assert report.ran >= want, (report.ran, want)


def test_parts_cover_the_corpus():
    """The PARTS slices hold every program of the CI corpus exactly once."""
    parts = [_part(k) for k in range(PARTS)]
    assert sorted(map(id, (p for part in parts for p in part))) == sorted(map(id, _corpus(N_CI)))
    assert all(parts)


def test_batched_report_blames_each_failing_program():
    """Checking layout programs in batches finds exactly the failures that
    checking them one by one finds, each blamed on its own program."""
    def make(fn):
        return lambda *args: fx.fg.bump_float64(fn(*args))
    fx.fg.assert_batching_blames_like_alone(fx.Report, _corpus(N_CI)[:80], make)


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
