"""numdyn.cuda: the CUDA backend's public surface (issue 16).

libcuda (the driver) and libnvrtc (the runtime compiler) are loaded with
dlopen when first needed, never linked: numdyn imports and runs its CPU
backends on machines without CUDA. On a machine with a GPU:

    f = numdyn.compile(fn, backend="cuda")    # always on the GPU
    with numdyn.device("cuda"):               # any compiled function, here
        y = g(x)                              # x goes up, y comes back an ndarray
    numdyn.cuda.get_device_properties(0)      # name, compute capability, SMs, memory
    numdyn.cuda.memory_stats()                # the caching allocator's numbers
    numdyn.cuda.empty_cache()                 # cached device blocks back to the driver

Without a GPU, numdyn.device("cuda") and backend="cuda" raise
numdyn.CudaError saying why (unavailable_reason()). What works without one:

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
           "nvrtc_path", "source", "compile_check", "unavailable_reason", "device",
           "get_device_properties", "memory_stats", "empty_cache", "synchronize",
           "current_device", "set_device", "mem_get_info", "on_device", "DeviceBuffer"]


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


class CudaDeviceProperties:
    """What numdyn.cuda.get_device_properties(i) returns: name, major, minor
    (compute capability), multi_processor_count, total_memory (bytes), and
    max_threads_per_block, warp_size, clock_rate_khz, memory_clock_rate_khz,
    memory_bus_width, l2_cache_size, max_threads_per_multi_processor,
    max_shared_memory_per_block, pci_bus_id, pci_device_id."""

    def __init__(self, d):
        self.__dict__.update(d)

    @property
    def arch(self):
        """"sm_XY" of the device"""
        return f"sm_{self.major}{self.minor}"

    def __repr__(self):
        return (f"CudaDeviceProperties(name={self.name!r}, major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def _need_device():
    if not is_available():
        raise CudaError(f"numdyn.cuda: CUDA is not available: {unavailable_reason()}")


def get_device_properties(i=0):
    """Properties of device i (CudaDeviceProperties); CudaError without a GPU."""
    _need_device()
    return CudaDeviceProperties(_C._cuda_device_properties(int(i)))


def current_device():
    """The device numdyn runs on (NUMDYN_CUDA_DEVICE, default 0)."""
    _need_device()
    return _C._cuda_ready()[0]


def set_device(i):
    """Choose the device numdyn runs on: before its first GPU call (one device
    a process; CudaError after, ValueError for a device that does not exist)."""
    _C._cuda_set_device(int(i))


def synchronize():
    """Wait until the GPU finished numdyn's queued work (deferred CUDA Tensor
    operations run first)."""
    from . import _cuda_lazy
    _cuda_lazy.flush()
    _C._cuda_synchronize()


def mem_get_info():
    """(free, total) bytes of the device, as the driver counts them."""
    return _C._cuda_mem_info()


def memory_stats():
    """The caching device allocator's statistics: allocated_bytes (in use,
    rounded to size classes), reserved_bytes (in use + cached for reuse),
    peak_allocated_bytes, alloc_calls, cache_hits (requests served from the
    cache), driver_allocs / driver_frees (cuMemAlloc / cuMemFree calls),
    blocks_in_use, blocks_cached; kept_argument_bytes: of allocated_bytes,
    the compiled programs' kernel launch arguments, kept on the device
    between calls (a warm call uploads none that did not change;
    empty_cache() drops them). Works without a GPU (all zero)."""
    return _C._cuda_memory_stats()


def empty_cache():
    """Give the allocator's cached (free) device blocks back to the driver."""
    _C._cuda_empty_cache()


class device:
    """``with numdyn.device("cuda"):`` compiled functions called inside run
    their programs on the GPU: ndarray arguments are copied to the device,
    the program's kernels run there (intermediates never leave it) and the
    results come back as ndarrays of NumPy's dtype, shape and layout. Steps
    without a GPU form run on the host with NumPy and are reported
    (numdyn.explain, counter cuda_host_steps). "cuda:N" names a device (one
    a process, see set_device); "cpu" runs on the host inside a GPU block.
    Raises CudaError on entry when there is no usable GPU, saying why.
    Per thread; nests."""

    def __init__(self, name="cuda"):
        if not isinstance(name, str):
            raise TypeError(f"numdyn.device expects a name such as 'cuda', not "
                            f"{type(name).__name__}")
        kind, _, idx = name.partition(":")
        if kind not in ("cuda", "cpu") or (idx and (kind == "cpu" or not idx.isdigit())):
            raise ValueError(f"numdyn.device: unknown device {name!r}; use 'cuda', 'cuda:N' "
                             f"or 'cpu'")
        self.kind = kind
        self.index = int(idx) if idx else None
        self._saved = []

    def __enter__(self):
        if self.kind == "cpu":
            self._saved.append(_C._cuda_device_swap(0))
            return self
        _need_device()
        if self.index is not None:
            set_device(self.index)
        _C._cuda_device_enter()  # CudaError when the device cannot be set up
        self._saved.append(None)
        return self

    def __exit__(self, *exc):
        saved = self._saved.pop()
        if saved is None:
            _C._cuda_device_exit()
        else:
            _C._cuda_device_swap(saved)
        return False

    def __repr__(self):
        return f"device(type={self.kind!r}" + (f", index={self.index})" if self.index is not None
                                               else ")")


# cuBLAS/cuFFT, the GPU forms of matmul/dot and numpy.fft's 1-d transforms
# (numdyn/_cuda_libs.py says where they are looked for)
from ._cuda_libs import cublas_version, cufft_version  # noqa: E402,F401


# ------------------------------------------------- device-resident calls
import numpy as _np

DeviceBuffer = _C.CudaDeviceBuffer
_checked = []   # [True] once a call found a device (not at import: no driver work then)


def _cai(a):
    """a's __cuda_array_interface__, or None (a host array, a CPU tensor)"""
    if isinstance(a, (int, float, complex, bool, str, bytes)) or a is None:
        return None
    try:
        return a.__cuda_array_interface__
    except Exception:  # AttributeError, torch's RuntimeError for CPU tensors
        return None


def _dense(cai):
    """(dtype, byte strides, order) of a dense CUDA array, or None"""
    import numpy as np
    dt = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    cs, fs = [0] * len(shape), [0] * len(shape)
    acc = dt.itemsize
    for k in range(len(shape) - 1, -1, -1):
        cs[k] = acc
        acc *= max(shape[k], 1)
    acc = dt.itemsize
    for k in range(len(shape)):
        fs[k] = acc
        acc *= max(shape[k], 1)
    st = cai.get("strides")
    st = tuple(cs) if st is None else tuple(st)
    live = [k for k in range(len(shape)) if shape[k] > 1]
    if all(st[k] == cs[k] for k in live):
        return dt, st, "C"
    if all(st[k] == fs[k] for k in live):
        return dt, st, "F"
    return None


def _contiguous(a):
    mod = type(a).__module__.split(".")[0]
    if mod == "torch":
        return a.contiguous()
    if mod == "cupy":
        import cupy
        return cupy.ascontiguousarray(a)
    raise TypeError(f"numdyn.cuda.on_device: a strided {type(a).__name__} "
                    f"(make it contiguous first)")


def _as_is(buf):
    return buf


def _wrapper(lib):
    """how a result's DeviceBuffer leaves as lib's array: looked up once a
    signature (an import statement and a lambda a call were a sixth of a
    warm call's Python time); module functions, no closure that could
    hold results in a reference cycle"""
    if lib == "cupy":
        import cupy
        return cupy.asarray
    if lib == "torch":
        import functools
        import torch
        return functools.partial(torch.as_tensor, device="cuda")
    return _as_is


_tbuild = []   # [_cuda_tensor._build] once imported


class _Entry:
    # feeds: per graph input, None (its own array), or (argument index, None
    # for a host array / (dtype number, byte strides) of a device one)
    __slots__ = ("graph", "feeds", "template", "lib", "wrap")


class on_device:
    """``numdyn.cuda.on_device(fn)``: fn written against NumPy, called with
    CUDA arrays -- CuPy arrays, torch CUDA tensors, anything with
    ``__cuda_array_interface__`` -- runs as one GPU program that reads them
    in place and leaves its results on the device, returned as arrays of
    the first CUDA argument's library (numdyn.cuda.DeviceBuffer for
    others; ``.get()`` copies one to the host). No host copies on a warm
    call: the device-resident path the benchmarks time.

    The first call of each argument signature (shapes, dtypes, layouts,
    the values of non-array arguments) copies the arguments to the host
    once and captures fn there as one graph (a graph break raises
    numdyn.GraphBreakError, as numdyn.export; fn may not write into its
    arguments: NotImplementedError). Steps without a GPU form run on the
    host as in backend="cuda" (counter cuda_host_steps). ndarray arguments
    are allowed (copied up each call)."""

    def __init__(self, fn):
        import functools
        self.fn = fn
        self.cache = {}
        functools.update_wrapper(self, fn)

    def _key(self, args, cais):
        key = []
        for a, cai in zip(args, cais):
            if cai is not None:
                st = cai.get("strides")
                key.append((type(a), tuple(cai["shape"]), cai["typestr"], None if st is None else tuple(st)))
            elif isinstance(a, _np.ndarray):
                key.append(("h", a.shape, a.dtype.str, a.strides))
            else:
                key.append(("v", type(a), a))
        return tuple(key)

    def _capture(self, args):
        import numpy as np
        from . import GraphBreakError
        shadows, pristine = [], []
        for a in args:
            cai = _cai(a)
            if cai is None:
                shadows.append(a)
                pristine.append(None)
                continue
            dt, _st, order = _dense(cai)
            h = np.empty(tuple(cai["shape"]), dtype=dt, order=order)
            _C._cuda_copy_into(cai["data"][0], h)
            shadows.append(h)
            pristine.append(h.copy(order="K"))
        from ._cuda_tensor import capture_graphs
        res, graphs, produced = capture_graphs(self.fn, shadows)
        if len(graphs) != 1 or len(produced) != 1:
            raise GraphBreakError(f"numdyn.cuda.on_device: {self.fn!r} captured {len(graphs)} "
                                  "graphs; it must be one (its array work in one graph)")
        for h, p in zip(shadows, pristine):
            if p is not None and not (h.tobytes() == p.tobytes()):
                raise NotImplementedError("numdyn.cuda.on_device: the function writes into an "
                                          "argument; return the new value instead")
        graph, example = graphs[0]
        outs = produced[0]
        feeds = []
        for x in example:
            j = next((j for j, s in enumerate(shadows) if s is x), None)
            feeds.append(j)
        from ._cuda_tensor import _template
        try:
            template = _template(res, outs, (), ())
        except NotImplementedError:
            raise NotImplementedError("numdyn.cuda.on_device: a result that is not one of the "
                                      "graph's outputs (an argument returned as is?)") from None
        e = _Entry()
        e.graph, e.feeds, e.template = graph, feeds, template
        return e

    def __call__(self, *args):
        if not _checked:
            _need_device()
            _checked.append(True)
        cais = [_cai(a) for a in args]  # once: a property CuPy/torch build per access
        key = self._key(args, cais)
        e = self.cache.get(key)
        if e is None:
            lib = None
            for a, cai in zip(args, cais):
                if cai is not None:
                    lib = type(a).__module__.split(".")[0]
                    break
            _need_device()
            args = tuple(_contiguous(a) if c is not None and _dense(c) is None else a
                         for a, c in zip(args, cais))
            cais = [_cai(a) for a in args]
            key = self._key(args, cais)
            e = self.cache.get(key)
            if e is None:
                e = self._capture(args)
                e.feeds = [None if j is None else
                           (j, None if cais[j] is None else
                            (lambda d: (d[0].num, d[1]))(_dense(cais[j])))
                           for j in e.feeds]
            e.lib = lib   # the key holds the arguments' types: the results' library
            e.wrap = _wrapper(lib)
            self.cache[key] = e
        feeds = []
        waits = None
        handed = True   # every array argument is a CUDA one whose producer's stream is known
        for f in e.feeds:
            if f is None:
                feeds.append(None)
                continue
            j, dev = f
            if dev is None:
                feeds.append(args[j])
                handed = False
                continue
            cai = cais[j]
            sh = cai["shape"]
            feeds.append((cai["data"][0], sh if type(sh) is tuple else tuple(sh), dev[1], dev[0], args[j]))
            # the array's producer: CUDA Array Interface v3's stream (None: ready;
            # absent: unknown, so every stream of the device)
            s = cai.get("stream", False)
            if s is not None:
                if waits is None:
                    waits = set()
                waits.add(s)
            else:
                handed = False
        if waits:
            if False in waits:
                _C._cuda_sync_device()
                handed = False
            else:
                for s in waits:   # numdyn's stream waits on the device; the host goes on
                    _C._cuda_wait_stream(s)
        # kernels that set no error word need no wait for it: the producers'
        # streams then wait for numdyn's on the device (README, "CUDA")
        bufs = _C._cuda_run_graph(e.graph, feeds, tuple(waits) if handed and waits else None)
        if not _tbuild:
            from ._cuda_tensor import _build
            _tbuild.append(_build)
        return _tbuild[0](e.template, bufs, (), e.wrap)
