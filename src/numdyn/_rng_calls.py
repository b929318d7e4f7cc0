"""In-place random calls of compiled code that NumPy's C must see ndarrays for.

``Generator.shuffle`` and ``RandomState.shuffle`` (``np.random.shuffle``) test
their argument for ``np.ndarray`` and take a generic path for anything else:
``x[i], x[j] = x[j], x[i]`` element by element, with a warning that objects
with view semantics "may contain duplicates after shuffling" -- which a 2-D
array computed by traced code then did (rows duplicated: a wrong answer),
and ``axis=`` raised NotImplementedError. numdyn's rewrite of a compiled
function (src/trace/loop_rewrite.c) routes every ``<obj>.shuffle(...)`` call
through ``shuffle_call``, which hands NumPy the array's real memory: NumPy
shuffles it in place, exactly as without numdyn, and the traced array is
that memory from then on (the alias rule of a computed value handed to code
numdyn does not trace).
"""
import numpy as np

from . import _C


def shuffle_call(method, x, *args, **kwargs):
    if isinstance(x, _C.LazyArray):
        x = np.asarray(x)
    return method(x, *args, **kwargs)
