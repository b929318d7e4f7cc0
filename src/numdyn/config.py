"""numdyn configuration: plain module attributes, read at the moment they matter.

    import numdyn
    numdyn.config.suppress_errors = True

enabled
    The global switch (default True; NUMDYN_DISABLE=1 sets False): when False
    every compiled function runs as its plain function.
cache_size_limit
    Most programs one compiled function compiles (one per argument
    signature: dtypes, ranks, size-1 dims, layouts, sizes of static dims;
    default 8, NUMDYN_CACHE_SIZE_LIMIT). Past it, calls with unseen
    signatures run the plain function (eagerly, NumPy), with one
    UserWarning naming the function and the reason. Per function:
    compile(options={"cache_size_limit": n}). recompile_limit (torch's
    newer name) reads and sets the same value.
accumulated_recompile_limit
    Most recompiles (programs a function compiles past its first) over all
    compiled functions of the process together (default 256, as
    torch._dynamo.config; NUMDYN_ACCUMULATED_RECOMPILE_LIMIT). Past it, a
    call with unseen inputs runs its plain function (eagerly, NumPy) with
    one UserWarning naming the function and the reason, as past
    cache_size_limit; first compiles of new functions still happen.
    accumulated_cache_size_limit (torch's older name) reads and sets it.
error_on_recompile
    Raise numdyn.RecompileError instead of compiling a second program for a
    function (default False).
verbose
    Print graph breaks and flushed graphs (same as NUMDYN_LOGS=graph_breaks,graphs).
floor
    The speed floor (default True): a compiled function measures, per argument
    signature, its warm calls against plain NumPy calls of the original
    function and runs the faster one, so it is never slower than NumPy.
    (A function with captured loops is called untraced on that path, its
    loops still compiled.) Read when numdyn.compile is called; compile(fn, options={"floor": False})
    sets it per function, NUMDYN_FLOOR=0 turns it off everywhere.
    ``CompiledFunction._floor_info()`` and numdyn.explain report the choice.
loop_capture
    Loop capture (default True): loops over array elements in a compiled
    function (for over range(), while; scalar arithmetic, element loads and
    stores, math/np scalar functions) run as compiled C loops. Read when a
    function is first compiled; NUMDYN_LOOPS=0 turns it off everywhere.
    ``CompiledFunction._loop_info()`` and numdyn.explain say, for each loop,
    whether it was captured and what prevented it.
background_compile
    Background compiles (default True; NUMDYN_BACKGROUND_COMPILE=0 sets
    False): kernels not in the cache compile in the background (one unit a
    kernel, at most one compiler per core); a call waits for them up to
    compile_budget seconds in all, runs compiled what was built by then, and
    runs the graphs still compiling with NumPy (same results, warnings and
    exceptions); the calls that find them built run compiled
    (numdyn.utils.wait_compiles() waits for them; counter compiling_runs).
    A compile that fails raises its CompileError on the call that finds it
    failed. The speed floor does not time calls that ran such graphs.
    Captured loops always wait for their compiler (Python would run them
    under the tracer, slower than waiting). False: a call waits for every
    compiler it needs, its graph's kernels compiled as up to one unit per
    core.
compile_budget
    Seconds a call waits in all for the C compiler when background_compile
    is on (default 1.0; NUMDYN_COMPILE_BUDGET, "inf" accepted): kernels
    built within it run compiled on that very call, as if it had waited;
    past it the call runs the graphs still compiling with NumPy, and the
    call that finds them built runs compiled. 0: never wait. float("inf"):
    every call waits for its compilers -- what a test suite that asserts
    which calls ran compiled (counters, CompileError on the first call)
    sets; numdyn's own suite does (tests/conftest.py). Ignored when
    background_compile is off (a call then waits for every compiler it
    needs).
adaptive_threads
    Per kernel, the OpenMP team or the calling thread alone, whichever its
    timed runs show faster (default True; NUMDYN_ADAPTIVE_THREADS=0 sets
    False: the team whenever a kernel is big enough, as before). Another
    library's thread pool -- OpenBLAS spinning after a matmul -- can hold
    the cores a team needs; see src/runtime/par.h. Counter
    kernel_runs_alone; numdyn.explain lists the choice per kernel.
automatic_dynamic_shapes
    What compile(dynamic=None) means (torch._dynamo.config's name; default
    True, NUMDYN_AUTOMATIC_DYNAMIC_SHAPES=0 sets False). True: kernels are
    shape-generic, so another size reuses the program (torch compiles a
    dynamic program once a size changes; numdyn's are dynamic from the
    first call). False: every size is specialized, as with dynamic=False --
    a new size compiles another program (a recompile, with its reason).
    Read when numdyn.compile is called; dynamic=True/False win over it.
suppress_errors
    When the native backend fails to compile a graph, warn and run that graph
    with the eager backend instead of raising.
cuda_host_fallback
    On the GPU (backend="cuda", numdyn.device("cuda")), a graph with a kernel
    form the CUDA generator lacks raises NotImplementedError naming it
    (default False; NUMDYN_CUDA_HOST_FALLBACK=1 sets True); True runs such a
    graph with NumPy on the host instead, counted in the cuda_host_steps
    counter and listed by numdyn.explain. Steps that have no GPU form by
    design (NumPy functions run as externs, eager steps) always run on the
    host and are reported the same way.
"""
import os
import sys
import types

cache_size_limit = int(os.environ.get("NUMDYN_CACHE_SIZE_LIMIT", "8"))
accumulated_recompile_limit = int(os.environ.get("NUMDYN_ACCUMULATED_RECOMPILE_LIMIT", "256"))
verbose = os.environ.get("NUMDYN_VERBOSE", "") not in ("", "0")
floor = os.environ.get("NUMDYN_FLOOR", "1") not in ("0",)
loop_capture = os.environ.get("NUMDYN_LOOPS", "1") not in ("0",)
suppress_errors = os.environ.get("NUMDYN_SUPPRESS_ERRORS", "") not in ("", "0")
enabled = os.environ.get("NUMDYN_DISABLE", "") in ("", "0")
automatic_dynamic_shapes = os.environ.get("NUMDYN_AUTOMATIC_DYNAMIC_SHAPES", "1") != "0"
error_on_recompile = False
background_compile = os.environ.get("NUMDYN_BACKGROUND_COMPILE", "1") != "0"
compile_budget = float(os.environ.get("NUMDYN_COMPILE_BUDGET", "1.0"))
adaptive_threads = os.environ.get("NUMDYN_ADAPTIVE_THREADS", "1") != "0"
cuda_host_fallback = os.environ.get("NUMDYN_CUDA_HOST_FALLBACK", "") not in ("", "0")

# Switches read on every call live in C; assignments here push them there.
_PUSHED = ("enabled", "cache_size_limit", "error_on_recompile", "loop_capture",
           "accumulated_recompile_limit")


class _Config(types.ModuleType):
    def __getattr__(self, name):  # names not set here
        if name == "recompile_limit":  # torch's newer name of cache_size_limit
            return self.cache_size_limit
        if name == "accumulated_cache_size_limit":  # torch's older name
            return self.accumulated_recompile_limit
        raise AttributeError(f"module 'numdyn.config' has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name == "recompile_limit":
            name = "cache_size_limit"
        if name == "accumulated_cache_size_limit":
            name = "accumulated_recompile_limit"
        # an option that does not exist (a typo, another library's name) is
        # an error, as in torch._dynamo.config: setting it would do nothing
        if not name.startswith("_") and name not in self.__dict__:
            raise AttributeError(f"numdyn.config.{name} does not exist")
        if name in _PUSHED:
            from . import _C
            _C._config_set(name, value)
        elif name == "background_compile":
            from . import _C
            _C._background_compile(bool(value))
        elif name == "compile_budget":
            from . import _C
            _C._compile_budget(float(value))
            value = float(value)
        elif name == "adaptive_threads":
            from . import _C
            _C._adaptive_threads(bool(value))
        super().__setattr__(name, value)
        if name == "verbose":
            sync = getattr(sys.modules.get("numdyn"), "_sync_log_hook", None)
            if sync is not None:
                sync()


sys.modules[__name__].__class__ = _Config
from . import _C as _c  # noqa: E402
for _name in _PUSHED:
    _c._config_set(_name, globals()[_name])
_c._background_compile(background_compile)
_c._compile_budget(compile_budget)
del _c, _name
