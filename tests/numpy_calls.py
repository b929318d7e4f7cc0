"""Counting a NumPy function's own calls from tests (test_extern.py,
test_tensor_tape_saved.py): how many times numdyn ran it."""
import contextlib
import sys


@contextlib.contextmanager
def numpy_calls(fn):
    """Counts entries into NumPy's own Python implementation of fn (the
    function behind its array-function dispatcher) while active: every call
    numdyn makes reaches it, from an extern node or a fallback alike."""
    code = getattr(fn, "_implementation", fn).__code__
    n = [0]

    def prof(frame, event, arg):
        if event == "call" and frame.f_code is code:
            n[0] += 1
    old = sys.getprofile()
    sys.setprofile(prof)
    try:
        yield n
    finally:
        sys.setprofile(old)
