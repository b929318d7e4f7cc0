"""Joining, splitting and rearranging (numpy_shim/shim_join.c) vs NumPy.

Every case runs the same function under NumPy and under numdyn (both
backends) through oracle.check: values, dtypes, shapes, returned types,
exceptions and argument mutation must match. `no_breaks` additionally
asserts the function was captured without a graph break, so a silent
fallback to NumPy cannot pass for an in-graph implementation.
"""
import numpy as np
import pytest

import numdyn
from oracle import check

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]


def arr(shape, dtype=np.float64, layout="C", seed=0):
    """A test array of `shape` in layout C, F, strided or negative-stride."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if np.dtype(dtype) == np.bool_:
        base = rng.integers(0, 2, n).astype(bool)
    elif np.dtype(dtype).kind in "iu":
        base = rng.integers(0, 50, n).astype(dtype)
    elif np.dtype(dtype).kind == "c":
        base = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:
        base = rng.standard_normal(n).astype(dtype)
    a = base.reshape(shape)
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in shape), dtype)
        big[tuple(slice(None, None, 2) for _ in shape)] = a
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "neg":
        big = a.copy()
        return big[tuple(slice(None, None, -1) for _ in shape)]
    return a


LAYOUTS = ["C", "F", "strided", "neg"]


def no_breaks(fn, *args, **kwargs):
    out = numdyn.explain(fn)(*args, **kwargs)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]


# ---------------------------------------------------------------- concatenate

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate_axes_layouts(backend, layout, axis):
    a, b = arr((3, 4), layout=layout), arr((3, 4), layout=layout, seed=1)
    f = lambda a, b: np.concatenate([a, b * 2, a + 1], axis=axis)
    check(f, a, b, backend=backend)
    no_breaks(f, a, b)


@pytest.mark.parametrize("d1", DTYPES)
@pytest.mark.parametrize("d2", [np.bool_, np.int16, np.uint32, np.float32, np.complex128])
def test_concatenate_promotion(backend, d1, d2):
    check(lambda a, b: np.concatenate((a, b)), arr((2, 3), d1), arr((1, 3), d2, seed=3),
          backend=backend)


def test_concatenate_dtype_casting(backend):
    a, b = arr((2, 2)), arr((2, 2), np.int32)
    check(lambda a, b: np.concatenate([a, b], dtype=np.float32), a, b, backend=backend)
    check(lambda a, b: np.concatenate([a, b], dtype=np.int64), a, b, backend=backend)
    check(lambda a, b: np.concatenate([a, b], dtype=np.int64, casting="unsafe"), a, b,
          backend=backend)
    check(lambda a, b: np.concatenate([a, b], casting="no"), a, b, backend=backend)
    check(lambda a: np.concat([a, a], axis=1), a, backend=backend)


@pytest.mark.parametrize("case", [
    lambda a, b: np.concatenate([a, b]),                 # dims differ
    lambda a, b: np.concatenate([a, b[0]]),              # ranks differ
    lambda a, b: np.concatenate([a, a], axis=2),         # AxisError
    lambda a, b: np.concatenate([a.sum(), a.sum()]),     # 0-d
    lambda a, b: np.concatenate([]),
    lambda a, b: np.concatenate([a, a], out=a, dtype=np.float64),
])
def test_concatenate_errors(backend, case):
    check(case, arr((2, 3)), arr((2, 4)), backend=backend)


def test_concatenate_mixed_inputs(backend):
    g = np.arange(3.0)
    check(lambda a: np.concatenate([a, [7.0, 8.0], g]), arr((4,)), backend=backend)
    check(lambda a: np.concatenate([a, np.zeros((0,))]), arr((4,)), backend=backend)
    check(lambda a: np.concatenate([np.zeros((0, 3)), a]), arr((2, 3)), backend=backend)


def test_concatenate_out(backend):
    def f(a, o):
        np.concatenate([a, a], out=o)
        return o
    check(f, arr((2, 2)), np.zeros((4, 2)), backend=backend)

    def g(a):
        o = np.zeros((4, 2))
        r = np.concatenate([a, a], out=o)
        return r, o
    check(g, arr((2, 2)), backend=backend)


def test_append(backend):
    check(lambda a, b: np.append(a, b), arr((2, 3)), arr((4,)), backend=backend)
    check(lambda a, b: np.append(a, b, axis=0), arr((2, 3)), arr((1, 3)), backend=backend)


# ------------------------------------------------------------------ stacking

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(backend, axis):
    check(lambda a, b: np.stack([a, b], axis=axis), arr((2, 3)), arr((2, 3), seed=2),
          backend=backend)


def test_stack_errors_and_scalars(backend):
    check(lambda a, b: np.stack([a, b]), arr((2, 3)), arr((3, 2)), backend=backend)
    check(lambda a: np.stack([a, a], axis=3), arr((2, 3)), backend=backend)
    check(lambda a: np.stack([a.sum(), a.max()]), arr((2, 3)), backend=backend)
    check(lambda a: np.stack([a, a], dtype=np.float32), arr((2, 3)), backend=backend)


@pytest.mark.parametrize("fn", [np.hstack, np.vstack, np.dstack, np.column_stack])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()],
                                    [(2, 3, 4), (2, 3, 4)], [(3,), (3,), (3,)]])
def test_stack_family(backend, fn, shapes):
    arrays = [arr(s, seed=i) for i, s in enumerate(shapes)]
    check(lambda *xs: fn([x * 1 for x in xs]), *arrays, backend=backend)


def test_hstack_dtype(backend):
    check(lambda a, b: np.hstack([a, b], dtype=np.float32), arr((2,)), arr((3,), np.int8),
          backend=backend)
    check(lambda a, b: np.vstack((a, b), casting="no"), arr((2,)), arr((2,), np.int8),
          backend=backend)


# ----------------------------------------------------------------- splitting

@pytest.mark.parametrize("ios", [2, 3, [1, 3], [-1], [0, 10], [2, 1]])
@pytest.mark.parametrize("axis", [0, 1])
def test_array_split(backend, ios, axis):
    check(lambda a: [p * 1 for p in np.array_split(a, ios, axis=axis)], arr((6, 6)),
          backend=backend)


def test_split_errors(backend):
    check(lambda a: np.split(a, 4), arr((6,)), backend=backend)
    check(lambda a: np.split(a, 0), arr((6,)), backend=backend)
    check(lambda a: np.array_split(a, 0), arr((6,)), backend=backend)
    check(lambda a: np.vsplit(a, 2), arr((6,)), backend=backend)
    check(lambda a: np.dsplit(a, 2), arr((2, 2)), backend=backend)


@pytest.mark.parametrize("fn,shape", [(np.hsplit, (4, 6)), (np.hsplit, (6,)),
                                      (np.vsplit, (4, 6)), (np.dsplit, (2, 2, 4))])
def test_hvd_split(backend, fn, shape):
    check(lambda a: [p + 0 for p in fn(a, 2)], arr(shape), backend=backend)


def test_split_pieces_are_views(backend):
    def f(a):
        x, y = np.split(a, 2)
        x[...] = 0          # writes go through to the original
        y += 1
        return a * 1
    check(f, arr((4, 3)), backend=backend)

    def g(a):
        parts = np.unstack(a, axis=1)
        parts[0][:] = -1
        return a
    check(g, arr((3, 2)), backend=backend)
    no_breaks(f, arr((4, 3)))


# --------------------------------------------------------- tile and repeat

@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), (0, 2), ()])
@pytest.mark.parametrize("layout", ["C", "F", "neg"])
def test_tile(backend, reps, layout):
    f = lambda a: np.tile(a, reps)
    check(f, arr((2, 3), layout=layout), backend=backend)
    no_breaks(f, arr((2, 3), layout=layout))


def test_tile_misc(backend):
    check(lambda a: np.tile(a, 3), arr((4,), np.int16), backend=backend)
    check(lambda a: np.tile(a.sum(), 3), arr((4,)), backend=backend)
    check(lambda a: np.tile(a, -1), arr((4,)), backend=backend)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32, np.complex64])
@pytest.mark.parametrize("rep,axis", [(2, None), (3, 0), (2, 1), ([1, 0, 2], 0),
                                      ([2, 1, 0, 3], 1), ([2], 1), (0, 0)])
def test_repeat(backend, dtype, rep, axis):
    f = lambda a: np.repeat(a, rep, axis=axis)
    check(f, arr((3, 4), dtype, layout="F"), backend=backend)
    no_breaks(f, arr((3, 4), dtype))


def test_repeat_errors(backend):
    check(lambda a: np.repeat(a, -1), arr((3,)), backend=backend)
    check(lambda a: np.repeat(a, [1, 2], axis=0), arr((3,)), backend=backend)
    check(lambda a: np.repeat(a, 2, axis=3), arr((3,)), backend=backend)
    check(lambda a: a.repeat(2), arr((2, 2)), backend=backend)


# ---------------------------------------------------------------------- roll

@pytest.mark.parametrize("shift,axis", [(1, None), (-2, None), (7, 0), (1, 1), (-1, -1),
                                        ((1, 2), (0, 1)), ((1, 1), (0, 0)), (2, (0, 1)),
                                        (0, 0), ((1, 2), None)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll(backend, shift, axis, layout):
    f = lambda a: np.roll(a, shift, axis=axis)
    check(f, arr((3, 5), layout=layout), backend=backend)
    no_breaks(f, arr((3, 5), layout=layout))


def test_roll_misc(backend):
    check(lambda a: np.roll(a, 1, axis=2), arr((3, 5)), backend=backend)
    check(lambda a: np.roll(a.sum(), 1), arr((3, 5)), backend=backend)
    check(lambda a: np.roll(a, 3), np.zeros((0, 2)), backend=backend)


@pytest.mark.parametrize("fn", [np.fft.fftshift, np.fft.ifftshift])
@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 1)])
def test_fftshift(backend, fn, axes):
    check(lambda a: fn(a, axes=axes), arr((4, 5)), backend=backend)


# ----------------------------------------------------------------- triu/tril

@pytest.mark.parametrize("fn", [np.triu, np.tril])
@pytest.mark.parametrize("k", [0, 1, -1, 5, -5])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4), (4,)])
def test_triu_tril(backend, fn, k, shape):
    f = lambda a: fn(a, k)
    check(f, arr(shape, np.int32), backend=backend)
    no_breaks(f, arr(shape, np.int32))


def test_triu_dtypes(backend):
    for dt in DTYPES:
        check(lambda a: np.triu(a) + np.tril(a, -1), arr((3, 3), dt), backend=backend)
    check(lambda a: np.triu(a.sum()), arr((3, 3)), backend=backend)


# --------------------------------------------------------------------- outer

@pytest.mark.parametrize("d1,d2", [(np.float64, np.float64), (np.float32, np.int8),
                                   (np.bool_, np.bool_), (np.int64, np.complex64)])
def test_outer(backend, d1, d2):
    f = lambda a, b: np.outer(a, b)
    check(f, arr((3,), d1), arr((2, 2), d2), backend=backend)
    no_breaks(f, arr((3,), d1), arr((2, 2), d2))


def test_outer_scalars_and_out(backend):
    check(lambda a: np.outer(a, 2.5), arr((3,), np.float32), backend=backend)

    def f(a, o):
        np.outer(a, a, out=o)
        return o
    check(f, arr((3,)), np.zeros((3, 3)), backend=backend)


# ----------------------------------------------------------------------- pad

@pytest.mark.parametrize("pw", [1, (1, 2), ((1, 0), (0, 2)), ((2,), (1,)), 0])
@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_pad(backend, pw, mode):
    f = lambda a: np.pad(a, pw, mode=mode)
    check(f, arr((3, 4), layout="F"), backend=backend)
    no_breaks(f, arr((3, 4)))


def test_pad_constant_values(backend):
    check(lambda a: np.pad(a, 2, constant_values=7), arr((3,), np.int8), backend=backend)
    check(lambda a: np.pad(a, 2, constant_values=1.7), arr((3,), np.int8), backend=backend)
    check(lambda a: np.pad(a, 2, constant_values=300), arr((3,), np.int8), backend=backend)
    check(lambda a: np.pad(a, 1, constant_values=np.float32(2)), arr((2, 2)), backend=backend)


def test_pad_errors(backend):
    check(lambda a: np.pad(a, -1), arr((3,)), backend=backend)
    check(lambda a: np.pad(a, 1.5), arr((3,)), backend=backend)
    check(lambda a: np.pad(a, ((1, 2), (1, 2), (1, 2))), arr((3, 3)), backend=backend)
    check(lambda a: np.pad(a, 1, mode="edge"), np.zeros((0, 3)), backend=backend)
    check(lambda a: np.pad(a, 1, mode="edge", constant_values=3), arr((3,)), backend=backend)


def test_pad_other_modes_break_but_match(backend):
    # not in-graph: a recorded break with NumPy's own result
    check(lambda a: np.pad(a, 2, mode="reflect"), arr((5,)), backend=backend)


# ---------------------------------------------------------------------- diff

@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.float32, np.complex64])
@pytest.mark.parametrize("n,axis", [(1, -1), (2, 0), (0, 1), (3, 1), (5, 0)])
def test_diff(backend, dtype, n, axis):
    f = lambda a: np.diff(a, n=n, axis=axis)
    check(f, arr((4, 5), dtype, layout="F"), backend=backend)
    no_breaks(f, arr((4, 5), dtype))


def test_diff_prepend_append_errors(backend):
    check(lambda a: np.diff(a, prepend=0.5, append=a[:, :1]), arr((3, 4)), backend=backend)
    check(lambda a: np.diff(a, axis=0, prepend=np.zeros((1, 4), np.int8)), arr((3, 4)),
          backend=backend)
    check(lambda a: np.diff(a, n=-1), arr((3, 4)), backend=backend)
    check(lambda a: np.diff(a.sum()), arr((3, 4)), backend=backend)
    check(lambda a: np.diff(a, axis=2), arr((3, 4)), backend=backend)
    check(lambda a: np.diff(a, prepend=np.zeros((2, 2))), arr((3, 4)), backend=backend)


# ----------------------------------------------- np.array of lazy nestings

_SEQ_CASES = {
    "scalars": lambda y: np.array([y[1], -y[0] - 0.1 * y[1]]),
    "arrays": lambda a: np.array([a, a * 2, a + 1]),
    "nested_mixed": lambda a: np.array([[a.sum(), 1], [2.5, a.max()]]),
    "f32_with_np_f32": lambda a: np.array([a.astype(np.float32).sum(), np.float32(2)]),
    "f32_with_py_float": lambda a: np.array([a.astype(np.float32).sum(), 2.0]),
    "bools": lambda a: np.array([a.sum() > 0, True]),
    "int8_with_py_int": lambda a: np.array([a.astype(np.int8)[0], 300]),
    "tuple_dtype": lambda a: np.array((a[:2], a[1:3]), dtype=np.float32),
    "asarray": lambda a: np.asarray([a.sum(), a.min()]),
    "complex": lambda a: np.array([a.sum(), 1j]),
    "comprehension": lambda a: np.array([a[i] * 2 for i in range(3)]),
    "int8_uint8": lambda a: np.array([np.int8(3), a.astype(np.uint8)[0]]),
    "restacked": lambda a: np.stack([np.array([a[0], a[1]]), a[:2]]).sum(0),
}


@pytest.mark.parametrize("name", sorted(_SEQ_CASES))
def test_array_of_lazy_nesting_is_a_stack(backend, name):
    """np.array([y[1], -y[0]]) of lazy values is stacked in-graph (it used
    to flush each element: an RK4 step's state vector cost a graph per
    element): NumPy's dtype discovery (Python scalars strong), shapes and
    values."""
    fn = _SEQ_CASES[name]
    for a in (np.arange(4.0) - 1, np.arange(4.0) + 2):
        check(fn, a, backend=backend)
    no_breaks(fn, np.arange(4.0) + 2)


@pytest.mark.parametrize("case", ["ragged", "string", "ndmin", "fortran"])
def test_array_of_lazy_nesting_numpy_decides(backend, case):
    """What the stack does not model -- ragged nestings (NumPy's error),
    non-numeric leaves, ndmin=, order='F' -- runs as NumPy does."""
    fn = {"ragged": lambda a: np.array([a, a[:2]]),
          "string": lambda a: np.array([a[0], "x"]),
          "ndmin": lambda a: np.array([a[0]], ndmin=2),
          "fortran": lambda a: np.array([a, a], order="F")}[case]
    check(fn, np.arange(4.0), backend=backend, check_layout=True)


def test_array_of_lazy_scalars_fuses_into_its_readers():
    """A state vector rebuilt from its elements each step (an ODE
    integrator's np.array([y[1], f(y[0], y[1])])) is one kernel a step: the
    stack is a pointwise select the step's update reads inline, not a
    kernel per element (40 kernels for 10 steps before)."""
    from numdyn.utils import counters

    def f(y):
        for _ in range(10):
            k = np.array([y[1], -y[0] - 0.1 * y[1]])
            y = y + 0.05 * k
        return y
    cf = numdyn.compile(f, options={"floor": False})
    y0 = np.array([1.0, 0.0])
    np.testing.assert_allclose(cf(y0), f(y0), rtol=1e-14)
    before = counters["kernel_runs"]
    np.testing.assert_allclose(cf(y0), f(y0), rtol=1e-14)
    assert counters["kernel_runs"] - before <= 11
