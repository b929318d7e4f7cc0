"""Issue 12, points 1 and 2: the kernel cache's trust boundary.

numdyn dlopens shared objects from its cache directory, so anyone who can
write there, replace the directory, or plant a file under an entry's name
runs code as the user. These tests plant exactly that (symlinks, files of
other owners, group-writable files, FIFOs, devices, a .so lacking the
kernel's symbol), check the directory and its parents the way ssh checks
~/.ssh, run an unprivileged racer against a compile (as uid 65534, when the
tests run as root), and check that clear_cache() never breaks a concurrent
compile.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from numdyn import utils

from test_native_cache import PROG  # noqa: E402  (tests/ is on sys.path)

# Several distinct translation units in one process (np.sin nested k times).
MANY = """
import json, numpy as np, numdyn
from numdyn import utils
ok = True
a = np.linspace(0, 1, 257)
for k in range(1, {n} + 1):
    src = "lambda a: " + "np.sin(" * k + "a * 1.25" + ")" * k + " + a"
    f = eval(src)
    r = numdyn.compile(f, backend="native")(a)
    ok = ok and bool(np.allclose(r, f(a), rtol=1e-12, atol=0))
print(json.dumps({{"ok": ok, **dict(utils.counters)}}))
"""


def run_py(code, cache_dir, umask=None, timeout=300, env_extra=None):
    env = dict(os.environ)
    env["NUMDYN_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(env_extra or {})
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=pre)


def last_json(r):
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def fnv64(data):
    h = 1469598103934665603
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def write_sum(sum_path, so_bytes):
    tmp = str(sum_path) + ".new"
    with open(tmp, "w") as f:
        f.write("%d %016x\n" % (len(so_bytes), fnv64(so_bytes)))
    os.chmod(tmp, 0o600)
    os.replace(tmp, sum_path)


def cc():
    return os.environ.get("CC", "cc").split()[0]


def build_so(tmp_path, name, c_source):
    src = tmp_path / (name + ".c")
    src.write_text(c_source)
    out = tmp_path / (name + ".so")
    subprocess.run([cc(), "-shared", "-fPIC", "-O1", str(src), "-o", str(out)], check=True)
    return out


def payload(tmp_path, marker):
    """A shared object whose constructor proves it ran by creating marker."""
    return build_so(tmp_path, "payload", textwrap.dedent("""
        #include <stdio.h>
        __attribute__((constructor)) static void pwn(void) {
            FILE *f = fopen("%s", "w");
            if (f) { fputs("owned\\n", f); fclose(f); }
        }
        int ndk_not_the_kernel(void) { return 42; }
        """ % marker))


def populated(tmp_path, name="c"):
    d = tmp_path / name
    r = last_json(run_py(PROG, d))
    assert r["ok"] and r["kernels_compiled"] >= 1
    keys = [p.stem for p in d.iterdir() if p.suffix == ".so"]
    assert keys
    return d, keys


# ------------------------------------------------ the directory and parents
@pytest.mark.parametrize("mode", [0o755, 0o750, 0o705, 0o777, 0o1777], ids=oct)
def test_cache_dir_with_group_or_other_bits_is_refused(tmp_path, monkeypatch, mode):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, mode)
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(d))
    with pytest.raises(PermissionError) as ei:
        utils.cache_dir()
    msg = str(ei.value)
    # the real mode and the path, and what to do
    assert "%04o" % mode in msg and str(d) in msg, msg
    assert "chmod" in msg and "NUMDYN_CACHE_DIR" in msg
    r = run_py(PROG, d)
    assert r.returncode != 0 and "PermissionError" in r.stderr and "%04o" % mode in r.stderr
    os.chmod(d, 0o700)
    assert utils.cache_dir() == str(d)


def test_parent_writable_by_others_is_refused(tmp_path, monkeypatch):
    pub = tmp_path / "pub"
    pub.mkdir()
    os.chmod(pub, 0o777)  # anyone may rename our directory away and put theirs
    d = pub / "cache"
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(d))
    with pytest.raises(PermissionError) as ei:
        utils.cache_dir()
    msg = str(ei.value)
    assert str(pub) in msg and "0777" in msg and "parent" in msg, msg
    # a sticky one (like /tmp) is fine: nobody else can rename our entry
    os.chmod(pub, 0o1777)
    assert utils.cache_dir() == str(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


def test_symlink_through_an_open_directory_is_checked_where_it_leads(tmp_path, monkeypatch):
    pub = tmp_path / "pub"
    (pub / "cache").mkdir(parents=True)
    os.chmod(pub / "cache", 0o700)
    os.chmod(pub, 0o777)
    link = tmp_path / "link"
    link.symlink_to(pub)
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(link / "cache"))
    with pytest.raises(PermissionError) as ei:
        utils.cache_dir()
    assert str(pub) in str(ei.value)


def test_cache_dir_path_longer_than_the_buffer_is_an_error(tmp_path, monkeypatch):
    long_dir = str(tmp_path / "long") + "/abcdefgh" * 520  # > 4096 bytes
    monkeypatch.setenv("NUMDYN_CACHE_DIR", long_dir)
    with pytest.raises(OSError) as ei:
        utils.cache_dir()
    assert "too long" in str(ei.value)
    assert not (tmp_path / "long").exists()  # nothing made at a truncated path


def test_files_get_private_modes_even_under_umask_0(tmp_path):
    d = tmp_path / "u0"
    r = last_json(run_py(PROG, d, umask=0))
    assert r["ok"] and r["kernels_compiled"] >= 1
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    names = sorted(p.name for p in d.iterdir())
    assert any(n.endswith(".so") for n in names) and any(n.endswith(".sum") for n in names)
    for p in d.iterdir():
        st = os.lstat(p)
        assert stat.S_ISREG(st.st_mode), p
        assert stat.S_IMODE(st.st_mode) & 0o077 == 0, (p, oct(st.st_mode))


# ------------------------------------------------------ planted entries
@pytest.mark.parametrize("how", ["symlink", "group_writable", "other_owner", "hardlink_other"])
def test_planted_shared_object_is_never_loaded(tmp_path, how):
    if how in ("other_owner", "hardlink_other") and os.geteuid() != 0:
        pytest.skip("planting a file owned by another uid needs root (chown)")
    d, keys = populated(tmp_path)
    marker = tmp_path / "PWNED"
    evil = payload(tmp_path, marker)
    data = evil.read_bytes()
    for k in keys:
        so = d / (k + ".so")
        so.unlink()
        if how == "symlink":
            so.symlink_to(evil)
        elif how == "hardlink_other":
            owned = tmp_path / ("evil-" + k + ".so")
            shutil.copy(evil, owned)
            os.chown(owned, 4242, 4242)
            os.chmod(owned, 0o644)
            os.link(owned, so)
        else:
            so.write_bytes(data)
            if how == "group_writable":
                os.chmod(so, 0o664)
            else:
                os.chmod(so, 0o644)
                os.chown(so, 4242, 4242)
        write_sum(d / (k + ".sum"), data)
    r = last_json(run_py(PROG, d))
    assert not marker.exists(), "numdyn loaded a planted shared object (%s)" % how
    assert r["ok"] and r["kernels_compiled"] >= 1 and r["disk_cache_hits"] == 0
    # the rebuild replaced the planted entries with private files of ours
    for k in keys:
        st = os.lstat(d / (k + ".so"))
        assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
        assert stat.S_IMODE(st.st_mode) & 0o077 == 0
    r2 = last_json(run_py(PROG, d))
    assert r2["ok"] and r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 1


@pytest.mark.parametrize("what", ["so_fifo", "sum_fifo", "so_zero_device", "sum_zero_device"])
def test_fifo_or_device_under_an_entry_name_does_not_hang(tmp_path, what):
    if "device" in what and os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    d, keys = populated(tmp_path)
    for k in keys:
        p = d / (k + (".so" if what.startswith("so") else ".sum"))
        p.unlink()
        if "fifo" in what:
            os.mkfifo(p, 0o600)
        else:  # /dev/zero's numbers: reading it never ends
            os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    r = last_json(run_py(PROG, d, timeout=60))
    assert r["ok"] and r["kernels_compiled"] >= 1
    r2 = last_json(run_py(PROG, d, timeout=60))
    assert r2["ok"] and r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 1


def test_loadable_so_lacking_the_kernel_symbol_is_rebuilt(tmp_path):
    d, keys = populated(tmp_path)
    other = build_so(tmp_path, "other", "int ndk_something_else(void) { return 7; }\n")
    data = other.read_bytes()
    for k in keys:
        so = d / (k + ".so")
        so.write_bytes(data)
        os.chmod(so, 0o600)
        write_sum(d / (k + ".sum"), data)
    r = last_json(run_py(PROG, d))
    assert r["ok"] and r["kernels_compiled"] >= 1
    r2 = last_json(run_py(PROG, d))
    assert r2["ok"] and r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 1


def test_many_units_loaded_through_descriptors_are_each_their_own(tmp_path):
    # every unit is dlopened through /proc/self/fd/N: a reused N must not
    # hand back an earlier library (glibc matches loaded objects by name)
    d = tmp_path / "many"
    r = last_json(run_py(MANY.format(n=12), d))
    assert r["ok"] and r["kernels_compiled"] >= 12
    r2 = last_json(run_py(MANY.format(n=12), d))
    assert r2["ok"] and r2["kernels_compiled"] == 0 and r2["disk_cache_hits"] >= 12


# --------------------------------------------- an unprivileged racer (uid)
ATTACKER = r"""
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* attacker CACHE PAYLOAD SECONDS: overwrite every shared object (final or
 * in a build directory) that can be opened for writing; plant files. */
static char *payload; static size_t plen; static long tries, wrote, planted;
static void hit(const char *path) {
    int fd = open(path, O_WRONLY | O_TRUNC);
    tries++;
    if (fd < 0) return;
    if (write(fd, payload, plen) == (ssize_t)plen) wrote++;
    close(fd);
}
static void walk(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e; char p[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (n > 3 && !strcmp(e->d_name + n - 3, ".so")) hit(p);
        else if (depth == 0 && !strncmp(e->d_name, "build-", 6)) walk(p, 1);
    }
    closedir(d);
    snprintf(p, sizeof p, "%s/0123456789abcdef.so", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0777);
    if (fd >= 0) { planted++; close(fd); }
}
int main(int argc, char **argv) {
    FILE *f = fopen(argv[2], "rb"); fseek(f, 0, SEEK_END); plen = ftell(f); rewind(f);
    payload = malloc(plen); if (fread(payload, 1, plen, f) != plen) return 2; fclose(f);
    time_t end = time(NULL) + atoi(argv[3]);
    while (time(NULL) < end) walk(argv[1], 0);
    printf("{\"uid\": %d, \"tries\": %ld, \"wrote\": %ld, \"planted\": %ld}\n",
           (int)getuid(), tries, wrote, planted);
    return 0;
}
"""


@pytest.mark.parametrize("setup", ["fresh", "precreated_0755"])
def test_unprivileged_racer_cannot_get_code_loaded(tmp_path, setup):
    if os.geteuid() != 0:
        pytest.skip("the racer runs as uid 65534: switching to it needs root")
    base = tempfile.mkdtemp(prefix="numdyn-race-", dir="/tmp")
    try:
        os.chmod(base, 0o755)  # the racer may walk into base, no further than numdyn lets it
        marker = os.path.join(base, "PWNED")
        evil = payload(tmp_path, marker)
        pay = os.path.join(base, "payload.so")
        shutil.copy(evil, pay)
        os.chmod(pay, 0o644)
        exe = os.path.join(base, "attacker")
        build_src = tmp_path / "attacker.c"
        build_src.write_text(ATTACKER)
        subprocess.run([cc(), "-O1", str(build_src), "-o", exe], check=True)
        os.chmod(exe, 0o755)
        cache = os.path.join(base, "cache")
        if setup == "precreated_0755":
            os.mkdir(cache)
            os.chmod(cache, 0o755)  # a careless user's mkdir
        try:
            racer = subprocess.Popen([exe, cache, pay, "25"], stdout=subprocess.PIPE, text=True,
                                     user=65534, group=65534, extra_groups=[])
        except (PermissionError, OSError) as e:
            pytest.skip("cannot run a process as uid 65534 here: %s" % e)
        time.sleep(0.2)
        r = run_py(MANY.format(n=6), cache, umask=0)
        racer.terminate() if racer.poll() is None else None
        out, _ = racer.communicate(timeout=60)
        assert not os.path.exists(marker), "the racer's code ran inside numdyn"
        if setup == "fresh":
            res = last_json(r)
            assert res["ok"] and res["kernels_compiled"] >= 6
            for root, dirs, files in os.walk(cache):
                for n in dirs + files:
                    st = os.lstat(os.path.join(root, n))
                    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) & 0o077 == 0, (n, oct(st.st_mode))
        else:
            assert r.returncode != 0 and "PermissionError" in r.stderr and "0755" in r.stderr
        if out.strip():
            rep = json.loads(out.strip().splitlines()[-1])
            assert rep["uid"] == 65534
            assert rep["wrote"] == 0 and rep["planted"] == 0, rep
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------- point 2: clear_cache vs writers
CLEARER = """
import os, sys, time, numdyn
from numdyn import utils
stop = sys.argv[1]
n = 0
while not os.path.exists(stop):
    utils.clear_cache()
    n += 1
print(n)
"""


def test_clear_cache_in_a_loop_never_breaks_concurrent_compiles(tmp_path):
    d = tmp_path / "busy"
    os.makedirs(d, mode=0o700)
    stop = tmp_path / "stop"
    env = dict(os.environ, NUMDYN_CACHE_DIR=str(d),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    clearer = subprocess.Popen([sys.executable, "-c", CLEARER, str(stop)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        r = run_py(MANY.format(n=10), d)
        res = last_json(r)
        assert res["ok"] and res["kernels_compiled"] >= 10
    finally:
        stop.write_text("")
        out, err = clearer.communicate(timeout=120)
    assert clearer.returncode == 0, err
    assert int(out.strip()) > 10  # it really cleared while the compiles ran
    # nothing of the writers is left behind, and the cache still works
    assert not [p.name for p in d.iterdir() if p.name.startswith("build-") or ".tmp" in p.name]
    r2 = last_json(run_py(MANY.format(n=3), d))
    assert r2["ok"]


def test_clear_cache_from_another_thread_while_compiling(tmp_path, monkeypatch):
    import threading
    import numpy as np
    import numdyn
    d = tmp_path / "threads"
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(d))
    utils.reset()
    stop = threading.Event()
    errors = []

    def clear_loop():
        while not stop.is_set():
            try:
                utils.clear_cache()
            except Exception as e:  # pragma: no cover - the failure we test for
                errors.append(e)

    t = threading.Thread(target=clear_loop)
    t.start()
    try:
        a = np.linspace(0, 1, 101)
        for k in range(1, 7):
            f = eval("lambda a: " + "np.cos(" * k + "a * 0.75" + ")" * k + " - a", {"np": np})
            np.testing.assert_allclose(numdyn.compile(f, backend="native")(a), f(a), rtol=1e-12)
    finally:
        stop.set()
        t.join()
    assert errors == []
