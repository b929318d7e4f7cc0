"""numdyn.cuda's runtime loader (issue 16): libcuda and libnvrtc are
dlopen'ed when first needed, so numdyn imports and runs without them, and
their failures are Python exceptions that say what to do."""
import os
import subprocess
import sys

import pytest

import numdyn
import numdyn.cuda as ndc

# NVRTC comes from PyPI's nvidia-cuda-nvrtc-cu12, which CI installs (Makefile
# TEST_DEPS); a machine without it skips the tests that need a compiler.
try:
    ndc.nvrtc_path()
    NVRTC = None
except ndc.CudaError as e:
    NVRTC = str(e)
needs_nvrtc = pytest.mark.skipif(NVRTC is not None, reason=f"NVRTC not found: {NVRTC}")


def run_py(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=120)


def test_no_cuda_library_is_linked():
    """The extension needs neither libcuda nor libnvrtc to load."""
    import numdyn._C as C
    out = subprocess.run(["ldd", C.__file__], capture_output=True, text=True).stdout
    assert "libcuda" not in out and "libnvrtc" not in out


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has an NVIDIA driver")
def test_without_a_driver_not_available():
    assert ndc.is_available() is False
    assert ndc.device_count() == 0
    assert ndc.driver_version() == 0
    why = ndc.unavailable_reason()
    assert "libcuda" in why and "driver" in why


def test_imports_and_computes_without_nvrtc():
    """With NVRTC nowhere to be found, numdyn still imports and compiles for
    the CPU, and asking for NVRTC raises CudaError naming what to install."""
    code = """
import numpy as np, numdyn, numdyn.cuda as c
c._nvrtc_candidates = lambda: ['/nonexistent/libnvrtc.so.12']
f = numdyn.compile(lambda a: (a * 2 + 1).sum())
assert f(np.arange(4.0)) == 16.0
assert c.is_available() in (True, False)
try:
    c.nvrtc_version()
except c.CudaError as e:
    assert 'pip install nvidia-cuda-nvrtc-cu12' in str(e), e
    assert '/nonexistent/libnvrtc.so.12' in str(e), e
    print('ok')
"""
    r = run_py(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_cuda_error_is_runtime_error():
    assert issubclass(ndc.CudaError, RuntimeError)
    assert numdyn.cuda is ndc


def test_env_path_is_tried_first():
    code = """
import numdyn.cuda as c
print(c._nvrtc_candidates()[0])
"""
    r = run_py(code, NUMDYN_NVRTC="/opt/mine/libnvrtc.so")
    assert r.stdout.strip() == "/opt/mine/libnvrtc.so", r.stderr


@needs_nvrtc
def test_nvrtc_version_and_compile():
    ma, mi = ndc.nvrtc_version()
    assert ma >= 11
    log, size = numdyn._C._cuda_compile(
        'extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }', "compute_80")
    assert size > 0


@needs_nvrtc
def test_compile_error_carries_the_log():
    with pytest.raises(ndc.CudaError, match=r'identifier "undefined_y" is undefined'):
        numdyn._C._cuda_compile('extern "C" __global__ void k(float *x) { x[0] = undefined_y; }',
                                "sm_90")


@needs_nvrtc
def test_bad_arch_is_value_error():
    with pytest.raises(ValueError, match="compute_XY"):
        numdyn._C._cuda_compile("", "ampere")


@pytest.mark.skipif(ndc.is_available(), reason="a GPU is here: test_cuda_device.py runs the Tensor")
def test_cuda_tensors_without_a_gpu_say_why():
    """numdyn.Tensor on CUDA: every way onto the device raises CudaError with
    unavailable_reason(); CUDA producers are refused as DLPack says"""
    import numpy as np
    t = numdyn.tensor([1.0, 2.0])
    reason = ndc.unavailable_reason()
    for make in (lambda: numdyn.tensor([1.0], device="cuda"), t.cuda, lambda: t.to("cuda"),
                 lambda: t.to("cuda:0", np.float32)):
        with pytest.raises(ndc.CudaError, match="not available") as e:
            make()
        assert reason.split(" (")[0] in str(e.value)
    assert t.cpu() is t and t.to("cpu") is t and t.to(np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="unknown device"):
        t.to("tpu:x")

    class OnGpu:
        def __dlpack__(self, **kw):
            raise AssertionError("not asked without a GPU")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(BufferError, match="not readable by the CPU.*not available"):
        numdyn.from_dlpack(OnGpu())
    with pytest.raises(ValueError, match="not available"):
        numdyn.from_dlpack(np.arange(3.0), device="cuda")
