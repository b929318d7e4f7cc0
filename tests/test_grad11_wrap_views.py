"""Results of a numdyn.wrap_numpy call that view a Tensor argument's memory
(fn returned a[1:], a.T, a reshaped) are views of that argument's base on
the tape (issue 14), as the results of indexing are: a write through one
bumps the base's version, so values the tape read before the write give
the gradient they had (it was silently the new value), and writes through
views of leaves that require grad get torch's error."""
import numpy as np
import pytest

import numdyn

VIEWS = [lambda a: a[1:], lambda a: a.reshape(2, 2)[0], lambda a: a[::-1]]


@pytest.mark.parametrize("view", VIEWS)
def test_write_through_a_wrap_numpy_view_keeps_earlier_gradients(view):
    z = numdyn.tensor(np.arange(4.0))
    w = numdyn.tensor(np.ones(4), requires_grad=True)
    p = w * z                      # the tape reads z as it is now
    r = numdyn.wrap_numpy(view)(z)
    r[0] = 100.0                   # NumPy semantics: z's memory changes
    expect = np.arange(4.0)
    view(expect)[0] = 100.0
    np.testing.assert_array_equal(z.numpy(), expect)
    q = w * z                      # ... and later reads see the write
    (p.sum() + 10 * q.sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(4.0) + 10 * expect)


def test_view_of_a_leaf_that_requires_grad_refuses_writes_as_torch():
    x = numdyn.tensor(np.arange(4.0), requires_grad=True)
    r = numdyn.wrap_numpy(lambda a: a[1:])(x)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                       "being used in an in-place operation"):
        r[0] = 1.0
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0))


def test_copies_are_not_views():
    z = numdyn.tensor(np.arange(4.0))
    r = numdyn.wrap_numpy(lambda a: a[1:] * 1.0)(z)
    r[0] = 100.0
    np.testing.assert_array_equal(z.numpy(), np.arange(4.0))
    np.testing.assert_array_equal(r.numpy(), [100.0, 2.0, 3.0])
