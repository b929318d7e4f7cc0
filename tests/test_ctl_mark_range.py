"""mark_dynamic(x, dim, min=, max=) as torch's bounded dynamic dims (issue
15, point 4): a compiled call given x with that dim outside [min, max]
raises ConstraintViolationError naming the dim and the range (a missing
bound is 2 / unbounded); a newer mark of the dim replaces its range; the
marks go with the array."""
import gc

import numpy as np
import pytest

import numdyn


def _twice(x):
    return x * 2.0


def test_mark_dynamic_range_is_checked_at_the_call():
    f = numdyn.compile(_twice)
    x = np.ones((6, 3))
    numdyn.mark_dynamic(x, 0, min=2, max=5)
    with pytest.raises(numdyn.ConstraintViolationError, match=r"dim 0 of argument 0 of _twice.*"
                       r"6 not in range \[2, 5\]"):
        f(x)
    y = np.ones((4, 3))
    numdyn.mark_dynamic(y, 0, min=2, max=5)
    np.testing.assert_array_equal(f(y), y * 2.0)
    w = np.ones((9, 3))
    numdyn.mark_dynamic(w, [0, 1], min=4)
    with pytest.raises(numdyn.ConstraintViolationError, match=r"dim 1 .*3 not in range \[4, inf\]"):
        f(w)
    numdyn.mark_static(w, 1)                 # replaces dim 1's mark and range
    np.testing.assert_array_equal(f(w), w * 2.0)
    numdyn.mark_dynamic(x, 0)                # a mark without bounds drops the range
    np.testing.assert_array_equal(f(x), x * 2.0)
    with pytest.raises(ValueError, match="min 5 > max 3"):
        numdyn.mark_dynamic(y, 0, min=5, max=3)
    del x, y, w
    gc.collect()
    np.testing.assert_array_equal(f(np.ones((100, 3))), np.full((100, 3), 2.0))
