"""numdyn: a NumPy-semantics array compiler for CPython.

    import numdyn, numpy as np

    @numdyn.compile
    def f(a, b):
        return np.sqrt(a * a + b * b).sum()

The tracing, typing, graph, backends and guards are C (numdyn._C); this
module is the thin public API. See DESIGN.md.

Backends: "native" (fused C kernels), "eager" (the captured graph run op by
op with NumPy), "aot_eager" (capture, and for numdyn.grad/vjp of it the
forward and backward graphs, run op by op with NumPy), any name given to
register_backend, or a callable
compiler_fn(graph, example_inputs) -> callable.

Compiled functions see numdyn's NumPy shim where their globals name numpy
(or a NumPy function it replaces): numdyn injects private names
``__numdyn_<name>__`` into the function's module globals for that.
"""
__version__ = "0.1.0"  # keep equal to pyproject.toml

import functools
import importlib.util
import logging
import os
import weakref

from . import _C
from . import config
from . import _explain
from ._autodiff import grad, value_and_grad, vjp

__all__ = [
    "compile", "explain", "GraphBreakError", "Graph", "list_backends",
    "register_backend", "disable", "allow_in_graph", "disallow_in_graph",
    "forbid_in_graph", "graph_break", "run", "reset", "mark_dynamic",
    "mark_static", "config", "is_compiling", "CompileError",
    "grad", "value_and_grad", "vjp",
]

GraphBreakError = _C.GraphBreakError
GraphBreakError.__module__ = "numdyn"
if hasattr(_C, "CompileError"):  # defined by the native backend
    CompileError = _C.CompileError
CompiledFunction = _C.CompiledFunction
LazyArray = _C.LazyArray
Graph = getattr(_C, "Graph", None)

_BUILTIN_BACKENDS = ("aot_eager", "eager", "native")
_backend_tags = {}


def compile(fn=None, *, fullgraph=False, dynamic=None, backend="native",
            options=None, disable=False):
    """Compile `fn` (a function, bound method or callable) with numdyn.

    Usable as ``@numdyn.compile`` or ``@numdyn.compile(backend="eager", ...)``.
    fullgraph=True turns the first graph break into numdyn.GraphBreakError.
    disable=True returns a wrapper that just calls fn.
    """
    if fn is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, options=options, disable=disable)
    return _C.compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                      options=options, disable=disable)


def explain(fn, *extra_args, **extra_kwargs):
    """``numdyn.explain(fn)(*args, **kwargs)`` -> ExplainOutput.

    Runs fn once under numdyn (fn's own backend if it is already compiled,
    else "eager") and reports the graphs and graph breaks: graph_count,
    graph_break_count, break_reasons (reason, filename, lineno, source),
    ops_per_graph, graphs (numdyn.Graph objects), result, and floor: the
    speed floor's measurement for arguments like these (None before fn was
    called with them), e.g. that they run as plain NumPy because numdyn was
    slower (see numdyn.config.floor), and loops: for each loop statement,
    whether it was captured (compiled to a C loop, see
    numdyn.config.loop_capture) or the construct and line that prevented it.
    """
    compiled = fn if isinstance(fn, CompiledFunction) else _C.compile(fn, backend="eager")

    def run_explained(*args, **kwargs):
        result, records = _C._explain_call(compiled, args, kwargs)
        floor = compiled._floor_info_for(*args, *kwargs.values())
        return _explain.build(records, result, floor, compiled._loop_info())

    if extra_args or extra_kwargs:
        return run_explained(*extra_args, **extra_kwargs)
    return run_explained


def list_backends(exclude_tags=("debug", "experimental")):
    """Names usable as compile(backend=...)."""
    names = set(_BUILTIN_BACKENDS)
    for name in _C._backends:
        if not set(_backend_tags.get(name, ())) & set(exclude_tags or ()):
            names.add(name)
    return sorted(names)


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register compiler_fn(graph, example_inputs) -> callable under `name`
    (default: its __name__). Works as a decorator, with or without arguments."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    name = name or compiler_fn.__name__
    if name in _BUILTIN_BACKENDS:
        raise ValueError(f"numdyn: backend name {name!r} is built in; choose another name")
    _C._register_backend(name, compiler_fn)
    _backend_tags[name] = tuple(tags)
    return compiler_fn


def disable(fn=None, recursive=True):
    """Run fn without numdyn: called from compiled code it gets concrete arrays
    (a recorded graph break), and compiled functions it calls run eagerly."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    if isinstance(fn, CompiledFunction):
        fn = fn._fn
    return _C._policy(fn, "disable")


def allow_in_graph(fn):
    """Declare fn pure (NumPy calls only): traced through, and eligible for
    replay once guards/ replays traces."""
    return _C._policy(fn, "allow_in_graph")


def disallow_in_graph(fn):
    """Calls of fn inside compiled code run eagerly on concrete arrays,
    with a recorded graph break."""
    return _C._policy(fn, "disallow_in_graph")


def forbid_in_graph(fn):
    """Calling fn inside compiled code raises RuntimeError."""
    return _C._policy(fn, "forbid_in_graph")


graph_break = _C.graph_break
is_compiling = _C.is_tracing


def run(fn=None):
    """Run fn without compiling anything new: compiled functions called
    inside it run eagerly with NumPy (cached programs are not replayed yet)."""
    if fn is None:
        return run

    @functools.wraps(fn)
    def runner(*args, **kwargs):
        _C._disable_enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _C._disable_exit()
    return runner


def reset():
    """Forget compiled-function caches (remapped globals, custom-backend
    compilations) and zero the counters."""
    _C._reset()
    utils = globals().get("utils")
    if utils is not None and hasattr(utils, "reset"):
        utils.reset()


# mark_dynamic / mark_static: a side table keyed by array identity. Recorded
# only: the guards that will consult it are not written yet.
_marks = {}


def _mark(x, dim, kind):
    key = id(x)
    if key not in _marks:
        try:
            weakref.finalize(x, _marks.pop, key, None)
        except TypeError:
            raise TypeError(f"numdyn.mark_{kind}: expected an ndarray, got "
                            f"{type(x).__name__}") from None
        _marks[key] = {"dynamic": set(), "static": set()}
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    ndim = getattr(x, "ndim", None)
    for d in dims:
        d = int(d)
        if ndim is not None and not -ndim <= d < ndim:
            raise IndexError(f"numdyn.mark_{kind}: dim {d} out of range for ndim {ndim}")
        d = d % ndim if ndim else d
        other = "static" if kind == "dynamic" else "dynamic"
        _marks[key][other].discard(d)
        _marks[key][kind].add(d)


def mark_dynamic(x, dim):
    """Ask that dim `dim` of x never be specialized (kernels are
    shape-generic by default; recorded for guards)."""
    _mark(x, dim, "dynamic")


def mark_static(x, dim):
    """Ask that dim `dim` of x be specialized (recorded for guards)."""
    _mark(x, dim, "static")


def _marked_dims(x):
    m = _marks.get(id(x))
    return (frozenset(m["dynamic"]), frozenset(m["static"])) if m else (frozenset(), frozenset())


# ---- logging: NUMDYN_LOGS="graph_breaks,graphs" (or "all"), or config.verbose
log = logging.getLogger("numdyn")
_LOG_KINDS = ("graph_breaks", "graphs")


def _enabled_kinds():
    spec = os.environ.get("NUMDYN_LOGS", "")
    kinds = {k.strip().lstrip("+") for k in spec.split(",") if k.strip()}
    if kinds & {"all", "debug", "+all"}:
        kinds = set(_LOG_KINDS)
    return kinds


def _log_hook(kind, message):
    if kind in _log_kinds:
        log.info("%s", message)
    elif config.verbose:
        print(f"[numdyn] {message}")


_log_kinds = _enabled_kinds()
if _log_kinds:
    if not log.handlers:
        _h = logging.StreamHandler()
        _h.setFormatter(logging.Formatter("[numdyn] %(message)s"))
        log.addHandler(_h)
    log.setLevel(logging.INFO)
# installed always so that config.verbose can be switched on at run time
_C._set_log_hook(_log_hook)


def set_logs(**kinds):
    """numdyn.set_logs(graph_breaks=True, graphs=False): switch log kinds at
    run time (like NUMDYN_LOGS)."""
    for k, on in kinds.items():
        if k not in _LOG_KINDS:
            raise ValueError(f"numdyn.set_logs: unknown kind {k!r}; known: {_LOG_KINDS}")
        (_log_kinds.add if on else _log_kinds.discard)(k)
    if _log_kinds and not log.handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("[numdyn] %(message)s"))
        log.addHandler(h)
    if _log_kinds:
        log.setLevel(logging.INFO)


# numdyn.utils (counters, clear_cache) belongs to the native backend
if importlib.util.find_spec(__name__ + ".utils") is not None:
    from . import utils  # noqa: F401
