"""The disk cache's kernel index (cache_disk.c, <16 hex>.k): a kernel is
named by the hash of its whole C text (with the compiler identity), and a
translation unit asked for that is not on disk, but whose kernels were all
compiled in other cached units, loads them from those units instead of
compiling -- the same kernels batched into other units (background
compiles make one unit a kernel, waited-for compiles batch a program's
kernels; fuzz runs batch 4 or 32 programs) compile once. Every unit the
index names loads through the same checks as a unit of its own: a refused
index file or unit costs a compile, never a load."""
import os
import stat

import numpy as np
import pytest

import numdyn
from numdyn import utils

from cc_wrap import logging_cc  # noqa: E402
from test_hardening_cache import last_json, payload, run_py, write_sum  # noqa: E402

# several kernels in one program (two reductions, elementwise work)
PROG = """
import json, numpy as np, numdyn
from numdyn import utils
def f(a, b):
    s = np.sum(a * b)
    m = np.max(np.abs(a - b), axis=0)
    c = np.sqrt(np.abs(a)) * m - s
    return c, np.mean(np.exp(-b), axis=1)
a = np.linspace(-1, 1, 600).reshape(30, 20); b = np.cos(a)
r = numdyn.compile(f, backend="native")(a, b)
e = f(a, b)
ok = all(np.allclose(x, y, rtol=1e-12, atol=0) and x.dtype == y.dtype and x.shape == y.shape
         for x, y in zip(r, e))
print(json.dumps({"ok": ok, **dict(utils.counters)}))
"""


def f(a, b):
    s = np.sum(a * b)
    m = np.max(np.abs(a - b), axis=0)
    c = np.sqrt(np.abs(a)) * m - s
    return c, np.mean(np.exp(-b), axis=1)


def g(a, b):
    return np.cumsum(a, axis=0) * 2.0 + np.min(b, axis=1, keepdims=True)


def check(r, e):
    assert type(r) is type(e) and len(r) == len(e)
    for x, y in zip(r, e):
        assert type(x) is type(y) and x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)


def sos(d):
    return sorted(p.name for p in d.iterdir() if p.suffix == ".so")


def run(d, background):
    env = {"NUMDYN_BACKGROUND_COMPILE": "1" if background else "0",
           "NUMDYN_COMPILE_BUDGET": "inf"}
    r = last_json(run_py(PROG, d, env_extra=env))
    assert r["ok"]
    return r


@pytest.mark.parametrize("first_background", [True, False], ids=["unit_a_kernel_first",
                                                                  "batched_first"])
def test_same_kernels_in_other_units_compile_once_in_process(tmp_path, monkeypatch,
                                                             first_background):
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numdyn.config, "compile_budget", float("inf"))
    a = np.linspace(-1, 1, 600).reshape(30, 20)
    b = np.cos(a)
    want_f, want_g = f(a, b), (g(a, b),)

    def both():
        return (numdyn.compile(f, backend="native")(a, b),
                (numdyn.compile(g, backend="native")(a, b),))

    utils.reset()
    monkeypatch.setattr(numdyn.config, "background_compile", first_background)
    rf, rg = both()
    check(rf, want_f)
    check(rg, want_g)
    c1 = dict(utils.counters)
    assert c1["kernels_compiled"] >= 3
    built = sos(tmp_path / "cache")
    # the in-memory caches emptied; the same kernels now batched otherwise
    utils.reset()
    monkeypatch.setattr(numdyn.config, "background_compile", not first_background)
    rf, rg = both()
    check(rf, want_f)
    check(rg, want_g)
    c2 = {k: v - c1[k] for k, v in utils.counters.items()}  # counters only grow
    assert c2["kernels_compiled"] == 0, c2
    assert c2["disk_cache_hits"] >= 1 and c2["kernel_texts"] == c1["kernel_texts"]
    assert sos(tmp_path / "cache") == built  # no unit was built
    utils.reset()


def test_index_survives_processes_and_clear_cache_removes_it(tmp_path, monkeypatch):
    d = tmp_path / "c"
    assert run(d, True)["kernels_compiled"] >= 3
    idx = [p for p in d.iterdir() if p.suffix == ".k"]
    assert len(idx) >= 3
    for p in idx:
        assert stat.S_IMODE(os.lstat(p).st_mode) & 0o077 == 0
    r = run(d, False)
    assert r["kernels_compiled"] == 0 and r["disk_cache_hits"] >= 1
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(d))
    utils.clear_cache()
    assert not [p for p in d.iterdir() if p.suffix in (".k", ".so", ".sum")]
    assert run(d, False)["kernels_compiled"] >= 3


def indexed_units(d):
    """{index file: the unit base it names}"""
    return {p: p.read_text().split()[0] for p in d.iterdir() if p.suffix == ".k"}


@pytest.mark.parametrize("how", ["index_group_writable", "index_symlink", "index_garbage",
                                 "unit_damaged", "unit_symlink_payload",
                                 "unit_group_writable_payload"])
def test_refused_index_or_unit_costs_a_compile_never_a_load(tmp_path, how):
    d = tmp_path / "c"
    assert run(d, True)["kernels_compiled"] >= 3
    idx = indexed_units(d)
    marker = tmp_path / "PWNED"
    evil = payload(tmp_path, marker)
    # a unit holding several kernels (a merged background compile) is
    # named by several index files: each unit is damaged or replaced once
    seen = set()
    for p, base in idx.items():
        if how.startswith("unit") and base in seen:
            continue
        seen.add(base)
        so = d / (base + ".so")
        if how == "index_group_writable":
            os.chmod(p, 0o664)
        elif how == "index_symlink":
            target = tmp_path / ("copy-" + p.name)
            target.write_text(p.read_text())
            os.chmod(target, 0o600)
            p.unlink()
            p.symlink_to(target)
        elif how == "index_garbage":
            p.write_text("not an index entry\n")
            os.chmod(p, 0o600)
        elif how == "unit_damaged":
            data = bytearray(so.read_bytes())
            data[len(data) // 2] ^= 0xFF
            so.write_bytes(bytes(data))
        elif how == "unit_symlink_payload":
            so.unlink()
            so.symlink_to(evil)
            write_sum(d / (base + ".sum"), evil.read_bytes())
        else:
            data = evil.read_bytes()
            so.write_bytes(data)
            os.chmod(so, 0o664)
            write_sum(d / (base + ".sum"), data)
    r = run(d, False)
    assert not marker.exists(), "numdyn loaded a planted shared object (%s)" % how
    assert r["kernels_compiled"] >= 1, r
    # what compiled now is indexed again: the other batching loads it
    r2 = run(d, True)
    assert r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 1


def h(a, b, c):
    # f's kernels and a kernel of its own (c's shape fuses with nothing of f's)
    return (*f(a, b), np.cumsum(c, axis=0) * 3.0)


def new_part(c):
    return np.cumsum(c, axis=0) * 3.0


def test_batched_unit_compiles_only_its_kernels_not_cached(tmp_path, monkeypatch):
    # waited-for compiles batch a program's kernels into a few units: the
    # kernels of one the index holds load from their units, only the others
    # compile (a unit with one new kernel compiled its cached ones again)
    monkeypatch.setattr(numdyn.config, "compile_budget", float("inf"))
    monkeypatch.setattr(numdyn.config, "background_compile", False)
    a = np.linspace(-1, 1, 600).reshape(30, 20)
    b = np.cos(a)
    c = np.arange(21.0).reshape(7, 3)

    def compiled(fn, *args):
        before = dict(utils.counters)
        r = numdyn.compile(fn, backend="native")(*args)
        check(r if isinstance(r, tuple) else (r,), fn(*args) if isinstance(r, tuple) else (fn(*args),))
        return {k: v - before[k] for k, v in utils.counters.items()}

    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "alone"))
    utils.reset()
    k_new = compiled(new_part, c)["kernels_compiled"]
    assert k_new >= 1
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "cache"))
    utils.reset()
    k_f = compiled(f, a, b)["kernels_compiled"]
    assert k_f >= 2
    utils.reset()
    d = compiled(h, a, b, c)
    assert d["kernels_compiled"] == k_new, (d, k_f, k_new)
    assert d["disk_cache_hits"] >= 1
    # and the kernels now compiled are indexed too: nothing compiles again
    utils.reset()
    assert compiled(h, a, b, c)["kernels_compiled"] == 0
    utils.reset()


def test_kernels_asked_for_at_once_share_compiler_runs(tmp_path):
    # background compiles keep a unit a kernel (its name, found by any graph
    # asking for that kernel), but the units one request asks for compile
    # in up to nd_cc_jobs() compiler runs (cache_disk.c, bg_start_merged):
    # a run pays the driver, the precompiled header's load and the link
    # (~40 ms CPU) once, not once per kernel
    cc, log = logging_cc(tmp_path, when="*-shared*")
    d = tmp_path / "c"
    env = {"NUMDYN_BACKGROUND_COMPILE": "1", "NUMDYN_COMPILE_BUDGET": "inf", "CC": cc,
           "NUMDYN_COMPILE_JOBS": "1"}
    r = last_json(run_py(PROG, d, env_extra=env))
    assert r["ok"] and r["kernels_compiled"] >= 3, r
    runs = log.read_text().splitlines()
    assert len(runs) == len(sos(d)) == 1, (runs, sos(d))
    # every kernel is indexed to that unit: other batchings load them all
    assert len(indexed_units(d)) == r["kernels_compiled"]
    assert set(indexed_units(d).values()) == {sos(d)[0][:-3]}
    r2 = last_json(run_py(PROG, d, env_extra=dict(env, NUMDYN_BACKGROUND_COMPILE="0")))
    assert r2["ok"] and r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 1, r2
    assert len(log.read_text().splitlines()) == 1
