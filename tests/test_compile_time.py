"""What a compile costs (issue 13 point 3, issue 17's compile-time bar):
nd_kernel.h precompiled once per compiler identity (src/toolchain/pch.c).

Each test runs numdyn in a process of its own with a private kernel cache
and a C compiler wrapper that logs every command line, so which compiles
used the precompiled header is a fact of the test; no test measures speed
(bench/bench_first_call.py does).
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from cc_wrap import fake_cc, logging_cc

gcc = shutil.which("gcc")
pytestmark = pytest.mark.skipif(gcc is None, reason="the precompiled header is GCC's")


def _run(code, cache, cc, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMDYN_")}
    env.update({"NUMDYN_CACHE_DIR": str(cache), "CC": cc, "NUMDYN_COMPILE_BUDGET": "inf",
                "NUMDYN_FLOOR": "0", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    env.update(extra or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


# two programs of distinct kernels; the first one's compile starts the
# header's build, wait_compiles() waits for it, the second one's use it
PROGRAMS = """
import numpy as np, numdyn
x = np.linspace(0.1, 0.9, 257)
f = numdyn.compile(lambda a: np.sqrt(np.UF1(a) * 2.5 + 1.0).sum())
g = numdyn.compile(lambda a: (np.exp(-a) * a - np.UF2(a * 3.0)).max())
ok1 = np.isclose(f(x), np.sqrt(np.UF1(x) * 2.5 + 1.0).sum(), rtol=1e-12)
numdyn.utils.wait_compiles()
ok2 = np.isclose(g(x), (np.exp(-x) * x - np.UF2(x * 3.0)).max(), rtol=1e-12)
print("OK", bool(ok1), bool(ok2))
"""


def _programs(uf1="tanh", uf2="cos"):
    """PROGRAMS with other functions: kernels no earlier run built"""
    return PROGRAMS.replace("UF1", uf1).replace("UF2", uf2)


def _compiles(log):
    return [ln for ln in log.read_text().splitlines() if " -shared" in ln]


def _pch_dirs(cache):
    return [p for p in cache.iterdir() if p.name.startswith("pch-")]


def test_the_header_is_precompiled_once_and_later_compiles_use_it(tmp_path):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    assert _run(_programs(), cache, cc).split() == ["OK", "True", "True"]
    (d,) = _pch_dirs(cache)
    assert oct(d.stat().st_mode & 0o777) == "0o700"
    gch, total = d / "nd_kernel.h.gch", d / "nd_kernel.h.sum"
    assert oct(gch.stat().st_mode & 0o777) == "0o600" and gch.stat().st_size > 0
    assert int(total.read_text().split()[0]) == gch.stat().st_size
    headers = [ln for ln in log.read_text().splitlines() if "c-header" in ln]
    assert len(headers) == 1, headers
    first, *later = _compiles(log)
    assert "-I../pch-" not in first  # the header was not built yet
    assert later and all(f"-I../{d.name}" in ln for ln in later), later
    # a second process finds it built: every compile uses it, none rebuilds it
    log.write_text("")
    code = _programs("sinh", "sin")
    assert _run(code, cache, cc).split() == ["OK", "True", "True"]
    assert not [ln for ln in log.read_text().splitlines() if "c-header" in ln]
    assert _compiles(log) and all(f"-I../{d.name}" in ln for ln in _compiles(log))


def test_numdyn_pch_0_turns_it_off(tmp_path):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    assert _run(_programs(), cache, cc, {"NUMDYN_PCH": "0"}).split() == ["OK", "True", "True"]
    assert _pch_dirs(cache) == []
    assert not any("-I../pch-" in ln or "c-header" in ln for ln in log.read_text().splitlines())


@pytest.mark.parametrize("damage", ["truncate", "garbage", "sum"])
def test_a_damaged_precompiled_header_is_rebuilt_not_used(tmp_path, damage):
    # GCC fails every compile on a truncated one ("cannot read PCH file"):
    # one that does not match its checksum is never given to it
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    _run(_programs(), cache, cc)
    (d,) = _pch_dirs(cache)
    gch = d / "nd_kernel.h.gch"
    data = gch.read_bytes()
    if damage == "truncate":
        gch.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        gch.write_bytes(data[:100] + bytes(len(data) - 100))
    else:
        (d / "nd_kernel.h.sum").write_text("12 0000000000000000\n")
    log.write_text("")
    code = _programs("arctan", "cosh")
    assert _run(code, cache, cc).split() == ["OK", "True", "True"]
    first, *later = _compiles(log)
    assert "-I../pch-" not in first
    # rebuilt (the rename replaced the damaged one) and used again
    assert [ln for ln in log.read_text().splitlines() if "c-header" in ln]
    assert later and all(f"-I../{d.name}" in ln for ln in later), later
    assert int((d / "nd_kernel.h.sum").read_text().split()[0]) == gch.stat().st_size


# a captured loop: its unit includes nd_loop.h after nd_kernel.h
LOOP = """
def loop(a):
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            s += a[i] * 2.0
    return s
print("L", numdyn.compile(loop)(x) == loop(x))
"""


def test_a_loops_header_comes_from_the_precompiled_one(tmp_path):
    # GCC's -H lists each header it reads ("! x.gch" for a precompiled one):
    # a captured loop's unit reads nd_loop.h from the .gch, not from the file
    hlog = tmp_path / "h.log"
    cc = fake_cc(tmp_path, "hcc", when="*-shared*", then=f'{gcc} -H "$@" 2>> {hlog}; exit $?')
    out = _run(_programs() + LOOP, tmp_path / "cache", cc)
    assert "OK True True" in out and "L True" in out
    lines = hlog.read_text().splitlines()
    assert any(ln.startswith("! ") and ln.endswith("nd_kernel.h.gch") for ln in lines), lines
    assert not [ln for ln in lines if ln.endswith("/nd_loop.h")], lines


def test_kernels_compile_to_the_same_code_with_and_without_it(tmp_path):
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    cc, log = logging_cc(tmp_path)
    code = _programs() + """
h = numdyn.compile(lambda a: np.log1p(np.abs(a - 0.5)) * 2.0 + np.sin(a).cumsum())
print("H", bool(np.allclose(h(x), np.log1p(np.abs(x - 0.5)) * 2.0 + np.sin(x).cumsum())))
""" + LOOP
    text = {}
    for name, extra in (("with", {}), ("without", {"NUMDYN_PCH": "0"})):
        cache = tmp_path / name
        out = _run(code, cache, cc, extra)
        assert "H True" in out and "L True" in out
        for so in cache.glob("*.so"):
            dis = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(so)],
                                 capture_output=True, text=True).stdout
            text.setdefault(name, {})[so.name] = dis.split("\n", 3)[3]
    assert text["with"].keys() == text["without"].keys()
    for k in text["with"]:
        assert text["with"][k] == text["without"][k], k
    # the last program's compile did use it
    assert "-I../pch-" in _compiles(log)[-1] or any(
        "-I../pch-" in ln for ln in _compiles(log))


def test_clear_cache_keeps_the_current_header_and_drops_others(tmp_path):
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    _run(_programs(), cache, cc)
    (d,) = _pch_dirs(cache)
    old = cache / "pch-0123456789abcdef"
    old.mkdir(mode=0o700)
    (old / "nd_kernel.h.gch").write_bytes(b"old")
    _run("import numdyn; numdyn.utils.clear_cache()", cache, cc)
    assert _pch_dirs(cache) == [d]
    assert not list(cache.glob("*.so"))


def test_exit_with_the_header_build_in_flight_stops_it(tmp_path):
    # a header build that never ends (held until the test's gate, which
    # never opens): the kernels compile without it, the interpreter exits
    # promptly, the build is stopped and its build directory removed
    log = tmp_path / "cc.log"
    gate = tmp_path / "gate"
    cc = fake_cc(tmp_path, "slowpch", when="*c-header*",
                 then=f'echo "pch $$" >> {log}\nwhile [ ! -e {gate} ]; do sleep 0.05; done')
    cache = tmp_path / "cache"
    code = """
import numpy as np, numdyn
x = np.linspace(0.1, 0.9, 257)
f = numdyn.compile(lambda a: np.sqrt(np.tanh(a) * 2.5 + 1.0).sum())
g = numdyn.compile(lambda a: (np.exp(-a) * a - np.cos(a * 3.0)).max())
print("OK", bool(np.isclose(f(x), np.sqrt(np.tanh(x) * 2.5 + 1.0).sum(), rtol=1e-12)),
      bool(np.isclose(g(x), (np.exp(-x) * x - np.cos(x * 3.0)).max(), rtol=1e-12)))
"""
    import time
    t0 = time.monotonic()
    assert _run(code, cache, cc).split() == ["OK", "True", "True"]
    assert time.monotonic() - t0 < 120
    (line,) = log.read_text().splitlines()
    pid = int(line.split()[1])
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        gate.touch()
        pytest.fail(f"the header's compiler {pid} still runs after exit")
    assert [p.name for p in cache.iterdir() if p.name.startswith(("build-", "pch-"))] == []


def test_a_header_damaged_after_its_check_in_this_process_is_not_used(tmp_path):
    # checked once per process, then its identity (device, inode, size,
    # mtime) stands for the check: rewritten in place, same size, it is
    # checked again, found damaged and not given to GCC
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    code = _programs() + f"""
import glob
numdyn.utils.wait_compiles()
(gch,) = glob.glob({str(cache)!r} + "/pch-*/nd_kernel.h.gch")
data = open(gch, "rb").read()
with open(gch, "r+b") as fh:
    fh.write(bytes(len(data)))
open({str(log)!r}, "w").close()
h = numdyn.compile(lambda a: np.arcsinh(a * 1.5).sum())
print("H", bool(np.isclose(h(x), np.arcsinh(x * 1.5).sum(), rtol=1e-12)))
"""
    out = _run(code, cache, cc)
    assert "OK True True" in out and "H True" in out, out
    first = _compiles(log)[0]
    assert "-I../pch-" not in first, first


def test_a_unit_compiles_no_scalar_math_wrappers_it_does_not_call(tmp_path):
    # nd_kernel.h binds the scalar symbols of SLEEF's 3.5-ULP functions
    # (log_u35, sinf_u35, ... -- loop remainders call them) to libm's by an
    # assembler alias: no unit compiles a function for them (18 wrappers went
    # through -O3 in every unit, 40 ms of a small unit's ~90 ms). A kernel
    # with no math defines none; a float32/float64 log and arctan2 kernel of
    # 1027 elements (vector body and scalar remainder) gives NumPy's values
    # (SLEEF's 3.5-ULP tolerance).
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    cc, log = logging_cc(tmp_path)
    cache = tmp_path / "cache"
    code = """
import numpy as np, numdyn
x = np.linspace(0.1, 0.9, 1027)
f = numdyn.compile(lambda a: (a * 2.5 + 1.0).sum())
print("F", bool(np.isclose(f(x), (x * 2.5 + 1.0).sum(), rtol=1e-12)))
"""
    assert "F True" in _run(code, cache, cc)
    (so,) = cache.glob("*.so")
    syms = subprocess.run([nm, str(so)], capture_output=True, text=True, check=True).stdout
    assert "_u35" not in syms, syms
    code = """
import numpy as np, numdyn
for dt in (np.float32, np.float64):
    x = np.linspace(0.1, 0.9, 1027).astype(dt)
    g = numdyn.compile(lambda a: np.log(a) * np.arctan2(a, 0.5) - np.arcsin(a))
    want = np.log(x) * np.arctan2(x, 0.5) - np.arcsin(x)
    got, tol = g(x), (2e-6 if dt is np.float32 else 1e-14)
    print(dt.__name__, got.dtype == want.dtype, bool(np.allclose(got, want, rtol=tol)),
          bool(np.allclose(g(x[1:]), want[1:], rtol=tol)))
"""
    out = _run(code, tmp_path / "cache2", cc)
    assert "float32 True True True" in out and "float64 True True True" in out, out
