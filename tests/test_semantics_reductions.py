"""Edge semantics of compiled reductions and scans, numdyn vs NumPy, both backends.

argmax/argmin (first occurrence, NaN wins, keepdims), cumsum/cumprod (the
first element is copied, not combined with the identity: -0.0 and complex
NaN survive; float16 rounds after every step), reductions of 0-d values with
axis=0 / -1 / (0,) (NumPy accepts some and raises for others), empty
reductions (identity, or ValueError without one), result dtypes (int8 sum ->
int64, bool sum -> int64, float16 mean), integer overflow wrap in prod.
"""
import numpy as np
import pytest

from oracle import check

import numdyn

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
       "uint64", "float16", "float32", "float64", "complex64", "complex128"]
REAL = [d for d in ALL if not d.startswith("complex")]


@pytest.mark.parametrize("dt", REAL)
def test_argmax_argmin_first_occurrence(backend, dt):
    cases = [[4, 2, 0], [0, 2, 4], [1, 5, 3], [3, 3, 1], [1, 3, 3, 0], [2]]
    if dt == "bool":
        cases = [[1, 0, 1], [0, 0, 1], [1, 1, 1], [0]]
    for v in cases:
        a = np.array(v, dtype=dt)
        check(lambda x: (x.argmax(), x.argmin(), np.argmax(x, keepdims=True),
                         np.argmin(x, axis=0), np.argmax(x, axis=-1, keepdims=True)),
              a, backend=backend)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_argmax_nan_and_2d(backend, dt):
    a = np.array([[1.0, 7.0, 7.0, -1.0], [np.nan, 2.0, np.nan, 9.0], [0.0, -0.0, 5.0, 5.0]], dtype=dt)
    check(lambda x: (x.argmax(), x.argmin(), x.argmax(axis=0), x.argmin(axis=1),
                     np.argmax(x, axis=1, keepdims=True), x.T.argmax(axis=1)),
          a, backend=backend)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "complex64", "complex128"])
def test_scan_first_element_is_copied(backend, dt):
    a = np.array([-0.0, 1.5, -2.0], dtype=dt)
    check(lambda x: (np.cumsum(x), np.cumprod(x), x[:1].cumsum(), x[:1].cumprod()),
          a, backend=backend, signed_zeros=True)
    b = np.array([np.nan, 0.5, 2.0], dtype=np.float32)
    check(lambda x: (x.cumprod(dtype=dt), x.cumsum(dtype=dt)), b, backend=backend)


@pytest.mark.parametrize("dt", ["float16"])
def test_float16_scans_round_each_step(backend, dt):
    a = np.array([2048, 1, 1, 1, 1, 3, 0.1], dtype=dt)
    check(lambda x: (np.cumsum(x), np.cumprod(x[1:] * 3)), a, backend=backend)
    b = np.full(40, 0.1, dtype=dt)
    check(lambda x: np.cumsum(x), b, backend=backend)


REDUCERS = ["sum", "prod", "max", "min", "mean", "std", "var", "any", "all", "argmax",
            "argmin", "cumsum", "cumprod", "count_nonzero", "nansum", "ptp", "amax", "amin"]


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("axis", [0, -1, (0,), 1])
def test_zero_d_reduction_axis(backend, name, axis):
    """NumPy 2 accepts axis=0/-1 on a 0-d array for some reductions and
    raises (AxisError, TypeError) for others; numdyn must do the same."""
    fn = getattr(np, name)
    check(lambda x: fn(x, axis=axis), np.array(3.0), backend=backend)
    check(lambda x: fn(x * 2, axis=axis), np.array(3, dtype=np.int16), backend=backend)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "any", "all", "argmax",
                                  "std", "count_nonzero"])
def test_empty_reductions(backend, name):
    """Identity for sum/prod/any/all; ValueError for max/min/argmax of
    nothing; nan for mean/std (warnings are not compared)."""
    fn = getattr(np, name)
    check(lambda x: fn(x), np.zeros((0,)), backend=backend)
    check(lambda x: fn(x, axis=1), np.zeros((3, 0)), backend=backend)
    check(lambda x: fn(x, axis=0), np.zeros((3, 0)), backend=backend)


@pytest.mark.parametrize("dt", ALL)
def test_reduction_result_dtypes(backend, dt):
    a = (np.arange(12) % 5).astype(dt).reshape(3, 4)
    check(lambda x: (x.sum(), x.sum(axis=0), np.prod(x, axis=1), x.max(), x.min(axis=0),
                     x.any(axis=1), x.all(), np.cumsum(x, axis=1)),
          a, backend=backend)
    if not dt.startswith("complex") and dt != "bool":
        check(lambda x: (x.mean(), x.mean(axis=1), x.var(), x.std(axis=0, ddof=1)),
              a, backend=backend)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "uint64"])
def test_prod_sum_wrap(backend, dt):
    info = np.iinfo(dt)
    a = np.array([info.max, 3, 5, 7, info.max // 2], dtype=dt)
    check(lambda x: (np.prod(x), np.prod(x, dtype=x.dtype), np.sum(x, dtype=x.dtype),
                     np.cumprod(x, dtype=x.dtype), np.cumsum(x)),
          a, backend=backend)


def test_keepdims_and_tuple_axes(backend):
    a = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4) - 7.5
    check(lambda x: (x.sum(axis=(0, 2), keepdims=True), x.max(axis=(-1, 0)),
                     np.mean(x, axis=(1,), keepdims=True), x.min(axis=(0, 1, 2))),
          a, backend=backend)
    check(lambda x: x.sum(axis=(0, 0)), a, backend=backend)   # duplicate axis: ValueError
    check(lambda x: x.sum(axis=3), a, backend=backend)        # AxisError


def test_reduction_options(backend):
    """axis=/dtype=/keepdims=/initial=/where=/ddof=/correction= as each
    reduction family reads them (one option path in shim_reduce.c)."""
    a = (np.arange(24.0).reshape(2, 3, 4) - 9) / 4
    check(lambda x: (np.sum(x, axis=1, dtype=np.float32, keepdims=True),
                     np.prod(x, axis=(0, 2), initial=2.0),
                     np.max(x, axis=-1, initial=-100.0, where=x < 1),
                     np.sum(x, where=x > 0, axis=0),
                     np.any(x > 1, axis=0, keepdims=True),
                     np.mean(x, axis=2, dtype=np.float32),
                     np.var(x, axis=(0, 1), ddof=1, keepdims=True),
                     np.std(x, correction=2), np.std(x, axis=1, dtype=np.float32),
                     np.nanmean(x, axis=1, keepdims=True),
                     np.argmax(x, axis=1, keepdims=True), np.argmin(x, keepdims=True),
                     np.count_nonzero(x, axis=(0, 2), keepdims=True),
                     np.cumsum(x, axis=1, dtype=np.float32), np.cumprod(x, axis=None),
                     np.add.reduce(x, keepdims=True), np.multiply.reduce(x, axis=None),
                     np.maximum.reduce(x, axis=(1, 2), initial=0.5),
                     np.add.accumulate(x, axis=2, dtype=np.float32)),
          a, backend=backend)
    check(lambda x: np.std(x, ddof=1, correction=1), a, backend=backend)  # ValueError
    check(lambda x: np.min(x, where=x > 0), a, backend=backend)  # no identity: ValueError

    def outs(x):
        o1, o2, o3 = np.empty((2, 4)), np.empty(3, np.float32), np.empty((3,), np.int64)
        np.sum(x, axis=1, out=o1)
        np.mean(x, axis=(0, 2), out=o2)
        r = np.argmax(x.reshape(6, 4)[:3], axis=1, out=o3)
        return o1, o2, o3, r is o3
    check(outs, a, backend=backend)


@pytest.mark.parametrize("fn, reason", [
    (lambda x: np.sum(x, dtype=object), "reduction with a non-numeric dtype="),
    (lambda x: np.cumsum(x, dtype=object), "cumulative op with a non-numeric dtype="),
    (lambda x: np.mean(x, dtype=object), "numpy.mean with a non-numeric dtype="),
    (lambda x: np.std(x, dtype=object), "numpy.std with a non-numeric dtype="),
    (lambda x: np.mean(x, where=x > 0), "numpy.mean with where="),
    (lambda x: np.var(x, where=x > 0), "numpy.var with where="),
    (lambda x: np.nanmean(x, where=x > 0), "numpy.nanmean with where="),
])
def test_reduction_options_not_modelled_break(backend, fn, reason):
    import numdyn
    a = np.arange(6.0).reshape(2, 3) - 2
    check(fn, a, backend=backend)
    out = numdyn.explain(fn)(a)
    assert out.graph_break_count == 1
    assert reason in out.break_reasons[0].reason, out.break_reasons[0].reason


_EMPTY_STAT_CASES = [
    lambda x: x[:0].mean(axis=0),
    lambda x: x[:0].mean(),
    lambda x: np.mean(x[:, :0], axis=1),
    lambda x: x.var(ddof=10),
    lambda x: x.std(axis=0, ddof=2.5),
    lambda x: x[:0].var(axis=1),
    lambda x: np.average(x[:0], axis=0),
    lambda x: x.mean(axis=1, keepdims=True),
]


@pytest.mark.parametrize("k", range(len(_EMPTY_STAT_CASES)))
def test_mean_var_of_too_few_elements_warn_as_numpy(backend, k):
    """_methods._mean warns "Mean of empty slice" and _var "Degrees of
    freedom <= 0 for slice" before the divide's own warning, and a 0-d
    result is divided as NumPy scalars ("invalid value encountered in
    scalar divide"); warnings are compared, on every call."""
    fn = _EMPTY_STAT_CASES[k]
    for _ in range(3):
        check(fn, np.ones((5, 2)), backend=backend, warnings=True)


def test_scalar_results_are_instances_of_their_scalar_type():
    import numdyn

    def f(a):
        s = a.sum()
        return (isinstance(s, float), isinstance(s, np.floating), isinstance(s, np.ndarray),
                np.isscalar(s), isinstance(a.max() > 0, np.bool_), isinstance(a, np.ndarray),
                isinstance(a[:1].sum(), np.float64), isinstance(a.astype(np.int32).sum(), np.integer))
    a = np.ones(4)
    assert numdyn.compile(f)(a) == f(a)


@pytest.mark.parametrize("op", ["iter", "len"])
def test_scalar_results_refuse_len_and_iter_as_numpy_scalars_do(op):
    """a.sum() is np.float64, whose TypeError names the scalar type, not a
    0-d array's ("iteration over a 0-d array")."""
    def f(a):
        s = a.astype(np.int32).sum() if a[0] > 5 else a.sum()
        try:
            return list(s) if op == "iter" else len(s)
        except TypeError as e:
            return str(e)
    cf = numdyn.compile(f)
    for a in (np.ones(3), np.ones(3), np.full(3, 9.0)):
        assert cf(a) == f(a)


def _nan_reductions(a, mode):
    with np.errstate(all=mode):
        return (np.nanmean(a, axis=0), np.nanmax(a, axis=0), np.nanmin(a, axis=1),
                np.nanmean(a[:, 1]), np.nanmax(a))


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("floor", [True, False])
def test_all_nan_slices_warn_as_numpy_whatever_the_errstate(mode, floor):
    """NumPy's nanmean divides by the count with FP errors ignored and warns
    "Mean of empty slice"; nanmax/nanmin warn "All-NaN slice encountered".
    Neither is an FP error: errstate(all='raise') must not turn them into
    FloatingPointError, errstate(all='ignore') must not hide them."""
    import warnings
    cf = numdyn.compile(_nan_reductions, options={"floor": floor})
    clean = np.arange(12.0).reshape(4, 3)
    holes = clean.copy()
    holes[:, 0] = np.nan
    holes[2, :] = np.nan
    for a in (clean, holes, clean, holes, holes):
        got = []
        for fn in (_nan_reductions, cf):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = fn(a.copy(), mode)
            got.append((r, sorted(str(x.message) for x in w)))
        (r1, w1), (r2, w2) = got
        assert w2 == w1
        for x, y in zip(r1, r2):
            assert type(y) is type(x)
            np.testing.assert_array_equal(y, x)


def test_float16_out_rounds_as_numpy(backend):
    """var/std/sum/mean of float32 into a float16 out=: NumPy reduces in
    float32 into out (one rounding to float16), then divides and roots the
    float16 value there (a second rounding): bit-equal results, where a
    single rounding of the float32 variance is off by 1-2 ulp."""
    rng = np.random.default_rng(1)
    xs = [(rng.standard_normal(1000) * s).astype(np.float32) for s in (2.07, 1.5, 3.3, 0.9)]

    def f(x, o1, o2, o3, o4, o5):
        np.var(x, out=o1)
        np.std(x, out=o2)
        np.var(x.reshape(100, 10), axis=0, out=o3)
        np.sum(x, out=o4)
        np.mean(x, out=o5)
        return o1, o2, o3, o4, o5
    fc = numdyn.compile(f, backend=backend)
    for x in xs:
        outs = lambda: (np.empty((), np.float16), np.empty((), np.float16), np.empty(10, np.float16),
                        np.empty((), np.float16), np.empty((), np.float16))
        want, got = f(x, *outs()), fc(x, *outs())
        for w, g in zip(want, got):
            assert g.dtype == np.float16
            np.testing.assert_array_equal(g, w)
