"""Side outputs of column reductions, and the lanes of row sums (issue 19).

A pointwise value over a reduction's domain that the reduction does not
read (`y = x * 2` next to `x.sum(0)`, before or after it in the program)
is stored by the reduction kernel from the walk it makes over x anyway,
when the innermost dim is kept (the kernel's vector loop runs along it and
visits each element once): one kernel and one pass over x instead of two.
Counters pin the kernels and passes over C, F, strided and reversed
layouts, for the tall path (chunks of rows in parallel, >= 4096 rows) and
the short one. NumPy is the oracle over dtypes and layouts, with NaN and
ties for min/max/argmin, moments (std/mean) in the same kernel, chains of
side values and 3-d domains; one function holds many forms, so few
compiles check many values.

A returned pointwise value that the reduction reads itself (`y = x * 2;
return y, y.sum(0)`, values between it and the folds included) joins the
reduction's kernel the same way: stored from the walk that computes it for
the fold, one kernel and one pass, not a kernel writing y and another
reading it back; a view of it read by the fold stays two kernels.

Row sums of cheap values (x.std(-1)'s mean and squared deviations) keep
32 (float64) / 64 (float32) running sums per block instead of one vector
(the adds' latency bound a row re-read from L1); a transcendental's sum
(softmax's exp) keeps one: the generated source pins both.
"""
import numpy as np
import pytest

import numdyn
from fusion_counts import data, layouts, passes
from oracle import check


def ew_and_colsum(x):
    y = x * 2
    s = x.sum(0)
    return y, s


def many(x):
    # side values before and after the reductions, a chain of them, and
    # every kind of column fold in one group
    y = x * 2
    lo, hi = x.min(0), x.max(0)
    a = x.argmin(0)
    z = np.abs(x)
    w = z + 1
    return y, lo, hi, a, w, x.std(0), x.mean(0), x.sum(0)


def middle_axis(x):
    return x.sum(1), -x


def leading_two(x):
    return np.maximum(x, 0), x.max((0, 1))


def own_colsum(x):
    # the reduction reads the returned pointwise value itself
    y = x * 2
    return y, y.sum(0)


def own_chain(x):
    # a returned value, a value between it and the folds, folds of both
    y = np.abs(x) + 1
    z = y * 3
    return y, z.max(0), z.argmin(0), y.mean(0)


def own_rowsum(x):
    y = x * 2
    return y, y.sum(-1)


def own_view(x):
    # the reduction reads a view of the returned value: not joined (the
    # kernel would read its own output)
    y = x * 2
    return y, y.T.sum(0)


@pytest.mark.parametrize("rows", [300, 5000])
def test_side_output_one_pass(rows):
    # tall (split across chunks) and short; every layout
    for i, x in enumerate(layouts((rows, 8), "float64")):
        assert passes(ew_and_colsum, x) == (1, 1.0)
        if i in (0, 3):
            assert passes(many, x) == (1, 1.0)


def test_side_output_values_layouts():
    for i, x in enumerate(layouts((5000, 9), "float64")):
        if i in (0, 3):
            check(many, x, check_layout=True)
        check(ew_and_colsum, x[:37], check_layout=True)


def test_side_output_values_dtypes():
    x = data((600, 10), "float32")
    check(many, x)
    check(many, x[:5])
    check(ew_and_colsum, data((600, 10), "int32"))


def test_side_output_nan_ties():
    x = data((4100, 6), "float64")
    x[7, 0] = np.nan                          # first NaN of column 0 wins
    x[9, 0] = np.nan
    x[3, 1] = x[4000, 1] = -9.0               # ties: the first index
    x[:, 2] = 1.5                             # a constant column
    x[2, 3] = -np.inf
    x[5, 4] = np.inf
    check(many, x)
    check(many, x[:50])


def test_side_output_3d():
    x = data((40, 30, 9), "float64")
    for v in (x, x[::-1, :, ::-1]):
        check(middle_axis, v)
    check(leading_two, x)
    assert passes(middle_axis, x) == (1, 1.0)
    assert passes(leading_two, x) == (1, 1.0)


def test_side_output_empty_and_one_row():
    for shape in [(0, 5), (1, 5), (3, 0)]:
        check(ew_and_colsum, np.ones(shape))


def _sources(tmp_path, monkeypatch, fn, x):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))
    numdyn.compile(fn)(x)
    numdyn.utils.wait_compiles()
    return "".join(p.read_text() for p in tmp_path.rglob("kernel_*.c"))


def row_std(x):
    return x.std(axis=-1)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("fn,dt,lanes", [(row_std, "float64", "bl_[32]"), (row_std, "float32", "bl_[64]"),
                                         (softmax, "float32", None)])
def test_row_sum_lanes(tmp_path, monkeypatch, fn, dt, lanes):
    x = data((40, 1000), dt)
    src = _sources(tmp_path, monkeypatch, fn, x)
    if lanes:
        assert src.count(lanes) == 2, src     # the mean's sum and the deviations'
    else:
        assert "bl_[" not in src, src
    # rows whose length is not a multiple of the lanes, and a tail block
    for n in (1, 31, 257, 1000):
        check(fn, data((7, n), dt))


@pytest.mark.parametrize("rows", [300, 5000])
def test_returned_value_reduced_one_pass(rows):
    # y = x * 2; return y, y.sum(0): the reduction kernel stores y from the
    # walk that computes it for the sum (one kernel, one pass over x), over
    # every layout; a row sum too (one row kernel)
    for i, x in enumerate(layouts((rows, 8), "float64")):
        assert passes(own_colsum, x) == (1, 1.0)
        check(own_colsum, x, check_layout=True)
        if i == 3 or (i == 0 and rows > 300):
            assert passes(own_chain, x) == (1, 1.0)
            check(own_chain, x, check_layout=True)
        if i == 0:
            assert passes(own_rowsum, x) == (1, 1.0)
            check(own_rowsum, x, check_layout=True)
    if rows > 300:
        x = data((rows, 8), "float64")
        assert passes(own_view, x) == (2, 2.0)
        check(own_view, x)


def test_returned_value_reduced_3d_dtypes():
    x = data((40, 30, 9), "float64")
    for v in (x[::-1, :, ::-1], np.asfortranarray(x)):
        assert passes(own_colsum, v) == (1, 1.0)
        check(own_colsum, v, check_layout=True)
    for dt in ("float32", "int8", "bool", "complex128"):
        v = data((600, 10), "float64" if dt in ("bool", "complex128") else dt)
        v = (v > 0) if dt == "bool" else v.astype(dt)
        check(own_colsum, v)
        if dt == "float32":
            check(own_chain, v)
            check(own_rowsum, v, atol=1e-5)
    v = data((4100, 6), "float64")
    v[7, 0] = v[9, 0] = np.nan                # the first NaN's index
    v[3, 1] = v[4000, 1] = -9.0               # ties: the first index
    check(own_chain, v)
    for shape in [(0, 5), (1, 5), (3, 0)]:
        check(own_colsum, np.ones(shape))


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def test_row_kernel_shares_equal_reductions(tmp_path, monkeypatch):
    # x.mean(-1) and the mean inside x.var(-1) are two graph nodes folding
    # the same values: the row kernel walks the row for one of them (then
    # the squared deviations, then the output), not two
    x = data((40, 1000), "float32")
    src = _sources(tmp_path, monkeypatch, layer_norm, x)
    assert src.count("nd_cas_push_f(") == 2, src
    for n in (1, 257):
        check(layer_norm, data((5, n), "float32"))
