"""NumPy's view-vs-copy rules for reshape/ravel/asarray, decided from the
array's memory strides (src/core/strides.c, nd_proxy_memory_strides) and built
on the proxy's own map (nd_proxy_reshape_view): writes through a view must
reach the base and writes through a copy must not, exactly as in NumPy."""
import numpy as np
import pytest

from oracle import check

import numdyn


def _layout(layout):
    a = np.arange(48.0).reshape(4, 12) * 0.5
    if layout == "C":
        return a[:, :12].copy()
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "neg":
        big = np.arange(96.0).reshape(4, 24)
        v = big[::-1, ::-2]
        v[...] = a
        return v
    big = np.arange(192.0).reshape(8, 24)
    v = big[::2, 1::2]
    v[...] = a
    return v


LAYOUTS = ["C", "F", "neg", "strided"]


def merge_split(a):
    v = a.reshape(2, 2, 12)            # split: a view of any layout
    w = v[:, :, 2:6].reshape(2, 8)     # merges dims only where strides allow
    w[0, 0] = -1
    x = a[1:3].reshape(-1)             # crosses the view's dims
    x[5] = -2
    y = a[:, ::3].reshape(16)          # uniform stride 3: a view in C
    y[1] = -3
    return a, w, x, y


def ravel_rules(a):
    r = a[:, 1:2].ravel()              # not C-contiguous: a copy
    r[0] = -9
    s = a.ravel()                      # a view only of a C-contiguous array
    s[2] = -8
    k = np.ravel(a.T, order="K")
    return a, r, s, k


def after_pending_write(a):
    a += 1                             # the storage has pending lazy work
    v = a.reshape(48)
    v[3] = -4
    u = a[::2].ravel()
    u[0] = -5
    return a, u


def order_copies(a):
    c = np.ascontiguousarray(a)
    c[0, 0] = 100
    s = np.ascontiguousarray(a[:, ::2])
    s[1, 1] = -5
    d = np.asarray(a, order="C")
    d[2, 2] = 7
    f = np.asarray(a, order="F")
    f[3, 3] = 9
    k = np.asarray(a, order="K")
    k[0, 1] = 11
    return a, c, s, d, f


def identity_views(a):
    r = a.real                         # x.real of a real array is x
    e = a[...]                         # a new view object
    r[0, 0] = 42
    return a, r, e, a.T.T, a[None].squeeze(0)


@pytest.mark.parametrize("fn", [merge_split, ravel_rules, after_pending_write, order_copies,
                                identity_views], ids=lambda f: f.__name__)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_view_or_copy_like_numpy(backend, fn, layout):
    check(fn, make_args=lambda: (_layout(layout),), backend=backend, check_aliasing=True)


def test_ascontiguousarray_of_0d_is_1d(backend):
    check(lambda x: np.ascontiguousarray(x * 2), np.float64(3.0), backend=backend)
    check(lambda x: np.ascontiguousarray(x + 0), np.array(2, dtype=np.int16), backend=backend)


def memory_order_views(a):
    before = a * 2                     # reads the contents before the writes
    v = a.T.reshape(-1)                # F memory: a view NumPy makes from a.T
    v[0] = 100
    w = a.T.reshape(6, 8)
    w[1, 1] = -7
    s = a.sum(axis=0)
    a[2, 3] = 55                       # seen through v and w
    x = v + 1                          # after the write
    return a, v, w, before, s, x


def memory_order_inplace(a, b):
    v = a.T.reshape(-1)
    v += b
    u = a[::-1].T.reshape(2, -1)
    u *= 2
    return a.copy(), v, u


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_of_memory_order(backend, layout):
    """Views NumPy builds from an array's memory order, not its index order
    (src/trace/trace_layout.c nd__rebase_memory)."""
    check(memory_order_views, make_args=lambda: (_layout(layout),), backend=backend,
          check_aliasing=True)
    check(memory_order_inplace, make_args=lambda: (_layout(layout), 1.5), backend=backend,
          check_aliasing=True)


def views_made_before_the_rebase(a):
    r = a[1:, ::2]
    c = a[:, 0]
    d = a.T[::-1]
    e = a.reshape(2, 2, 12)            # a split, made before
    v = a.T.reshape(-1)
    v[3] = 9
    r[0, 0] = -1
    e[1, 0, 5] = 77
    return a, r, c, d, e, v, np.ascontiguousarray(a), np.asarray(a, order="F")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_made_before_a_memory_order_view(backend, layout):
    check(views_made_before_the_rebase, make_args=lambda: (_layout(layout),), backend=backend,
          check_aliasing=True)


@pytest.mark.parametrize("src,dst", [(0, 5), (7, 0), ([0, 0], [1, 0]), ([0, 1], [1, 1]),
                                     ([0, 1], [0]), (-3, 0)])
def test_moveaxis_errors_name_the_argument(backend, src, dst):
    check(lambda a: np.moveaxis(a, src, dst), np.zeros((2, 3)), backend=backend)


def _strides_after_inplace_write(a):
    b = a.T[::2, 1:]
    b[...] = b * 3
    s = b.strides
    b[0, 0] = 100
    c = a[1:, ::2]
    c += 1
    return s, memoryview(c).strides, b.flags.c_contiguous, a.sum()


def test_view_written_in_place_keeps_the_callers_strides():
    # a view of an argument written in place is still NumPy's view of the
    # caller's memory when Python code looks at it (strides, buffer), not
    # the buffer the write was computed in
    import numdyn
    a = np.arange(30.0).reshape(5, 6)
    want = _strides_after_inplace_write(a.copy())
    got_a = a.copy()
    got = numdyn.compile(_strides_after_inplace_write)(got_a)
    assert got[:3] == want[:3]
    assert got[3] == want[3]
    ref = a.copy()
    _strides_after_inplace_write(ref)
    assert np.array_equal(got_a, ref)


def test_returned_view_of_an_argument_runs_no_kernel():
    # `return np.transpose(A)`: the view is the answer; a replayed call ran a
    # copy kernel over all of A and dropped its result (npbench permute)
    def kernel(A):
        A = np.transpose(A, (2, 1, 0))
        return A
    cf = numdyn.compile(kernel, options={"floor": False})
    B = np.arange(24.0).reshape(2, 3, 4)
    for _ in range(3):
        numdyn.utils.wait_compiles()
        before = dict(numdyn.utils.counters)
        r = cf(B)
        assert np.shares_memory(r, B) and r.base is B.base and r.shape == (4, 3, 2)
        np.testing.assert_array_equal(r, B.T)
        assert numdyn.utils.counters["kernel_runs"] == before["kernel_runs"]
