"""A parallel loop's task body is compiled once (codegen_loops.c,
put_task_function): where the compiler has GNU C's nested functions the body
is one function that the OpenMP branch and the serial branch both call;
elsewhere (ND_NO_NESTED_TASKS, or a compiler without them) the loop's two
copies. The second copy was 22-43% of a kernel unit's compile time
(BENCHMARKS.md, "CI time: the parallel loop's second copy")."""
import logging
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numdyn

NOFLOOR = {"floor": False}


def kernels(x, t):
    # pointwise, an axis reduction in chunks, a full reduction, a row
    # softmax-style reduction and an overflow (warns) in a parallel task
    return (np.exp(x) * 2.0, (t - t.mean(0)) / 3.0, t.sum(0), x.sum(),
            np.exp(t - t.max(1, keepdims=True)).sum(1))


def _code(caplog, fn, *args):
    cf = numdyn.compile(fn, options=NOFLOOR)
    numdyn.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            got = cf(*args)
    finally:
        numdyn.set_logs(output_code=False)
    return got, caplog.text


def _blocks(text):
    """(nested, split) text of each `#if ND_NESTED_TASKS` block"""
    out = []
    for m in re.finditer(r"#if ND_NESTED_TASKS\n(.*?)\n#else\n(.*?)\n#endif", text, re.S):
        out.append((m.group(1), m.group(2)))
    return out


def test_task_body_once_called_by_both_branches(caplog):
    r = np.random.default_rng(3)
    x, t = r.random(300000), r.random((50000, 8))
    got, text = _code(caplog, kernels, x, t)
    for g, w in zip(got, kernels(x, t)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    blocks = _blocks(text)
    assert len(blocks) >= 3, text[-3000:]
    for nested, split in blocks:
        fn = re.search(r"__attribute__\(\(noinline\)\) int (ndt\d+_)\(int64_t (\w+)\) \{", nested)
        assert fn, nested[:2000]
        name, idx = fn.group(1), fn.group(2)
        # called once in the OpenMP loop and once in the serial loop
        assert nested.count(f"nd_err |= {name}({idx});") == 2, nested[-1500:]
        assert nested.count("#pragma omp parallel for") == 1
        # the body's vector loops appear once in the nested form, twice
        # (parallel copy and serial copy) in the split form
        simd_nested = nested.count("#pragma omp simd")
        assert simd_nested >= 1
        assert split.count("#pragma omp simd") == 2 * simd_nested


_SCRIPT = textwrap.dedent("""
    import warnings, numpy as np, numdyn, numdyn.utils
    def kernels(x, t):
        return (np.exp(x) * 2.0, (t - t.mean(0)) / 3.0, t.sum(0), x.sum(),
                np.exp(t - t.max(1, keepdims=True)).sum(1))
    r = np.random.default_rng(5)
    for n, m in ((7, 3), (300000, 8), (50000, 64)):
        x, t = r.random(n), r.random((m * 1000, 8))
        x[n // 2] = 800.0
        f = numdyn.compile(kernels, options={"floor": False})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = f(x, t)
        with warnings.catch_warnings(record=True) as we:
            warnings.simplefilter("always")
            want = kernels(x, t)
        assert sorted(str(a.message) for a in w) == sorted(str(a.message) for a in we), (w, we)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    # the kernels ran (not an eager fallback)
    assert numdyn.utils.counters["kernel_runs"] > 0, dict(numdyn.utils.counters.items())
    print("ok")
""")


@pytest.mark.parametrize("nested", [True, False])
def test_both_forms_compile_and_agree_with_numpy(tmp_path, nested):
    env = dict(os.environ)
    env["NUMDYN_CACHE_DIR"] = str(tmp_path / "cache")
    env["NUMDYN_BACKGROUND_COMPILE"] = "0"
    env["NUMDYN_COMPILE_BUDGET"] = "inf"
    if not nested:
        env["CC"] = (env.get("CC") or "cc") + " -DND_NO_NESTED_TASKS"
    r = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-4000:]
