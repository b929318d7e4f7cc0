"""First calls (issue 13, point 3): background compiles with a budget.

numdyn.config.background_compile on: a call waits for its compilers up to
numdyn.config.compile_budget seconds in all, runs compiled what was built by
then and runs the rest with NumPy; the call that finds the kernels built runs
compiled. These tests use a C compiler wrapper that holds every compile at a
gate (a file the test creates), so "the compiler has not finished" is a fact
of the test, not a timing: no test here measures speed.
"""
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import numdyn
from numdyn import utils

from cc_wrap import REAL_CC, failing_cc, fake_cc, logging_cc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gated_cc(tmp_path):
    """A compiler that logs each compile's start and end and holds it until
    tmp_path/gate exists (--version / -E calls of the identity pass)."""
    gate, log = tmp_path / "gate", tmp_path / "cc.log"
    cc = fake_cc(tmp_path, "gatedcc", when="*-shared*", then=textwrap.dedent(f"""\
        echo "start $$" >> {log}
        while [ ! -e {gate} ]; do sleep 0.02; done
        {REAL_CC} "$@"; rc=$?
        echo "end $$" >> {log}
        exit $rc"""))
    return cc, gate, log


def _starts(log):
    return [ln for ln in log.read_text().splitlines() if ln.startswith("start")] \
        if log.exists() else []


@pytest.fixture
def gated(monkeypatch, tmp_path):
    """Background compiles on, a private cache, the gated compiler; the gate
    opens on its own after 60 s so a broken budget fails instead of hanging."""
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "cache"))
    cc, gate, log = _gated_cc(tmp_path)
    monkeypatch.setenv("CC", cc)
    utils.reset()
    monkeypatch.setattr(numdyn.config, "background_compile", True)
    monkeypatch.setattr(numdyn.config, "compile_budget", 0.2)
    watchdog = threading.Timer(60.0, gate.touch)
    watchdog.start()
    yield gate, log
    gate.touch()
    watchdog.cancel()
    utils.wait_compiles()
    utils.reset()


def _many_kernels(x, y):
    # several kernels in one graph (reductions over different axes, a
    # matmul between them), each its own compile unit in background mode
    a = np.tanh(x @ y + 0.5)
    s0 = a.sum(axis=0)
    s1 = np.exp(-a).max(axis=1)
    c = (a - s0) / (1.0 + s1[:, None])
    return c.std(axis=0), np.sqrt(np.abs(c)).mean(), s1.argmax()


def _args():
    rng = np.random.default_rng(13)
    return rng.standard_normal((40, 30)), rng.standard_normal((30, 20))


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_first_call_returns_numpys_answer_within_the_budget(gated):
    gate, log = gated
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    c0 = dict(utils.counters)
    t0 = time.monotonic()
    got = f(x, y)
    took = time.monotonic() - t0
    c1 = dict(utils.counters)
    # every compiler is still held at the gate: the call did not wait for them
    assert not gate.exists() and took < 60
    _same(got, _many_kernels(x, y))
    assert c1["compiling_runs"] > c0["compiling_runs"]
    assert c1["kernel_runs"] == c0["kernel_runs"]
    assert len(_starts(log)) >= 1
    gate.touch()
    assert utils.wait_compiles() is None
    got = f(x, y)  # finds them built: runs compiled
    c2 = dict(utils.counters)
    _same(got, _many_kernels(x, y))
    assert c2["kernel_runs"] > c1["kernel_runs"]
    assert c2["kernels_compiled"] > c1["kernels_compiled"]


def test_a_call_within_the_budget_runs_compiled_as_if_it_waited(monkeypatch, tmp_path):
    # a budget no compile reaches: the first call runs compiled, exactly as
    # without background compiles (no graph ran with NumPy)
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "cache"))
    utils.reset()
    monkeypatch.setattr(numdyn.config, "background_compile", True)
    monkeypatch.setattr(numdyn.config, "compile_budget", 600.0)
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    c0 = dict(utils.counters)
    got = f(x, y)
    c1 = dict(utils.counters)
    _same(got, _many_kernels(x, y))
    assert c1["compiling_runs"] == c0["compiling_runs"]
    assert c1["kernel_runs"] > c0["kernel_runs"]
    assert c1["kernels_compiled"] > c0["kernels_compiled"]
    utils.reset()


def test_compile_budget_is_a_config_switch():
    was = numdyn.config.compile_budget
    try:
        numdyn.config.compile_budget = 2
        assert numdyn.config.compile_budget == 2.0
        assert numdyn._C._compile_budget() == 2.0
        with pytest.raises(ValueError):
            numdyn.config.compile_budget = -1
    finally:
        numdyn.config.compile_budget = was
    assert numdyn._C._compile_budget() == was


def _run(code, env_extra, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMDYN_")}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


_PROGRAM = """
import signal
# a child of a process that ignores SIGINT (a pytest-xdist worker) inherits
# that; a terminal program has Python's handler
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np, numdyn, sys
def many(x):
    out = []
    for k in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
        # a distinct kernel each: a chain of its own length
        y = np.sin(x)
        for _ in range(k + 1):
            y = np.sqrt(y * y + 0.5)
        out.append(y.sum())
        out[-1] = float(out[-1])   # a graph break: one graph (one compile) per k
    return out
x = np.linspace(0.1, 0.9, 300)
f = numdyn.compile(many, options={"floor": False})
"""


def test_independent_compiles_run_concurrently_up_to_the_job_limit(tmp_path):
    # 4 kernels whose compiles are all held at the gate: with 3 compile jobs
    # allowed, exactly 3 compilers run at once (never more), the call returns
    cc, gate, log = _gated_cc(tmp_path)
    code = _PROGRAM + """
r = f(x)
print("OK", r == many(x))
"""
    cache = tmp_path / "cache"
    r = _run(code, {"NUMDYN_CACHE_DIR": str(cache), "CC": cc, "NUMDYN_COMPILE_JOBS": "3",
                    "NUMDYN_BACKGROUND_COMPILE": "1", "NUMDYN_COMPILE_BUDGET": "0.3",
                    "NUMDYN_FLOOR": "0"})
    assert r.returncode == 0, r.stderr
    assert "OK True" in r.stdout, r.stdout
    # the interpreter exited with its compilers held: they were stopped
    assert len(_starts(log)) == 3, log.read_text()


def test_blocking_compiles_run_in_parallel(tmp_path):
    # background compiles off: one graph of many kernels is split into up to
    # nd_cc_jobs() units, compiled at once (the gate holds each until both
    # started: a serial build would never get past it)
    log = tmp_path / "cc.log"
    cc = fake_cc(tmp_path, "paircc", when="*-shared*", then=textwrap.dedent(f"""\
        echo "start $$" >> {log}
        n=0
        while [ "$(grep -c start {log})" -lt 2 ] && [ $n -lt 1500 ]; do sleep 0.02; n=$((n+1)); done
        echo "saw $(grep -c start {log})" >> {log}"""))
    code = """
import numpy as np, numdyn
rng = np.random.default_rng(1)
def big(x):
    # enough kernel text for two units
    outs = []
    for k in range(12):
        outs.append(np.tanh(x * (k + 1.5)).sum(axis=k % 2) + np.cos(x).max() * k)
    return outs
x = rng.standard_normal((30, 30))
f = numdyn.compile(big, options={"floor": False})
got = f(x)
want = big(x)
print("OK", all(np.allclose(a, b) for a, b in zip(got, want)))
"""
    r = _run(code, {"NUMDYN_CACHE_DIR": str(tmp_path / "cache"), "CC": cc,
                    "NUMDYN_COMPILE_JOBS": "2", "NUMDYN_FLOOR": "0",
                    "NUMDYN_BACKGROUND_COMPILE": "0"})
    assert r.returncode == 0, r.stderr
    assert "OK True" in r.stdout
    saw = [ln for ln in log.read_text().splitlines() if ln.startswith("saw")]
    assert saw and all(ln == "saw 2" for ln in saw[:2]), log.read_text()


def test_shutdown_with_a_compile_in_flight(tmp_path):
    # the interpreter exits while compilers are held at a gate that never
    # opens: it exits promptly, stops them, and leaves no build directory
    cc, gate, log = _gated_cc(tmp_path)
    cache = tmp_path / "cache"
    code = _PROGRAM + """
r = f(x)
print("OK", r == many(x))
"""
    t0 = time.monotonic()
    r = _run(code, {"NUMDYN_CACHE_DIR": str(cache), "CC": cc,
                    "NUMDYN_BACKGROUND_COMPILE": "1", "NUMDYN_COMPILE_BUDGET": "0.2",
                    "NUMDYN_FLOOR": "0"}, timeout=60)
    assert time.monotonic() - t0 < 60
    assert r.returncode == 0, r.stderr
    assert "OK True" in r.stdout
    assert _starts(log)
    left = [p.name for p in cache.iterdir() if p.name.startswith("build-")]
    assert left == [], left
    # the held compilers (their process groups) are gone
    for ln in _starts(log):
        pid = int(ln.split()[1])
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"compiler {pid} still running after exit")


def test_ctrl_c_while_waiting_for_compiles(gated):
    # KeyboardInterrupt in utils.wait_compiles() (the compilers held at the
    # gate): it raises, and the compiles go on to be collected later
    gate, log = gated
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    f(x, y)
    import _thread
    import signal
    # pytest-xdist's workers ignore SIGINT, and interrupt_main() then does
    # nothing: Python's own handler stands in while this test needs it
    prev = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = threading.Timer(0.3, _thread.interrupt_main)
        t.start()
        with pytest.raises(KeyboardInterrupt):
            utils.wait_compiles()
        t.join()
    finally:
        signal.signal(signal.SIGINT, prev)
    gate.touch()
    utils.wait_compiles()
    c1 = dict(utils.counters)
    _same(f(x, y), _many_kernels(x, y))
    assert utils.counters["kernel_runs"] > c1["kernel_runs"]


def test_frozen_mode_starts_no_compile(gated):
    gate, log = gated
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    with numdyn.run():
        _same(f(x, y), _many_kernels(x, y))
    assert _starts(log) == []


def test_fork_child_does_not_collect_its_parents_compiles(gated):
    gate, log = gated
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    f(x, y)  # compiles held at the gate
    pid = os.fork()
    if pid == 0:  # the child: its own first call, its parent's jobs not its own
        code = 1
        try:
            got = f(x, y)
            np.testing.assert_allclose(got[0], _many_kernels(x, y)[0], rtol=1e-12)
            code = 0
        finally:
            os._exit(code)
    gate.touch()
    _, st = os.waitpid(pid, 0)
    assert os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0
    utils.wait_compiles()
    c1 = dict(utils.counters)
    _same(f(x, y), _many_kernels(x, y))
    assert utils.counters["kernel_runs"] > c1["kernel_runs"]


def test_ctrl_c_at_the_terminal_spares_background_compilers(tmp_path):
    # the terminal sends SIGINT to the whole foreground process group; the
    # background compilers run in a group of their own, so the interrupted
    # program's next call finds its kernels built (not a dead compiler's
    # CompileError)
    cc, gate, log = _gated_cc(tmp_path)
    code = _PROGRAM + f"""
import os, signal
r = f(x)
try:
    os.killpg(os.getpgrp(), signal.SIGINT)   # what Ctrl-C at a terminal does
    import time; time.sleep(5)
except KeyboardInterrupt:
    print("interrupted")
open({str(gate)!r}, "w").close()
numdyn.utils.wait_compiles()
c = numdyn.utils.counters["kernel_runs"]
print("OK", np.allclose(f(x), many(x), rtol=1e-12), numdyn.utils.counters["kernel_runs"] > c)
"""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120, start_new_session=True,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("NUMDYN_")},
                            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                            "NUMDYN_CACHE_DIR": str(tmp_path / "cache"), "CC": cc,
                            "NUMDYN_BACKGROUND_COMPILE": "1", "NUMDYN_COMPILE_BUDGET": "0.2",
                            "NUMDYN_FLOOR": "0"})
    assert r.returncode == 0, r.stderr
    assert "interrupted" in r.stdout and "OK True True" in r.stdout, (r.stdout, r.stderr)


_CATCH_CTRL_C = """
try:
    f(x)
    print("returned", flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
except numdyn.utils.CompileError as e:
    print("CompileError", e, flush=True)
"""


def _one_ctrl_c(tmp_path, cc, log):
    """Run _PROGRAM's call with blocking compiles by cc in a session of its
    own; one SIGINT to its process group once a compiler has started (a
    terminal's Ctrl-C). (out, err); fails if the child did not end."""
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_PROGRAM + _CATCH_CTRL_C)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("NUMDYN_")},
                              "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                              "NUMDYN_CACHE_DIR": str(tmp_path / "cache"), "CC": cc,
                              "NUMDYN_BACKGROUND_COMPILE": "0", "NUMDYN_FLOOR": "0"})
    try:
        end = time.monotonic() + 120
        while not log.exists() and p.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            pass
        hung = p.poll() is None
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    assert not hung, ("one Ctrl-C did not end the call", _starts(log), out, err)
    # the compilers it started are gone (stopped and reaped): none waits
    for ln in _starts(log):
        with pytest.raises(ProcessLookupError):
            os.kill(int(ln.split()[1]), 0)
    return out, err


def test_ctrl_c_during_a_blocking_compile_raises_keyboard_interrupt(tmp_path):
    # background compiles off: the call waits for its compilers, which the
    # terminal's Ctrl-C (the whole foreground group) kills too; the call
    # raises KeyboardInterrupt, not the dead compiler's CompileError.
    # When the Ctrl-C fell between two compilers' starts (the graph's units
    # start back to back), the later one did not get it and the call waited
    # for it, gated here: a hang in about one run in ten under load (session
    # 25). The deterministic form of that is the next test.
    cc, gate, log = _gated_cc(tmp_path)
    out, err = _one_ctrl_c(tmp_path, cc, log)
    assert out.strip() == "KeyboardInterrupt", (out, err)


def test_ctrl_c_stops_a_blocking_compiler_that_outlives_it(tmp_path):
    # a compiler that survives the terminal's Ctrl-C (it ignores SIGINT, as
    # a wrapper in a session of its own would): the call raises
    # KeyboardInterrupt within a moment instead of waiting for it, and the
    # compiler is stopped, not left running
    gate, log = tmp_path / "gate", tmp_path / "cc.log"
    cc = fake_cc(tmp_path, "deafcc", when="*-shared*", then=textwrap.dedent(f"""\
        trap '' INT
        echo "start $$" >> {log}
        while [ ! -e {gate} ]; do sleep 0.02; done"""))
    try:
        out, err = _one_ctrl_c(tmp_path, cc, log)
    finally:
        gate.touch()
    assert out.strip() == "KeyboardInterrupt", (out, err)


# ------------------------------------------ the default mode (no switch set)
# numdyn's defaults are background compiles with a 1 s budget. These run in a
# process of their own with no NUMDYN_* variable (the suite's conftest sets
# an unbounded budget), as a user's program would.

def test_background_compiles_with_a_one_second_budget_are_the_default():
    r = _run("""
import numdyn
print(numdyn.config.background_compile, numdyn.config.compile_budget,
      numdyn._C._background_compile(), numdyn._C._compile_budget())
""", {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "1.0", "True", "1.0"], r.stdout


@pytest.mark.parametrize("env,want", [
    ({"NUMDYN_BACKGROUND_COMPILE": "0"}, "False 1.0"),
    ({"NUMDYN_BACKGROUND_COMPILE": "1"}, "True 1.0"),
    ({"NUMDYN_COMPILE_BUDGET": "inf"}, "True inf"),
    ({"NUMDYN_COMPILE_BUDGET": "0"}, "True 0.0"),
])
def test_environment_switches(env, want):
    r = _run("""
import numdyn
print(numdyn._C._background_compile(), numdyn._C._compile_budget())
""", env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want, r.stdout


def test_default_first_call_does_not_wait_for_a_compiler_that_never_ends(tmp_path):
    # the compilers are held at a gate that never opens: with numdyn's
    # defaults the first call returns NumPy's answer after about the 1 s
    # budget (not the compiler's time), runs nothing compiled, and the
    # interpreter exits promptly, its compilers stopped, no build directory
    # left
    cc, gate, log = _gated_cc(tmp_path)
    cache = tmp_path / "cache"
    code = _PROGRAM + """
import time
c0 = dict(numdyn.utils.counters)
t0 = time.monotonic()
r = f(x)
took = time.monotonic() - t0
c1 = dict(numdyn.utils.counters)
print("OK", r == many(x), c1["compiling_runs"] > c0["compiling_runs"],
      c1["kernel_runs"] == c0["kernel_runs"], took)
"""
    t0 = time.monotonic()
    r = _run(code, {"NUMDYN_CACHE_DIR": str(cache), "CC": cc}, timeout=60)
    assert time.monotonic() - t0 < 60
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    assert words[:4] == ["OK", "True", "True", "True"], r.stdout
    # four graphs, each asked within the call's one budget: the call waited
    # about 1 s in all for its compilers (never 1 s per graph); the rest of
    # what it took is tracing and NumPy, well under the gate's hold
    assert 0.9 < float(words[4]) < 30, r.stdout
    assert _starts(log)
    assert [p.name for p in cache.iterdir() if p.name.startswith("build-")] == []


def test_default_first_call_raises_a_compile_error_found_within_the_budget(tmp_path):
    # a compiler that ends at once (it fails, after printing its message):
    # within the default budget, the very first call raises the
    # CompileError, as it would waiting for the compiler
    cc = failing_cc(tmp_path, when="*-shared*")
    code = _PROGRAM + """
try:
    f(x)
    print("returned")
except numdyn.utils.CompileError as e:
    print("CompileError", "the compiler says no" in str(e))
"""
    r = _run(code, {"NUMDYN_CACHE_DIR": str(tmp_path / "cache"), "CC": cc})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["CompileError", "True"], (r.stdout, r.stderr)


def test_default_mode_program_runs_compiled_once_its_kernels_are_built(tmp_path):
    # the default mode end to end with the real compiler: whatever the first
    # call ran compiled or with NumPy (the machine's load decides), every
    # call gives NumPy's answer, and after wait_compiles() a call runs
    # compiled, nothing left compiling
    code = _PROGRAM + """
r1 = f(x)
numdyn.utils.wait_compiles()
c1 = dict(numdyn.utils.counters)
r2 = f(x)
c2 = dict(numdyn.utils.counters)
r3 = f(x)
c3 = dict(numdyn.utils.counters)
print("OK", np.allclose(r1, many(x), rtol=1e-12), np.allclose(r2, many(x), rtol=1e-12),
      np.allclose(r3, many(x), rtol=1e-12), c2["compiling_runs"] == c1["compiling_runs"],
      c2["kernel_runs"] > c1["kernel_runs"], c3["kernels_compiled"] == c2["kernels_compiled"])
"""
    r = _run(code, {"NUMDYN_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["OK"] + ["True"] * 6, (r.stdout, r.stderr)


def test_the_budget_is_spent_once_per_kernel_not_once_per_call(gated, monkeypatch):
    """A kernel still compiling after one call waited its budget (a loaded
    machine, a long queue) is not waited for again by the calls after it:
    they run NumPy at once until it is built. Waiting per call made every
    call of such a program take the whole budget (1 s a call)."""
    gate, log = gated
    monkeypatch.setattr(numdyn.config, "compile_budget", 0.5)
    f = numdyn.compile(_many_kernels, options={"floor": False})
    x, y = _args()
    times = []
    for _ in range(4):
        t0 = time.monotonic()
        _same(f(x, y), _many_kernels(x, y))
        times.append(time.monotonic() - t0)
    assert not gate.exists()
    assert sum(times) < 0.5 + 0.4, times


def test_threads_asking_for_the_same_kernels_compile_each_once(tmp_path):
    # several threads make the same first call at once: each unit is
    # compiled once -- a thread that waited while another collected and
    # published a unit loads it instead of compiling it again
    code = """
import threading
import numpy as np, numdyn
def prog(a):
    b = np.tanh(a * 1.25) + np.sqrt(np.abs(a))
    return b.sum(), (b * a).max(), np.cumsum(b)[-1]
x = np.linspace(-1.0, 1.0, 5000)
f = numdyn.compile(prog, options={"floor": False})
want = prog(x)
res = []
def run():
    res.append(f(x))
ts = [threading.Thread(target=run) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
numdyn.utils.wait_compiles()
res.append(f(x))
ok = all(np.allclose(r, want, rtol=1e-12) for r in res)
print("OK", ok, len(res), numdyn.utils.counters["kernels_compiled"])
"""
    cc, log = logging_cc(tmp_path, when="*-shared*")
    cache = tmp_path / "cache"
    r = _run(code, {"NUMDYN_CACHE_DIR": str(cache), "CC": cc, "NUMDYN_FLOOR": "0",
                    "NUMDYN_COMPILE_BUDGET": "inf", "NUMDYN_PCH": "0"}, timeout=300)
    assert r.returncode == 0, r.stderr
    ok, n, compiled = r.stdout.split()[1:]
    assert ok == "True" and n == "5", r.stdout
    units = list(cache.glob("*.so"))
    compiles = log.read_text().splitlines()
    assert len(compiles) == len(units), (compiles, units)
    # the kernels asked for at once compile in few compiler runs
    # (cache_disk.c, bg_start_merged): each kernel in exactly one unit
    kernels = [k for p in cache.glob("*.c") for k in re.findall(r"\bndk_[0-9a-f]{16}\b", p.read_text())]
    assert len(kernels) == len(set(kernels)) == int(compiled), (kernels, compiled)


# the default mode's fallback over real programs: NumPy runs every graph
# whose kernels are still compiling (budget 0: all of them, whatever the
# load), then the program runs compiled; both give NumPy's results, dtypes,
# returned types, warnings and argument state
_PROGRAM_ROWS = ("cholesky by rows", "LU partial pivoting", "heat 2-D", "Viterbi",
                 "MLP train step", "logistic regression", "k-means", "Game of Life",
                 "Mandelbrot boolean mask", "edit distance")

_DIFFERENTIAL = """
import copy, sys, warnings
sys.path.insert(0, {bench!r})
import bench_programs as BP, bench_loops as BL   # a fresh private kernel cache
import numpy as np, numdyn
numdyn.config.background_compile = True
numdyn.config.compile_budget = 0.0
rows = {rows!r}
bad, ran_numpy, seen = [], 0, 0
def call(fn, case):
    args = copy.deepcopy(case.make_args())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = fn(*args)
    return got, args, [(x.category.__name__, str(x.message)) for x in w]
for case in BP.program_cases(True) + BL.loop_cases(True):
    if not any(case.name.startswith(r) for r in rows):
        continue
    seen += 1
    ref, a_ref, w_ref = call(case.fn, case)
    f = numdyn.compile(case.fn)
    for k in range(2):
        c0 = numdyn.utils.counters["compiling_runs"]
        got, a_got, w_got = call(f, case)
        ran_numpy += numdyn.utils.counters["compiling_runs"] > c0
        err = BP.compare(ref, got, case.rtol, True, case.max_int_diff) or BP.compare(
            tuple(a_ref), tuple(a_got), case.rtol, True, None, "arguments after the call")
        if err or w_got != w_ref:
            bad.append((case.name, k, err, w_got, w_ref))
        numdyn.utils.wait_compiles()
print("SEEN", seen, "NUMPY", ran_numpy)
for b in bad:
    print("BAD", b)
"""


def test_programs_give_numpys_answers_while_their_kernels_compile(tmp_path):
    code = _DIFFERENTIAL.format(bench=os.path.join(REPO, "bench"), rows=_PROGRAM_ROWS)
    r = _run(code, {"NUMDYN_FLOOR": "0"}, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "BAD" not in r.stdout, r.stdout
    seen, ran = r.stdout.split()[1], r.stdout.split()[3]
    # every program (the loop-only ones aside) ran graphs with NumPy on its
    # first call
    assert int(seen) >= len(_PROGRAM_ROWS) and int(ran) >= 7, r.stdout
