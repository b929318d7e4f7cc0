"""NumPy's floating-point warnings from np.where's arms and float32 log.

NumPy computes both arms of np.where on every element, so
`np.where(x > 0, np.log(x), 0.0)` warns "invalid value encountered in log"
when x holds a negative (and raises FloatingPointError under
np.errstate(invalid="raise")). The generated C wrote the select as
`c ? a : b`; GCC moved the arm's computation (log's table load, a square
root: not if-converted) into the branch that keeps it, so the lanes the
select drops never raised their flag and numdyn returned without the
warning. A bit select keeps both arms computed (and the loop vectorized).

Float32 log (and log1p through it) on AVX2 is SLEEF's, whose NaN for a
negative operand raised "invalid" for some values only (-2 yes, -3.5 no):
one negative among positives gave no warning.
"""
import numpy as np
import pytest

from oracle import check

R = np.random.default_rng(11)
MIXED = np.array([1.0, 0.0, -1.0, 2.0, np.nan, np.inf, -np.inf, 1e-310, -3.5, 7.0])
NORMAL = R.standard_normal(3000)
ZEROS = np.where(R.random(3000) < 0.1, 0.0, R.standard_normal(3000))

WHERES = {
    "log": lambda x, y: np.where(x > 0, np.log(x), 0.0),
    "log2_entropy": lambda x, y: -np.sum(np.where(x > 0, x * np.log2(x), 0.0)),
    "xlogx": lambda x, y: np.sum(np.where(x > 0, x * np.log(x), 0.0)),
    "sqrt": lambda x, y: np.where(x > y, np.sqrt(x), y / x),
    "log1p": lambda x, y: np.where(x > -1, np.log1p(x), 0),
    "arcsin": lambda x, y: np.where(np.abs(x) <= 1, np.arcsin(x), 0),
    "inf_minus_inf": lambda x, y: np.where(np.isfinite(x), x - x, 0.0),
    "relu": lambda x, y: np.where(x > 0, x, 0.0),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("data", ["mixed", "normal", "zeros"])
@pytest.mark.parametrize("name", sorted(WHERES))
def test_where_arm_flags(name, data, dtype):
    x = {"mixed": MIXED, "normal": NORMAL, "zeros": ZEROS}[data].astype(dtype)
    y = np.resize(MIXED[::-1], x.shape).astype(dtype)
    check(WHERES[name], x, y, warnings=True)


@pytest.mark.parametrize("name", ["log", "sqrt", "arcsin", "log1p"])
def test_where_arm_raises_under_errstate(name):
    fn = WHERES[name]

    def raising(x, y):
        with np.errstate(invalid="raise"):
            return fn(x, y)

    check(raising, NORMAL, NORMAL[::-1].copy())


@pytest.mark.parametrize("fn", ["log", "log1p"])
@pytest.mark.parametrize("value", [-3.5, -710.0, -2.0, -1e30, -np.inf, -1e-40])
@pytest.mark.parametrize("n", [8, 4000])
def test_float32_log_of_one_negative(fn, value, n):
    x = np.full(n, 0.5, np.float32)
    with np.errstate(all="ignore"):
        x[n // 2 + 3] = value
    check(getattr(np, fn), x, warnings=True)
