"""Wrong answers real programs found (issue 18), each against NumPy.

1. A reduced value (keepdims, [:, None], reshape) broadcast against an
   operand of another width: row fusion took the consumer for a member of
   the reduction's domain, because only the pattern of size-1 dims was
   compared (columns left unwritten, or writes past the buffer).
2. An array made read-only inside the function was still written.
3. ``.base`` identity of views inside compiled code.
4. A data-dependent warning of work traced inside a ``with
   warnings.catch_warnings()`` block was given after the block: a warning
   the block silenced reached the caller, one it recorded was missing.
5. An argument sharing memory with an array the code reaches without the
   tracer (a global, a closure variable, an attribute): NumPy methods on
   that array read the argument's memory before the pending writes landed,
   or wrote it under a pending read.
6. ``np.add.at(G, idx, lazy)`` on a real array (a global) called the ufunc
   itself instead of ``ufunc.at``: a broadcast error or a wrong update.
"""
import numpy as np
import pytest

import numdyn
from oracle import check

rng = np.random.default_rng(18)


def _r(*shape, dtype=np.float64):
    return rng.random(shape).astype(dtype)


# ---------------------------------------------------------------- 1. rows

def keepdims_plus(a, y):
    return a.sum(axis=1, keepdims=True) + y


def none_index_plus(a, y):
    return a.sum(axis=1)[:, None] + y


def reshape_div(a, y):
    return y / a.sum(axis=1).reshape(a.shape[0], 1)


def last_axis_3d(x, y):
    return x.sum(axis=-1, keepdims=True) * y


def matmul_plus_rowsum(a, w):
    return a @ w + a.sum(axis=1, keepdims=True)


def softmax_then_other(a, y):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) + y.mean(axis=1, keepdims=True) * y[:, :1]


def two_widths(a, y):
    m = a.max(axis=-1, keepdims=True)
    return (a - m).sum(axis=-1, keepdims=True) + y, np.exp(a - m)


def flocking(mask, v):
    n = mask.shape[0]
    return np.dot(mask, v) / np.maximum(mask.sum(axis=1), 1).reshape(n, 1)


@pytest.mark.parametrize("widths", [(3, 6), (6, 3), (3, 1), (1, 5), (4, 4), (7, 2)])
@pytest.mark.parametrize("fn", [keepdims_plus, none_index_plus, reshape_div, softmax_then_other])
def test_row_value_against_other_width(backend, fn, widths):
    wa, wy = widths
    check(fn, _r(5, wa), _r(5, wy), backend=backend)


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 7)), ((2, 3, 4), (2, 3, 1)),
                                    ((2, 3, 4), (3, 9)), ((2, 3, 9), (2, 3, 4)),
                                    ((2, 3, 4), (5, 2, 3, 4))])
def test_last_axis_3d(backend, shapes):
    check(last_axis_3d, _r(*shapes[0]), _r(*shapes[1]), backend=backend)
    check(two_widths, _r(*shapes[0]), _r(*shapes[1]), backend=backend)


@pytest.mark.parametrize("n,k", [(32, 2), (2, 32), (64, 64), (33, 7)])
def test_matmul_plus_row_sum(backend, n, k):
    check(matmul_plus_rowsum, _r(n, n), _r(n, k), backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_flocking_mean_velocity(backend, dtype):
    n = 40
    pos = rng.random((n, 2))
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    mask = (d < 0.3).astype(dtype)
    check(flocking, mask, _r(n, 2), backend=backend)


def test_one_compiled_function_over_many_widths():
    """The plan cached for equal widths must not serve unequal ones: the
    graph key holds which sizes are equal, not only which are 1."""
    cf = numdyn.compile(keepdims_plus)
    for wy in [3, 6, 3, 2, 3, 9, 1, 3]:
        a, y = _r(4, 3), _r(4, wy)
        np.testing.assert_allclose(cf(a, y), keepdims_plus(a, y), rtol=1e-12)
    cg = numdyn.compile(last_axis_3d)
    for wy in [4, 7, 4, 1, 4]:
        x, y = _r(2, 3, 4), _r(2, 3, wy)
        np.testing.assert_allclose(cg(x, y), last_axis_3d(x, y), rtol=1e-12)


def test_graph_hash_holds_size_equality():
    def f(a, y):
        return a.sum(axis=1, keepdims=True) + y

    def hashes(*args):
        ex = numdyn.explain(f)(*args)
        assert ex.graphs
        return [g.structural_hash for g in ex.graphs]
    # (reduced extents of 16 or fewer are structure since short reductions
    # inline, issue 19: the pattern is shown on longer ones)
    equal, unequal = hashes(_r(4, 30), _r(4, 30)), hashes(_r(4, 30), _r(4, 60))
    other = hashes(_r(8, 50), _r(8, 50))
    assert equal != unequal      # 30 == 30 versus 30 != 60
    assert equal == other        # the same pattern with other sizes
    short = hashes(_r(4, 3), _r(4, 3)), hashes(_r(4, 5), _r(4, 5))
    assert short[0] != short[1]  # a short extent is part of the structure


# ----------------------------------------------------------- 2. read-only

def ro_attr():
    Z = np.zeros(3)
    Z.flags.writeable = False
    Z[0] = 1
    return Z


def ro_setflags():
    Z = np.zeros(3)
    Z.setflags(write=False)
    Z[0] = 1
    return Z


def ro_item():
    Z = np.arange(6.0)
    Z.flags["WRITEABLE"] = False
    Z += 1
    return Z


def ro_view_after(x):
    Z = x * 2
    Z.flags.writeable = False
    V = Z[1:]
    V[0] = 7
    return V


def ro_view_before(x):
    Z = x * 2
    V = Z[1:]
    Z.flags.writeable = False
    V[0] = 7                      # V is its own array: still writeable
    return Z, V, Z.flags.writeable, V.flags.writeable


def ro_then_back(x):
    Z = x + 1
    Z.flags.writeable = False
    r = Z.flags.writeable
    Z.flags.writeable = True
    Z[0] = -1
    return Z, r, Z.flags.writeable


def ro_view_cannot_go_back(x):
    Z = x + 1
    Z.flags.writeable = False
    V = Z[:2]
    V.flags.writeable = True
    return V


def ro_argument(x):
    x.flags.writeable = False
    x[0] = 5
    return x


def ro_out(x):
    Z = np.empty_like(x)
    Z.setflags(write=False)
    np.add(x, 1, out=Z)
    return Z


@pytest.mark.parametrize("fn", [ro_attr, ro_setflags, ro_item])
def test_made_read_only_inside(backend, fn):
    check(fn, backend=backend)


@pytest.mark.parametrize("fn", [ro_view_after, ro_view_before, ro_then_back,
                                ro_view_cannot_go_back, ro_out])
def test_read_only_views(backend, fn):
    check(fn, np.arange(5.0), backend=backend)


def test_read_only_argument(backend):
    check(ro_argument, np.arange(4.0), backend=backend)


def test_flags_repr_shows_read_only():
    def f(x):
        Z = x * 2
        Z.flags.writeable = False
        return repr(Z.flags)
    assert numdyn.compile(f)(np.ones(3)) == f(np.ones(3))


# ----------------------------------------------------------------- 3. base

def base_of_argument_views(Z):
    return (Z[:3].base is Z, Z.ravel().base is Z, Z.T.base is Z, Z[::2][1:].base is Z,
            Z.reshape(-1, 1).base is Z, Z.base is None, (Z * 2).base is None)


def base_inside():
    W = np.zeros(6)
    V = W[1:]
    return (W[:3].base is W, W.ravel().base is W, V.base is W, V[1:].base is W,
            W.reshape(2, 3).base is W, W.base is None, (W + 1).base is None,
            W.copy().base is None)


def base_of_computed():
    t = np.arange(6.0) * 2
    return t.base is None, t[1:].base is t, t.reshape(3, 2).T.base is t


def base_of_view_argument(V):
    # V is a view of an array made outside: NumPy's base is that array, and a
    # view of V collapses to it as well
    return V.base is not None, V[1:].base is V.base, V[1:].base is V


@pytest.mark.parametrize("fn", [base_of_argument_views])
def test_base_identity_arguments(backend, fn):
    check(fn, np.arange(6.0), backend=backend)


@pytest.mark.parametrize("fn", [base_inside, base_of_computed])
def test_base_identity_inside(backend, fn):
    check(fn, backend=backend)


def test_base_of_a_view_argument(backend):
    base = np.arange(10.0)
    check(base_of_view_argument, make_args=lambda: (np.arange(10.0)[2:],), backend=backend)
    V = base[2:]
    assert numdyn.compile(lambda v: v[1:].base is base, backend=backend)(V)


# ------------------------------------------------------- store-check mode

def test_store_check_mode_is_on_in_tests():
    """conftest turns on NUMDYN_CHECK_STORES: the kernels this suite compiles
    check each store against their output's bounds."""
    import glob
    import os
    assert os.environ.get("NUMDYN_CHECK_STORES") == "1"

    def f(x):
        return np.sqrt(x) * 3.0 + 1.25
    numdyn.compile(f)(np.arange(7.0))
    srcs = glob.glob(os.path.join(os.environ["NUMDYN_CACHE_DIR"], "*.c"))
    assert srcs
    assert any("ND_OOB(" in open(p).read() for p in srcs)


# ------------------------------------- values a graph break returns are traced

def _break_then_write(write):
    def f(c):
        v0 = c[c > 0]          # boolean mask: a graph break, a new array
        v1 = c != v0           # lazy, reads v0
        write(v0)              # plain NumPy write to v0
        return v1, v0
    return f


def _w_item(v):
    v[0] = 1


def _w_iadd(v):
    v += 1


def _w_out(v):
    np.add(v, 1, out=v)


def _w_fill(v):
    v.fill(3)


def _w_copyto(v):
    np.copyto(v, 9)


@pytest.mark.parametrize("write", [_w_item, _w_iadd, _w_out, _w_fill, _w_copyto])
def test_break_result_written_after_lazy_read(backend, write):
    check(_break_then_write(write), np.array([5, 7], dtype=np.uint8), backend=backend)


def break_result_tuple_written(a):
    u, cnt = np.unique(a, return_counts=True)   # a tuple of new arrays
    s = cnt * 2                                  # lazy, reads cnt
    cnt[0] = 100
    return s, cnt, u


def test_break_result_tuple_written(backend):
    check(break_result_tuple_written, np.array([1.0, 2.0, 2.0, 3.0]), backend=backend)


# --------------------------- augmented assignment to one element is scalar math

def item_iadd_inf(b):
    b[1] += (-np.inf)          # np.bool_ + float -> float64, stored unsafely
    return b


def item_imul_complex(a):
    a[0, 1] *= 1j              # complex128 stored into float32 (drops imag)
    x = a[1, 0]
    x -= 2.5                   # a NumPy scalar: rebinding, not in place
    return a, x


def slice_iadd_inf(b):
    b[1:] += (-np.inf)         # an in-place ufunc: same_kind error
    return b


@pytest.mark.parametrize("fn, make", [
    (item_iadd_inf, lambda: (np.array([False, False]),)),
    (item_imul_complex, lambda: (np.arange(4, dtype=np.float32).reshape(2, 2),)),
    (slice_iadd_inf, lambda: (np.array([False, False]),)),
])
def test_item_augmented_assignment(backend, fn, make):
    check(fn, make_args=make, backend=backend, warnings=False)


# --------------- out= casting is checked before operands are broadcast

def mask_imul_cast_before_broadcast(a, v0):
    a[a < 0] *= v0
    return a


def out_cast_before_broadcast(a, v0):
    return np.multiply(a, v0, out=a[:3])


def test_out_cast_checked_before_broadcast(backend):
    def make():
        a = -np.ones((2, 4, 2), np.float16)
        a[0, 0, 0] = 1
        return a, np.asfortranarray(np.ones((2, 4, 2), np.complex64))
    check(mask_imul_cast_before_broadcast, make_args=make, backend=backend)
    check(out_cast_before_broadcast, make_args=make, backend=backend)


# ------------------------------ Python operators between NumPy scalars

def complex_left_of_float64_scalar(a):
    v = a.sum() * 0.5            # a float64 scalar: a subclass of Python float
    z = complex(1.0, 2.0)
    return z + v, z - v, z * v, z / v, z ** v, 1.5 + v, 2 * v


def complex_scalar_remainder(a):
    c = np.fmax(np.log2(a), -2.25)   # a complex64 scalar
    return True % c


def complex_scalar_floordiv(a):
    c = a.sum()
    return c // 2


def complex_scalar_divmod(a):
    c = a.sum()
    return divmod(1.5, c)


def complex_scalar_remainder_array(a):
    c = a.sum()
    return c % np.ones(2)        # an array operand: the ufunc's message


@pytest.mark.parametrize("fn, make", [
    (complex_left_of_float64_scalar, lambda: (np.arange(4.0),)),
    (complex_scalar_remainder, lambda: (np.array(3 + 1j, dtype=np.complex64),)),
    (complex_scalar_floordiv, lambda: (np.array([3 + 1j, 2], dtype=np.complex64),)),
    (complex_scalar_divmod, lambda: (np.array([3 + 1j, 2]),)),
    (complex_scalar_remainder_array, lambda: (np.array([3 + 1j, 2]),)),
])
def test_python_operators_on_numpy_scalars(backend, fn, make):
    check(fn, make_args=make, backend=backend)


# ------------------------------------------------- 4. catch_warnings blocks

import warnings as _w


def record_inside(a):
    with _w.catch_warnings(record=True) as w:
        _w.simplefilter("always")
        r = np.log(a)
    return r, len(w), [str(x.message) for x in w]


def ignore_inside(a):
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        r = np.log(a) / a
    return r * 2


def before_and_after(a):
    x = np.sqrt(a)             # warns outside the block
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        y = np.log(a)          # silenced
    z = 1.0 / (a - a)          # warns outside again
    return x + y + z


def raise_inside(a):
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        try:
            with np.errstate(invalid="raise"):
                r = np.log(a)
        except FloatingPointError as e:
            return str(e)
    return r


@pytest.mark.parametrize("fn", [record_inside, ignore_inside, before_and_after, raise_inside])
def test_catch_warnings_block(backend, fn):
    f = numdyn.compile(fn, backend=backend)
    for a in (np.array([1.0, -1.0, 0.0]), np.array([1.0, 2.0, 3.0]), np.array([-2.0, 4.0, 0.0])):
        check(fn, a, compiled=f, warnings=True)


# ------------------------------------- 5. memory the code reaches untraced

_G = np.zeros(8)


def _global_read_after_write(a):
    a += 1
    return _G.sum(), float(_G[2]), _G * 1


def _global_write_after_read(a):
    x = a * 1
    _G[1:3] += 10
    return x, a.sum()


def _helper_reads_global():
    return _G.max()


def _read_through_helper(a):
    a *= 3
    a += 1
    return _helper_reads_global()


def _closure_pair():
    H = np.zeros(8)

    def inner(a):
        a += 1
        return H.sum()
    return inner, H


class _Holder:
    def __init__(self):
        self.M = np.zeros(8)

    def step(self, a):
        a -= 2
        return self.M.min()


_OBJ = _Holder()


def _attr_of_global(a):
    a += 1
    return _OBJ.M.sum()


def _attr_of_argument(a, o):
    a += 1
    return o.M.sum()


@pytest.mark.parametrize("fn", [_global_read_after_write, _global_write_after_read,
                                _read_through_helper])
def test_argument_aliases_a_global(backend, fn):
    f = numdyn.compile(fn, backend=backend)
    for i in range(3):
        _G[:] = np.arange(8.0) * (i + 1)
        e = fn(_G[1:4]); e_state = _G.copy()
        _G[:] = np.arange(8.0) * (i + 1)
        r = f(_G[1:4])
        assert repr(e) == repr(r) and np.array_equal(e_state, _G), (e, r)
        # no aliasing: the same function on a fresh array
        check(fn, np.arange(3.0) + i, compiled=f)


def test_argument_aliases_a_closure_variable(backend):
    inner, H = _closure_pair()
    f = numdyn.compile(inner, backend=backend)
    for i in range(3):
        H[:] = i; e = inner(H[2:5]); e_state = H.copy()
        H[:] = i; r = f(H[2:5])
        assert e == r and np.array_equal(e_state, H), (e, r)


def test_argument_aliases_an_attribute(backend):
    f = numdyn.compile(_attr_of_global, backend=backend)
    g = numdyn.compile(_attr_of_argument, backend=backend)
    m = numdyn.compile(_Holder.step, backend=backend)
    o = _Holder()
    for i in range(3):
        _OBJ.M[:] = i; e = _attr_of_global(_OBJ.M[::2]); _OBJ.M[:] = i; r = f(_OBJ.M[::2])
        assert e == r, (e, r)
        o.M[:] = i; e = _attr_of_argument(o.M[3:], o); o.M[:] = i; r = g(o.M[3:], o)
        assert e == r, (e, r)
        o.M[:] = i; e = _Holder.step(o, o.M[:2]); o.M[:] = i; r = m(o, o.M[:2])
        assert e == r, (e, r)


import types as _types

_MOD = _types.ModuleType("numdyn_test_gridmod")
_MOD.grid = np.zeros(8)


class _Cfg:
    arr = np.zeros(8)


def _module_attr(a):
    a += 1
    return _MOD.grid.sum()


def _class_attr(a):
    a *= 2
    a += 3
    return _Cfg.arr.max()


@pytest.mark.parametrize("fn,arr", [(_module_attr, _MOD.grid), (_class_attr, _Cfg.arr)])
def test_argument_aliases_a_module_or_class_attribute(backend, fn, arr):
    f = numdyn.compile(fn, backend=backend)
    for i in range(3):
        arr[:] = i; e = fn(arr[2:6]); e_state = arr.copy()
        arr[:] = i; r = f(arr[2:6])
        assert e == r and np.array_equal(e_state, arr), (e, r)


def test_unrelated_globals_keep_one_graph():
    # arrays the code names that do not overlap the arguments cost nothing
    def fn(a):
        b = a * 2 + _G[0]
        b += 1
        return b.sum()
    assert numdyn.explain(fn)(np.arange(5.0)).graph_count == 1


# ------------------------------------------------ 6. ufunc.at, real target

_ACC = np.zeros(6)


def _at_into_global(x):
    np.add.at(_ACC, [0, 0, 1], x[:3] * 2)
    np.maximum.at(_ACC, [5, 5], x[:2])
    np.negative.at(_ACC, [2])
    return _ACC.sum()


def test_ufunc_at_into_a_real_array(backend):
    f = numdyn.compile(_at_into_global, backend=backend)
    for i in range(3):
        x = np.linspace(-1, 2, 6) * (i + 1)
        _ACC[:] = i
        e = _at_into_global(x)
        e_state = _ACC.copy()
        _ACC[:] = i
        r = f(x)
        assert e == r and np.array_equal(e_state, _ACC), (e, r, e_state, _ACC)


# ------------------------------- 7. ufunc where=: masked-out lanes are not run

def _div_where(a, b):
    out = np.full_like(a, -1.0)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _div_where_raise(a, b):
    with np.errstate(divide="raise", invalid="raise"):
        out = np.zeros_like(a)
        np.divide(a, b, out=out, where=b != 0)
        np.log(a, out=out, where=a > 0)
        np.arctanh(b - 1, out=out, where=b != 0)
        return out


def _int_where(a, b):
    out = np.zeros_like(a)
    np.floor_divide(a, b, out=out, where=b != 0)
    return out, np.remainder(a, b, out=np.ones_like(a), where=b != 0)


@pytest.mark.parametrize("fn", [_div_where, _div_where_raise, _int_where])
def test_where_masked_lanes_raise_no_fp_error(backend, fn):
    # NumPy computes only the selected lanes: a zero divisor under a False
    # mask gives no warning, and no FloatingPointError under errstate
    # 'raise' (numdyn used to compute every lane and report its flags)
    f = numdyn.compile(fn, backend=backend)
    rng = np.random.default_rng(3)
    for n in (5, 6, 7, 64):
        a = rng.standard_normal(n)
        b = rng.integers(0, 2, n).astype(float)
        if fn is _int_where:
            a, b = (a * 50).astype(np.int64), b.astype(np.int64)
        with _w.catch_warnings():
            _w.simplefilter("error")
            e, r = fn(a, b), f(a, b)
        for x, y in zip(e if isinstance(e, tuple) else (e,), r if isinstance(r, tuple) else (r,)):
            np.testing.assert_array_equal(x, y)


# ------------------- 8. warnings Python code shows while a call is traced

def _scalar_warns(A):
    for i in range(1, 4):
        # NumPy scalar arithmetic: NumPy itself warns, outside numdyn's graph
        A[i - 1] *= (i & np.uint8(9)) % (i * np.int8(3) - 3)
    return A


def _python_warns(x):
    if x.sum() > 0:
        _w.warn("positive input")
    return x * 2


@pytest.mark.parametrize("fn", [_scalar_warns, _python_warns])
def test_warnings_of_untraced_code_are_given_on_every_call(backend, fn):
    # a replayed call skips the Python code, so a call whose tracing showed
    # a warning that the graph's own ops did not give is not replayed
    f = numdyn.compile(fn, backend=backend)
    for _ in range(3):
        a = np.ones(4)
        with _w.catch_warnings(record=True) as rec:
            _w.simplefilter("always")
            r = f(a.copy())
        with _w.catch_warnings(record=True) as ref:
            _w.simplefilter("always")
            e = fn(a.copy())
        np.testing.assert_array_equal(r, e)
        assert [str(x.message) for x in rec] == [str(x.message) for x in ref]


def test_graph_warnings_keep_replay():
    # the graph's own warnings (a flush's divide by zero) are given again by
    # replays: such calls stay replayable
    def f(x):
        return np.log(x) * 2
    g = numdyn.compile(f)
    before = numdyn.utils.counters["replays"]
    for _ in range(4):
        with _w.catch_warnings(record=True) as rec:
            _w.simplefilter("always")
            g(np.array([0.0, 1.0]))
        assert [str(x.message) for x in rec] == ["divide by zero encountered in log"]
    assert numdyn.utils.counters["replays"] - before >= 2


# ------------- 9. a real alias of an argument's memory escapes to Python

_BITS_OF_ONE = np.float64(1.0).view(np.int64).item()


def _alias_write_after_lazy_read(a):
    c = a * 10                     # pending: must read a before the write
    b = a.view(np.int64)           # a real NumPy alias of a's memory
    b[1] = _BITS_OF_ONE
    return c, a * 1, a


def _alias_of_reshaped_view(a):
    c = a[1:] * 10
    v = a.reshape(-1, 1).view(np.int64)
    v[1, 0] = _BITS_OF_ONE
    return c, a.copy()


@pytest.mark.parametrize("fn", [_alias_write_after_lazy_read, _alias_of_reshaped_view])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_writes_through_an_escaped_alias(backend, fn, layout):
    # pending reads run before Python can write through the alias, and
    # later reads see the write (a strided argument's x.view(dtype) is a
    # view of a view: it used to become a second, unrelated traced array)
    def make():
        buf = np.arange(10.0)
        return buf, (buf[:5] if layout == "contiguous" else buf[::2])
    f = numdyn.compile(fn, backend=backend)
    for _ in range(2):
        be, ae = make()
        br, ar = make()
        e, r = fn(ae), f(ar)
        for x, y in zip(e, r):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(be, br)
        if fn is _alias_write_after_lazy_read:
            assert r[2] is ar


# ------ 10. untraced code writes an argument through np.asarray/memoryview

import untraced_writers as _uw  # noqa: E402


def _asarray_write(a):
    c = a * 2
    _uw.zap(a)
    return c, a * 1


def _asarray_write_of_slice(a):
    c = a.sum()
    _uw.zap(a[2:])
    return c, a.copy()


def _asarray_write_of_view(a):
    b = a[::2]
    c = b * 3
    _uw.negate_middle(b)
    return c, a.copy()


def _memoryview_write(a):
    m = memoryview(a)
    c = a * 2
    m[0] = 5.0
    return c, a.copy()


@pytest.mark.parametrize("fn", [_asarray_write, _asarray_write_of_slice, _asarray_write_of_view,
                                _memoryview_write])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_untraced_writes_through_a_real_alias(backend, fn, layout):
    # np.asarray(x) in code numdyn does not trace (another module), or a
    # memoryview, hands Python the argument's real memory: pending reads run
    # first, and while the alias lives operations run at once
    def make():
        return np.arange(6.0) if layout == "contiguous" else np.arange(12.0)[::2]
    f = numdyn.compile(fn, backend=backend)
    for _ in range(2):
        ae, ar = make(), make()
        e, r = fn(ae), f(ar)
        for x, y in zip(e, r):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(ae, ar)


def _asarray_write_of_computed(a):
    c = a * 2
    d = c + 1                      # pending: reads c before the write
    _uw.zap(c)
    return d, c * 1, c


def _alias_of_computed_then_traced_write(a):
    c = a * 2
    m = memoryview(c)              # a real alias of c's memory
    d = c + 1
    m[1] = 5.0
    c[2] = -1.0                    # a traced write the alias must see
    return d, c.copy(), np.frombuffer(m, dtype=np.float64).copy()


@pytest.mark.parametrize("fn", [_asarray_write_of_computed, _alias_of_computed_then_traced_write])
def test_real_alias_of_a_computed_value(backend, fn):
    # a value the function computed, handed to Python as real memory,
    # becomes that memory's: Python's writes and the function's stay ordered
    f = numdyn.compile(fn, backend=backend)
    for _ in range(2):
        e, r = fn(np.arange(6.0)), f(np.arange(6.0))
        for x, y in zip(e, r):
            np.testing.assert_array_equal(x, y)


def _reversed_of_lazy(x):
    y = x * 1.5
    return list(reversed(y)), [r.tolist() for r in reversed(y.reshape(-1, 1))], sorted(y, reverse=True)


def _reversed_of_scalar(x):
    return list(reversed(x.sum()))


def test_reversed_of_a_lazy_value():
    # reversed() of a traced value: ndarray goes through the sequence
    # protocol, a NumPy scalar is not reversible -- same values, same error
    f = numdyn.compile(_reversed_of_lazy)
    for _ in range(2):
        assert f(np.arange(5.0)) == _reversed_of_lazy(np.arange(5.0))
    with pytest.raises(TypeError) as e1:
        _reversed_of_scalar(np.arange(3.0))
    with pytest.raises(TypeError) as e2:
        numdyn.compile(_reversed_of_scalar)(np.arange(3.0))
    assert str(e1.value) == str(e2.value)


def powers(x, k):
    # ndarray.__pow__'s fast paths: sqrt(-inf) is nan where pow gives inf,
    # sqrt(-0.0) is -0.0; the warnings name square / reciprocal / sqrt
    if k == 0:
        return x ** 0.5, x ** -1, x ** 2, x ** 2.0, x ** -1.0, x ** np.float64(0.5)
    y = x.copy()
    if k == 1:
        y **= 0.5
    elif k == 2:
        y **= -1
    else:
        y **= 2
    return y


_powers = numdyn.compile(powers)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64, np.bool_])
def test_power_operator_fast_paths(dtype):
    x = np.array([-np.inf, -0.0, 0.0, -1.0, 4.0, 1e30, np.nan, 2.0])
    if dtype in (np.int64, np.bool_):
        x = np.array([0, 3, 1, 2]).astype(dtype)
    else:
        x = x.astype(dtype)
    for k in range(4):
        if k in (1, 2) and dtype in (np.int64, np.bool_):
            continue   # NumPy's casting errors: covered by the in-place casting tests
        check(powers, x, k, compiled=_powers, warnings=True, signed_zeros=True)
