"""Kernels raise no spurious floating-point flag for a NaN (session 28, probe10).

NumPy's loops take a quiet NaN without raising "invalid"; x86 compares
that are not == or != (and GCC vectorizes even __builtin_isless /
__builtin_isgreater as the signaling vcmpnltpd) raise it for one. A kernel
whose operations may flag "invalid" then had NumPy run the graph again to
learn what it reports (counter errstate_reruns): right values, a graph
computed twice for any array holding a NaN -- float64 log/log2/log10/log1p
(numdyn's own, special lanes chosen by compares), sin/cos and float32
tan/arcsin/arccos (SLEEF's range reduction), power/float_power/hypot
and float32 arctan2 (SLEEF's), float64 arctan2 (numdyn's, ordered
compares), remainder/floor_divide/divmod (the sign compares), running
max/min (maximum.accumulate: compares only, yet counted as able to flag).
SLEEF's float32 tan also raised "divide by zero" for +-0 (np.tan of a
range starting at 0).
Each case: the warm call under np.errstate(all="raise", under="ignore")
with warnings as errors runs no rerun and gives NumPy's values.
"""
import warnings

import numpy as np
import pytest

import numdyn

UNARY = ["log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos"]
BINARY = ["power", "float_power", "arctan2", "hypot", "remainder", "floor_divide"]
OTHER = {
    "pow_scalar": lambda a, b: a ** 2.5,
    "divmod": lambda a, b: np.divmod(a, b)[1] + np.divmod(b, 0.3)[0],
    "mod_scalar": lambda a, b: a % 0.7 + a // -0.3,
    "maximum_acc": lambda a, b: np.maximum.accumulate(a),
    "minimum_acc": lambda a, b: np.minimum.accumulate(b) * 2,
    "fmax_acc": lambda a, b: np.fmax.accumulate(a),
}
SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0]


def _data(dt, nan_every=7, zero_every=None):
    x = np.random.default_rng(1).uniform(0.05, 0.95, 20011).astype(dt)
    x[3::nan_every] = np.nan
    if zero_every:
        x[::zero_every] = 0.0
        x[1::zero_every] = -0.0
    return x


def _no_rerun(fn, *args):
    cf = numdyn.compile(fn, options={"floor": False})
    cf(*args)
    numdyn.utils.wait_compiles()
    r0 = numdyn.utils.counters["errstate_reruns"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise", under="ignore"):
            got = cf(*args)
    assert numdyn.utils.counters["errstate_reruns"] == r0, "the kernel raised a flag NumPy does not"
    want = fn(*args)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype == np.float32 else 1e-13, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_nan_operand_raises_no_flag(name, dt):
    uf = getattr(np, name)
    _no_rerun(lambda a: uf(a), _data(dt))


@pytest.mark.parametrize("dt", ["float64", "float32", "float16"])
@pytest.mark.parametrize("name", BINARY)
def test_nan_operands_of_two_raise_no_flag(name, dt):
    uf = getattr(np, name)
    _no_rerun(lambda a, b: uf(a, b), _data(dt), _data(dt, nan_every=5)[::-1].copy())


@pytest.mark.parametrize("dt", ["float64", "float32", "float16"])
@pytest.mark.parametrize("name", list(OTHER))
def test_nan_operands_other_forms_raise_no_flag(name, dt):
    _no_rerun(OTHER[name], _data(dt), _data(dt, nan_every=5)[::-1].copy())


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", BINARY + ["divmod"])
def test_special_operands_as_numpy(name, dt):
    # every pair of special values (the NaN lanes' C99 values: pow(1, nan)
    # and pow(nan, 0) are 1, hypot(inf, nan) is inf), with NumPy's warnings
    from oracle import check
    fi = np.finfo(dt)
    v = np.array(SPECIALS + [fi.max / 2, -fi.smallest_subnormal * 3], dtype=dt)
    a, b = np.repeat(v, v.size), np.tile(v, v.size)
    a, b = np.tile(a, 40), np.tile(b, 40)   # past a vector's worth of lanes
    uf = np.divmod if name == "divmod" else getattr(np, name)
    fn = lambda x, y: uf(x, y)
    cf = numdyn.compile(fn, options={"floor": False})
    for _ in range(2):
        check(fn, a, b, compiled=cf, warnings=True, signed_zeros=True)


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", ["sin", "tan", "arcsin", "log1p"])
def test_signed_zero_operands_raise_no_flag(name, dt):
    uf = getattr(np, name)
    _no_rerun(lambda a: uf(a), _data(dt, nan_every=10**9, zero_every=5))


def test_log_special_operands_still_flag():
    # the real flags stay: log of a negative number "invalid", of 0 "divide"
    f = numdyn.compile(lambda a: (np.log(a), np.log1p(a - 1.5)), options={"floor": False})
    x = _data("float64")
    x[10] = -1.0
    x[20] = 0.0
    for _ in range(2):
        with pytest.raises(FloatingPointError):
            with np.errstate(invalid="raise", divide="ignore"):
                f(x)
        with pytest.raises(FloatingPointError):
            with np.errstate(divide="raise", invalid="ignore"):
                f(x)
        with np.errstate(all="ignore"):
            got = f(x)
        with np.errstate(all="ignore"):
            want = (np.log(x), np.log1p(x - 1.5))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, equal_nan=True)
