"""NUMDYN_DEBUG_DIR as a new user meets it (issue 15, point 7).

In a fresh process with the default background compile (the first call runs
NumPy while the kernels compile), one call must still leave every artifact:
the captured graph, the schedule, each kernel's C and the compiler line (and
NUMDYN_LOGS=output_code logs the C); two
functions of one name (lambdas) get directories of their own; and repro.py
really reproduces: it calls the function on the very arguments of the
compiling call (saved before the call, even when the function writes into
them), exits 0 when numdyn agrees with NumPy and 1 when a miscompiling C
compiler makes them differ, and running it does not overwrite the directory."""
import os
import subprocess
import sys

import numpy as np

from cc_wrap import editing_cc, failing_cc, fake_cc

_PROG = '''
import numpy as np, numdyn
def scale_rows(x, y, n):
    x[0] += 1.0
    return np.tanh(x @ y) * n + x.sum(0)
f1 = numdyn.compile(lambda a: a + 1.0); f2 = numdyn.compile(lambda a: np.tanh(a) * 2.0)
x = np.asfortranarray(np.arange(20.0, dtype=np.float32).reshape(4, 5) / 7)
np.save("x_before.npy", x)
numdyn.compile(scale_rows)(x, np.ones((5, 5), np.float32), 3)
f1(np.ones(3)); f2(np.ones(3))
print("ran")
'''

# a C compiler (tests/cc_wrap.py) that miscompiles tanh, float64 and float32
# (as the minifier's tests inject bugs)
_BAD_TANH = "s/= nd_tanhf\\{0,1\\}(/= 0.5f * (/"


def _cache(tmp_path, name):
    d = tmp_path / name
    d.mkdir(mode=0o700)
    return str(d)


def test_debug_dir_after_one_background_compiled_call(tmp_path):
    dbg = tmp_path / "dbg"
    env = {**os.environ, "NUMDYN_DEBUG_DIR": str(dbg), "NUMDYN_CACHE_DIR": _cache(tmp_path, "c1"),
           "NUMDYN_COMPILE_BUDGET": "0", "NUMDYN_BACKGROUND_COMPILE": "1", "NUMDYN_LOGS": "output_code",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    prog = tmp_path / "prog.py"  # a file: repro.py copies the functions' source
    prog.write_text(_PROG)
    p = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0 and "ran" in p.stdout, p.stderr
    assert "output code: kernel 0 of program" in p.stderr and "nd_tanh" in p.stderr
    dirs = sorted(d.name for d in dbg.iterdir())
    assert dirs == ["_lambda_-2_0", "_lambda__0", "scale_rows_0"], dirs
    progs = list((dbg / "scale_rows_0").glob("program_*"))
    assert progs, list((dbg / "scale_rows_0").iterdir())
    files = {f.name for f in progs[0].iterdir()}
    assert {"graph.txt", "schedule.txt", "compile.txt", "kernel_0.c"} <= files, files
    assert "tanh" in (progs[0] / "graph.txt").read_text()
    assert "compiling in the background" in (progs[0] / "compile.txt").read_text()
    assert "fn = lambda a: a + 1.0" in (dbg / "_lambda__0" / "repro.py").read_text()
    assert "fn = lambda a: np.tanh(a) * 2.0" in (dbg / "_lambda_-2_0" / "repro.py").read_text()
    # the arguments as they were before the call wrote into x
    saved = np.load(dbg / "scale_rows_0" / "inputs.npz")
    before = np.load(tmp_path / "x_before.npy")
    np.testing.assert_array_equal(saved["a0"], before)
    assert saved["a0"].flags.f_contiguous and saved["a0"].dtype == np.float32

    # (test_control_surface.py's debug-dir test runs a repro that agrees: exit 0)
    repro = dbg / "scale_rows_0" / "repro.py"
    text = repro.read_text()
    bad = {**env, "CC": editing_cc(tmp_path, _BAD_TANH), "NUMDYN_CACHE_DIR": _cache(tmp_path, "c3"),
           "NUMDYN_COMPILE_BUDGET": "inf"}
    q = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=bad,
                       timeout=300)
    assert q.returncode == 1 and "reproduced" in q.stdout and "values differ" in q.stdout, \
        (q.stdout, q.stderr)
    assert repro.read_text() == text  # running it (NUMDYN_DEBUG_DIR set) left the directory as it was
    assert sorted(d.name for d in dbg.iterdir()) == dirs


_LOG_PROG = '''
import os, numpy as np, numdyn
@numdyn.compile
def f(x):
    return np.tanh(x) * 3.0 - x
x = np.arange(6.0)
f(x)                      # NumPy runs it while the kernel compiles in the background
numdyn.utils.wait_compiles()
f(x)                      # a later call of the program loads what was built
os.environ["CC"] = os.environ["FAIL_CC"]
numdyn.config.background_compile = False
@numdyn.compile
def g(x):
    return np.sin(x) + 0.25
try:
    g(x)
except numdyn.CompileError:
    print("failed as asked")
'''


def test_compile_txt_holds_each_compiles_command_and_output(tmp_path):
    """compile.txt names the command each compile ran (in the program's own
    directory even when the kernels were collected by a later call) and the
    compiler's output -- warnings on success, the error on a failure."""
    warn_cc = fake_cc(tmp_path, "warn.sh", then='echo "u.c:1:1: warning: injected by the test" >&2')
    fail_cc = failing_cc(tmp_path, "u.c:2:2: error: injected failure", name="fail.sh")
    dbg = tmp_path / "dbg"
    env = {**os.environ, "NUMDYN_DEBUG_DIR": str(dbg), "NUMDYN_CACHE_DIR": _cache(tmp_path, "c"),
           "NUMDYN_COMPILE_BUDGET": "0", "NUMDYN_BACKGROUND_COMPILE": "1", "CC": warn_cc,
           "FAIL_CC": fail_cc, "NUMDYN_PCH": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", _LOG_PROG], capture_output=True,
                       text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 0 and "failed as asked" in p.stdout, (p.stdout, p.stderr)
    assert sorted(d.name for d in dbg.iterdir()) == ["f_0", "g_0"]  # nothing under graphs/
    (prog,) = (dbg / "f_0").glob("program_*")
    text = (prog / "compile.txt").read_text()
    assert f"$ {warn_cc} -O3" in text and " u.c -o u.so" in text, text
    assert "exit status 0" in text and "warning: injected by the test" in text, text
    (prog,) = (dbg / "g_0").glob("program_*")
    text = (prog / "compile.txt").read_text()
    assert "FAILED" in text and f"$ {fail_cc} -O3" in text, text
    assert "exit status 1" in text and "error: injected failure" in text, text


_SCRIPT_PROG = '''
import math as m
import numpy as np, numdyn
from os import path as osp
W = np.linspace(0.1, 1.0, 12)
SCALE = 3.0
class Act:
    @staticmethod
    def apply(x):
        return np.tanh(x) * SCALE
def act(x):
    return Act.apply(x) + m.pi * 0
def make(bias):
    @numdyn.compile
    def model(x, n=2):
        y = act(x * W) + bias
        for i in range(n):
            y = y + i
        return y.sum() + len(osp.sep)
    return model
print(make(0.5)(np.ones(12)))
'''


def _run_script(tmp_path, text):
    """runs `text` as the user's script with NUMDYN_DEBUG_DIR set: (dbg, env)"""
    dbg = tmp_path / "dbg"
    env = {**os.environ, "NUMDYN_DEBUG_DIR": str(dbg), "NUMDYN_CACHE_DIR": _cache(tmp_path, "c1"),
           "NUMDYN_COMPILE_BUDGET": "inf", "PYTHONPATH": os.pathsep.join(sys.path)}
    prog = tmp_path / "prog.py"
    prog.write_text(text)
    p = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return dbg, env


def _agrees_then_reproduces(repro, env, tmp_path):
    """repro.py exits 0 (agrees), then 1 with a C compiler that miscompiles tanh"""
    q = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert q.returncode == 0 and "results agree" in q.stdout, (q.stdout, q.stderr)
    bad = {**env, "CC": editing_cc(tmp_path, _BAD_TANH), "NUMDYN_CACHE_DIR": _cache(tmp_path, "c2")}
    q = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=bad,
                       timeout=300, cwd=tmp_path)
    assert q.returncode == 1 and "values differ" in q.stdout, (q.stdout, q.stderr)


def test_repro_of_a_script_function_defines_what_it_reads(tmp_path):
    """A function of the user's script (here a closure, decorated) reads
    helpers, a class, modules, constants, an array and a closure variable:
    repro.py copies them (the function without its decorator), so it runs
    the function itself -- it reproduces a miscompiled tanh (exit 1), where
    it used to compare the NameError of a helper it lacked under NumPy with
    the same NameError under numdyn and say that they agree."""
    dbg, env = _run_script(tmp_path, _SCRIPT_PROG)
    (repro,) = dbg.glob("*model_0/repro.py")  # make.<locals>.model's directory
    text = repro.read_text()
    assert "@numdyn.compile" not in text and "def act(x):" in text and "class Act:" in text, text
    assert "bias = 0.5" in text and "SCALE = 3.0" in text and "import math as m" in text, text
    assert np.array_equal(np.load(repro.parent / "inputs.npz")["g_W"], np.linspace(0.1, 1.0, 12))
    _agrees_then_reproduces(repro, env, tmp_path)


def test_repro_says_when_it_cannot_rebuild_a_name(tmp_path):
    """A name the script cannot rebuild (an object of a user class with
    state) is named, and repro.py exits 2 instead of comparing two
    NameErrors as an agreement."""
    dbg, env = _run_script(tmp_path, "import numpy as np, numdyn\nclass P:\n    k = 2.0\n"
                           "obj = P()\ndef f(x):\n    return x * obj.k\n"
                           "numdyn.compile(f)(np.ones(3))\n")
    repro = dbg / "f_0" / "repro.py"
    assert "# obj: a P the function reads is not rebuilt" in repro.read_text()
    q = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert q.returncode == 2 and "cannot run the function here" in q.stdout, (q.stdout, q.stderr)


def test_repro_env_skips_what_it_cannot_write():
    """A long global list is not written out as text, and an object whose
    repr raises is named, not fatal (numdyn/_repro.py)."""
    from numdyn import _repro

    class Bad:
        def __repr__(self):
            raise RuntimeError("no repr")

    g = {"__name__": "__main__", "np": np, "BIG": list(range(100000)), "B": (Bad(),), "K": 2.5}
    f = eval(compile("lambda x: x * K + len(BIG) + len(B)", "<test>", "eval"), g)
    arrays = {}
    text = _repro.source_env(f, arrays, 1 << 20)
    assert "K = 2.5" in text and "# BIG: a list the function reads is not rebuilt" in text, text
    assert "# B: not rebuilt (RuntimeError)" in text, text
    assert "import numpy" not in text and not arrays


_MODULE_PROG = '''
import numpy as np, numdyn
class Lin:
    def __init__(self, act):
        self.w, self.calls, self.act = np.linspace(0.1, 1.0, 3), 0, act
    def forward(self, x):
        self.calls += 1
        return np.tanh(x @ self.w) * self.calls
numdyn.compile(Lin("tanh"))(np.ones((2, 3)))
numdyn.compile(Lin(lambda v: v))(np.ones((2, 3), np.float32))
'''


def test_repro_of_a_compiled_module_rebuilds_its_object(tmp_path):
    """numdyn.compile(obj)'s repro.py: the forward is a bound method; its
    object is pickled (self.pkl, before the call) and loaded once for each
    side, its class copied from the script, so the script reproduces a
    miscompiled tanh (exit 1). It called the unbound function without its
    object: two TypeErrors, 'results agree'. An object that does not
    pickle (it holds a lambda): exit 2, said."""
    dbg, env = _run_script(tmp_path, _MODULE_PROG)
    good, bad_obj = dbg / "Lin.forward_0" / "repro.py", dbg / "Lin.forward-2_0" / "repro.py"
    assert "class Lin:" in good.read_text() and (good.parent / "self.pkl").exists()
    _agrees_then_reproduces(good, env, tmp_path)
    q = subprocess.run([sys.executable, str(bad_obj)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert q.returncode == 2 and "does not pickle" in q.stdout, (q.stdout, q.stderr)
