"""Horizontal fusion (issue 19, item 3): independent reductions and
pointwise outputs that read the same inputs over the same iteration space
share one pass over memory -- x.mean(0) and x.std(0), a.min() and a.max(),
sum and sum of squares, several outputs of one function -- and the row
values computed from reductions (X.max(0) - X.min(0)) run in the same
kernel as the reductions, for any reduced axes.

A sum of squared deviations from a mean of the same pass (var and std over
a leading axis) joins that pass (item 4: standardization in two passes).

NumPy is the oracle (values within tolerance by dtype, dtypes, shapes,
returned types) over dtypes, layouts (C, F, strided, broadcast), NaN and
ties; the counters show the fusion: kernel_runs (kernels a call runs) and
bytes_read (bytes of the arrays kernels read, each once per kernel run:
bytes_read / x.nbytes is the number of passes over x). The counts fail
without the fusion.
"""
import numpy as np
import pytest

import numdyn
from fusion_counts import passes
from oracle import check

FLOATS = ["float64", "float32"]
DTYPES = ["float64", "float32", "int64", "int32"]


def data(shape, dt, seed=0, pos=False):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        a = rng.uniform(0.5, 1.5, shape) if pos else rng.standard_normal(shape)
        return a.astype(dt)
    if np.dtype(dt).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(-50, 50, size=shape).astype(dt)


def layouts(shape, dt, seed=0, pos=False):
    """the same logical shape as C, F, a strided view and a broadcast array"""
    yield "C", data(shape, dt, seed, pos)
    yield "F", np.asfortranarray(data(shape, dt, seed, pos))
    big = data((shape[0] * 2,) + tuple(shape[1:]), dt, seed + 1, pos)
    yield "strided", big[::2]
    # a column broadcast along the other dims (stride 0): reductions over
    # axis 0 stay non-degenerate (a constant column's std is rounding noise)
    col = data((shape[0],) + (1,) * (len(shape) - 1), dt, seed + 2, pos)
    yield "broadcast", np.broadcast_to(col, shape)


# ------------------------------------------------------------ programs
def min_and_max(a):
    return a.min(), a.max()


def ptp(a):
    return a.max() - a.min()


def sum_and_sumsq0(x):
    return x.sum(0), (x * x).sum(0)


def sum_and_sumsq1(x):
    return x.sum(1), (x * x).sum(1)


def sum_and_sumsq_all(x):
    return x.sum(), (x * x).sum()


def mean_and_std0(x):
    return x.mean(0), x.std(0)


def minmax_scale(x):
    lo = x.min(0)
    return (x - lo) / (x.max(0) - lo)


def standardize(x):
    return (x - x.mean(0)) / x.std(0)


def arg_and_value(x):
    return x.argmin(0), x.min(0), x.argmax(0), x.max(0)


def arg_and_value_all(a):
    return a.argmin(), a.min(), a.argmax(), a.max()


def stats_row(x):
    # several independent reductions over the trailing axis and row values
    return x.max(1) - x.min(1), x.sum(1), x.mean(1)


# ------------------------------------------------------------ the oracle
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("fn", [min_and_max, ptp, sum_and_sumsq0, sum_and_sumsq1, sum_and_sumsq_all, stats_row],
                         ids=lambda f: f.__name__)
def test_reductions_share_a_pass_values(backend, fn, dt):
    for _, x in layouts((300, 24), dt, pos=True):
        check(fn, x, backend=backend)


# X - X.mean(0) cancels: its absolute error is the mean's rounding error
# (NumPy sums a Fortran array's columns pairwise, numdyn in row order: both
# within n * eps * max|x|), so values near 0 get an absolute tolerance
CANCEL_ATOL = {"float64": 1e-13, "float32": 2e-5}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("fn", [mean_and_std0, minmax_scale, standardize], ids=lambda f: f.__name__)
def test_statistics_values(backend, fn, dt):
    for _, x in layouts((500, 8), dt, pos=True):
        check(fn, x, backend=backend, atol=CANCEL_ATOL[dt] if fn is standardize else None)


@pytest.mark.parametrize("dt", ["int64", "int32"])
def test_statistics_of_integers(backend, dt):
    for _, x in layouts((400, 6), dt):
        check(mean_and_std0, x, backend=backend)
        check(standardize, x, backend=backend, atol=CANCEL_ATOL["float64"])


def test_bool_reductions_together(backend):
    def f(b):
        return b.any(0), b.all(0), b.sum(0), b.any(), b.all()
    for _, b in layouts((200, 9), "bool"):
        check(f, b, backend=backend)


@pytest.mark.parametrize("dt", DTYPES)
def test_arg_reductions_with_values(backend, dt):
    x = data((200, 7), dt)
    x[3] = x[40]       # ties: the first occurrence wins
    x[100, :] = x.max() if dt.startswith("int") else 99.0
    x[101, :] = x[100, :]
    check(arg_and_value, x, backend=backend)
    check(arg_and_value_all, x.ravel(), backend=backend)
    check(arg_and_value, np.asfortranarray(x), backend=backend)


@pytest.mark.parametrize("dt", FLOATS)
def test_nan_in_fused_reductions(backend, dt):
    x = data((300, 5), dt)
    x[7, 1] = np.nan
    x[200, 1] = np.nan
    x[50, 3] = np.nan
    for fn in (min_and_max, ptp, arg_and_value, sum_and_sumsq0, mean_and_std0, minmax_scale, stats_row):
        check(fn, x, backend=backend)
    check(arg_and_value_all, x.ravel(), backend=backend)
    check(min_and_max, x.ravel(), backend=backend)


def test_keepdims_and_other_axes(backend):
    x = data((6, 50, 7), "float64", pos=True)

    def f(x):
        return x.sum(1, keepdims=True), (x * x).sum(1), x.max(1) - x.min(1)

    def g(x):
        return x.sum((0, 2)), x.min((0, 2)), x.max(axis=(0, 2), keepdims=True)

    for _, y in layouts((6, 50, 7), "float64", pos=True):
        check(f, y, backend=backend)
        check(g, y, backend=backend)
    check(f, x, backend=backend)


def test_dependent_reduction_is_not_merged(backend):
    # the second reduction reads the first: two passes, right values
    def f(x):
        m = x.sum(0)
        return m, (x * m).sum(0)
    check(f, data((300, 6), "float64", pos=True), backend=backend)


def test_consumer_between_reductions(backend):
    # a value made from the first reduction before the second one is
    # traced, and an input of the second made after the first
    def f(x, y):
        a = x.sum(0)
        b = a * 2.0
        z = np.exp(y) + b
        return b, z, x.max(0), z.sum(0)
    check(f, data((100, 4), "float64"), data((100, 4), "float64", seed=2), backend=backend)


# ------------------------------------------------------------ counters
def test_min_and_max_one_pass():
    a = data(100_000, "float64")
    assert passes(min_and_max, a) == (1, 1.0)
    assert passes(ptp, a) == (1, 1.0)
    assert passes(arg_and_value_all, a) == (1, 1.0)


@pytest.mark.parametrize("fn", [sum_and_sumsq0, sum_and_sumsq1, sum_and_sumsq_all, stats_row],
                         ids=lambda f: f.__name__)
def test_sum_and_sumsq_one_pass(fn):
    x = data((20_000, 24), "float64")
    assert passes(fn, x) == (1, 1.0)


def test_mean_and_std_one_pass():
    # the std's sum of squared deviations is folded in the pass of its mean
    x = data((50_000, 8), "float64")
    assert passes(mean_and_std0, x) == (1, 1.0)


def test_standardize_two_passes():
    # issue 19 item 4: (X - X.mean(0)) / X.std(0) reads X twice
    for dt in FLOATS:
        x = data((50_000, 8), dt)
        assert passes(standardize, x) == (2, 2.0)


def test_minmax_scale_two_passes():
    x = data((50_000, 8), "float64")
    assert passes(minmax_scale, x) == (2, 2.0)


def test_pointwise_outputs_one_pass():
    def f(x):
        return x + 1.0, x * 2.0, np.sqrt(np.abs(x))
    x = data((1000, 100), "float64")
    assert passes(f, x) == (1, 1.0)


# ------------------------------------------------------------ moments
# A sum of squared deviations from a mean of the same pass (NumPy's var and
# std over a leading axis) is computed chunk by chunk in that pass (Chan's
# update): within float tolerance of NumPy's two passes, also far from 0.
@pytest.mark.parametrize("dt", FLOATS)
def test_var_std_variants(backend, dt):
    def f(x):
        return x.var(0), x.std(0, ddof=1), x.var(0, keepdims=True), x.mean(0)
    for _, x in layouts((700, 5), dt):
        check(f, x, backend=backend)
    check(f, data((1, 5), dt), backend=backend)
    check(f, data((129, 3), dt), backend=backend)


def test_var_far_from_zero(backend):
    # a large mean: a sum-of-squares formula would cancel, Chan's does not
    x = 1e6 + data((3000, 4), "float64")
    check(mean_and_std0, x, backend=backend)
    check(standardize, x, backend=backend, atol=1e-9)


def test_var_other_axes(backend):
    def f(x):
        return x.std(1), x.var(axis=1, keepdims=True)
    for _, x in layouts((4, 300, 5), "float64"):
        check(f, x, backend=backend, atol=1e-13)   # broadcast: std 0, rounding noise
    assert passes(f, data((4, 3000, 5), "float64")) == (1, 1.0)


def test_var_with_nan_inf_and_empty(backend):
    x = data((300, 4), "float64")
    x[10, 0] = np.nan
    x[20, 1] = np.inf
    x[30, 2] = -np.inf
    check(mean_and_std0, x, backend=backend)
    check(mean_and_std0, np.zeros((0, 3)), backend=backend)


def test_deviation_from_other_than_the_mean(backend):
    # the same structure with a divisor that is not the count: the kernel
    # adds n * (mean - S / c) ** 2 to the moment
    def f(x):
        return ((x - x.sum(0, keepdims=True) / 5.0) ** 2).sum(0), x.sum(0)
    check(f, data((400, 6), "float64"), backend=backend)
    check(f, data((400, 6), "float32"), backend=backend)


# ------------------------------------------------------------ regression
def test_row_value_reads_a_scalar_view(backend):
    # a view of a 0-d SCALAR (np.zeros((2, 1)) is 0.0 broadcast) read by a
    # value computed once per row: it was declared inside the element loop
    # only, and the kernel did not compile ("v2 undeclared")
    x = np.arange(6.0).reshape(2, 3)

    def f(x):
        return x - (x.max(axis=1, keepdims=True) + np.zeros((2, 1)))

    def g(x):
        return x / (x.sum(axis=1, keepdims=True) * np.full((2, 1), 2.0))

    def h(x):
        return x.max(axis=1) + np.ones(2), x.min(axis=1) * np.full(2, 3.0)

    for fn in (f, g, h):
        check(fn, x, backend=backend)
        check(fn, data((2, 3), "float32"), backend=backend)


# ------------------------------------------------------------ tall arrays
@pytest.mark.parametrize("dt", DTYPES)
def test_tall_columns_split_in_chunks(backend, dt):
    # a reduction over the rows of a tall array with few columns runs as
    # chunks of rows in parallel, combined in chunk order (first occurrence
    # and first NaN of the arg-reductions kept across chunks)
    x = data((20_000, 6), dt, pos=True)
    top = x.max() + 1
    x[7, 1] = x[15_000, 1] = top        # a tie across chunks
    x[19_999, 4] = top
    if dt.startswith("float"):
        x[12_000, 2] = np.nan
        x[3_000, 2] = np.nan

    def f(x):
        return x.min(0), x.max(0), x.argmax(0), x.argmin(0), x.sum(0), x.max(0) - x.min(0)

    check(f, x, backend=backend)
    check(f, np.asfortranarray(x), backend=backend)
    check(f, data((5000, 3), dt, pos=True)[::-1], backend=backend)


def three_outputs(x):
    return x + 1.0, x * 2.0, np.sqrt(np.abs(x))


@pytest.mark.parametrize("fn,kp", [(standardize, (2, 2.0)), (mean_and_std0, (1, 1.0)),
                                   (three_outputs, (1, 1.0))])
def test_passes_over_layouts(fn, kp):
    # issue 19 items 3 and 4 beyond C-ordered tall arrays: Fortran order,
    # every other row, and wide (8 rows of 50000, F-ordered: a transposed
    # tall array; its column statistics are vectors of 1/8 of x, read once
    # more by the second pass); the values of the very calls counted are
    # NumPy's
    base = data((100_000, 8), "float64")
    xs = {"F": np.asfortranarray(base[:50_000]), "rows::2": base[::2], "wide": base[:50_000].T}
    f = numdyn.compile(fn)
    c = numdyn.utils.counters
    for name, x in xs.items():
        f(x)
        numdyn.utils.wait_compiles()
        k0, b0 = c["kernel_runs"], c["bytes_read"]
        got = f(x)
        k, b = c["kernel_runs"] - k0, c["bytes_read"] - b0
        assert k == kp[0] and kp[1] <= round(b / x.nbytes, 1) <= kp[1] + 0.25, (name, k, b / x.nbytes)
        want = fn(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=name)


# ---------------------------------------------- pointwise next to row reductions
# Issue 19 item 3: a pointwise output over the domain of a last-axis
# reduction, reading what the reduction reads, is computed in the row
# kernel's last walk of each row -- before (x * 2, then (x ** 2).sum(1)) or
# after the reduction in program order, depending on it or not.
def scaled_and_norms(x):
    return x * 2.0, (x ** 2).sum(1)


def norms_then_scaled(x):
    s = (x ** 2).sum(1, keepdims=True)
    return s, np.sqrt(np.abs(x)) + 1.0


def centered_and_scaled(x):
    return x - x.mean(1, keepdims=True), x * 3.0


def chain_before(x):
    # y joins, z reads y; w reads z and feeds the reduction: nothing joins
    # that the reduction waits on
    y = x * 2.0
    z = y + 1.0
    w = (x + z.sum(1, keepdims=True)).max(1)
    return y, z, w


def gram_epilogue(q, p):
    d = (q ** 2).sum(1)[:, None] - 2 * q @ p.T + (p ** 2).sum(1)
    return np.argmin(d, axis=1)


ROWPW = [scaled_and_norms, norms_then_scaled, centered_and_scaled, chain_before]


@pytest.mark.parametrize("fn", ROWPW)
@pytest.mark.parametrize("dt", FLOATS)
def test_pointwise_with_row_reduction_values(backend, fn, dt):
    x = data((300, 40), dt)
    x[3, 5] = np.nan
    x[7, :] = np.inf
    # float32 x - mean cancels near zero: a mean summed in another order
    # moves such a value by ~1 ulp of the row's scale
    atol = 1e-6 if dt == "float32" else None
    with np.errstate(invalid="ignore"):
        check(fn, x, backend=backend, atol=atol)
        if dt == "float64":
            check(fn, np.asfortranarray(x)[::2, ::-1], backend=backend)


@pytest.mark.parametrize("fn,kp", [(scaled_and_norms, (1, 1.0)), (norms_then_scaled, (1, 1.0)),
                                   (centered_and_scaled, (1, 1.0))])
def test_pointwise_with_row_reduction_one_pass(fn, kp):
    assert passes(fn, data((20_000, 32), "float64")) == kp


def test_gram_form_values_ties_nan():
    # BLAS's product (the same library as NumPy's), then one kernel: the
    # argmin over the product with the norms added; 2 * q and q's norms read
    # q in one pass. Ties resolve to the first index, a NaN row to its first
    # NaN (NumPy's argmin).
    rng = np.random.default_rng(3)
    f = numdyn.compile(gram_epilogue)
    for dt in FLOATS:
        q = rng.integers(-3, 4, (2000, 32)).astype(dt)
        p = rng.integers(-3, 4, (256, 32)).astype(dt)
        p[7] = p[3]                      # exact ties: index 3 wins
        q[5, 2] = np.nan
        check(gram_epilogue, q, p, compiled=f)
    f(q, p)
    numdyn.utils.wait_compiles()
    c = numdyn.utils.counters
    k0 = c["kernel_runs"]
    np.testing.assert_array_equal(f(q, p), gram_epilogue(q, p))
    # q's norms with 2 * q, p's norms, the argmin epilogue
    assert c["kernel_runs"] - k0 == 3
