"""Where numdyn looks for the CUDA libraries its GPU externs call (issue 16).

cuBLAS (matmul, dot) and cuFFT (numpy.fft's 1-d transforms) are dlopen'ed
by the C runtime (src/runtime/cuda_extern.c) on first use, never linked.
Looked for, in order: the path in NUMDYN_CUBLAS / NUMDYN_CUFFT, PyPI's
wheels (nvidia-cublas-cu12 / nvidia-cufft-cu12: nvidia/<lib>/lib; the CUDA 13
wheels: nvidia/cu13/lib), the toolkit (CUDA_HOME, CUDA_PATH,
/usr/local/cuda), then the loader's search path by soname.
"""
import ctypes
import glob
import importlib.util
import os

from . import _C

_WHAT = {
    "cublas": ("cuBLAS (libcublas)", "NUMDYN_CUBLAS", "nvidia-cublas-cu12", "nvidia.cublas",
               ["libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"]),
    "cufft": ("cuFFT (libcufft)", "NUMDYN_CUFFT", "nvidia-cufft-cu12", "nvidia.cufft",
              ["libcufft.so.12", "libcufft.so.11", "libcufft.so.13", "libcufft.so"]),
    "cuda": ("the CUDA driver (libcuda)", None, None, None, ["libcuda.so.1", "libcuda.so"]),
}


def _package_dirs(module):
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def candidates(which):
    """The paths and sonames tried for library `which`, in order."""
    _label, env, _pip, module, sonames = _WHAT[which]
    out = []
    if env and os.environ.get(env):
        out.append(os.environ[env])
    if module:
        stem = sonames[0].split(".so")[0]
        dirs = [os.path.join(d, "lib") for d in _package_dirs(module)]
        dirs += [os.path.join(d, "cu13", "lib") for d in _package_dirs("nvidia")]
        for d in dirs:
            out += sorted(glob.glob(os.path.join(d, stem + ".so.*[0-9]")), reverse=True)
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if home:
                out += [os.path.join(home, "lib64", s) for s in sonames[:-1]]
    out += sonames
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


def _howto(which):
    label, env, pip, _module, _sonames = _WHAT[which]
    if pip is None:
        return f"{label} not found: install the NVIDIA driver on a machine with an NVIDIA GPU"
    return (f"{label} not found; install it with `pip install {pip}` (or the CUDA toolkit), "
            f"or name the library in {env}")


_PROBE = {"cublas": "cublasCreate_v2", "cufft": "cufftPlanMany", "cuda": "cuInit"}
_KEEP = {}   # the loaded libraries (ctypes never closes them)


def _preload_lt(path):
    # libcublas needs libcublasLt of its own release: a toolkit directory
    # that is not on the loader's path would leave it unresolved
    d = os.path.dirname(path)
    if not d:
        return
    for lt in sorted(glob.glob(os.path.join(d, "libcublasLt.so.*[0-9]")), reverse=True):
        try:
            _KEEP.setdefault("cublasLt", ctypes.CDLL(lt, mode=ctypes.RTLD_GLOBAL))
            return
        except OSError:
            pass


def _load_from(which, cands):
    """Load library `which` from the first of cands that is that library;
    CudaError listing every failure and saying what to install."""
    done = _C._cuda_lib_path(which)
    if done:
        return done
    why = []
    for p in cands:
        if which == "cublas" and os.path.isabs(p) and os.path.exists(p):
            _preload_lt(p)
        try:
            lib = ctypes.CDLL(p, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            msg = str(e)
            why.append("  " + (msg if msg.startswith(p) else f"{p}: {msg}"))
            continue
        if not hasattr(lib, _PROBE[which]):
            why.append(f"  {p}: not the library asked for (an entry point is missing)")
            continue
        _KEEP[which] = lib
        return _C._cuda_lib_set(which, lib._handle, p)
    raise _C.CudaError(f"numdyn.cuda: {_howto(which)}. Tried:\n" + "\n".join(why))


def load(which):
    """Load library `which` ("cublas", "cufft", "cuda") once; its path.
    CudaError naming what to install when none of the candidates loads."""
    return _load_from(which, candidates(which))


def cublas_version():
    """cuBLAS's version number (e.g. 130000); loads cuBLAS (needs a current
    CUDA context: call it after the device was used)."""
    return _C._cuda_blas_version()


def cufft_version():
    """cuFFT's version number (e.g. 12000); loads cuFFT."""
    return _C._cuda_fft_version()
