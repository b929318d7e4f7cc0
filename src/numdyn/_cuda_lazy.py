"""Lazy chains of CUDA Tensor operations (issue 16): the engine's
(_cuda_tensor.py) deferred form of elementwise operations.

An elementwise operation of CUDA Tensors -- an operator (t * 2, a - b,
-t, t < 0) or a one-output ufunc called on them (np.exp(t)) -- is not run
when Python asks for it: it is recorded, and its result is a CUDA Tensor
over a placeholder buffer whose shape and dtype are NumPy's (found by the
same operation on 0-d stand-ins, so NEP 50's scalar rules hold), and that
holds no memory. When anything reads device memory -- t.numpy(), a
non-elementwise operation, an in-place write, DLPack, repr -- every
recorded operation runs as ONE device program (numdyn.compile of the chain
through the engine's apply, cached by the chain's structure): the chain
fuses into one kernel, as numdyn.compile fuses a NumPy function, and the
Tensors still alive take the memory of their values (intermediates that
died are never written).

What stays eager (the operation runs at once, as before): operands that
require grad (the tape needs values), operands whose memory was handed to
another library (DLPack, __cuda_array_interface__: it may write it before
the chain runs), host arrays among the operands,
keyword arguments (out=, where=, dtype=), several outputs, a shape or
dtype NumPy would refuse (the eager path raises NumPy's error), and
np.errstate modes that raise or call at the operation ('raise', 'call',
'log'). A chain records np.geterr() and runs under it; a change of error
state runs what is recorded first. RuntimeWarnings of a chain (NumPy's
"overflow encountered in ...") are issued when the chain runs, not at the
operation.
"""
import operator
import warnings
import weakref

import numpy as np

from . import _C

CudaTensor = _C._CudaTensor
MAX_NODES = 64   # a longer chain runs (one program per MAX_NODES operations)
enabled = True   # False: every operation runs at once (bench/bench_cuda.py compares)

_OPS = frozenset((operator.add, operator.sub, operator.mul, operator.truediv,
                  operator.floordiv, operator.mod, operator.pow, operator.and_, operator.or_,
                  operator.xor, operator.lshift, operator.rshift, operator.neg, operator.pos,
                  operator.abs, operator.invert, operator.lt, operator.le, operator.eq,
                  operator.ne, operator.gt, operator.ge))
_SCALARS = (int, float, bool, complex)
_EAGER_MODES = ("raise", "call", "log")


class _Node:
    __slots__ = ("func", "refs", "ref")


_order = []        # the recorded nodes, in program order
_of = {}           # id(placeholder Tensor) -> its node (while the Tensor lives)
_errstate = None   # np.geterr() when the first node was recorded
_progs = {}        # chain structure -> the program function (a stable object for apply's cache)
_shared = {}       # id(Tensor) -> weakref: memory handed to another library
stats = {"deferred": 0, "chains": 0, "chain_nodes": 0}


def _forget(tid, of=_of):
    # the dict bound now: at interpreter exit module globals may be None
    return lambda _ref: of.pop(tid, None)


_failed = {}       # id(Tensor) -> (weakref, the exception its chain raised)


def _count():
    _C._cuda_tensor_pending(len(_order) + len(_failed))


def _unfail(i, failed=_failed):
    failed.pop(i, None)
    try:
        _count()
    except Exception:   # interpreter exit
        pass


def check(t):
    """raise for a Tensor whose deferred operation failed (it has no memory)"""
    f = _failed.get(id(t))
    if f is not None and f[0]() is t:
        raise RuntimeError("numdyn: the deferred CUDA operation that computes this Tensor "
                           f"failed: {type(f[1]).__name__}: {f[1]}") from f[1]


def shared(t):
    """t's memory was handed out (DLPack, __cuda_array_interface__): another
    library may write it at any time, so operations reading t run at once"""
    i = id(t)
    if i not in _shared:
        _shared[i] = weakref.ref(t, lambda _r, d=_shared: d.pop(i, None))


def record(func, args):
    """the deferred result of func(*args), or None when it runs eagerly"""
    global _errstate
    if not enabled:
        return None
    if not (func in _OPS or (type(func) is np.ufunc and func.nout == 1 and func.nin == len(args))):
        return None
    tensors, sig = [], []
    for a in args:
        t = type(a)
        if t is CudaTensor:
            if a.requires_grad or a.grad_fn is not None or id(a) in _shared:
                return None
            tensors.append(a)
            sig.append(a.dtype)
        elif t in _SCALARS or isinstance(a, np.generic):
            sig.append((t, a))   # by value: NumPy 2 refuses a Python int out of the dtype's range
        else:
            return None
    if not tensors:
        return None
    err = np.geterr()
    if any(m in _EAGER_MODES for m in err.values()):
        return None
    key = (func, tuple(sig))
    dtype = _dtypes.get(key, _MISSING)
    if dtype is _MISSING:
        dtype = _dtypes[key] = _result_dtype(func, args)
        if len(_dtypes) > 4096:
            _dtypes.clear()
    if dtype is None:
        return None   # the eager path raises NumPy's error, or runs what is not elementwise
    if len(tensors) == 1:
        shape = tensors[0].shape
    else:
        try:
            shape = np.broadcast_shapes(*[t.shape for t in tensors])
        except ValueError:
            return None
    if _order and err != _errstate:
        flush()
    if len(_order) >= MAX_NODES:
        flush()
    if not _order:
        _errstate = err
    refs = []
    for a in args:
        if type(a) is CudaTensor:
            n = _of.get(id(a))
            refs.append(("n", n) if n is not None else ("x", a))
        else:
            refs.append(("c", a))
    strides, acc = [], dtype.itemsize
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= max(d, 1)
    out = _C._cuda_tensor_borrow(0, tuple(shape), tuple(strides), dtype.num, None)
    node = _Node()
    node.func, node.refs = func, refs
    node.ref = weakref.ref(out, _forget(id(out)))
    _of[id(out)] = node
    _order.append(node)
    stats["deferred"] += 1
    _count()
    return out


_dtypes = {}       # (func, operand dtypes and scalars) -> the result's dtype; None: eager
_MISSING = object()


def _result_dtype(func, args):
    """NumPy's dtype of func(*args) from the operation on 0-d stand-ins
    (ufunc dtype resolution depends on dtypes and Python scalars only), or
    None where it is not one array of a plain dtype or NumPy refuses it"""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            probe = func(*[np.zeros((), a.dtype) if type(a) is CudaTensor else a for a in args])
    except Exception:
        return None
    if not isinstance(probe, (np.ndarray, np.generic)) or isinstance(probe, np.ndarray) and probe.ndim:
        return None
    dtype = probe.dtype
    if dtype.hasobject or dtype.kind in "OVSUMm":
        return None
    return dtype


def flush():
    """run every recorded operation as one device program; the live
    placeholders take their values' memory"""
    global _errstate
    if not _order:
        return
    nodes, err = list(_order), _errstate
    _order.clear()
    _errstate = None
    _count()
    # the nodes a live Tensor needs, and the live ones (the outputs)
    live = [n for n in nodes if n.ref() is not None]
    for n in live:
        _of.pop(id(n.ref()), None)
    need, stack = set(), list(live)
    while stack:
        n = stack.pop()
        if id(n) in need:
            continue
        need.add(id(n))
        stack.extend(r[1] for r in n.refs if r[0] == "n")
    kept = [n for n in nodes if id(n) in need]
    if not live:
        return
    index = {id(n): j for j, n in enumerate(kept)}
    leaves, leaf_at, desc = [], {}, []
    for n in kept:
        refs = []
        for r in n.refs:
            if r[0] == "n":
                refs.append(("n", index[id(r[1])]))
            elif r[0] == "x":
                k = leaf_at.get(id(r[1]))
                if k is None:
                    k = leaf_at[id(r[1])] = len(leaves)
                    leaves.append(r[1])
                refs.append(("x", k))
            else:
                refs.append(("c", type(r[1]), r[1]))
        desc.append((n.func, tuple(refs)))
    outs = tuple(index[id(n)] for n in live)
    key = (tuple(desc), outs)
    prog = _progs.get(key)
    if prog is None:
        prog = _program(tuple(desc), outs)
        if len(_progs) > 1024:
            _progs.clear()
        _progs[key] = prog
    stats["chains"] += 1
    stats["chain_nodes"] += len(kept)
    from ._cuda_tensor import apply, _CALL
    targets = [n.ref() for n in live]
    try:
        with np.errstate(**err):
            res = apply(_CALL, prog, tuple(leaves), None)
    except BaseException as exc:
        # the Tensors have no memory: reading one raises this (never a read
        # of a null device pointer)
        for t in targets:
            if t is not None:
                i = id(t)
                _failed[i] = (weakref.ref(t, lambda _r, i=i, u=_unfail: u(i)), exc)
        _count()
        raise
    for t, r in zip(targets, res):
        if t is not None:
            _C._cuda_tensor_adopt(t, _C._cuda_tensor_buffer(r))


def _program(desc, outs):
    def chain(*xs):
        vals = []
        for func, refs in desc:
            vals.append(func(*[vals[r[1]] if r[0] == "n" else xs[r[1]] if r[0] == "x" else r[2]
                               for r in refs]))
        return tuple(vals[j] for j in outs)
    chain.__name__ = chain.__qualname__ = "_cuda_chain"
    return chain
