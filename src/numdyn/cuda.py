"""numdyn.cuda: the CUDA backend's public surface (issue 16).

libcuda (the driver) and libnvrtc (the runtime compiler) are loaded with
dlopen when first needed, never linked: numdyn imports and runs its CPU
backends on machines without CUDA. What works without a GPU:

    numdyn.cuda.is_available()          # False: no driver or no device
    numdyn.cuda.nvrtc_version()         # (12, 9) with NVRTC installed
    numdyn.cuda.source(fn, *args)       # the CUDA C numdyn generates for the call
    numdyn.cuda.compile_check(fn, *args, arch="compute_80")   # NVRTC's log

NVRTC is looked for in NUMDYN_NVRTC (a path), then PyPI's wheel
(``pip install nvidia-cuda-nvrtc-cu12``), then the system (CUDA_HOME,
the loader's search path).
"""
import glob
import importlib.util
import os

from . import _C

CudaError = _C.CudaError
CudaError.__module__ = "numdyn"

__all__ = ["CudaError", "is_available", "device_count", "driver_version", "nvrtc_version",
           "nvrtc_path", "source", "compile_check"]


def _nvrtc_candidates():
    out = []
    env = os.environ.get("NUMDYN_NVRTC")
    if env:
        out.append(env)
    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    except (ImportError, ValueError):
        spec = None
    for d in (spec.submodule_search_locations or []) if spec else []:
        out += sorted(glob.glob(os.path.join(d, "lib", "libnvrtc.so.*[0-9]")))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            out.append(os.path.join(home, "lib64", "libnvrtc.so"))
    out += ["libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so.11.2", "libnvrtc.so"]
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


def _load_nvrtc():
    """Load NVRTC (once); CudaError saying what to install when it is missing."""
    return _C._cuda_nvrtc_load(_nvrtc_candidates())


def nvrtc_path():
    """The NVRTC library numdyn loaded."""
    return _load_nvrtc()


def nvrtc_version():
    """NVRTC's (major, minor); CudaError when NVRTC cannot be found."""
    _load_nvrtc()
    return _C._cuda_nvrtc_version()


def device_count():
    """Number of CUDA devices the driver sees; 0 without a driver or a device."""
    return _C._cuda_driver()[0]


def driver_version():
    """The CUDA driver's version (e.g. 12040), or 0 without a driver."""
    return _C._cuda_driver()[1]


def is_available():
    """True when a CUDA driver and at least one device are present."""
    return device_count() > 0


def unavailable_reason():
    """Why is_available() is False (None when it is True)."""
    return _C._cuda_driver()[2]


def _graphs_of(fn, args, kwargs):
    """The graphs numdyn captures for fn(*args, **kwargs) (a fresh capture)."""
    from . import compile as _compile
    graphs = []

    def collect(graph, example_inputs):
        graphs.append(graph)
        return graph  # the call itself runs with NumPy

    _compile(fn, backend=collect)(*args, **kwargs)
    return graphs


def kernels(fn, *args, **kwargs):
    """[(kind, CUDA C of one kernel)] for the call fn(*args, **kwargs): every
    kernel of every graph the call captures, as the native backend would
    schedule them. NotImplementedError names a kernel form without a CUDA
    version."""
    out = []
    for g in _graphs_of(fn, args, kwargs):
        out += [(kind, text) for kind, _h, text in _C._cuda_kernels(g)]
    return out


def source(fn, *args, **kwargs):
    """The CUDA C numdyn would compile for the call fn(*args, **kwargs): one
    translation unit (the helpers of kernels/nd_cuda.h, then every kernel)."""
    ks = kernels(fn, *args, **kwargs)
    return _C._cuda_prelude() + "\n" + "\n".join(text for _kind, text in ks)


def compile_check(fn, *args, arch="compute_80", **kwargs):
    """Compile source(fn, *args, **kwargs) with NVRTC for `arch`
    ("compute_XY": PTX, "sm_XY": a cubin). Returns NVRTC's log; raises
    CudaError with the log when it does not compile."""
    log, _size = _C._cuda_compile(source(fn, *args, **kwargs), arch)
    return log
