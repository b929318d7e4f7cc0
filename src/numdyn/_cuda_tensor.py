"""numdyn.Tensor on CUDA: the engine its operations call (the type is C:
src/tensor/tensor_cuda.c).

An operation -- the callable the CPU Tensor would run (operator.add, a
ufunc, a NumPy function, an ndarray method name), its arguments holding
CUDA Tensors -- is captured ONCE per signature (the operands' shapes,
dtypes and byte strides, the values of everything else) by numdyn.compile
with fullgraph=True on host copies of the operands, the way
numdyn.cuda.on_device captures a function; from then on every call runs
that graph with backend "cuda" on the operands' device memory in place
(_C._cuda_run_graph): no host copies, results are CUDA Tensors holding the
graph's device buffers, and results NumPy makes as views of an operand
(t.T, t[0], t.reshape) are views of its device memory. An operation whose
capture breaks the graph (a result that depends on the data: a boolean
mask's selection, `v in t`) runs on the host with NumPy on copies of its
operands, its results going back up -- counted in cuda_host_steps, as the
backend counts its host steps. Python's own needs (bool(t), t.item(),
repr) copy what they read to the host.

wrap_numpy(fn) called with CUDA tensors (numdyn's, torch's, CuPy's, any
__cuda_array_interface__ or kDLCUDA DLPack producer) runs fn through the
same engine: one device program over the arguments' memory, results as
the first tensor argument's kind on the device (see wrap_call).
"""
import operator
import warnings

import numpy as np

from . import _C
from . import _cuda_lazy as _lazy

CudaTensor = _C._CudaTensor
_wrap = _C._cuda_tensor_wrap
_buffer = _C._cuda_tensor_buffer
_layout = _C._cuda_tensor_layout
_CALL, _METHOD, _ATTR = 0, 1, 2


def is_cuda(x):
    return type(x) is CudaTensor


def stream_handle():
    """numdyn's stream as the DLPack/array API `stream` argument (a CUstream
    handle; 1, the legacy default stream, where it is the NULL stream)"""
    s = _C._cuda_ready()[2]
    return s if s else 1


def upload(a):
    """an ndarray as a CUDA Tensor holding a copy (its layout kept when dense)"""
    return _wrap(_C._cuda_upload(a))


# ------------------------------------------------------------ signatures
class _Uncacheable(Exception):
    pass


_PLAIN = frozenset((int, float, bool, complex, str, type(None), type(Ellipsis)))


def _flat(obj, leaves, depth=0):
    """obj as a hashable description: CUDA Tensors and ndarrays become
    ("t"|"h", leaf index, layout) entries of `leaves`; containers and
    slices are described; other values by (type, value)"""
    t = type(obj)
    if t is CudaTensor:
        leaves.append(obj)
        return ("t", len(leaves) - 1) + _layout(obj)[1:]
    if t in _PLAIN:
        return ("c", t, obj)
    if t is np.ndarray:
        leaves.append(obj)
        return ("h", len(leaves) - 1, obj.shape, obj.dtype.str, obj.strides)
    if isinstance(obj, _C.Tensor):
        raise RuntimeError("numdyn: expected all Tensors on the same device, found a CPU Tensor "
                           "among CUDA operands (move it with .cuda(), or the others with .cpu())")
    if depth > 16:
        raise _Uncacheable
    if t is tuple:
        return ("tu", tuple(_flat(x, leaves, depth + 1) for x in obj))
    if t is list:
        return ("li", tuple(_flat(x, leaves, depth + 1) for x in obj))
    if t is dict:
        return ("di", tuple((k, _flat(v, leaves, depth + 1)) for k, v in obj.items()))
    if t is slice:
        return ("sl", _flat(obj.start, leaves, depth + 1), _flat(obj.stop, leaves, depth + 1),
                _flat(obj.step, leaves, depth + 1))
    if _cuda_foreign(obj) is not None:
        return _flat(_import_foreign(obj), leaves, depth)
    try:
        hash(obj)
    except TypeError:
        raise _Uncacheable from None
    return ("c", t, obj)


_NO_KWARGS = ("di", ())   # _flat({}, ...)


def _flat_args(args, leaves):
    """_flat(args, leaves) of a call's positional arguments (a tuple), CUDA
    Tensors described inline: the per-call signature of a warm call is most
    of its host work in Python (issue 16's call overhead)"""
    out = []
    for x in args:
        if type(x) is CudaTensor:
            leaves.append(x)
            out.append(("t", len(leaves) - 1) + _layout(x)[1:])
        else:
            out.append(_flat(x, leaves, 1))
    return ("tu", tuple(out))


def _rebuild(d, xs):
    tag = d[0]
    if tag in ("t", "h"):
        return xs[d[1]]
    if tag == "tu":
        return tuple(_rebuild(x, xs) for x in d[1])
    if tag == "li":
        return [_rebuild(x, xs) for x in d[1]]
    if tag == "di":
        return {k: _rebuild(v, xs) for k, v in d[1]}
    if tag == "sl":
        return slice(_rebuild(d[1], xs), _rebuild(d[2], xs), _rebuild(d[3], xs))
    return d[2]


def _shadow(t):
    """a host copy of CUDA Tensor t with the same byte strides (so that the
    views NumPy makes of it map to offsets in its device memory)"""
    _, shape, strides, _ = _layout(t)
    h = _buffer(t).get()
    if h.strides == strides or 0 in shape:
        return h
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    raw = np.zeros(hi - lo + h.itemsize, np.uint8)
    v = np.ndarray(shape, h.dtype, buffer=raw, offset=-lo, strides=strides)
    v[...] = h
    return v


# ------------------------------------------------------------ capture
class _Entry:
    __slots__ = ("graph", "feeds", "template", "host")


_cache = {}
_CACHE_MAX = 4096


def _call_of(kind, func):
    if kind == _METHOD:
        return lambda args, kwargs: getattr(args[0], func)(*args[1:], **kwargs)
    if kind == _ATTR:
        return lambda args, kwargs: getattr(args[0], func)
    return lambda args, kwargs: func(*args, **kwargs)


def capture_graphs(fn, shadows):
    """fn(*shadows) compiled with fullgraph=True (GraphBreakError at a
    break): (its result, [(graph, example inputs)], [the outputs each graph
    produced on the shadows])"""
    from . import compile as _compile
    graphs, produced = [], []

    def collect(graph, example_inputs):
        graphs.append((graph, list(example_inputs)))

        def runner(*xs):
            out = graph(*xs)
            produced.append(list(out))
            return out
        return runner
    return _compile(fn, backend=collect, fullgraph=True)(*shadows), graphs, produced


def _capture(kind, func, desc, leaves):
    from . import GraphBreakError
    shadows = [_shadow(x) if is_cuda(x) else x for x in leaves]
    run = _call_of(kind, func)

    def traced(*xs):
        args, kwargs = _rebuild(desc, xs)
        return run(args, kwargs)

    e = _Entry()
    e.host = False
    e.graph, e.feeds = None, []
    # an operation NumPy answers with views of its operands (t.T, t[2],
    # t.reshape) gives views of their device memory: no graph, no kernel
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")   # the capture below warns as NumPy does
            probe = traced(*shadows)
    except Exception:
        probe = None   # the capture below raises NumPy's error (or breaks)
    if probe is not None and _all_views(probe, shadows, leaves):
        e.template = _template(probe, [], shadows, leaves)
        return e
    try:
        # quiet: the device run right after reports the conditions NumPy's
        # error state acts on (once, as NumPy would)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res, graphs, produced = capture_graphs(traced, shadows)
    except GraphBreakError:
        e.host = True
        return e
    if len(graphs) > 1:
        e.host = True
        return e
    if graphs:
        graph, example = graphs[0]
        outs = produced[0]
        e.graph = graph
        e.feeds = [next((j for j, s in enumerate(shadows) if s is x), None) for x in example]
    else:
        outs = []
        e.graph, e.feeds = None, []
    try:
        e.template = _template(res, outs, shadows, leaves)
    except NotImplementedError:
        e.host = True
    if e.graph is not None and not e.host:
        for k, j in enumerate(e.feeds):   # keep no host copy of device operands
            if j is not None and is_cuda(leaves[j]):
                _C._cuda_graph_set_input(e.graph, k, _stand_in(shadows[j]))
    return e


def _stand_in(a):
    """an array of a's dtype, shape, strides and flags over untouched
    read-only anonymous memory (the kernel's zero page: no RAM): what a
    cached graph's input node holds where the device memory is fed"""
    import mmap
    if a.nbytes == 0 or a.size == 0:
        return a
    lo = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0)
    m = mmap.mmap(-1, hi - lo + a.itemsize, prot=mmap.PROT_READ)
    return np.ndarray(a.shape, a.dtype, buffer=m, offset=-lo, strides=a.strides)


def _all_views(r, shadows, leaves):
    """every array in r is a view of a CUDA operand's host copy (and r has one)"""
    found = []

    def ok(v):
        if type(v) in (tuple, list):
            return all(ok(x) for x in v)
        if isinstance(v, np.ndarray):
            root = _root(v)
            hit = any(is_cuda(leaves[i]) and (s is v or _root(s) is root)
                      for i, s in enumerate(shadows))
            found.append(hit)
            return hit
        return not isinstance(v, np.generic)
    return ok(r) and bool(found)


def _root(v):
    while isinstance(v.base, np.ndarray):
        v = v.base
    return v


def _template(res, outs, shadows, leaves):
    used = set()

    def leaf(v):
        if isinstance(v, np.ndarray):
            for j, o in enumerate(outs):
                if o is v:
                    used.add(j)
                    return ("out", j)
        if isinstance(v, np.generic):
            for j, o in enumerate(outs):
                if j not in used and isinstance(o, np.ndarray) and o.ndim == 0 and \
                        o.dtype == v.dtype and (o == v or (o != o and v != v)):
                    used.add(j)
                    return ("out", j)
        if isinstance(v, np.ndarray):
            root = _root(v)
            for j, o in enumerate(outs):   # a view NumPy made of an output
                if isinstance(o, np.ndarray) and (o is root or _root(o) is root):
                    return ("view", j, v.ctypes.data - o.ctypes.data, v.shape, v.strides, o.strides,
                            v.dtype.num)
            for i, s in enumerate(shadows):   # a view of an operand: its device memory
                if is_cuda(leaves[i]) and (s is v or _root(s) is root):
                    return ("inview", i, v.ctypes.data - s.ctypes.data, v.shape, v.strides,
                            v.dtype.num)
        if isinstance(v, (np.ndarray, np.generic)):
            raise NotImplementedError("a result that is not one of the graph's outputs")
        return ("const", v)

    def walk(v):
        if type(v) is tuple:
            return ("tuple", [walk(x) for x in v])
        if type(v) is list:
            return ("list", [walk(x) for x in v])
        return leaf(v)
    return walk(res)


def _build(t, bufs, leaves, wrap=None):
    """the result from its template and the run's buffers (wrap: how a
    DeviceBuffer leaves, a CUDA Tensor by default; a plain function: a
    closure calling itself would be a reference cycle that kept the device
    buffers until the garbage collector ran)"""
    kind = t[0]
    if kind == "out":
        return (wrap or _wrap)(bufs[t[1]])
    if kind == "view":
        _, j, off, shape, strides, ostrides, dt = t
        b = bufs[j]
        if tuple(b.__cuda_array_interface__["strides"]) != tuple(ostrides):
            raise NotImplementedError("numdyn: a view of a result laid out otherwise on the "
                                      "device than on the host")
        return (wrap or _wrap)(_C._cuda_view(b, off, tuple(shape), tuple(strides), dt))
    if kind == "inview":
        _, i, off, shape, strides, dt = t   # dt: x.real of a complex x is a float view
        return _wrap(_C._cuda_view(_buffer(leaves[i]), off, tuple(shape), tuple(strides), dt))
    if kind == "const":
        return t[1]
    items = [_build(x, bufs, leaves, wrap) for x in t[1]]
    return tuple(items) if kind == "tuple" else items


def _feeds(e, leaves):
    feeds = []
    for j in e.feeds:
        if j is None:
            feeds.append(None)
            continue
        x = leaves[j]
        if type(x) is CudaTensor:
            feeds.append(_layout(x) + (x,))
        else:
            feeds.append(x)
    return feeds


def _host_result(r):
    """a host result as CUDA Tensors: ndarrays and NumPy scalars go up"""
    if type(r) is tuple:
        return tuple(_host_result(x) for x in r)
    if type(r) is list:
        return [_host_result(x) for x in r]
    if isinstance(r, np.ndarray):
        return upload(np.asarray(r))
    if isinstance(r, np.generic):
        return upload(np.asarray(r))
    return r


def _on_host(kind, func, desc, leaves):
    """the operation with NumPy on host copies of its operands (a graph break)"""
    _C._cuda_count_host_step()
    xs = [x.numpy() if is_cuda(x) else x for x in leaves]
    args, kwargs = _rebuild(desc, xs)
    return _host_result(_call_of(kind, func)(args, kwargs))


def apply(kind, func, args, kwargs, lazy=True):
    """func(*args, **kwargs) (kind: call, method name, attribute) on CUDA Tensors
    (an elementwise operation is deferred: _cuda_lazy.py)"""
    if kwargs and "out" in kwargs and kwargs["out"] is not None:
        raise NotImplementedError("numdyn: out= into a CUDA Tensor; assign the result instead "
                                  "(t[...] = f(x))")
    if kind == _CALL and not kwargs and lazy:
        r = _lazy.record(func, args)   # an elementwise operation: deferred, fused with its chain
        if r is not None:
            return r
    leaves = []
    try:
        desc = ("tu", (_flat_args(args, leaves),
                       _flat(kwargs, leaves) if kwargs else _NO_KWARGS))
        key = (kind, func, desc, _env_of(func))
        e = _cache.get(key)
    except (_Uncacheable, TypeError):
        key = e = None
        leaves = []
        desc = ("tu", (_flat_any(args, leaves), _flat_any(kwargs or {}, leaves)))
    if e is None:
        e = _capture(kind, func, desc, leaves)
        if key is not None:
            if len(_cache) >= _CACHE_MAX:
                _cache.clear()
            _cache[key] = e
    if e.host:
        return _on_host(kind, func, desc, leaves)
    bufs = _C._cuda_run_graph(e.graph, _feeds(e, leaves)) if e.graph is not None else []
    return _build(e.template, bufs, leaves)


def _env_of(func):
    """what a Python function reads besides its arguments -- the globals its
    code names, its closure cells, its defaults -- as part of the signature
    (a scalar by value, anything else by identity), so that a captured graph
    is never replayed after one of them was rebound; None for builtins"""
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    if not code.co_names and func.__closure__ is None and not func.__defaults__:
        return ()   # reads nothing but its arguments (the loop below's answer, sooner)
    g = getattr(func, "__globals__", {})
    vals = [g.get(n, _MISSING) for n in code.co_names]
    vals += [c.cell_contents for c in (func.__closure__ or ()) if _cell_set(c)]
    vals += list(func.__defaults__ or ())
    return tuple(v if type(v) in _PLAIN else (type(v), id(v)) for v in vals)


_MISSING = object()


def _cell_set(c):
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def _flat_any(obj, leaves, depth=0):
    """_flat for a signature that cannot be a cache key: values by identity"""
    t = type(obj)
    if t is CudaTensor or t is np.ndarray or isinstance(obj, _C.Tensor):
        return _flat(obj, leaves)
    if t in (tuple, list) and depth < 16:
        return ("tu" if t is tuple else "li", tuple(_flat_any(x, leaves, depth + 1) for x in obj))
    if t is dict and depth < 16:
        return ("di", tuple((k, _flat_any(v, leaves, depth + 1)) for k, v in obj.items()))
    if t is slice:
        return ("sl", _flat_any(obj.start, leaves), _flat_any(obj.stop, leaves),
                _flat_any(obj.step, leaves))
    return ("c", t, obj)


# ------------------------------------------------------------ the slots
def flush(t=None):
    """run the deferred operations (tensor_cuda.c calls it before reading t's
    memory); raises for a t whose deferred operation failed"""
    _lazy.flush()
    if t is not None:
        _lazy.check(t)


def shared(t):
    """t's memory was handed to another library: no deferred reads of it"""
    _lazy.shared(t)


def _iop(name):
    op = getattr(operator, name)

    def f(x, y):
        return op(x.copy(order="K"), y)
    f.__name__ = f.__qualname__ = "_cuda_" + name
    return f


_INPLACE = {n: _iop(n) for n in ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                                 "imatmul", "iand", "ior", "ixor", "ilshift", "irshift")}


def _write(t, value):
    """value's bytes into t's device memory (same dtype, shape and layout)"""
    if not is_cuda(value):
        value = upload(np.asarray(value))
    _C._cuda_buffer_copy(_buffer(t), _buffer(value))


def inplace(name, t, b):
    """t op= b: NumPy's in-place semantics (casting rules of out=t) computed on
    the device, then written into t's memory"""
    _write(t, apply(_CALL, _INPLACE[name], (t, b), None))
    return t


def _setitem_copy(x, key, v):
    c = x.copy(order="K")
    c[key] = v
    return c


def setitem(t, key, v):
    _write(t, apply(_CALL, _setitem_copy, (t, key, v), None))


def contains(t, v):
    return bool(apply(_CALL, operator.contains, (t, v), None))


def rows(t):
    if t.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return [t[i] for i in range(t.shape[0])]


def scalar(t, conv):
    h = t.numpy()
    return {"bool": bool, "int": int, "float": float, "index": operator.index}[conv](h)


class _Method:
    """t.<ndarray method> of a CUDA Tensor: runs on the device"""
    __slots__ = ("t", "name")

    def __init__(self, t, name):
        self.t, self.name = t, name

    def __call__(self, *args, **kwargs):
        if self.name in ("fill", "sort", "partition", "put", "itemset", "resize", "setfield",
                         "setflags", "byteswap"):
            return _mutating(self.t, self.name, args, kwargs)
        return _C._cuda_tensor_apply(_METHOD, self.name, (self.t,) + args, kwargs or None)

    def __repr__(self):
        return f"<method {self.name} of numdyn.Tensor (cuda)>"


def _mutating(t, name, args, kwargs):
    """t.fill(v), t.sort(): the method on a device copy, written back"""
    _C._cuda_tensor_before_write(t, name)
    def f(x, *a, **k):
        c = x.copy(order="K")
        getattr(c, name)(*a, **k)
        return c
    f.__name__ = "_cuda_" + name
    fn = _MUTATORS.setdefault(name, f)
    _write(t, apply(_CALL, fn, (t,) + args, kwargs or None))


_MUTATORS = {}
_LAYOUT = {"itemsize", "nbytes", "strides"}


def attribute(t, name):
    if name in _LAYOUT:
        it = t.dtype.itemsize
        return {"itemsize": it, "nbytes": it * t.size, "strides": _layout(t)[2]}[name]
    a = getattr(np.ndarray, name, None)
    if a is None:
        raise AttributeError(f"'numdyn.Tensor' object has no attribute '{name}'")
    if callable(a) and not isinstance(a, property):
        return _Method(t, name)
    return _C._cuda_tensor_apply(_ATTR, name, (t,), None)


def tensor_repr(t):
    r = repr(t.numpy())
    body = r[5:].replace("\n      ", "\n       ")
    grad = ", requires_grad=True" if t.requires_grad or t.grad_fn is not None else ""
    return f"tensor{body[:-1]}, device='{t.device}'{grad})"


def _rebuild_tensor(host, device, requires_grad):
    return _C.tensor(host, device=device, requires_grad=requires_grad)


def reduce(t):
    return (_rebuild_tensor, (t.numpy(), "cuda", bool(t.requires_grad)))


def device_copy(t):
    return apply(_METHOD, "copy", (t,), {"order": "K"})


def _parse_device(d):
    s = str(d)
    kind, _, idx = s.partition(":")
    if kind not in ("cpu", "cuda") or (idx and not idx.isdigit()):
        raise ValueError(f"numdyn: unknown device {d!r}; use 'cpu', 'cuda' or 'cuda:N'")
    return kind


def _is_dtype(s):
    try:
        np.dtype(s)
        return True
    except TypeError:
        return False


def to(t, args, kwargs):
    """t.to(device), t.to(dtype), t.to(device, dtype), copy=: as torch's"""
    kwargs = dict(kwargs or {})
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    copy = bool(kwargs.pop("copy", False))
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument {next(iter(kwargs))!r}")
    for a in args:
        if isinstance(a, str) and (a.partition(":")[0] in ("cpu", "cuda") or not _is_dtype(a)):
            device = a
        elif isinstance(a, _C.Tensor):
            device, dtype = a.device, a.dtype
        else:
            dtype = a
    out = t
    if device is not None:
        where = _parse_device(device)
        if where == "cpu" and is_cuda(out):
            out, copy = out.cpu(), False
        elif where == "cuda" and not is_cuda(out):
            out, copy = out.cuda(), False
            if device != "cuda" and out.device != device:
                raise ValueError(f"numdyn: device {device!r} is not the one numdyn runs on")
    if dtype is not None and np.dtype(dtype) != out.dtype:
        out, copy = out.astype(dtype), False
    if copy:
        out = device_copy(out) if is_cuda(out) else _C.tensor(out)
    return out


# ------------------------------------------------------------ DLPack in
def from_dlpack(x, device, copy):
    """numdyn.from_dlpack(x, device=, copy=) where x or the result is on CUDA"""
    want = _parse_device(device) if device is not None else None
    from . import cuda
    if not cuda.is_available():
        if want == "cuda":
            raise ValueError(f"numdyn.from_dlpack: device {device!r} is not available: "
                             f"{cuda.unavailable_reason()}")
        dev = tuple(x.__dlpack_device__())
        raise BufferError(f"numdyn.from_dlpack: the array is on DLPack device {dev}, not "
                          f"readable by the CPU, and CUDA is not available here: "
                          f"{cuda.unavailable_reason()}")
    if is_cuda(x):
        t = x
    else:
        dev = x.__dlpack_device__()
        if int(dev[0]) == 2:
            if copy is True and want != "cpu":
                return device_copy(_C._cuda_tensor_from_dlpack(x))
            t = _C._cuda_tensor_from_dlpack(x)
        else:   # a host producer, device="cuda": up (a copy, necessarily)
            if copy is False:
                raise BufferError("numdyn.from_dlpack: device='cuda' of a host array needs a copy "
                                  "(copy=False refuses it)")
            return _C.from_dlpack(x).cuda()
    if want == "cpu":
        if copy is False:
            raise BufferError("numdyn.from_dlpack: device='cpu' of a CUDA array needs a copy "
                              "(copy=False refuses it)")
        return t.cpu()
    if copy is True:
        return device_copy(t)
    return t


# ------------------------------------------------------------ foreign CUDA arrays
def _cuda_foreign(x):
    """x's __cuda_array_interface__ when x is another library's CUDA array"""
    if isinstance(x, (int, float, complex, bool, str, bytes, np.ndarray, np.generic)) or x is None:
        return None
    if isinstance(x, _C.Tensor):
        return None
    try:
        return x.__cuda_array_interface__
    except Exception:   # AttributeError; torch's RuntimeError for a CPU tensor
        pass
    try:    # a DLPack producer on a CUDA device (kDLCUDA = 2, kDLCUDAManaged = 13)
        dev = x.__dlpack_device__()
    except Exception:
        return None
    return dev if dev[0] in (2, 13) else None


def _import_foreign(x):
    """another library's CUDA array as a CUDA Tensor over its memory (no copy):
    DLPack with numdyn's stream when it speaks it, else its CUDA Array Interface
    (its producer stream waited for on the device)"""
    if getattr(x, "requires_grad", False) is True:   # torch exports only detached tensors
        x = x.detach()
    if hasattr(type(x), "__dlpack__"):
        try:
            return _C._cuda_tensor_from_dlpack(x)
        except (TypeError, BufferError):
            pass
    cai = x.__cuda_array_interface__
    dt = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    st = cai.get("strides")
    if st is None:
        st, acc = [], dt.itemsize
        for n in reversed(shape):
            st.insert(0, acc)
            acc *= max(n, 1)
    s = cai.get("stream", False)
    if s is False:
        _C._cuda_sync_device()
    elif s is not None:
        _C._cuda_wait_stream(s)
    return _C._cuda_tensor_borrow(cai["data"][0], shape, tuple(st), dt.num, x)


def _export_like(r, lib):
    if type(r) is tuple:
        return tuple(_export_like(x, lib) for x in r)
    if type(r) is list:
        return [_export_like(x, lib) for x in r]
    if not is_cuda(r) or lib is None:
        return r
    if lib == "torch":
        import torch
        return torch.from_dlpack(r)
    if lib == "cupy":
        import cupy
        return cupy.from_dlpack(r)
    return r


def wrap_call(fn, compiled, args, kwargs):
    """numdyn.wrap_numpy(fn)(*args) with CUDA tensors among the arguments: fn
    is one device program over their memory (no copies); a graph break runs
    fn on the host instead (counted in cuda_host_steps), its arrays moved
    down and its results up. Results are the first tensor argument's kind."""
    lib = None
    for a in args if not kwargs else list(args) + list(kwargs.values()):
        if type(a) is CudaTensor:
            break
        if _cuda_foreign(a) is not None:
            lib = type(a).__module__.split(".")[0]
            break
    if lib is not None:   # another library's arrays: CUDA Tensors over their memory
        for a in list(args) + list((kwargs or {}).values()):
            if _cuda_foreign(a) is not None and getattr(a, "requires_grad", False) is True and \
                    __import__("torch").is_grad_enabled():
                raise NotImplementedError(
                    "numdyn.wrap_numpy: a torch CUDA tensor that requires grad (the torch "
                    "bridge runs on the CPU only); use numdyn.Tensor on CUDA for gradients, "
                    "or detach()")
        args = tuple(_import_foreign(a) if _cuda_foreign(a) is not None else a for a in args)
        if kwargs:
            kwargs = {k: _import_foreign(v) if _cuda_foreign(v) is not None else v
                      for k, v in kwargs.items()}
        return _export_like(_C._cuda_tensor_apply(_CALL, fn, args, kwargs or None), lib)
    return _C._cuda_tensor_apply(_CALL, fn, args, kwargs or None)


# ------------------------------------------------------------ gradients
def backward(t, grad, wrt=None, create=False):
    """t.backward(grad, inputs=wrt, create_graph=create) for a CUDA Tensor:
    the tape's program (tensor_tape.c) differentiated by numdyn's autodiff,
    its forward and backward graphs run with backend "cuda"; the gradients
    accumulate into .grad as CUDA Tensors (torch's conjugate convention for
    complex leaves, as on the CPU). wrt: only those Tensors get a gradient
    (a non-leaf one through a parameter of zeros added to its value, as the
    CPU does); retain_grad()'s non-leaf Tensors get theirs too. create: the
    gradient function runs as a recorded device operation over the Tensors
    it reads, so its results have a graph (second derivatives). Without it
    the program's parameters -- the leaves and the step outputs the tape
    holds -- are read where they are (no copies on a warm call)."""
    if t.grad_fn is None:      # a leaf: its own gradient
        if wrt is not None and not any(x is t for x in wrt):
            return None
        g = _cotangent(t, grad)
        _accumulate(t, g.numpy() if is_cuda(g) else g)
        return None
    prog, params, leaves, pobjs, pert = _C._tape_program(t, wrt, bool(create))
    nums, targets = [], []
    for i, leaf in enumerate(leaves):
        if wrt is None or any(x is leaf for x in wrt):
            nums.append(i)
            targets.append(leaf)
    for w, num in pert:
        nums.append(num)
        targets.append(w)
    if not targets:
        if wrt is not None:    # torch: inputs the graph does not reach keep their .grad
            return None
        raise RuntimeError("numdyn: backward(): no leaf Tensor requires grad")
    g = _cotangent(t, grad)
    if grad is None and t.dtype.kind == "c":
        raise RuntimeError("numdyn: grad can be implicitly created only for real scalar outputs")
    nums = tuple(nums)
    scalar = grad is None and t.ndim == 0
    if create:
        conj_out = tuple(x.dtype.kind == "c" for x in targets)
        gf = _C._tape_grad_fn(prog, len(params), nums, conj_out, scalar, g.dtype.kind == "c")
        args = tuple(_wrap(p) if isinstance(p, _C.CudaDeviceBuffer) else p for p in pobjs)
        if not scalar:
            args += ((grad if isinstance(grad, _C.Tensor) and grad.requires_grad else
                      g if is_cuda(g) else upload(np.asarray(g))),)
        grads = _C._cuda_tensor_apply(_CALL, gf, args, None)   # recorded on the tape
        for x, gr in zip(targets, grads):
            x.grad = gr if x.grad is None else x.grad + gr
        return None
    if t.dtype.kind == "f" and all(x.dtype.kind == "f" for x in targets):
        grads = _device_grads(prog, params, nums, None if grad is None else g)
        if grads is not None:
            with _C_no_grad():
                for x, gr in zip(targets, grads):
                    if gr.dtype != x.dtype:
                        gr = gr.astype(x.dtype)
                    x.grad = gr if x.grad is None else x.grad + gr
            return None
    host = tuple(p.get() if isinstance(p, _C.CudaDeviceBuffer) else p for p in params)
    out, _aux, third = _C._vjp(prog, host, nums, None, "cuda", False, scalar)
    if scalar:
        grads = third
    else:
        gh = g.numpy() if is_cuda(g) else np.asarray(g)
        grads = third(np.conj(gh) if gh.dtype.kind == "c" else gh)
    for x, gr in zip(targets, grads):
        gr = np.asarray(gr)
        _accumulate(x, np.conj(gr) if gr.dtype.kind == "c" else gr)
    return None


_grad_fns = {}   # (tape program, argnums, seeded) -> the function of arrays whose graph runs


def _grad_fn(prog, nums, seeded):
    """value_and_grad of the tape's program as one function of arrays:
    numdyn's autodiff inlines forward and backward into the graph the
    engine captures (seeded: the output's cotangent is the last argument,
    the loss then <out, ct>, real dtypes only)"""
    key = (prog, nums, seeded)
    fn = _grad_fns.get(key)
    if fn is None:
        from . import value_and_grad
        if seeded:
            vg = value_and_grad(lambda *a: (prog(*a[:-1]) * a[-1]).sum(), argnums=nums)
        else:
            vg = value_and_grad(prog, argnums=nums)

        def fn(*a):
            return tuple(vg(*a)[1])
        fn.__name__ = fn.__qualname__ = "_cuda_backward"
        if len(_grad_fns) > 256:
            _grad_fns.clear()
        _grad_fns[key] = fn = fn
    return fn


def _device_grads(prog, params, nums, ct):
    """the gradients (of parameters nums) as CUDA Tensors, computed by one
    device program over the tape's values where they are (no copies on a
    warm call); None when that program cannot be captured (the host path
    runs instead)"""
    from . import GraphBreakError
    args = tuple(_wrap(p) if isinstance(p, _C.CudaDeviceBuffer) else p for p in params)
    if ct is not None:
        args += (ct if is_cuda(ct) else upload(np.asarray(ct)),)
    fn = _grad_fn(prog, nums, ct is not None)
    try:
        with _C_no_grad():
            grads = apply(_CALL, fn, args, None)
    except (GraphBreakError, NotImplementedError):
        return None
    if not all(is_cuda(x) for x in grads):
        return None
    return grads


class _C_no_grad:
    """the backward program's own operations are not taped"""

    def __enter__(self):
        self.was = _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.was)


def _cotangent(t, grad):
    if grad is None:
        if t.size != 1:
            raise RuntimeError("numdyn: grad can be implicitly created only for single-element "
                               "outputs; pass backward(grad)")
        return np.ones(t.shape, t.dtype)
    g = grad if is_cuda(grad) else np.asarray(grad.numpy() if isinstance(grad, _C.Tensor) else grad)
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"numdyn: backward(grad): grad has shape {tuple(g.shape)}, the Tensor "
                           f"{tuple(t.shape)}")
    return g


def _accumulate(leaf, g):
    """a host gradient into leaf.grad (a CUDA Tensor of the leaf's dtype)"""
    g = upload(np.asarray(g).astype(leaf.dtype, copy=False))
    with _C_no_grad():   # as the CPU's: an earlier create_graph .grad's graph is not extended
        leaf.grad = g if leaf.grad is None else leaf.grad + g
