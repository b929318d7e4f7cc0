"""NumPy's random methods that write into arrays compiled code gives them.

``Generator.shuffle`` and ``RandomState.shuffle`` (``np.random.shuffle``) test
their argument for ``np.ndarray`` and take a generic path for anything else:
``x[i], x[j] = x[j], x[i]`` element by element, with a warning that objects
with view semantics "may contain duplicates after shuffling" -- which a 2-D
array computed by traced code then did (rows duplicated: a wrong answer),
and ``axis=`` raised NotImplementedError. The ``out=`` of
``Generator.random`` / ``standard_normal`` / ``standard_exponential`` /
``standard_gamma`` / ``permuted`` is cast to an ndarray without a check
(Cython's ``<ndarray>out``): a lazy array there was read as an ndarray's
struct and refused ("Supplied output array must be contiguous, writable,
aligned, and in machine byte-order") where NumPy fills the buffer.

numdyn's rewrite of a compiled function (src/trace/loop_rewrite.c) routes
every ``<obj>.shuffle(...)`` call, and every call of those methods that may
pass ``out``, through ``random_call``, which hands NumPy the arrays' real
memory: NumPy writes it in place, exactly as without numdyn, and the traced
array is that memory from then on (the alias rule of a computed value handed
to code numdyn does not trace).

The other drawing methods (``integers``, ``normal``, ``choice``...) are
routed here too: NumPy draws at the call, as without numdyn, and the fresh
array of draws becomes a traced value (``_C._trace_fresh``). Without that
everything a Monte Carlo function computed from its draws ran op by op in
NumPy, untraced and unreported.
"""
import numpy as np

from . import _C

_RANDOM_TYPES = (np.random.Generator, np.random.RandomState)


def _real(v):
    return np.asarray(v) if isinstance(v, _C.LazyArray) else v


def random_call(method, *args, **kwargs):
    if getattr(method, "__name__", None) == "shuffle" and args:
        # any shuffle: NumPy's generic path is wrong for lazy rows
        args = (_real(args[0]),) + args[1:]
    elif isinstance(getattr(method, "__self__", None), _RANDOM_TYPES):
        args = tuple(_real(a) for a in args)
        if "out" in kwargs:
            given = kwargs["out"]
            kwargs["out"] = _real(given)
            r = method(*args, **kwargs)
            # NumPy returns out itself: the array the caller gave, not its memory
            return given if r is kwargs["out"] else r
        # a fresh array of draws: traced from here (the Generator drew it now,
        # its state advanced as under NumPy), so what the function computes
        # from it is captured and fused instead of running op by op in NumPy
        return _C._trace_fresh(method(*args, **kwargs))
    return method(*args, **kwargs)
