"""numdyn's cuBLAS/cuFFT extern executors without a GPU: tests/cuda_lib_fake.c
(host stand-ins for the driver's memory calls, cuBLAS's strided-batched
gemm and scal, cuFFT's plans and transforms, with cuFFT's alignment rule
and its overwritten C2R input) is built and loaded in place of the
libraries in a fresh process, which runs the executors on host memory
against NumPy (tests/cuda_lib_fake_check.py): the padding/cropping copies,
zeroed imaginary parts, scratch buffers, batching loops, norm scaling and
the row-major gemm calls -- the parts a GPU run found wrong first."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(not CC, reason="no C compiler")
def test_executors_on_fake_libraries(tmp_path):
    lib = tmp_path / "libcudafake.so"
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(lib),
                    os.path.join(HERE, "cuda_lib_fake.c"), "-lm"], check=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, os.path.join(HERE, "cuda_lib_fake_check.py"), str(lib)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    words = r.stdout.split()
    assert words[0] == "OK", r.stdout
    nf, nm, refused, nn = int(words[2]), int(words[4]), int(words[6]), int(words[8])
    assert nf > 1500 and nm > 300 and refused < nm // 3 and nn == 4 * 15 - 2, r.stdout
