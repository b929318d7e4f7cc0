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
import inspect
import logging
import os
import pickle
import sys
import types as _types
import weakref

import numpy as np

from . import _C
from . import config
from . import _explain
from . import _profiler
from . import _repro
from . import _warnings_hook  # noqa: F401  (hooks warnings.catch_warnings)
from . import cuda  # noqa: F401  (numdyn.cuda: NVRTC/driver loaded on first use)
from ._profiler import CompileProfiler
from ._autodiff import grad, value_and_grad, vjp
from ._tensor import Tensor, tensor, from_dlpack, wrap_numpy, no_grad, is_grad_enabled

__all__ = [
    "compile", "explain", "GraphBreakError", "Graph", "list_backends",
    "register_backend", "disable", "allow_in_graph", "disallow_in_graph",
    "forbid_in_graph", "graph_break", "run", "reset", "mark_dynamic",
    "mark_static", "mark_static_address", "maybe_mark_dynamic", "config", "is_compiling", "CompileError", "optimize", "optimize_assert",
    "GuardFail", "RecompileError", "set_stance", "ConstraintViolationError",
    "CompiledModule", "CompileProfiler", "export",
    "Tensor", "tensor", "from_dlpack", "wrap_numpy", "no_grad", "is_grad_enabled",
    "grad", "value_and_grad", "vjp", "device", "CudaError",
    "is_dynamo_compiling", "error_on_graph_break", "lookup_backend", "list_mode_options",
    "assume_constant_result", "nonstrict_trace", "substitute_in_graph", "mark_unbacked",
]

CudaError = cuda.CudaError
device = cuda.device  # `with numdyn.device("cuda"):` compiled functions run on the GPU

GraphBreakError = _C.GraphBreakError
GraphBreakError.__module__ = "numdyn"
if hasattr(_C, "CompileError"):  # defined by the native backend
    CompileError = _C.CompileError
CompiledFunction = _C.CompiledFunction
RecompileError = _C.RecompileError
RecompileError.__module__ = "numdyn"
ConstraintViolationError = _C.ConstraintViolationError
ConstraintViolationError.__module__ = "numdyn"
GuardFail = _C.GuardFail  # (reason, orig_code, guard), .fn: what guard_fail_fn receives
LazyArray = _C.LazyArray
Graph = getattr(_C, "Graph", None)

_BUILTIN_BACKENDS = ("aot_eager", "eager", "native", "cuda")
_backend_tags = {}


# compile(mode=...): what each of torch.compile's modes means for numdyn, as
# the options it sets (torch._inductor.list_mode_options maps them to
# Inductor's config the same way). numdyn has no CUDA graphs: its warm
# calls already replay the recorded program without running Python, on
# every mode.
_MODE_OPTIONS = {
    # numdyn's defaults (config.floor decides the speed floor)
    "default": {},
    # the least work a warm call does: no speed floor (no per-call floor
    # check, no timed NumPy calls; compiled kernels always)
    "reduce-overhead": {"floor": False},
    # numdyn's autotuning on whatever the config says: the speed floor times
    # compiled calls against NumPy per argument signature and keeps the
    # faster (even under config.floor = False / NUMDYN_FLOOR=0)
    "max-autotune-no-cudagraphs": {"floor": True},
    "max-autotune": {"floor": True},
}


def list_mode_options(mode=None, dynamic=None):
    """The options each compile(mode=...) sets (torch._inductor's
    list_mode_options): all modes as a dict, or the given mode's; an
    unknown mode raises RuntimeError as torch.compile's does."""
    try:
        return dict(_MODE_OPTIONS[mode]) if mode else {k: dict(v) for k, v in _MODE_OPTIONS.items()}
    except (KeyError, TypeError):
        raise RuntimeError(
            f"Unrecognized mode={mode}, should be one of: {', '.join(_MODE_OPTIONS)}") from None


def _mode_options(mode, options):
    """compile's options after mode= (torch.compile's checks and errors)"""
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is None:
        return options
    return list_mode_options(mode) or None


def compile(fn=None, *, fullgraph=False, dynamic=None, backend="native", mode=None,
            options=None, disable=False):
    """Compile `fn` (a function, bound method or callable) with numdyn.

    Usable as ``@numdyn.compile`` or ``@numdyn.compile(backend="eager", ...)``.
    fullgraph=True turns the first graph break into numdyn.GraphBreakError.
    mode (torch.compile's): "default", "reduce-overhead" (no speed floor: no
    per-call floor work, compiled kernels always), "max-autotune" and
    "max-autotune-no-cudagraphs" (the speed floor on whatever
    numdyn.config.floor says); numdyn.list_mode_options() lists what each
    sets. Not with options= (RuntimeError, as torch).
    disable=True returns a wrapper that just calls fn. An object that is
    not a function or method but has ``forward`` or ``__call__`` becomes a
    numdyn.CompiledModule (like torch's OptimizedModule).
    """
    options = _mode_options(mode, options)
    if fn is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, options=options, disable=disable)
    kw = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, options=options,
              disable=disable)
    if _is_module_like(fn):
        return CompiledModule(fn, **kw)
    return _remember(fn, _C.compile(fn, **kw))


# plain function -> (weak) its latest compiled function: numdyn.run(f) of the
# plain f uses the programs compiled for it, as torch._dynamo.run(f) uses
# the cache torch.compile(f) filled (torch keeps it on f's code object)
_compiled_for = weakref.WeakKeyDictionary()
_frozen_runners = weakref.WeakKeyDictionary()  # plain function -> WeakSet of run(f)


def _remember(fn, compiled):
    if isinstance(fn, _types.FunctionType) and isinstance(compiled, CompiledFunction):
        _compiled_for[fn] = weakref.ref(compiled)
        for runner in _frozen_runners.get(fn, ()):  # made before: they call it now
            runner.__setstate__((_C._run_frozen, (compiled,), None, runner.__dict__))
    return compiled


def _is_module_like(obj):
    """An instance of a Python class whose forward / __call__ is Python code."""
    if inspect.isroutine(obj) or isinstance(obj, (type, CompiledModule)):
        return False
    cls = type(obj)
    return inspect.isfunction(getattr(cls, "forward", None)) or \
        inspect.isfunction(getattr(cls, "__call__", None))


class CompiledModule:
    """``numdyn.compile(obj)`` for an object with ``forward`` (else
    ``__call__``): calling it runs the compiled forward; every other
    attribute is read from and written to the wrapped object, kept as
    ``_orig_mod``, so state stays live (torch's OptimizedModule)."""

    _OWN = ("_orig_mod", "_compiled", "forward")

    def __init__(self, mod, **compile_kwargs):
        object.__setattr__(self, "_orig_mod", mod)
        target = mod.forward if callable(getattr(mod, "forward", None)) else mod.__call__
        object.__setattr__(self, "_compiled", _C.compile(target, **compile_kwargs))
        object.__setattr__(self, "forward", self._compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):  # only for names not found on the wrapper
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_orig_mod"), name)

    def __setattr__(self, name, value):
        if name in CompiledModule._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        delattr(self._orig_mod, name)

    def __dir__(self):
        return sorted(set(dir(self._orig_mod)) | set(CompiledModule._OWN))

    def __repr__(self):
        return f"CompiledModule({self._orig_mod!r})"

    def __reduce__(self):
        return (CompiledModule._rebuild, (self._orig_mod, _compile_kwargs(self._compiled)))

    @staticmethod
    def _rebuild(mod, kwargs):
        return CompiledModule(mod, **kwargs)


def _compile_kwargs(cf):
    return dict(fullgraph=cf.fullgraph, dynamic=cf.dynamic, backend=cf.backend,
                options=cf.options)


def _reduce_compiled(cf):
    """CompiledFunction.__reduce__: by reference. When the module attribute
    the compiled function was defined as is this object (a decorator), the
    name itself; otherwise the wrapped function (pickled by reference) and
    the compile arguments, compiled again on load. So compiled functions go
    to multiprocessing spawn pools and process workers."""
    mod, qual = getattr(cf, "__module__", None), getattr(cf, "__qualname__", None)
    if mod and qual and "<locals>" not in qual and not _main_by_value(mod):
        obj = sys.modules.get(mod)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if obj is cf:
            return qual
    if not isinstance(cf.backend, str):
        raise pickle.PicklingError(
            f"numdyn: cannot pickle {cf!r}: its backend is a callable, not a registered name")
    return (_rebuild_compiled, (cf._fn, _compile_kwargs(cf)))


def _main_by_value(mod):
    """A decorated function of the user's script (__main__) pickled by
    cloudpickle (Dask's and Ray's process workers, joblib's loky): the
    wrapped function goes by value, as cloudpickle ships every __main__
    function, since the worker has no such script to look the name up in.
    Plain pickle (multiprocessing's spawn re-imports the script) keeps the
    name. The pickler is the Python code that called the C reducer."""
    if mod != "__main__":
        return False
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        name = f.f_globals.get("__name__", "")
        if name.startswith("cloudpickle") or ".cloudpickle" in name:
            return True
        f = f.f_back
    return False


def _rebuild_compiled(fn, kwargs):
    return _C.compile(fn, **kwargs)


def _reduce_policy(wrapper, fn, kind, alt=None):
    """PolicyWrapper.__reduce__ (disable, allow_in_graph, ...): by reference,
    like compiled functions -- the module attribute when the wrapper is one
    (a decorator), else the wrapped function and the policy, applied again
    on load (in a spawn worker too)."""
    mod, qual = getattr(wrapper, "__module__", None), getattr(wrapper, "__qualname__", None)
    if mod and qual and "<locals>" not in qual and not _main_by_value(mod):
        obj = sys.modules.get(mod)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if obj is wrapper:
            return qual
    return (_C._policy, (fn, kind) if alt is None else (fn, kind, alt))


def optimize(backend="native", *, nopython=False, guard_export_fn=None, guard_fail_fn=None,
             disable=False, dynamic=None):
    """torch._dynamo.optimize's form: ``numdyn.optimize("native")(fn)``.

    guard_fail_fn(numdyn.GuardFail) is called when a call fits none of the
    function's compiled programs (a recompile): .reason says why, .guard is
    the guard that failed (text), .orig_code the function's code object (torch's), .fn the function.
    guard_export_fn(guards) gets the guards (a list of str) of each program
    compiled. nopython=True is fullgraph=True.
    """
    def decorator(fn):
        return _remember(fn, _C.compile(fn, fullgraph=nopython, dynamic=dynamic, backend=backend,
                                        disable=disable, guard_fail_fn=guard_fail_fn,
                                        guard_export_fn=guard_export_fn))
    return decorator


def optimize_assert(backend="native", *, guard_export_fn=None, guard_fail_fn=None,
                    dynamic=None):
    """optimize(..., nopython=True): the first graph break raises."""
    return optimize(backend, nopython=True, guard_export_fn=guard_export_fn,
                    guard_fail_fn=guard_fail_fn, dynamic=dynamic)


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
    numdyn.config.loop_capture) or the construct and line that prevented it,
    and threads: per kernel big enough for the OpenMP team that the call
    ran, whether it ran with the team or alone on the calling thread and
    the measured times of both (see numdyn.config.adaptive_threads), and
    gpu: for a call that ran on the GPU (backend="cuda" or inside
    numdyn.device("cuda")), each step NumPy ran on the host instead
    (event "host_step": an extern or eager step without a GPU form, with
    its operands copied to the host; "host_graph": a whole graph, under
    numdyn.config.cuda_host_fallback), each extern a GPU library computed
    ("device_extern"), and each graph NumPy ran again for np.errstate
    ("numpy_rerun").
    """
    compiled = fn if isinstance(fn, CompiledFunction) else _C.compile(fn, backend="eager")

    def run_explained(*args, **kwargs):
        _C._threads_log(True)  # the team/alone choice of the kernels this call runs
        _C._cuda_log(True)  # GPU runs: steps the host ran, NumPy reruns
        try:
            result, records = _C._explain_call(compiled, args, kwargs)
        finally:
            threads = _C._threads_log(False)
            gpu = _C._cuda_log(False)
        floor = compiled._floor_info_for(*args, *kwargs.values())
        out = _explain.build(records, result, floor, compiled._loop_info())
        out.threads = threads
        out.out_guards = compiled._out_guards(*args, *kwargs.values()) if not kwargs else \
            [g for p in compiled._programs() for g in p["guards"]]
        out.compile_times = utils.compile_times() if utils is not None else ""
        out.gpu = gpu or []
        return out

    if extra_args or extra_kwargs:
        return run_explained(*extra_args, **extra_kwargs)
    return run_explained


class ExportResult(tuple):
    """What numdyn.export gives: (graph, guards) -- the one captured
    numdyn.Graph (callable on new input arrays of the same dtypes and
    shapes, returning a list of arrays) and the guards of its program."""

    def __new__(cls, graph, guards):
        return super().__new__(cls, (graph, guards))

    graph = property(lambda self: self[0])
    guards = property(lambda self: self[1])


def export(fn, *extra_args, **extra_kwargs):
    """``numdyn.export(fn)(*args)`` -> ExportResult(graph, guards), like
    torch._dynamo.export: the whole function must be one graph -- a graph
    break raises numdyn.GraphBreakError (fullgraph)."""
    plain = fn._fn if isinstance(fn, CompiledFunction) else fn

    def run_export(*args, **kwargs):
        compiled = _C.compile(plain, backend="eager", fullgraph=True)
        out = explain(compiled)(*args, **kwargs)
        if out.graph_count != 1:
            raise GraphBreakError(f"numdyn.export: {plain!r} captured {out.graph_count} graphs; "
                                  "export needs exactly one (its array work in one graph)")
        return ExportResult(out.graphs[0], out.out_guards)

    if extra_args or extra_kwargs:
        return run_export(*extra_args, **extra_kwargs)
    return run_export


def list_backends(exclude_tags=("debug", "experimental")):
    """Names usable as compile(backend=...)."""
    names = set(_BUILTIN_BACKENDS)
    for name in _C._backends:
        if not set(_backend_tags.get(name, ())) & set(exclude_tags or ()):
            names.add(name)
    return sorted(names)


def lookup_backend(compiler_fn):
    """torch._dynamo.lookup_backend: the backend a compile(backend=...)
    value names -- a registered backend's compiler function, a built-in
    backend's name (its own C implementation), or compiler_fn itself when it
    is callable. An unknown name raises ValueError listing the known ones."""
    if callable(compiler_fn):
        return compiler_fn
    if not isinstance(compiler_fn, str):
        raise TypeError(f"numdyn: a backend is a name or a callable, not {type(compiler_fn).__name__}")
    if compiler_fn in _C._backends:
        return _C._backends[compiler_fn]
    if compiler_fn in _BUILTIN_BACKENDS:
        return compiler_fn
    raise ValueError(f"numdyn: unknown backend {compiler_fn!r}; known: "
                     f"{', '.join(list_backends(exclude_tags=()))}")


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register compiler_fn(graph, example_inputs) -> callable under `name`
    (default: its __name__). Works as a decorator, with or without arguments."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    name = name or compiler_fn.__name__
    if name in _BUILTIN_BACKENDS:
        raise ValueError(f"numdyn: backend name {name!r} is built in; choose another name")
    if name in _C._backends:
        raise ValueError(f"numdyn: duplicate backend name {name!r}: it is registered already; "
                         "choose another name")
    _C._register_backend(name, compiler_fn)
    _backend_tags[name] = tuple(tags)
    return compiler_fn


class _Disabled:
    """What numdyn.disable() returns without fn: a decorator, and a context
    manager inside which compiled functions run as plain functions."""

    def __init__(self, recursive):
        self.recursive = recursive

    def __call__(self, fn):
        return disable(fn, recursive=self.recursive)

    def __enter__(self):
        _C._disable_enter()
        return self

    def __exit__(self, *exc):
        _C._disable_exit()
        return False


def disable(fn=None, recursive=True):
    """Run fn without numdyn: called from compiled code it gets concrete arrays
    (a recorded graph break), and compiled functions it calls run eagerly
    (with recursive=False they still compile). ``numdyn.disable()`` is also a
    context manager: ``with numdyn.disable(): f(x)`` runs compiled f plainly."""
    if fn is None:
        return _Disabled(recursive)
    if isinstance(fn, CompiledFunction):
        fn = fn._fn
    return _C._policy(fn, "disable" if recursive else "disable_shallow")


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


def assume_constant_result(fn):
    """torch._dynamo.assume_constant_result: fn's result is a constant of
    the compiled program. Called from compiled code, fn runs once while the
    call is traced (on concrete values, no graph break, nothing it does
    traced); calls that replay the program reuse that result without
    calling fn or checking what it read -- like torch, numdyn does not
    check that the assumption holds. Outside compiled code fn runs as
    usual."""
    return _C._policy(fn, "assume_constant_result")


def nonstrict_trace(fn):
    """torch._dynamo.nonstrict_trace: fn is traced into the graph (its array
    work fuses with the caller's, as allow_in_graph), and values it reads
    other than its arguments -- globals, closure variables, arrays among
    them -- are assumed constant: calls that replay the program do not
    check them (allow_in_graph's guards do). Outside compiled code fn runs
    as usual."""
    return _C._policy(fn, "nonstrict_trace")


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """torch.compiler.substitute_in_graph: ``@substitute_in_graph(f)`` on a
    polyfill with f's signature makes compiled code that calls f -- by a
    global name, or a NumPy function numdyn's shim does not cover reaching
    a traced array through __array_function__ -- run the polyfill, traced;
    outside compiled code (and the returned function, called eagerly) f
    itself runs. torch's checks and errors: f must be a function (TypeError),
    the signatures must match unless skip_signature_check (TypeError), one
    polyfill per function (ValueError). can_constant_fold_through is
    accepted (numdyn folds what is constant anyway)."""
    if not isinstance(original_fn, (_types.FunctionType, _types.BuiltinFunctionType,
                                    _types.MethodDescriptorType, _types.WrapperDescriptorType,
                                    np.ufunc)) and not _is_numpy_function(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {type(original_fn)!r}")

    def wrapper(traceable_fn):
        if not isinstance(traceable_fn, (_types.FunctionType, _types.BuiltinFunctionType)):
            raise TypeError(
                f"@substitute_in_graph(...) expects a function but got {type(traceable_fn)!r}")
        if not skip_signature_check:
            _check_same_signature(original_fn, traceable_fn)
        prev = _C._policies.get(original_fn)
        if prev is not None and prev._numdyn_policy == "substitute_in_graph":
            raise ValueError(f"Duplicate polyfill handlers for {original_fn}: "
                             f"already handled by {prev.__wrapped__}")
        return _C._policy(original_fn, "substitute_in_graph", traceable_fn)
    return wrapper


def _is_numpy_function(f):
    # NumPy's dispatching functions (np.polyval, np.interp...) are
    # _ArrayFunctionDispatcher objects, not FunctionType
    return callable(f) and type(f).__name__ == "_ArrayFunctionDispatcher"


def _check_same_signature(original_fn, traceable_fn):
    """torch's rule: positional names, keyword-only names and defaults equal
    (annotations, *args/**kwargs names aside), or either is (*args, **kwargs)"""
    try:
        original_sig = inspect.signature(original_fn)
    except ValueError:
        return
    traceable_sig = inspect.signature(traceable_fn)
    var = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

    def ident(sig):
        ps = sig.parameters.values()
        return (tuple(p.name for p in ps if p.kind not in (p.KEYWORD_ONLY,) + var),
                {p.name for p in ps if p.kind == p.KEYWORD_ONLY},
                {p.name: p.default for p in ps if p.kind not in var})

    wild = ident(inspect.signature(lambda *args, **kwargs: None))
    a, b = ident(original_sig), ident(traceable_sig)
    if a != b and a != wild and b != wild:
        raise TypeError(f"Signature mismatch between {original_fn} and {traceable_fn}: "
                        f"{original_sig} != {traceable_sig}")


graph_break = _C.graph_break
is_compiling = _C.is_tracing
is_dynamo_compiling = _C.is_tracing  # torch.compiler.is_dynamo_compiling's name


class error_on_graph_break:
    """torch._dynamo.error_on_graph_break(flag): inside the region, a graph
    break raises numdyn.GraphBreakError as under fullgraph=True (flag True),
    or does not (flag False: it undoes an enclosing error_on_graph_break(True);
    fullgraph=True itself stays). A context manager -- around calls of
    compiled functions, or inside a compiled function for part of it -- and
    a decorator of the function whose calls form the region."""

    def __init__(self, error_on_graph_break):
        self.flag = bool(error_on_graph_break)
        self._prev = []

    def __enter__(self):
        self._prev.append(_C._break_errors(self.flag))
        return self

    def __exit__(self, *exc):
        _C._break_errors(self._prev.pop())
        return False

    def __call__(self, fn):
        flag = self.flag

        @functools.wraps(fn)
        def region(*args, **kwargs):
            with error_on_graph_break(flag):
                return fn(*args, **kwargs)
        return region


class _Frozen:
    """numdyn.run's frozen mode: a decorator and a context manager."""

    def __call__(self, fn):
        if isinstance(fn, _types.FunctionType):
            runner = _frozen_plain(fn)
        else:
            runner = _FrozenRunner(_C._run_frozen, fn)
        functools.update_wrapper(runner, fn)
        return runner

    def __enter__(self):
        _C._frozen(True)
        return self

    def __exit__(self, *exc):
        _C._frozen(False)
        return False


class _FrozenRunner(functools.partial):
    """numdyn.run(fn): calls go straight to C (no Python frame or context
    manager per call); bound like a function when it is a class attribute."""

    def __get__(self, obj, objtype=None):
        return self if obj is None else _types.MethodType(self, obj)


class _FrozenPlain(_FrozenRunner):
    """numdyn.run(f) of a plain function f: calls, in frozen mode, the
    function numdyn.compile(f) (or optimize) made last -- its programs, so
    a seen input runs compiled -- else f itself; a later compile of f
    retargets it (still one C call per call, no lookup)."""

    def __reduce__(self):
        return (run, (self.__dict__["_numdyn_plain"],))


def _frozen_plain(fn):
    ref = _compiled_for.get(fn)
    target = ref() if ref is not None else None
    runner = _FrozenPlain(_C._run_frozen, fn if target is None else target)
    runner.__dict__["_numdyn_plain"] = fn
    _frozen_runners.setdefault(fn, weakref.WeakSet()).add(runner)
    return runner


def run(fn=None):
    """Frozen mode: ``numdyn.run(fn)(...)`` or ``with numdyn.run(): ...``.

    Compiled functions use only what is compiled already -- their programs
    (replayed traces, the program cache, kernels in the memory and disk
    caches) -- and never compile (`fn` may be the plain function: its
    latest `numdyn.compile(fn)` is used): a call whose argument signature has no
    program runs the plain function (NumPy), and a graph whose kernels are
    in no cache runs op by op with NumPy. Seen inputs run at compiled speed.
    """
    return _Frozen() if fn is None else _Frozen()(fn)


class _Stance:
    def __init__(self, prev, stance):
        self.prev, self.stance = prev, stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_stance(self.prev)
        return False

    def __call__(self, fn):
        stance = self.stance
        _C._set_stance(self.prev)  # as a decorator it applies only during fn's calls

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C._set_stance(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_stance(prev)
        return wrapper


def set_stance(stance="default"):
    """Like torch.compiler.set_stance: "default"; "force_eager" (compiled
    functions run as plain functions); "eager_on_recompile" (a call that
    would compile a second program runs plainly instead); "fail_on_recompile"
    (it raises numdyn.RecompileError). Takes effect at once; also works as a
    context manager (restores the previous stance) and as a decorator."""
    return _Stance(_C._set_stance(stance), stance)


def reset():
    """Forget compiled-function caches (remapped globals, custom-backend
    compilations, compiled programs, compile times) and zero the counters."""
    _C._reset()
    _C._compile_times_reset()
    utils = globals().get("utils")
    if utils is not None and hasattr(utils, "reset"):
        utils.reset()


# mark_dynamic / mark_static: kept in C (guards/dim_marks.c), keyed by a weak
# reference to the array; they enter the program signature and graph key.

def _check_not_tracing(kind):
    if _C.is_tracing():
        raise RuntimeError(f"numdyn.mark_{kind} was called inside a compiled function "
                           "(while numdyn traces it); mark the array before the call")


def mark_dynamic(x, dim, *, min=None, max=None):
    """Keep dim `dim` (an int or a list) of x shape-generic: programs never
    specialize on its size. Code that forces it to a constant raises
    numdyn.ConstraintViolationError. min/max (as torch's; a missing one is
    2 / unbounded) bound its size: a compiled call given x with the dim
    outside [min, max] raises numdyn.ConstraintViolationError."""
    _check_not_tracing("dynamic")
    _C._mark(x, dim, 1, min, max)


def maybe_mark_dynamic(x, dim):
    """Let dim `dim` of x be generic without insisting (torch's
    maybe_mark_dynamic): earlier marks on it go; code may still make it a
    constant, without ConstraintViolationError. Kernels are shape-generic by
    default, so this is numdyn's unmarked state."""
    _check_not_tracing("maybe_dynamic")
    _C._mark(x, dim, 2)


def mark_unbacked(x, index, hint_override=None, strict=False, specialize_on=None,
                  shape_id=None, min=None, max=None):
    """torch._dynamo.mark_unbacked: dim(s) `index` of x are data-dependent --
    programs do not specialize on their size. strict=True: code that forces
    such a dim to a constant raises numdyn.ConstraintViolationError, and
    min/max bound it, as mark_dynamic; strict=False (torch's default):
    specialization is allowed without error, as maybe_mark_dynamic (numdyn's
    kernels are shape-generic anyway; under compile(dynamic=False) such a
    dim is then specialized, where torch would keep it unbacked). As all of
    numdyn's kernels, a program still tells size-1 dims (broadcasting) from
    others, where torch's unbacked size is never taken to be 0 or 1: the
    values are NumPy's either way. hint_override is accepted (numdyn
    autotunes nothing by size hints); specialize_on, shape_id, and bounds
    without strict=True are not implemented (NotImplementedError)."""
    _check_not_tracing("unbacked")
    if specialize_on is not None or shape_id is not None:
        raise NotImplementedError(
            "numdyn.mark_unbacked: specialize_on and shape_id are not implemented; mark the "
            "dim with mark_dynamic, and check equal sizes in the function")
    if not strict and (min is not None or max is not None):
        raise NotImplementedError(
            "numdyn.mark_unbacked: min/max are checked for strict=True only (as mark_dynamic's "
            "range); pass strict=True or use numdyn.mark_dynamic(x, dim, min=, max=)")
    if strict:
        _C._mark(x, index, 1, min, max)
    else:
        _C._mark(x, index, 2)


def mark_static(x, dim=None):
    """Specialize on the size of dim `dim` of x (an int, a list, or None:
    every dim): another size is another program (a recompile)."""
    _check_not_tracing("static")
    _C._mark(x, dim, 0)


def mark_static_address(t, guard=False):
    """torch._dynamo.mark_static_address: t's data pointer is treated as a
    constant of the programs compiled for it. guard=True guards on it: a
    later call with t's value at another address (another array in its
    place) is a recompile, with the reason "data_ptr changed" (recompile
    logs, guard_fail_fn, cache_size_limit) and the data pointer in the
    program's guards (guard_export_fn, explain's out_guards); guard=False
    (torch's default) is the hint alone -- numdyn's CPU kernels take their
    operands' addresses per call, so it changes no program. t is an ndarray
    or a numdyn.Tensor (its array); anything else raises torch's TypeError.
    The mark lives as long as the array (a weak reference, as mark_static's)."""
    if isinstance(t, Tensor):
        t = t.numpy()
    elif not isinstance(t, np.ndarray):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")
    _C._mark_static_address(t, bool(guard))


_marked_dims = _C._marked_dims


# ---- logging: NUMDYN_LOGS="graph_breaks,graphs" (or "all"), or config.verbose
log = logging.getLogger("numdyn")
_LOG_KINDS = ("graph_breaks", "graphs", "recompiles", "replay", "output_code")


def _enabled_kinds():
    spec = os.environ.get("NUMDYN_LOGS", "")
    kinds = {k.strip().lstrip("+") for k in spec.split(",") if k.strip()}
    if kinds & {"all", "debug", "+all"}:
        kinds = set(_LOG_KINDS)
    return kinds


def _log_hook(kind, message):
    if _profiler._active:
        _profiler.notify(kind, message)
    if kind.startswith("call"):  # call_begin / call: the profiler's alone
        return
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


def _sync_log_hook():
    """Install the C layer's log hook only while something listens (log
    kinds, config.verbose, a profiler): with it, every graph break and flush
    formats a message and finds the user's source line (11% of a loop that
    breaks each iteration), to be thrown away. Called when any of those
    changes (set_logs, config.verbose, the profiler's enter/exit)."""
    _C._set_log_hook(_log_hook if (_log_kinds or config.verbose or _profiler._active) else None)


_sync_log_hook()
_C._config_set("log_output_code", "output_code" in _log_kinds)


def set_logs(**kinds):
    """numdyn.set_logs(graph_breaks=True, graphs=False): switch log kinds at
    run time (like NUMDYN_LOGS)."""
    for k, on in kinds.items():
        if k not in _LOG_KINDS:
            raise ValueError(f"numdyn.set_logs: unknown kind {k!r}; known: {_LOG_KINDS}")
        (_log_kinds.add if on else _log_kinds.discard)(k)
    _C._config_set("log_output_code", "output_code" in _log_kinds)
    _sync_log_hook()
    if _log_kinds and not log.handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("[numdyn] %(message)s"))
        log.addHandler(h)
    if _log_kinds:
        log.setLevel(logging.INFO)


def _debug_repro(fn, tag, args, kwargs):
    """NUMDYN_DEBUG_DIR/<tag>/repro.py: a standalone script that calls the
    function under NumPy and under numdyn on the same arguments and compares
    results (types, dtypes, shapes, values within the dtype's tolerance),
    raised exceptions and the arguments' final state; it exits 1 when they
    differ (the C layer calls this before the compiling call). The arrays
    themselves are saved next to it (inputs.npz) up to _REPRO_SAVE_BYTES in
    all, so value-dependent failures reproduce; larger ones are rebuilt as
    random arrays of the same types, shapes, dtypes and layouts."""
    d = os.path.join(os.environ["NUMDYN_DEBUG_DIR"], tag)
    os.makedirs(d, mode=0o700, exist_ok=True)
    target = fn.__func__ if inspect.ismethod(fn) else fn
    mod, qual = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    items = [(f"a{i}", a) for i, a in enumerate(args)] + [(f"k_{k}", v) for k, v in kwargs.items()]
    arrays = {n: a for n, a in items if type(a) is np.ndarray and a.dtype.kind in "biufc"}
    saved = sum(a.nbytes for a in arrays.values()) <= _REPRO_SAVE_BYTES
    to_save = dict(arrays) if saved else {}
    if inspect.ismethod(fn):
        get_fn = _repro_method(fn, d, to_save)
    elif mod and mod != "__main__" and "<locals>" not in qual:
        get_fn = f"import {mod}\nfn = {mod}.{qual}\nfn = getattr(fn, '__wrapped__', fn)\n"
    else:
        # the source is copied: with what it reads (globals, closure cells:
        # helpers, modules, numbers, arrays) and without its decorators
        try:
            budget = _REPRO_SAVE_BYTES - sum(a.nbytes for a in to_save.values())
            env = _repro.source_env(target, to_save, budget)
            if target.__name__ == "<lambda>":
                src = inspect.cleandoc("\n" + inspect.getsource(target))
                get_fn = env + f"fn = {_lambda_source(target, src)}\n"
            else:
                get_fn = env + _repro.function_source(target) + f"\n\nfn = {target.__name__}\n"
        except (OSError, TypeError, ValueError, SyntaxError):
            get_fn = f"raise SystemExit('numdyn: the source of {qual} is not available')\n"
    if to_save:
        np.savez(os.path.join(d, "inputs.npz"), **to_save)

    def arg_expr(name, a):
        if name in arrays and saved:  # its shape and dtype in a comment for the reader
            e = f"inputs[{name!r}]  # {a.dtype} {a.shape!r}"
            if not (a.flags.c_contiguous or a.flags.f_contiguous):
                e += f", a strided view (strides {a.strides!r}) in the original"
            return e
        if isinstance(a, np.ndarray):
            kind = a.dtype.kind
            if kind == "b":
                e = f"rng.integers(0, 2, {a.shape!r}).astype(bool)"
            elif kind in "iu":
                e = f"rng.integers(0, 10, {a.shape!r}).astype({str(a.dtype)!r})"
            elif kind == "c":
                e = (f"(rng.standard_normal({a.shape!r}) + 1j * rng.standard_normal({a.shape!r}))"
                     f".astype({str(a.dtype)!r})")
            else:
                e = f"rng.standard_normal({a.shape!r}).astype({str(a.dtype)!r})"
            if a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous:
                e = f"np.asfortranarray({e})"
            elif not (a.flags.c_contiguous or a.flags.f_contiguous):
                e = f"{e}  # the original was a strided view: layout {a.strides!r}"
            return e
        if isinstance(a, (bool, int, float, complex, str, type(None), np.generic)):
            return repr(a) if not isinstance(a, np.generic) else f"np.{type(a).__name__}({a.item()!r})"
        return f"None  # an argument of type {type(a).__qualname__} is not rebuilt"

    npos = len(args)
    lines = ["# numdyn repro: " + qual,
             "# exits 0 when numdyn agrees with NumPy, 1 when it reproduces a difference",
             "import copy", "import os", "import sys", "import numpy as np", "import numdyn", "",
             "os.environ.pop('NUMDYN_DEBUG_DIR', None)  # running it must not overwrite it", "",
             "here = os.path.dirname(os.path.abspath(__file__))",
             ("inputs = np.load(os.path.join(here, 'inputs.npz'))" if to_save else "inputs = {}"),
             "rng = np.random.default_rng(0)", "",
             get_fn,
             "args = [", *(_comma(arg_expr(n, a)) for n, a in items[:npos]), "]",
             "kwargs = {", *(_comma(f"{n[2:]!r}: {arg_expr(n, a)}") for n, a in items[npos:]), "}",
             _REPRO_CHECK,
             "expected, exp_args = call(fn, copy.deepcopy(args), copy.deepcopy(kwargs))",
             "if isinstance(expected, NameError):  # not the user's bug: a name this script lacks",
             "    print('numdyn repro: cannot run the function here:', expected)",
             "    sys.exit(2)",
             "got, got_args = call(numdyn.compile(globals().get('fn_numdyn', fn)), args, kwargs)",
             "problems = compare(got, expected, 'result') + compare(got_args, exp_args, 'arguments')",
             "if problems:",
             "    print('numdyn repro: reproduced:', *problems, sep='\\n  ')",
             "    sys.exit(1)",
             "print('numdyn repro: results agree')", ""]
    with open(os.path.join(d, "repro.py"), "w") as f:
        f.write("\n".join(lines))


def _repro_method(fn, d, to_save):
    """repro.py's lines that rebuild a bound method (a CompiledModule's
    forward): its object pickled to self.pkl and loaded twice, one copy for
    NumPy's call and one for numdyn's (the method may change its object);
    a class of the user's script comes as source. An object that does not
    pickle: the script says so and exits 2."""
    import pickle as _pickle
    obj, name = fn.__self__, fn.__func__.__name__
    cls = type(obj)
    try:
        blob = _pickle.dumps(obj)
        if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
            budget = _REPRO_SAVE_BYTES - sum(a.nbytes for a in to_save.values())
            head = _repro.source_env(cls, to_save, budget) + _repro.function_source(cls) + "\n\n"
        else:
            head = f"import {cls.__module__}\n"
    except Exception as e:  # noqa: BLE001 -- any object may refuse pickling
        return (f"print('numdyn repro: the object of the bound method {cls.__qualname__}.{name} "
                f"is not rebuilt ({type(e).__name__}: it does not pickle)')\nsys.exit(2)\n")
    with open(os.path.join(d, "self.pkl"), "wb") as f:
        f.write(blob)
    return (head + "import pickle\n"
            "with open(os.path.join(here, 'self.pkl'), 'rb') as _f:\n    _self = _f.read()\n"
            f"fn = getattr(pickle.loads(_self), {name!r})  # NumPy's call\n"
            f"fn_numdyn = getattr(pickle.loads(_self), {name!r})  # numdyn's, on its own copy\n")


def _comma(expr):
    """one element line of a list display: the comma goes before a comment"""
    e, sep, comment = expr.partition("  # ")
    return f"    {e},{sep}{comment}"


def _lambda_source(fn, lines):
    """The text of the lambda expression `fn` among the source lines that
    hold it (several lambdas may share a line: the one whose bytecode and
    constants are fn's). ValueError when none matches."""
    import ast
    import builtins
    import textwrap
    lines = textwrap.dedent(lines)
    try:
        tree = ast.parse(lines)
    except SyntaxError:  # a lambda inside an expression cut off mid-statement
        tree = ast.parse("(\n" + lines + "\n)")
        lines = "(\n" + lines + "\n)"
    def ident(c):  # not co_code: the compiler's choices differ by context
        return c.co_consts, c.co_names, c.co_varnames, c.co_freevars, c.co_argcount

    want, found = ident(fn.__code__), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            seg = ast.get_source_segment(lines, node)
            try:
                c = next(k for k in builtins.compile(seg, "<lambda>", "eval").co_consts if inspect.iscode(k))
            except (SyntaxError, StopIteration):
                continue
            if ident(c) == want:
                found.append(seg)
    if len(found) != 1:
        raise ValueError("lambda source not found" if not found else "lambdas alike on one line")
    return found[0]


# the arguments a NUMDYN_DEBUG_DIR repro.py saves as they are (inputs.npz), in bytes
_REPRO_SAVE_BYTES = 16 << 20

# repro.py's comparison: NumPy's result against numdyn's, with tolerances by dtype
_REPRO_CHECK = '''
TOL = {"e": 1e-3, "f": 1e-5, "d": 1e-9, "g": 1e-9, "F": 1e-5, "D": 1e-9, "G": 1e-9}


def call(f, a, k):
    try:
        return f(*a, **k), (a, k)
    except Exception as e:  # an exception is a result too: NumPy's must be numdyn's
        return e, (a, k)


def compare(g, e, where):
    if isinstance(e, Exception) or isinstance(g, Exception):
        same = type(g) is type(e) and str(g) == str(e)
        return [] if same else [f"{where}: numdyn gave {g!r}, NumPy {e!r}"]
    if type(g) is not type(e):
        return [f"{where}: type {type(g).__name__}, NumPy's {type(e).__name__}"]
    if isinstance(e, (tuple, list)):
        if len(g) != len(e):
            return [f"{where}: length {len(g)}, NumPy's {len(e)}"]
        return [p for i, (x, y) in enumerate(zip(g, e)) for p in compare(x, y, f"{where}[{i}]")]
    if isinstance(e, dict):
        if g.keys() != e.keys():
            return [f"{where}: keys {list(g)}, NumPy's {list(e)}"]
        return [p for k in e for p in compare(g[k], e[k], f"{where}[{k!r}]")]
    if isinstance(e, (np.ndarray, np.generic)):
        if g.dtype != e.dtype or np.shape(g) != np.shape(e):
            return [f"{where}: {g.dtype}{np.shape(g)}, NumPy's {e.dtype}{np.shape(e)}"]
        tol = TOL.get(e.dtype.char, 0)
        try:
            if tol:
                np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True)
            else:
                np.testing.assert_array_equal(g, e)
        except AssertionError as x:
            return [f"{where}: values differ:{x}"]
        return []
    return [] if g == e or (g != g and e != e) else [f"{where}: {g!r}, NumPy's {e!r}"]
'''


# numdyn.utils (counters, clear_cache) belongs to the native backend
if importlib.util.find_spec(__name__ + ".utils") is not None:
    from . import utils  # noqa: F401
else:
    utils = None
