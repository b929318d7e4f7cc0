"""numdyn.utils: the native backend's counters and caches.

``counters`` is a live read-only mapping::

    numdyn.utils.counters["kernels_compiled"]   # C compiler runs' kernels
    dict(numdyn.utils.counters)                 # a snapshot

Keys: kernels_compiled (kernels built by the C compiler), kernel_cache_hits
(kernels found in the in-memory kernel cache), disk_cache_hits (translation
units loaded from the on-disk cache), graphs, graph_breaks, recompiles
(new kernels for a graph that differed from an earlier one only in guarded
properties: dtypes' layout, broadcasting pattern, alignment), graph_cache_hits
(graphs run straight from the program cache), flushes, replays / replay_misses
(calls that skipped running Python through a recorded trace, and those
whose guards did not fit), errstate_reruns (graphs run again by NumPy
because a kernel raised a floating-point flag that np.geterr() does not
ignore, so NumPy's warnings / errors come out as NumPy gives them),
graph_compiles (programs compiled: one per new argument signature of a
compiled function, see numdyn.config.cache_size_limit), eager_calls (calls
of compiled functions run as the plain function: past the limit, in frozen
mode numdyn.run for unseen inputs, under config.enabled=False or the
"force_eager" stance), floor_numpy_calls (timed calls the speed floor ran as the original function
under plain NumPy: see numdyn.config.floor), kernel_runs (generated kernels
run: what fusion saves shows as fewer), compiling_runs (graphs NumPy ran while their kernels compiled in the
background: numdyn.config.background_compile), flush_nodes (graph nodes the
flushes' ancestor walks visited: what the flushes needed, never the length
of the capture so far), bytes_read (bytes of the arrays kernels read: each
array once per kernel run, over the elements it walks without
broadcasting; an array's passes over memory are bytes_read over its
nbytes), base_copy_bytes (bytes an in-place write of a computed array
copied from the array first: a value of an earlier flush that nothing
reads again is written in place instead), writeback_nodes (graph nodes the
write-backs of caller arrays walked to find old contents still read: what is
live, never the length of the capture so far), kernel_texts (kernels whose C
text was made: a kernel whose structure was seen before -- the next
iteration of a long loop -- is named from that structure without its text),
chunk_flushes (flushes made because a run of lazy statements with no value
read in between reached 8192 graph nodes: the graph stays bounded whatever
the trip count), arg_signatures (passes over a top-level call's arguments
to sign it: one a call, shared by the program lookup and the speed floor),
kernel_variants (kernels built again with every run-time variant: a kernel
is generated with the variants its first call's sizes may take -- a tall
array's chunked column walk only for a tall array -- and rebuilt when later
sizes need one it left out).
"""
from collections.abc import Mapping

from . import _C

CompileError = _C.CompileError


class Counters(Mapping):
    """Read-only live view of the C runtime's counters."""

    __slots__ = ()

    def __getitem__(self, key):
        return _C._native_counters()[key]

    def __iter__(self):
        return iter(_C._native_counters())

    def __len__(self):
        return len(_C._native_counters())

    def __repr__(self):
        return "numdyn.utils.counters(%r)" % (_C._native_counters(),)


counters = Counters()


def clear_cache():
    """Empty the on-disk kernel cache and the in-memory kernel and graph
    caches: the next call of a compiled function compiles again."""
    _C._native_clear_cache(disk=True)


def wait_compiles():
    """Wait until every kernel compiling in the background
    (numdyn.config.background_compile) has been built; the next call that
    needs them loads them and runs compiled."""
    _C._wait_compiles()


def cache_dir():
    """The kernel cache directory in use ($NUMDYN_CACHE_DIR, else
    $XDG_CACHE_HOME/numdyn, else ~/.cache/numdyn), checked to be private."""
    return _C._native_cache_dir()


def reset():
    """Drop the in-memory kernel and graph caches (numdyn.reset() calls this);
    the disk cache stays."""
    _C._native_clear_cache(disk=False)


def compile_times(repr="str", aggregate=False):
    """Seconds each compiled function spent in the calls that compiled a
    program (trace, passes, C compiler, first run), like
    torch._dynamo.utils.compile_times. repr="str": a table; repr="csv":
    (function names, times) where times are per function lists (or sums
    with aggregate=True)."""
    times = _C._compile_times()
    if repr == "csv":
        names = list(times)
        vals = [sum(times[n]) if aggregate else list(times[n]) for n in names]
        return names, vals
    if repr != "str":
        raise ValueError(f"numdyn.utils.compile_times: repr must be 'str' or 'csv', not {repr!r}")
    lines = ["numdyn compilation metrics:", "Function, Runtimes (s)"]
    for name, ts in times.items():
        cell = f"{sum(ts):.4f}" if aggregate else ", ".join(f"{t:.4f}" for t in ts)
        lines.append(f"{name}, {cell}")
    return "\n".join(lines)
