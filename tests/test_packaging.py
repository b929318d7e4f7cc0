"""numdyn builds into a wheel that installs into a fresh virtual environment
and works there: the extension imports, the kernel headers ship as
numdyn/kernels, and a compiled function gives NumPy's result.

The wheel is built the way a user's `pip wheel .` / `pip install .` builds it
(build isolation: setuptools and NumPy come from the package index) from a
copy of the source tree, so the working tree is not touched.
"""
import fcntl
import glob
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IGNORE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "wheelhouse",
                                "__pycache__", "*.so", "*.o", "*.egg-info",
                                ".hypothesis", ".pytest_cache")


def _clean_env(**extra):
    """The environment of a user's shell: nothing of this test run's own
    build (PYTHONPATH, a sanitizer preload) leaks into what is tested."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "LD_PRELOAD", "NUMDYN_SANITIZE",
                        "NUMDYN_EXPECT_BUILD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env.update(extra)
    return env


# pip without byte-compiling what it installs (the wheel build's isolated
# environment, the test venv): half of those installs' time -- NumPy's
# ~1000 modules, 19 -> 9 s here -- for .pyc files nothing needs
# (PIP_COMPILE=0 is --no-compile; the imports that run compile what they load)
def _pip_env():
    return _clean_env(PIP_COMPILE="0")


def _run(cmd, cwd, env=None, timeout=600):
    env = _clean_env() if env is None else env
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        shown = " ".join("<script>" if "\n" in str(c) else str(c) for c in cmd)
        pytest.fail(f"{shown} failed (exit {proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}", pytrace=False)
    return proc.stdout


def _source_copy(dest):
    """The files a clean clone would have (tracked + new, minus ignored)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = None
    if not files:
        shutil.copytree(ROOT, dest, ignore=IGNORE)
        return
    for f in files:
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):  # deleted in the working tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, f))


def _editable_extension():
    """numdyn._C's file when it is setup.py's in-place build of this tree
    (`make build`'s editable install), else None"""
    import numdyn._C as ext
    built = os.path.realpath(ext.__file__)
    if os.path.dirname(built) != os.path.realpath(os.path.join(ROOT, "src", "numdyn")):
        return None
    return built


def _reuse_built_extension(src):
    """The extension `make build` compiled (setup.py's own build_ext, into
    src/numdyn: the editable install the suite imports) goes where the
    wheel's build_ext looks for it, with its mtime: setuptools then skips
    compiling the ~110 C files again (the test's 56-68 s of CI, a core's
    worth) when it is newer than every source and header setup.py lists --
    a stale one, or none (a `make dev` build elsewhere), and it compiles
    them as a user's `pip wheel .` would. The wheel is still set up, built,
    packed and installed by pip from the copied tree in build isolation."""
    import sysconfig

    built = _editable_extension()
    if built is None:
        return
    lib = src / "build" / f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}" / "numdyn"
    lib.mkdir(parents=True)
    shutil.copy2(built, lib / os.path.basename(built))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel, built once per test run: under xdist the workers share
    one (the run's temporary root, a lock), whichever of them asks first
    builds it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent          # pytest-N/, above each worker's popen-gwK/
    tmp = root / "numdyn-wheel"
    out = tmp / "dist"
    with open(root / "numdyn-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wheels = glob.glob(str(out / "numdyn-*.whl"))
        if not wheels:
            shutil.rmtree(tmp, ignore_errors=True)   # a build that failed before
            src = tmp / "src"
            _source_copy(src)
            _reuse_built_extension(src)
            _run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                  ".", "--no-deps", "-w", str(out)], cwd=src, env=_pip_env())
            wheels = glob.glob(str(out / "numdyn-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _newest_extension_input():
    """the newest mtime of what setup.py's extension depends on"""
    pats = ("src/*.c", "src/*/*.c", "numpy_shim/*.c", "guards/*.c", "src/*/*.h", "src/*/*.def",
            "numpy_shim/*.h", "guards/*.h")
    return max(os.path.getmtime(p) for pat in pats for p in glob.glob(os.path.join(ROOT, pat)))


def test_wheel_contents(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "numdyn/__init__.py" in names
    assert any(n.startswith("numdyn/_C") and n.endswith(".so") for n in names), names
    headers = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "kernels", "*.h")))
    assert headers, "kernels/ has no headers for generated code to include"
    shipped = sorted(n.split("/")[-1] for n in names
                     if n.startswith("numdyn/kernels/") and n.endswith(".h"))
    assert shipped == headers
    # No build or test debris in what users install.
    assert not [n for n in names if "/tests/" in n or "__pycache__" in n or n.endswith(".o")]
    # the extension `make build` compiled was packed, not compiled again,
    # unless a source is newer than it (setuptools' own up-to-date check)
    built = _editable_extension()
    if built is not None and os.path.getmtime(built) >= _newest_extension_input():
        (so,) = [n for n in names if n.startswith("numdyn/_C") and n.endswith(".so")]
        with open(built, "rb") as f:
            assert zipfile.ZipFile(wheel).read(so) == f.read()


CHECK = textwrap.dedent("""
    import glob, os, sys
    import numpy as np
    import numdyn

    here = os.path.dirname(numdyn.__file__)
    assert here.startswith(sys.prefix), (here, sys.prefix)
    kdir = os.path.join(here, "kernels")
    headers = sorted(os.path.basename(p) for p in glob.glob(os.path.join(kdir, "*.h")))
    print("headers", ",".join(headers))

    def f(x, y):
        return np.sin(x) * y + 0.5

    x = np.linspace(-3, 3, 1000).reshape(10, 100)
    want = f(x, 2.0)
    for backend in ("eager", "native"):
        got = numdyn.compile(f, backend=backend)(x, 2.0)
        assert type(got) is np.ndarray and got.dtype == want.dtype, (backend, type(got))
        assert got.shape == want.shape, (backend, got.shape)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-15), backend
        print("ok", backend)
""")


def _pip_can_target_python():
    """pip >= 22.3 installs into another interpreter's environment
    (`pip --python PY install ...`)."""
    # read from pip's metadata: importing pip in this process would turn
    # off setuptools' distutils shim for the rest of it (_distutils_hack's
    # spec_for_pip), and a later `import setuptools` in the same xdist worker
    # (torch.compile in test_fusion_tall.py) then asserts on the standard
    # library's distutils -- the CI failure of sessions 18 and 19
    from importlib.metadata import PackageNotFoundError, version
    try:
        return tuple(int(x) for x in version("pip").split(".")[:2]) >= (22, 3)
    except (PackageNotFoundError, ValueError):
        return False


def test_wheel_installs_and_runs(wheel, tmp_path):
    venv = tmp_path / "venv"
    py = str(venv / "bin" / "python")
    # A fresh venv; this interpreter's pip installs into it when it can
    # (seeding the venv with its own pip costs as much as the install).
    # numpy comes from the package index as the wheel's dependency.
    install = ["install", "-q", "--disable-pip-version-check", wheel]
    if _pip_can_target_python():
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
        _run([sys.executable, "-m", "pip", "--python", py] + install, cwd=tmp_path, env=_pip_env())
    else:
        _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
        _run([py, "-m", "pip"] + install, cwd=tmp_path, env=_pip_env())
    out = _run([py, "-c", CHECK], cwd=tmp_path,
               env=_clean_env(NUMDYN_CACHE_DIR=str(tmp_path / "cache")))
    headers = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "kernels", "*.h")))
    assert f"headers {','.join(headers)}" in out
    assert "ok eager" in out and "ok native" in out, out


def test_readme_quick_start(tmp_path):
    """The README's quick-start code runs as written and says what it claims."""
    import re
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README.md has no python example"
    script = tmp_path / "quick_start.py"
    script.write_text(blocks[0])
    env = dict(os.environ)  # the numdyn under test, as the rest of the suite sees it
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # explain's report: two graphs, one break at the `if` line.
    assert re.search(r"(?i)graph.count\W*2\b", proc.stdout), proc.stdout
    assert re.search(r"(?i)graph.break.count\W*1\b", proc.stdout), proc.stdout
    assert "if b.sum() < 0:" in proc.stdout, proc.stdout
