"""Vector math in kernels against NumPy's libm (issue 19 point on kernel
code quality): log1p, expm1, hypot, exp, log, tanh, arcsinh, arccosh,
arctanh, sinh, cosh, cbrt, arctan2, power and logaddexp run in vector lanes
in generated loops -- SLEEF's functions, or numdyn's own
(kernels/nd_kernel.h: float64 expm1/sinh/cosh/tanh/arcsinh/arccosh/arctanh/
cbrt, float32 expm1/arcsinh/arccosh/arctanh/cbrt).
Their accuracy is checked here against NumPy's results over edge values --
subnormals, tiny and huge values, +-0, +-inf and NaN where the function
raises no floating-point warning -- and random values over decades: special
values exactly NumPy's (NaN where NaN, infinities, the sign of zero),
finite values within 4 ULP of NumPy's (float64: SLEEF and libm each
within 1 ULP of the true value; numdyn's own within 3 of NumPy's; the
wrapped ranges below one more rounding) / 8 ULP (float32; SLEEF's 3.5-ULP
variants, the inverse hyperbolics over them 5).
Every decade of each dtype is an operand: SLEEF's log1p, asinh and acosh
gave inf near the top of the range and log1p/tan/sinh 0 or a wrong
value on subnormals (kernels/nd_kernel.h wraps them). One compiled
function computes them all, so the kernel (not a NumPy fallback) is what is
checked: the counters say one kernel ran.
"""
import os
import subprocess
import sys

import numpy as np

import numdyn


def many(x, y, t):
    # x >= 0 (log1p, log, power's base), y any sign, t moderate and not
    # NaN: no operation raises a floating-point warning in NumPy
    c = np.clip(y, -0.5, 1.0)
    return (np.log1p(x), np.expm1(t), np.hypot(x, y * 1e-20), np.exp(t), np.log(x + 1.0), np.tanh(y),
            np.arcsinh(y), np.cbrt(y), np.arctan2(y, x), np.power(x + 1.0, np.clip(t, -80.0, 80.0) * 0.01), np.logaddexp(t, -t),
            np.arccosh(x + 1.0), np.tan(c), np.sinh(c), np.log1p(c), np.sinh(t * 0.5), np.cosh(t * 0.5), np.arctanh(c * 0.99),
            np.log10(x + 0.5), np.log2(x + 0.5), np.arcsin(c), np.arccos(c), np.arctan(y))


NAMES = ["log1p", "expm1", "hypot", "exp", "log", "tanh", "arcsinh", "cbrt", "arctan2", "power", "logaddexp",
         "arccosh", "tan", "sinh", "log1p(y)", "sinh(t)", "cosh", "arctanh", "log10", "log2", "arcsin", "arccos", "arctan"]


def _ulps(a, e):
    it = np.int64 if a.dtype == np.float64 else np.int32
    ai, ei = a.view(it).astype(np.int64), e.view(it).astype(np.int64)
    lo = np.iinfo(it).min
    ai = np.where(ai < 0, lo - ai, ai)
    ei = np.where(ei < 0, lo - ei, ei)
    return np.abs(ai - ei)


def _inputs(dt):
    f = np.finfo(dt)
    sub = 5e-324 if dt == np.float64 else 1e-45
    edge_x = np.array([0.0, -0.0, sub, f.tiny, 1e-300 if dt == np.float64 else 1e-38, 1e-8, 0.5, 1.0, 2.0,
                       1e15, f.max / 4, np.inf, np.nan, 0.625, 22.0, 3.0], dtype=dt)
    edge_y = np.array([-0.0, 0.0, -sub, sub, -f.tiny, 1e-30, -3.0, 20.0, -1e300 if dt == np.float64 else -1e38,
                       np.inf, -np.inf, np.nan, 0.75,
                       # float64 tanh's split (0.625) and cap (22)
                       0.625, -np.nextafter(dt(0.625), dt(0)), 22.0], dtype=dt)
    edge_t = np.array([0.0, -0.0, -sub, 1e-20, -1e-8, 1.0, -1.0, 30.0, -700.0 if dt == np.float64 else -100.0,
                       -np.inf, np.inf, 50.0, -50.0, 0.625, -0.625, 21.9], dtype=dt)
    rng = np.random.default_rng(7)
    # every decade of the dtype (subnormals, and up to its largest value:
    # SLEEF's log1p/asinh/acosh gave inf near the top, 0 at the bottom),
    # each at several positions (vector lanes and the scalar remainder)
    top = 308 if dt == np.float64 else 38
    bot = -323 if dt == np.float64 else -45
    dec = 10.0 ** np.arange(bot, top + 0.25, 0.25)
    dec = np.tile(np.concatenate([dec, [float(f.max)]]), 3)
    n = dec.shape[0]
    with np.errstate(over="ignore"):
        x = np.concatenate([dec, np.abs(rng.standard_normal(n)) * 10.0 ** rng.integers(-30, 30, n)])
        y = np.concatenate([dec * np.where(rng.random(n) < 0.5, -1, 1), rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)])
        t = rng.uniform(-80, 80, 2 * n)
        return [np.concatenate([e, r]).astype(dt) for e, r in ((edge_x, x), (edge_y, y), (edge_t, t))]


def compare(dt, bound):
    """NumPy against the kernel over _inputs(dt); raises AssertionError"""
    x, y, t = _inputs(dt)
    f = numdyn.compile(many, options={"floor": False})
    # errors ignored, as much user code runs: a flag the kernel raises
    # (SLEEF's inf, say) then reruns nothing, its values are returned
    with np.errstate(all="ignore"):
        f(x, y, t)
        numdyn.utils.wait_compiles()
        k0 = numdyn.utils.counters["kernel_runs"]
        got = f(x, y, t)
        assert numdyn.utils.counters["kernel_runs"] - k0 == 1   # the kernel, not NumPy
    want = many(x, y, t)
    for name, a, e in zip(NAMES, got, want):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype == dt, name
        assert np.array_equal(np.isnan(a), np.isnan(e)), name
        inf = np.isinf(e)
        assert np.array_equal(a[inf], e[inf]) and not np.isinf(a[~inf]).any(), (name, dt, x[~inf & np.isinf(a)][:3])
        z = e == 0
        assert np.array_equal(a[z] == 0, z[z]) and np.array_equal(np.signbit(a[z]), np.signbit(e[z])), name
        fin = np.isfinite(e)
        u = _ulps(a[fin], e[fin])
        assert u.max() <= bound, (name, dt, int(u.max()), a[fin][u.argmax()], e[fin][u.argmax()])


def test_sleef_against_numpy():
    # the store checks (NUMDYN_CHECK_STORES, conftest.py) keep loops scalar
    # -- libm's calls, not SLEEF's: without them (`make test`'s second pass,
    # this file is in VECTOR_FILES) in this process, else in one of its own
    if os.environ.get("NUMDYN_CHECK_STORES") == "0":
        compare(np.float64, 4)
        compare(np.float32, 8)
        return
    code = ("import sys; sys.path.insert(0, %r); import numpy as np, test_codegen_libm as T; "
            "T.compare(np.float64, 4); T.compare(np.float32, 8)" % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMDYN_CHECK_STORES="0")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
