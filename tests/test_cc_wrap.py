"""tests/cc_wrap.py's compiler wrappers do what the tests using them rely on
(each run of the real compiler here only preprocesses an empty file)."""
import subprocess

from cc_wrap import NO, editing_cc, failing_cc, fake_cc, logging_cc

RUN = ["-E", "-x", "c", "/dev/null"]


def _cc(cc, *args):
    return subprocess.run([cc, *args], capture_output=True, text=True, timeout=60)


def test_logging_cc_logs_the_matching_runs_and_compiles(tmp_path):
    cc, log = logging_cc(tmp_path, when="*-shared*")
    assert _cc(cc, *RUN).returncode == 0 and not log.exists()
    assert _cc(cc, "-shared", *RUN).returncode == 0
    assert _cc(cc, "-shared", "-DX=1", *RUN).returncode == 0
    assert log.read_text().splitlines() == [" ".join(["-shared", *RUN]), " ".join(["-shared", "-DX=1", *RUN])]
    (tmp_path / "all").mkdir()
    every, log2 = logging_cc(tmp_path / "all")
    assert _cc(every, *RUN).returncode == 0 and log2.read_text().splitlines() == [" ".join(RUN)]


def test_failing_cc_fails_with_its_message(tmp_path):
    r = _cc(failing_cc(tmp_path), *RUN)
    assert r.returncode == 1 and NO in r.stderr
    only = failing_cc(tmp_path, "no kernels", when="*-shared*", name="cc2")
    assert _cc(only, *RUN).returncode == 0
    r = _cc(only, "-shared", *RUN)
    assert r.returncode == 1 and "no kernels" in r.stderr


def test_editing_and_per_source_wrappers_see_each_c_file(tmp_path):
    src = tmp_path / "u.c"
    src.write_text("double y = nd_tanh(x);\n")
    r = _cc(editing_cc(tmp_path, "s/= nd_tanh(/= 0.5 * (/"), "-E", str(src))
    assert r.returncode == 0 and src.read_text() == "double y = 0.5 * (x);\n"
    seen = tmp_path / "seen"
    cc = fake_cc(tmp_path, "each", per_source=f'echo "$a" >> {seen}', then="exit 3")
    assert _cc(cc, "-E", str(src)).returncode == 3
    assert seen.read_text().split() == [str(src)]
