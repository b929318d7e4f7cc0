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
loop_capture
    Loop capture (default True): loops over array elements in a compiled
    function (for over range(), while; scalar arithmetic, element loads and
    stores, math/np scalar functions) run as compiled C loops. Read when a
    function is first compiled; NUMDYN_LOOPS=0 turns it off everywhere.
    ``CompiledFunction._loop_info()`` and numdyn.explain say, for each loop,
    whether it was captured and what prevented it.
suppress_errors
    When the native backend fails to compile a graph, warn and run that graph
    with the eager backend instead of raising.
"""
import os

cache_size_limit = int(os.environ.get("NUMDYN_CACHE_SIZE_LIMIT", "8"))
verbose = os.environ.get("NUMDYN_VERBOSE", "") not in ("", "0")
floor = os.environ.get("NUMDYN_FLOOR", "1") not in ("0",)
loop_capture = os.environ.get("NUMDYN_LOOPS", "1") not in ("0",)
suppress_errors = os.environ.get("NUMDYN_SUPPRESS_ERRORS", "") not in ("", "0")
