"""tests/test_cuda_device.py without a GPU: against a fake CUDA driver and
NVRTC (tests/cuda_fake_driver.cpp) whose "device" memory is a range of this
process's and whose kernels run on the host (tests/cuda_host_emu.h). This
checks the CUDA backend end to end -- scheduling, transfers, the kernel
ABI, launches, error words, host steps, caches -- on every machine with a
C++ compiler; a GPU's own arithmetic is left to test_cuda_device.py on a
GPU. Skipped where a real GPU is present (test_cuda_device.py runs there)."""
import os
import shutil
import subprocess
import sys

import pytest

import numdyn

HERE = os.path.dirname(os.path.abspath(__file__))
# every kind of case once (each new kernel costs the emulation a g++ run of
# a few seconds; the whole file takes ~10 minutes on the fake driver)
SUBSET = ("(device_properties or target or rejects or (arithmetic_chain and (float16 or complex128 "
          "or int64)) or float16_rounds or broadcast or fortran or scalars or empty or "
          "(reductions_over and int64) or (argmax and None) or (softmax and float64) or "
          "(scans and int32 and 0) or stencil or gather or division or extern or repeated or "
          "float_conditions or nan_data or "
          "context or memory_stats or disk_cache or on_device or split_full or narrow_reductions or "
          "(wide_rows and 4096) or black_scholes or (vector_lanes and float32) or "
          "tensor_on_cuda or tensor_chain or tensor_dlpack or wrap_numpy_of_cuda or gradients_of_cuda or "
          "backward_inputs or warm_call or error_words) "
          "and not (cupy or torch)")
CXX = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")


NO_FAKE = pytest.mark.skipif(numdyn.cuda.is_available() or not CXX,
                             reason="a GPU is here (test_cuda_device.py runs on it) or no C++ compiler "
                                    "to build the fake driver")


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    """(the environment of a process that sees the fake driver, its folder
    of kept units, the prelude's path)"""
    tmp_path = tmp_path_factory.mktemp("fake_cuda")
    lib = tmp_path / "lib"
    lib.mkdir()
    so = lib / "libcuda.so.1"
    r = subprocess.run([CXX, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-o", str(so),
                        os.path.join(HERE, "cuda_fake_driver.cpp"), "-ldl"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # the host emulation's header and numdyn's CUDA prelude precompiled
    # once, with the units' flags: a unit is then its kernels alone
    # (the prelude's text as numdyn gives it to NVRTC: kernels/nd_cuda.h
    # with the headers it shares with the C kernels spliced in)
    prelude = str(tmp_path / "prelude.h")
    with open(prelude, "w") as f:
        f.write(numdyn._C._cuda_prelude())
    pch = tmp_path / "pch"
    pch.mkdir()
    with open(os.path.join(HERE, "cuda_host_emu.h")) as a, open(prelude) as b:
        (pch / "cuda_emu_nd.h").write_text(a.read() + b.read())
    r = subprocess.run([CXX, "-std=c++20", "-O1", "-fPIC", "-w", "-x", "c++-header",
                        str(pch / "cuda_emu_nd.h"), "-o", str(pch / "cuda_emu_nd.h.gch")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    units = tmp_path / "units"
    units.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = dict(os.environ, LD_LIBRARY_PATH=str(lib) + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""),
               NUMDYN_NVRTC=str(so), NUMDYN_EMU_INC=HERE, NUMDYN_EMU_TMP=str(units),
               NUMDYN_EMU_PCH=str(pch), NUMDYN_EMU_PRELUDE=prelude,
               NUMDYN_TEST_CACHE_DIR=str(cache), NUMDYN_CACHE_DIR=str(cache))
    return env, units, prelude


@NO_FAKE
def test_cuda_device_suite_on_the_fake_driver(fake):
    env, units, prelude = fake
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "-k", SUBSET, os.path.join(HERE, "test_cuda_device.py")],
                       env=env, capture_output=True, text=True, timeout=1800)
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout and "skipped" not in r.stdout.splitlines()[-1], tail
    # every kernel the CUDA Tensor gradient test compiled (its forward, the
    # backward graphs, the SGD step) is well-formed CUDA for NVRTC
    kept = sorted((units / "backward").glob("*.cpp"))
    assert kept, "the gradient test kept no units"
    try:
        numdyn.cuda.nvrtc_version()
    except numdyn.CudaError:
        return   # NVRTC not installed: test_cuda_codegen.py says so
    with open(prelude) as f:
        pre = f.read()
    for u in kept:
        first, src = u.read_text().split("\n", 1)   # without the host emulation's include
        if "cuda_emu_nd.h" in first:   # the prelude was precompiled: put it back
            src = pre + src
        log, size = numdyn._C._cuda_compile(src, "sm_90")
        assert size > 0 and "warning" not in log, (u.name, log)


SWITCHED = """
import numpy as np
import numdyn
from test_semantics_ufuncs import test_signed_zero  # noqa: F401 -- collected here


def test_backend_fixture_is_cuda(backend):
    assert backend == "cuda"


def test_compile_defaults_to_cuda():
    c = numdyn.utils.counters
    before = c["cuda_launches"]
    np.testing.assert_array_equal(numdyn.compile(lambda a: a * 2 + 1)(np.arange(4.0)), np.arange(4.0) * 2 + 1)
    assert c["cuda_launches"] > before, "the call did not run on the GPU backend"
    before = c["cuda_launches"]
    np.testing.assert_array_equal(numdyn.compile(lambda a: a - 1, backend="eager")(np.arange(4.0)),
                                  np.arange(4.0) - 1)
    assert c["cuda_launches"] == before
"""


@NO_FAKE
def test_suite_switch_runs_compiled_functions_on_cuda(fake, tmp_path):
    """NUMDYN_TEST_BACKEND=cuda (tests/conftest.py, bench/gpu_check.sh's
    suite on the GPU): the backend fixture is "cuda" alone and
    numdyn.compile without a backend compiles for the GPU; a semantics
    test passes so on the fake driver"""
    env, _units, _prelude = fake
    t = tmp_path / "test_switched.py"
    t.write_text(SWITCHED)
    env = dict(env, NUMDYN_TEST_BACKEND="cuda", PYTHONPATH=os.pathsep.join(
        [HERE] + [p for p in sys.path if p]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                        "-rA", str(t)],
                       env=env, capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "test_signed_zero[cuda-float32]" in out and "[native" not in out and "[eager" not in out, out[-3000:]
    assert "5 passed" in out, out[-3000:]
    # without a device the switch refuses to run rather than test the CPU
    bare = dict(os.environ, NUMDYN_TEST_BACKEND="cuda")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                        str(t)], env=dict(bare, PYTHONPATH=env["PYTHONPATH"]), capture_output=True,
                       text=True, timeout=300, cwd=str(tmp_path))
    assert r.returncode != 0 and "NUMDYN_TEST_BACKEND=cuda: no CUDA device" in r.stdout + r.stderr, \
        (r.stdout + r.stderr)[-3000:]


# cases GPU run 12 (session 27, the suite on the CUDA backend) found: complex
# tan/tanh's special values (C11 Annex G as glibc's ctanh: +-1 and a signed
# zero for an infinite real part, +-0 + i NaN for +-0 + i inf, e^(-2|x|) kept
# past sinh^2's overflow) and the "invalid" of a reduction's epilogue (a mean
# of an empty slice divides 0 by 0: no flags on a GPU, the kernel tests it)
GPU_FOUND = [f"tests/test_semantics_ufuncs.py::test_complex_transcendental_special_values[cuda-{f}-{dt}]"
             for f in ("tan", "tanh") for dt in ("complex64", "complex128")] + \
            [f"tests/test_semantics_reductions.py::test_mean_var_of_too_few_elements_warn_as_numpy[cuda-{k}]"
             for k in range(8)]


@NO_FAKE
def test_cases_the_gpu_suite_run_found(fake):
    env, _units, _prelude = fake
    env = dict(env, NUMDYN_TEST_BACKEND="cuda")
    env.pop("NUMDYN_SPLIT_PASSES", None)   # (make test's first pass deselects test_semantics_ufuncs.py)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *GPU_FOUND],
                       env=env, capture_output=True, text=True, timeout=900, cwd=os.path.dirname(HERE))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and f"{len(GPU_FOUND)} passed" in out, out[-6000:]
