"""numdyn configuration: plain module attributes, read at the moment they matter.

    import numdyn
    numdyn.config.suppress_errors = True

cache_size_limit
    Most compiled programs kept per compiled function before numdyn stops
    specializing and recompiling (used by guards/; recorded here).
verbose
    Print graph breaks and flushed graphs (same as NUMDYN_LOGS=graph_breaks,graphs).
floor
    The speed floor (default True): a compiled function measures, per argument
    signature, its warm calls against plain NumPy calls of the original
    function and runs the faster one, so it is never slower than NumPy.
    Read when numdyn.compile is called; compile(fn, options={"floor": False})
    sets it per function, NUMDYN_FLOOR=0 turns it off everywhere.
    ``CompiledFunction._floor_info()`` and numdyn.explain report the choice.
suppress_errors
    When the native backend fails to compile a graph, warn and run that graph
    with the eager backend instead of raising.
"""
import os

cache_size_limit = int(os.environ.get("NUMDYN_CACHE_SIZE_LIMIT", "8"))
verbose = os.environ.get("NUMDYN_VERBOSE", "") not in ("", "0")
floor = os.environ.get("NUMDYN_FLOOR", "1") not in ("0",)
suppress_errors = os.environ.get("NUMDYN_SUPPRESS_ERRORS", "") not in ("", "0")
