"""C compiler wrappers the tests put in $CC: one home for the shell scripts
that log numdyn's compiler runs, make them fail, hold them at a gate or edit
the kernel's C before compiling it.

    cc = fake_cc(tmp_path, "logcc", then=f'echo "$*" >> {log}', when="*-shared*")

writes tmp_path/logcc, an executable /bin/sh script that
  1. runs `per_source` once per `.c` argument, with the file in "$a";
  2. runs `then` -- on every run, or (with `when`, a shell `case` pattern
     over the run's whole command line "$*") only on matching runs: a
     kernel unit's run has "-shared", the precompiled header's "c-header";
  3. runs the real compiler with the same arguments (unless compiles=False,
     or `then` exits first);
and returns its path as a str.
"""
import shutil

# the compiler the wrappers run: GCC where there is one (the precompiled
# header's tests need it), else the system's cc
REAL_CC = shutil.which("gcc") or shutil.which("cc") or "cc"

NO = "numdyn-test: the compiler says no"


def fake_cc(directory, name="cc", *, then="", when=None, per_source=None, compiles=True):
    lines = ["#!/bin/sh"]
    if per_source:
        lines.append(f'for a in "$@"; do case "$a" in *.c) {per_source};; esac; done')
    if then:
        lines.append(f'case "$*" in {when})\n{then}\n;;\nesac' if when else then)
    if compiles:
        lines.append(f'exec {REAL_CC} "$@"')
    path = directory / name
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return str(path)


def logging_cc(directory, when=None, name="logcc"):
    """(cc, log): a compiler that appends each run's command line (of the
    runs matching `when`) to directory/cc.log, a line a run"""
    log = directory / "cc.log"
    return fake_cc(directory, name, then=f'echo "$*" >> {log}', when=when), log


def failing_cc(directory, message=NO, when=None, name="badcc"):
    """a compiler that prints message on stderr and fails: every run, or
    (with `when`) the matching runs only, the others compiling"""
    return fake_cc(directory, name, then=f"echo '{message}' >&2; exit 1", when=when,
                   compiles=when is not None)


def editing_cc(directory, sed_expr, name="cc.sh"):
    """a compiler that edits each C source with `sed -i sed_expr` first (a
    miscompile a test injects)"""
    return fake_cc(directory, name, per_source=f'sed -i "{sed_expr}" "$a"')
