"""Issue 5's ops over dtypes and memory layouts, and aliasing, vs NumPy.

Every op family of issue 5 (views, mutation, out=, advanced indexing,
joining/reshaping, extern nodes) runs on inputs of several dtypes and
layouts -- C-contiguous, Fortran-ordered, strided (a[::2, 1::3] of a bigger
array), negative strides (a[::-1, ::-2]), plus 0-d and empty arrays -- and
on aliasing cases (arguments that are views of one base, overlapping
reads and writes, out= aliasing an input, views read after a write).

Cost: each distinct kernel structure is one gcc compile under the native
backend, and kernels are keyed by dtype, rank and layout class, not by
sizes. So the ops of one family are batched into one function that returns
a dict (a failure names the op by its key), and the dtype x layout matrix
is a covering design: every family runs every dtype and every layout, and
across families every (dtype, layout) pair occurs, without the full
product per family (the views run the full product). The kernel cache is
the test session's (conftest.py; NUMDYN_TEST_CACHE_DIR keeps it warm).

A product bug found here is recorded as a strict xfail naming the file at
fault, so it turns into a failure (XPASS) once fixed; none is open.

The oracle (tests/oracle.py) compares returned values, dtypes, shapes and
returned types, exceptions, and the caller's arrays after the call; for a
view argument, `run` also compares the whole base array, so a write may not
touch memory outside the view.
"""
import numpy as np
import pytest

import numdyn
from oracle import assert_same, check

DTYPES = ["bool", "int8", "int64", "uint16", "float32", "float64", "complex64"]
LAYOUTS = ["C", "F", "strided", "neg"]


# ---------------------------------------------------------------- inputs

def values(shape, dtype, seed=0):
    """Deterministic values of `dtype`, exactly representable, small enough
    that sums and products stay exact in float32 and rarely wrap in int8."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt == np.bool_:
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind == "u":
        v = rng.integers(0, 9, n).astype(dt)
    elif dt.kind == "i":
        v = rng.integers(-6, 7, n).astype(dt)
    elif dt.kind == "f":
        v = (rng.integers(-12, 13, n) * 0.25).astype(dt)
    else:
        v = (rng.integers(-8, 9, n) * 0.5 + 1j * rng.integers(-8, 9, n) * 0.25).astype(dt)
    return v.reshape(shape)


def layout_of(a, layout, seed=1):
    """`a`'s values in `layout`: a fresh array (C, F) or a view of a bigger
    array whose other elements hold other values (strided, neg)."""
    if layout == "C":
        return np.ascontiguousarray(a)
    if layout == "F":
        return np.asfortranarray(a)
    shape = a.shape
    if layout == "strided":
        # a[::2, 1::3] (rank 2), big[1::3] (rank 1), and so on
        steps = [(2, 0), (3, 1), (2, 1)][: a.ndim] if a.ndim <= 3 else [(2, 0)] * a.ndim
        big_shape = tuple(max(st * n + off, 1) for (st, off), n in zip(steps, shape))
        if a.ndim == 1:
            steps, big_shape = [(3, 1)], (3 * shape[0] + 1,)
        big = values(big_shape, a.dtype, seed)
        idx = tuple(slice(off, off + st * n if n else off, st) for (st, off), n in zip(steps, shape))
    elif layout == "neg":
        # a[::-1, ::-2] (rank 2), big[::-2] (rank 1)
        steps = [1, 2, 1][: a.ndim] if a.ndim <= 3 else [1] * a.ndim
        if a.ndim == 1:
            steps = [2]
        big = values(tuple(st * n for st, n in zip(steps, shape)), a.dtype, seed)
        idx = tuple(slice(None, None, -st) for st in steps)
    else:
        raise ValueError(layout)
    v = big[idx]
    assert v.shape == shape, (v.shape, shape)
    v[...] = a
    return v


def arg(shape, dtype, layout="C", seed=0):
    return layout_of(values(shape, dtype, seed), layout, seed + 7)


def _bases(args):
    return [a.base if isinstance(a, np.ndarray) and a.base is not None else a for a in args]


def run(fn, make, backend, **kw):
    """check(fn) on fresh arguments from make() for each side; then also the
    bases of view arguments must hold what NumPy left in them (nothing
    outside a view may be written)."""
    made = []

    def make_args():
        args = tuple(make())
        made.append(args)
        return args

    check(fn, make_args=make_args, backend=backend, **kw)
    np_args, nd_args = made
    for i, (x, y) in enumerate(zip(_bases(nd_args), _bases(np_args))):
        if isinstance(y, np.ndarray):
            assert_same(x, y, path=f"{fn.__name__}() base of argument {i} after the call")


def covering(k):
    """The (dtype, layout) cases of family number k: every dtype once (on a
    rotating layout) and every layout once on float64 (or int64 when float64's
    own layout was rotated onto it); across families every pair occurs."""
    cases = [(d, LAYOUTS[(i + k) % len(LAYOUTS)]) for i, d in enumerate(DTYPES)]
    extra = "float64" if k % 2 == 0 else "int8"
    for lay in LAYOUTS:
        if (extra, lay) not in cases:
            cases.append((extra, lay))
    return cases


def cases_for(k):
    return [pytest.param(d, lay, id=f"{d}-{lay}") for d, lay in covering(k)]


ALL = [pytest.param(d, lay, id=f"{d}-{lay}") for d in DTYPES for lay in LAYOUTS]


# ------------------------------------------------------------ 1. views

def views_2d(a):
    k = a.dtype.kind
    r = {
        "rows": a[1:3], "neg_rows": a[::-1], "neg_cols": a[:, ::-2],
        "newaxis_ellipsis": a[None, ..., 1], "trailing_none": a[..., None],
        "int_row": a[-1], "int_step": a[1, ::2], "mixed": a[::2, -1::-2],
        "empty_slice": a[2:2], "ellipsis": a[...] + a.dtype.type(0),
        "reshape_flat": a.reshape(-1), "reshape_2d": a.reshape(6, 4),
        "reshape_3d": a.reshape(2, 2, 6), "reshape_F": a.reshape((3, 8), order="F"),
        "ravel": a.ravel(), "ravel_F": a.ravel(order="F"), "ravel_K": np.ravel(a, order="K"),
        "flatten": a.flatten(),
        "T": a.T, "transpose": a.transpose(), "np_transpose": np.transpose(a, (1, 0)),
        "swapaxes": np.swapaxes(a, 0, 1), "moveaxis": np.moveaxis(a.reshape(2, 2, 6), 0, -1),
        "moveaxis2": np.moveaxis(a[None], [0, 1], [-1, 0]),
        "expand0": np.expand_dims(a, 0), "expand_multi": np.expand_dims(a, (0, 3)),
        "squeeze": np.squeeze(a[:1]), "squeeze_axis": np.squeeze(a[:, :1], axis=1),
        "squeeze_method": a[None].squeeze(0)[1:],
        "bcast_row": np.broadcast_to(a[0], (3, 6)), "bcast_col": np.broadcast_to(a[:, :1], (4, 5)),
        "flip": np.flip(a), "flip1": np.flip(a, 1), "fliplr": np.fliplr(a), "flipud": np.flipud(a),
        "diag": a.diagonal(), "diag1": np.diagonal(a, 1), "diag_neg": np.diagonal(a, -2),
        "diag_of_T": a.T.diagonal(2),
        "real": a.real, "imag": a.imag, "np_real": np.real(a[::-1]), "np_imag": np.imag(a[:, 1:]),
        # views feeding arithmetic: strided reads inside a kernel
        "stencil": a[1:, 1:] + a[:-1, :-1] if k != "b" else a[1:, 1:] ^ a[:-1, :-1],
        "view_math": a.T[::-1] * a.dtype.type(2) + a.T,
        "view_of_view": a[::-1][1:, ::2].T[1],
        "reduce_view": a[:, ::-2].sum(axis=0), "reduce_T": a.T.max(axis=1),
    }
    return r


@pytest.mark.parametrize("dtype,layout", ALL)
def test_views(backend, dtype, layout):
    # (neg: reshape(-1) of a[::-1, ::-2] is a view in NumPy, a copy here --
    # test_known_aliasing_gaps)
    run(views_2d, lambda: (arg((4, 6), dtype, layout),), backend,
        check_aliasing=layout != "neg")


def _ident_views(a):
    return a[...], a[()], a.reshape(a.shape), a.T.T, a[None].squeeze(0)


def _reshape_neg(a):
    return a.reshape(-1)


def test_identity_view_is_a_new_object(backend):
    run(_ident_views, lambda: (arg((4, 6), "float64"),), backend, check_aliasing=True)


def test_reshape_of_uniform_negative_strides_is_a_view(backend):
    run(_reshape_neg, lambda: (arg((4, 6), "float64", "neg"),), backend, check_aliasing=True)


def test_views_are_captured_without_breaks():
    """The view ops are in-graph (the order='F'/'K' reshapes above break)."""
    def f(a):
        return (a[::-1, 1::2], a.reshape(-1), a.T, np.swapaxes(a, 0, 1),
                np.moveaxis(a[None], 0, -1), np.expand_dims(a, 1), np.squeeze(a[:1]),
                np.broadcast_to(a[0], (2, 6)), np.fliplr(a), np.flipud(a), a.diagonal(1),
                a.real, a.imag, a[None, ..., -1])
    for lay in LAYOUTS:
        out = numdyn.explain(f)(arg((4, 6), "complex64", lay))
        assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]


# View or copy: NumPy decides from the array's real memory strides (a
# caller's array may be Fortran-ordered, strided or reversed), and a write
# through the result reaches the argument exactly when it is a view.

def _rv_ravel(a):
    v = a.ravel()
    v[0] = 100
    return a


def _rv_reshape(a):
    v = a.reshape(-1)
    v[1:3] += 1
    return a


def _rv_reshape2(a):
    v = a.reshape(2, -1)
    v[1] = 7
    return a


def _rv_strided_ravel(a):
    v = a[::2].ravel()            # a copy: not C-contiguous
    v[0] = 100
    w = a[:, 1:2].ravel()         # a copy too
    w[1] = 50
    return a


def _rv_column_reshape(a):
    v = a[:, 1:2].reshape(-1)     # a view (one stride)
    v[1] = 50
    return a


RESHAPE_VIEWS = [_rv_ravel, _rv_reshape, _rv_reshape2, _rv_strided_ravel, _rv_column_reshape]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", RESHAPE_VIEWS, ids=lambda f: f.__name__[4:])
def test_reshape_view_or_copy_like_numpy(backend, fn, layout):
    run(fn, lambda: (arg((4, 6), "float64", layout),), backend)


def _rv_after_write(a):
    a += 1
    v = a[:, 1:2].ravel()         # NumPy: a copy (not C-contiguous)
    v[0] = 100
    return a


def _rv_of_value(a):
    t = a * 2
    v = t[:, 1:2].ravel()
    v[0] = 100
    return t


def _rv_F_transposed(a):
    v = a.T.reshape(-1)           # F array: a.T is C-contiguous, NumPy gives a view
    v[0] = 100
    return a


@pytest.mark.parametrize("fn", [_rv_after_write, _rv_of_value], ids=["after_write", "of_value"])
def test_ravel_of_pending_storage(backend, fn):
    run(fn, lambda: (arg((4, 6), "float64"),), backend)


def test_reshape_view_in_fortran_memory_order(backend):
    run(_rv_F_transposed, lambda: (arg((4, 6), "float64", "F"),), backend)


def _rv_of_slice(a):
    v = a[1:].reshape(-1)         # NumPy: a view (rows 1.. are contiguous)
    v[0] = 100
    w = a.reshape(2, 12).reshape(4, 6)[0]
    w[1] = 50
    return a


def test_reshape_of_a_view_is_a_view(backend):
    run(_rv_of_slice, lambda: (arg((4, 6), "float64"),), backend)


def _fallback_mutation(a, b):
    before = a * 2                # lazy: must see a's contents before the put
    np.put(a, [0], b)             # values repeated cyclically: a graph break into np.put
    return before


def _fallback_mutation2(a):
    before = a + 1
    np.fill_diagonal(a, 0)        # not in the shim: NumPy mutates the caller's array
    return before


@pytest.mark.parametrize("case", ["put", "fill_diagonal"])
def test_fallback_mutation_after_lazy_read(backend, case):
    if case == "put":
        run(_fallback_mutation, lambda: (arg((4, 6), "int64"), arg((3,), "int64", seed=4)), backend)
    else:
        run(_fallback_mutation2, lambda: (arg((4, 4), "float64"),), backend)


# ------------------------------------------------------------ 2. mutation

def mutation(a, b):
    """a and b are the caller's (4, 6) arrays: every write must end in them
    exactly as NumPy leaves them; s<n> snapshots name the step that differs."""
    one, two = a.dtype.type(1), a.dtype.type(2)
    r = {}
    row, t, rev = a[1], a.T, a[::-1, ::-2]       # views taken before the writes
    a[0] = b[0]                                  # array row
    a[1:3, ::2] = two                            # scalar into a strided view
    a[:, -1] = b[:, 0]                           # column <- column
    r["s1"] = a.copy()
    a[1:] = a[:-1] + one                         # overlapping read/write: needs a temp
    r["s2"] = a.copy()
    a[:, 1:] += a[:, :-1]                        # in-place, overlapping
    r["s3"] = a.copy()
    t[0] *= two                                  # through the transpose
    rev += one                                   # through negative strides
    r["s4"] = a.copy()
    r["row_after"] = row * one                   # views see the writes
    r["t_after"] = t.sum(axis=0)
    a[...] = a[::-1]                             # whole-array reversed self-copy
    r["s5"] = a.copy()
    a[...] = b[2]                                # broadcasting a row to all
    a[...] = a + b
    r["s6"] = a.copy()
    a[2].fill(two)
    b[:, ::-3].fill(one)
    r["s7"] = (a.copy(), b.copy())
    np.copyto(a[:2], b[2:])
    np.copyto(a, two, where=b != one)
    np.copyto(b[::2], a[1::2].T.T)
    r["s8"] = (a.copy(), b.copy())
    a[1:, :] = a[:-1, ::-1]                      # shift + reverse overlap
    b[::-1] = b                                  # reverse onto itself
    r["s9"] = (a.copy(), b.copy())
    return r


def mutation_out(a, b):
    """out= on ufuncs and reductions, aliasing an input or overlapping it."""
    one = a.dtype.type(1)
    r = {}
    v = a[:, 2]
    np.add(a, b, out=a)                          # out is an input
    r["s1"] = a.copy()
    np.multiply(a[:, 1:], a[:, :-1], out=a[:, 1:])   # out overlaps an input, shifted
    r["s2"] = a.copy()
    np.add(a[::-1], b, out=b)                    # out is the other argument
    r["s3"] = b.copy()
    if a.dtype.kind == "b":
        np.logical_not(a, out=a)
    else:
        np.negative(a, out=a)
    np.maximum(a.T, b.T, out=b.T)                # out through a transposed view
    r["s4"] = (a.copy(), b.copy())
    r["v_after"] = v.copy()
    res = np.add(a, one, out=a[::-1])            # returns the out= argument
    r["out_returned"] = res.copy()
    np.sum(a, axis=0, out=b[0])                  # reduction into a row of b
    a.max(axis=1, out=b[:, 1])                   # reduction into a column
    np.sum(a[:2], axis=0, out=a[3])              # reduction into a row of its input
    r["s5"] = (a.copy(), b.copy())
    return r


@pytest.mark.parametrize("dtype,layout", cases_for(0))
def test_mutation(backend, dtype, layout):
    run(mutation, lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)),
        backend)


@pytest.mark.parametrize("dtype,layout", cases_for(1))
def test_mutation_out(backend, dtype, layout):
    run(mutation_out, lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)),
        backend)


# ------------------------------------------------------- 2b. aliasing arguments

def alias_views(x, y):
    """x and y are overlapping views of one caller array."""
    two = x.dtype.type(2)
    r = {"y_before": y.copy()}
    x += y                                       # reads y, writes the memory y views
    r["y_after"] = y.copy()
    y[0] = two
    r["x_after"] = x.copy()
    np.multiply(x, y, out=y)
    return r


def alias_transpose(a, t):
    """t is a.T of the caller's (square) array."""
    one = a.dtype.type(1)
    a[0] = t[0]
    t[1:, 0] = a[1:, 1]
    t += one
    return a.copy(), t.sum(axis=0)


def alias_same(a, b):
    """a and b are the same caller array."""
    one = a.dtype.type(1)
    b[1] = one
    v = a + b
    a[1:] += b[:-1]
    return v


def _alias_views_args(dtype, layout):
    base = arg((4, 8), dtype, layout)
    return base[:, :5], base[:, 3:]


def _alias_views_args_rev(dtype, layout):
    base = arg((5, 8), dtype, layout)
    return base[-2::-1, ::2], base[1:, 1:5]


def _alias_t_args(dtype, layout):
    a = arg((5, 5), dtype, layout)
    return a, a.T


def _alias_same_args(dtype, layout):
    a = arg((4, 6), dtype, layout)
    return a, a


@pytest.mark.parametrize("dtype,layout", cases_for(2))
@pytest.mark.parametrize("fn,make", [(alias_views, _alias_views_args),
                                     (alias_views, _alias_views_args_rev),
                                     (alias_transpose, _alias_t_args),
                                     (alias_same, _alias_same_args)],
                         ids=["views", "views_rev", "transpose", "same"])
def test_aliased_arguments(backend, dtype, layout, fn, make):
    run(fn, lambda: make(dtype, layout), backend)



# ------------------------------------------------------- 4. advanced indexing

def advidx(a, b):
    one, two, zero = a.dtype.type(1), a.dtype.type(2), a.dtype.type(0)
    r = {}
    r["g_rows"] = a[[0, 2, -1]]
    r["g_cols"] = a[:, [1, 0, 5]]
    r["g_pairs"] = a[[0, 1], [2, 3]]
    r["g_bcast"] = a[np.array([[0], [3]]), [1, 2]]
    r["g_view"] = a[::-1][[1, 2], ::2]
    r["g_const_mask"] = a[[True, False, True, False]]
    r["g_math"] = a[[3, 1]] * two
    r["take_flat"] = np.take(a, [0, 5, -1])
    r["take_axis"] = np.take(a, [1, 0], axis=1)
    r["take_wrap"] = a.take([[0, 7]], axis=0, mode="wrap")
    r["take_clip"] = np.take(a, [-3, 9], axis=1, mode="clip")
    a[[0, 2]] = b[1]                             # scatter a row
    a[[1, 1, 3], 2] += one                       # repeated index: added once
    a[:, [0, -1]] = a[:, [-1, 0]]                # swap columns (needs a temp)
    r["s1"] = a.copy()
    mask = b != zero
    a[mask] = two                                # masked write, no break
    a[a != one] += one                           # mask from a's own values
    r["s2"] = a.copy()
    r["mask_read"] = a[mask]                     # data-dependent shape: a break
    np.put(a, [0, 5, -1], b[0, :3])
    a.put([1, 2], [two, one])
    np.add.at(a, ([0, 0, 1], [1, 1, 2]), one)    # every repeat adds
    np.add.at(b, [0, 0], a[3, 0])
    r["s3"] = (a.copy(), b.copy())
    return r


def add_at_rows(a, b):
    np.add.at(b, [0, 0], a[3])                   # a repeated row index, a row of values
    np.add.at(b, ([1, 1], slice(None)), a[0])
    return b


def test_add_at_repeated_rows(backend):
    run(add_at_rows, lambda: (arg((4, 6), "float64"), arg((4, 6), "float64", seed=3)), backend)


@pytest.mark.parametrize("dtype,layout", cases_for(3))
def test_advanced_indexing(backend, dtype, layout):
    run(advidx, lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)),
        backend)


# --------------------------------------------------- 5. joining and reshaping

def joins(a, b):
    two = a.dtype.type(2)
    r = {}
    r["cat0"] = np.concatenate((a, a[::-1]), axis=0)
    r["cat1"] = np.concatenate((a, b), axis=1) * two
    r["cat_none"] = np.concatenate((a.T, b), axis=None)
    r["stack"] = np.stack((a, b))
    r["stack_last"] = np.stack((a, b.T.T), axis=-1)
    r["vstack"] = np.vstack((a, b[0]))
    r["hstack"] = np.hstack((a, b))
    r["dstack"] = np.dstack((a, b))
    r["column_stack"] = np.column_stack((a[0], b[0]))
    r["split"] = np.split(a, 2, axis=0)
    r["array_split"] = np.array_split(a, 4, axis=1)
    r["hsplit"] = np.hsplit(b, 3)
    r["vsplit"] = np.vsplit(b, [1, 3])
    r["tile"] = np.tile(a, (2, 1))
    r["tile1"] = np.tile(a[0], 3)
    r["repeat"] = np.repeat(a, 2, axis=1)
    r["repeat_list"] = np.repeat(a, [1, 0, 2, 1], axis=0)
    r["repeat_flat"] = a.repeat(2)
    r["pad"] = np.pad(a, 1)
    r["pad_edge"] = np.pad(a, ((1, 0), (0, 2)), mode="edge")
    r["pad_value"] = np.pad(b, 2, constant_values=two)
    r["roll"] = np.roll(a, 2)
    r["roll0"] = np.roll(a, -1, axis=0)
    r["roll2"] = np.roll(b, (1, 2), axis=(0, 1))
    r["triu"] = np.triu(a)
    r["tril"] = np.tril(a, -1)
    r["triu2"] = np.triu(b, 2)
    r["outer"] = np.outer(a[0], b[:, 0])
    r["outer_flat"] = np.outer(a[:2], b[1])
    return r


@pytest.mark.parametrize("dtype,layout", cases_for(4))
def test_joins(backend, dtype, layout):
    run(joins, lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)),
        backend, check_aliasing=True)


# ----------------------------------------------------------- 6. extern nodes

def externs(a, b):
    one = a.dtype.type(1)
    r = {}
    r["matmul"] = a @ a.T
    r["matmul_fused"] = np.matmul(a.T, b) + one
    r["dot_vec"] = np.dot(a[0], b[1])
    r["dot"] = np.dot(a, b.T)
    r["einsum"] = np.einsum("ij,kj->ik", a, b)
    r["einsum_red"] = np.einsum("ij->j", a)
    r["einsum_diag"] = np.einsum("ii->i", a[:, :4])
    r["solve"] = np.linalg.solve(100 * np.eye(4) + a[:, :4], b[:, 4])
    r["sort0"] = np.sort(a, axis=0)
    r["sort_rev"] = np.sort(a[::-1], axis=-1)
    r["sort_flat"] = np.sort(b, axis=None)
    r["argsort"] = np.argsort(a, axis=1, kind="stable")
    r["argsort0"] = b.argsort(axis=0, kind="stable")
    r["cumsum0"] = np.cumsum(a, axis=0)
    r["cumsum1"] = a.cumsum(axis=1)
    r["cumsum_flat"] = np.cumsum(b.T)
    return r


@pytest.mark.parametrize("dtype,layout", cases_for(5))
def test_externs(backend, dtype, layout):
    run(externs, lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)),
        backend)


def inplace_sort_and_matmul_out(a, b):
    """Extern results written into the caller's arrays and views."""
    a.sort(axis=1)                               # in-place sort of a caller array
    b[::-1].sort(axis=0)                         # ... of a reversed view
    np.matmul(a[:, :4], b[:4, :4].T, out=b[:4, :4].T)   # out aliases an input
    return a.copy()


@pytest.mark.parametrize("dtype,layout", cases_for(6))
def test_extern_mutation(backend, dtype, layout):
    run(inplace_sort_and_matmul_out,
        lambda: (arg((4, 6), dtype, layout), arg((4, 6), dtype, layout, seed=3)), backend)


# ---------------------------------------------------------- 0-d and empty

def zero_d(a, b):
    one, two = a.dtype.type(1), a.dtype.type(2)
    r = {"ell": a[...] * one, "item": a[()], "none": a[None], "reshape1": a.reshape(1),
         "reshape0": a.reshape(()) + one, "ravel": a.ravel(), "T": a.T * one,
         "expand": np.expand_dims(a, 0), "squeeze": np.squeeze(a) * one,
         "bcast": np.broadcast_to(a, (3,)), "real": a.real * one, "imag": a.imag * one,
         "stack": np.stack((a, b)), "outer": np.outer(a, b), "cumsum": np.cumsum(a),
         "sort": np.sort(a, axis=None)}
    a[...] = two
    r["s1"] = a.copy()
    a += b
    np.add(a, one, out=a)
    r["s2"] = a.copy()
    b.fill(two)
    np.copyto(a, b, where=a != one)
    r["s3"] = (a.copy(), b.copy())
    return r


def _zero_d_args(dtype, view):
    if view:   # 0-d views of bigger arrays
        return arg((3, 4), dtype, "neg")[2, 1, ...], arg((5,), dtype, "strided", seed=2)[3, ...]
    return values((), dtype), values((), dtype, seed=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", [False, True], ids=["own", "view"])
def test_zero_d(backend, dtype, view):
    run(zero_d, lambda: _zero_d_args(dtype, view), backend)


def empty(a, b):
    one = a.dtype.type(1)
    r = {"view": a[::-1, 1:], "T": a.T * one, "reshape": a.reshape(-1, 3),
         "flip": np.flip(a), "diag": a.diagonal(), "sum0": a.sum(axis=0),
         "sum1": a.sum(axis=1), "cat": np.concatenate((a, b), axis=0),
         "matmul": a.T @ b, "sort": np.sort(a, axis=0), "cumsum": np.cumsum(a, axis=1),
         "take": np.take(a, [], axis=0), "g": a[:, [1, 0]], "tile": np.tile(a, 2),
         "pad": np.pad(a, 1), "roll": np.roll(a, 1)}
    a[...] = one
    a += b
    np.add(a, b, out=a)
    r["s1"] = a.copy()
    return r


@pytest.mark.parametrize("dtype,layout", cases_for(7)[:7])
def test_empty(backend, dtype, layout):
    def make():
        return arg((0, 6), dtype, layout), arg((0, 6), dtype, layout, seed=3)
    run(empty, make, backend)
