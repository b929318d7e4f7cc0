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
import pytest

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
    # exp's results across the subnormals and up to the largest (float64's
    # is numdyn's own: 2^k applied in two factors, one rounding)
    ends = [-708.5, -720.0, -740.0, -745.0, 709.7] if dt == np.float64 else [-87.5, -95.0, -103.0, 88.6]
    edge_t = np.array([0.0, -0.0, -sub, 1e-20, -1e-8, 1.0, -1.0, 30.0, -700.0 if dt == np.float64 else -100.0,
                       -np.inf, np.inf, 50.0, -50.0, 0.625, -0.625, 21.9] + ends, dtype=dt)
    edge_x = np.concatenate([edge_x, np.array([0.25, 4.0, 1e-3, 7.0, 1e10][:len(ends)], dtype=dt)])
    edge_y = np.concatenate([edge_y, np.array([-0.25, 4.0, -1e-3, 7.0, -1e10][:len(ends)], dtype=dt)])
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


def _objdump():
    import shutil
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    return objdump


def _production_run(code, cache):
    """code run in production mode (no store checks), kernels cached in cache"""
    env = dict(os.environ, NUMDYN_CHECK_STORES="0", NUMDYN_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_own_vector_math_inline(tmp_path):
    # exp and float32 sinh/cosh/tanh are numdyn's own branch-free C (no
    # call into SLEEF: its 1-ULP exp/expf and 3.5-ULP sinhf/coshf/tanhf ran
    # up to 1.3-1.8x slower than NumPy's loops); cbrt's seed divides the bits by 3
    # in floating point (an integer division compiled to 64-bit multiplies,
    # a quarter of float32 cbrt's loop). Vectorized: packed fma in the
    # kernel, in production mode (no store checks)
    import re
    objdump = _objdump()
    code = ("import numpy as np, numdyn\n"
            "def f(a, b):\n"
            "    return np.exp(a), np.sinh(b), np.cosh(b), np.tanh(b), np.cbrt(b), np.exp(b), np.logaddexp(b, b[::-1])\n"
            "a = np.linspace(-20, 20, 5000); b = np.linspace(-9, 9, 5000).astype(np.float32)\n"
            "g = numdyn.compile(f)\n"
            "for r, e in zip(g(a, b), f(a, b)):\n"
            "    np.testing.assert_allclose(r, e, rtol=1e-6)\n"
            "numdyn.utils.wait_compiles()\n")
    _production_run(code, tmp_path)
    sos = list(tmp_path.rglob("*.so"))
    assert sos
    dis = "".join(subprocess.run([objdump, "-d", "--no-show-raw-insn", str(p)], capture_output=True,
                                 text=True).stdout for p in sos)
    calls = set(re.findall(r"call\s+\S+\s+<([^>@+]+)", dis))
    # (numdyn's own AVX-512 functions, where the target has them, are called
    # by their vector-ABI names: _ZGVeN8v_nd_zv_cbrt, _ZGVeN16v_nd_zvf_cbrt,
    # tests/test_vmath_zv.py)
    assert not [c for c in calls if re.search(r"(^|_)(expf?|sinhf|coshf|tanhf|cbrtf?)(_u\d+)?$", c)
                and not re.search(r"nd_zvf?_", c)], calls
    assert not re.search(r"vpmul(l|ud)q", dis)
    assert re.search(r"vfmadd\w*pd\s+%[yz]mm", dis) and re.search(r"vfmadd\w*ps\s+%[yz]mm", dis)
    # float32 logaddexp calls SLEEF's vector logf (its loop vectorized: a
    # float64 form of it stayed scalar, 12x slower)
    assert [c for c in calls if re.match(r"_ZGV\w+v_logf$", c)], calls


def test_logaddexp_float32_near_cancellation():
    # operands on the curve logaddexp(x, y) = 0 (x ~ -log1p(e^y)), jittered
    # by ulps: results near 0, where the error of the log1p term (~0.5) is
    # all that is left. Over SLEEF's 3.5-ULP logf it was 1.2e-7, twice
    # NumPy's own; over the 1-ULP logf it is NumPy's within a half
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, -0.01, 20000).astype(np.float32)
    y = np.log1p(-np.exp(x.astype(np.float64))).astype(np.float32)
    y = (y + rng.integers(-3, 4, y.size) * np.spacing(y)).astype(np.float32)
    c = np.float32(1.4426950)
    f = numdyn.compile(lambda a, b: (np.logaddexp(a, b), np.logaddexp2(a * c, b * c)))
    got = f(x, y)
    want = (np.logaddexp(x, y), np.logaddexp2(x * c, y * c))
    exact = (np.logaddexp(x.astype(np.float64), y.astype(np.float64)),
             np.logaddexp2((x * c).astype(np.float64), (y * c).astype(np.float64)))
    for g, w, e in zip(got, want, exact):
        assert g.dtype == np.float32
        assert np.abs(g - e).max() <= 1.5 * np.abs(w - e).max(), (np.abs(g - e).max(), np.abs(w - e).max())


def test_nan_operand_no_rerun():
    # a NaN among valid operands raises no flag in arccosh/arctanh (NumPy
    # raises none): GCC compiles < and > (even __builtin_isless) into
    # signaling compares, and the "invalid" a NaN lane raised had NumPy
    # rerun the whole graph under the default errstate
    import warnings
    for dt in (np.float64, np.float32):
        x = np.linspace(1.0, 50.0, 20000).astype(dt)
        t = np.linspace(-0.99, 0.99, 20000).astype(dt)
        x[::7] = np.nan
        t[::5] = np.nan
        f = numdyn.compile(lambda a, b: (np.arccosh(a), np.arctanh(b)))
        f(x, t)
        numdyn.utils.wait_compiles()
        r0 = numdyn.utils.counters["errstate_reruns"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = f(x, t)
        assert numdyn.utils.counters["errstate_reruns"] == r0
        for a, e in zip(got, (np.arccosh(x), np.arctanh(t))):
            assert a.dtype == e.dtype
            np.testing.assert_allclose(a, e, rtol=1e-5 if dt == np.float32 else 1e-12)


# numdyn's own functions, one kernel each: each must vectorize on its own
# (a select written as ?: keeps a loop scalar when an arm holds a division,
# a square root or a call GCC will not speculate: kernels/nd_kernel.h's
# nd_tsel is used only where no arm does); packed arithmetic of the
# function's dtype on vector registers shows the loop's vector body
OWN_VECTOR = ["sinh", "cosh", "tanh", "expm1", "exp", "cbrt", "arcsinh", "arccosh", "arctanh", "log1p"]


def test_own_vector_math_each_vectorized(tmp_path):
    import json
    import re
    objdump = _objdump()
    code = ("import sys, json, pathlib, numpy as np, numdyn\n"
            "root = pathlib.Path(numdyn.utils.cache_dir()); out = {}\n"
            "for nm in %r:\n"
            "    for dt in ('float64', 'float32'):\n"
            "        before = set(root.rglob('*.so'))\n"
            "        a = np.linspace(1.5, 3.0, 4099).astype(dt)\n"
            "        uf = getattr(np, nm)\n"
            "        g = numdyn.compile(lambda x: uf(x * 0.5))\n"
            "        np.testing.assert_allclose(g(a), uf(a * 0.5), rtol=1e-5)\n"
            "        numdyn.utils.wait_compiles()\n"
            "        out[nm + ' ' + dt] = [str(p) for p in set(root.rglob('*.so')) - before]\n"
            "print(json.dumps(out))\n" % (OWN_VECTOR,))
    sos = json.loads(_production_run(code, tmp_path).strip().splitlines()[-1])
    for key, paths in sos.items():
        assert paths, key
        dis = "".join(subprocess.run([objdump, "-d", "--no-show-raw-insn", p], capture_output=True,
                                     text=True).stdout for p in paths)
        suf = "pd" if key.endswith("float64") else "ps"
        assert re.search(r"v(fn?madd|mul|add|sub)\w*%s\s+[^\n]*%%[yz]mm" % suf, dis), key


def _inv_hyp(x, y, z):
    return np.arcsinh(x), np.arccosh(y), np.arctanh(z)


def test_inverse_hyperbolics_float32_ulp():
    # float32 arcsinh/arccosh/arctanh over numdyn's inline float log1p
    # (nd_log1p_pos_f: no call, no division): within 3 ULP of the float64
    # result rounded once (NumPy's own: 1; SLEEF's logf under Kahan's
    # division gave 5), over every decade, both signs
    rng = np.random.default_rng(3)
    n = 200_000
    x = np.concatenate([np.array([0.0, -0.0, 1e-45, 2.0 ** -12, 2.0 ** 12, 3e38, 0.5, 1e-3], np.float32),
                        (10.0 ** rng.uniform(-45, 38, n) * np.sign(rng.standard_normal(n))).astype(np.float32),
                        rng.uniform(-3, 3, n).astype(np.float32), rng.uniform(-1, 1, 2 * n).astype(np.float32)])
    near1 = rng.uniform(2.0 ** -20, 0.1, x.shape[0]).astype(np.float32)   # arccosh near 1, arctanh near +-1
    ops = (x, np.concatenate([np.abs(x) + np.float32(1), near1 + np.float32(1)]),
           np.concatenate([x / (np.abs(x) + np.float32(1)) * np.float32(0.999), (np.float32(1) - near1) * np.where(x < 0, np.float32(-1), np.float32(1))]))
    f = numdyn.compile(_inv_hyp, options={"floor": False})
    # the kernels' values (one a shape): until session 23 the C forms raised
    # a flag here, NumPy reran the graph and this compared NumPy's values
    # with NumPy's
    from vmath_build import kernel_values
    got = kernel_values(f, *ops, over="raise", invalid="raise", divide="raise")   # NumPy raises none here
    ref = _inv_hyp(*(o.astype(np.float64) for o in ops))
    for a, e in zip(got, ref):
        assert a.dtype == np.float32
        e = e.astype(np.float32)
        assert np.array_equal(np.signbit(a[e == 0]), np.signbit(e[e == 0]))
        assert _ulps(a, e).max() <= 3


# every vector-math function of kernels/nd_kernel.h a float ufunc's kernel
# calls, compiled alone in a loop for an AVX2 target and an AVX-512 one:
# the ISA is whatever -march=native finds, so each form must vectorize on
# both (a select GCC turns into masked arithmetic vectorizes only where
# AVX-512's mask registers exist: sinh/cosh/expm1 and the float32 inverse
# hyperbolics' log core went scalar on AVX2 with it). tanh and
# logaddexp/logaddexp2 were scalar on AVX2 until their selects went
# through nd_tsel (session 20): none is known scalar now
AVX2_SCALAR = ()
VM_CALLS = ["nd_exp{f}(v)", "nd_exp2{f}(v)", "nd_expm1{f}(v)", "nd_log1p{f}(v)", "nd_sinh{f}(v)",
            "nd_cosh{f}(v)", "nd_tanh{f}(v)", "nd_asinh{f}(v)", "nd_acosh{f}(v)", "nd_atanh{f}(v)",
            "nd_cbrt{f}(v)", "nd_logaddexp_{s}(v, v * 2)", "nd_logaddexp2_{s}(v, v * 2)"]


@pytest.mark.parametrize("march", ["haswell", "skylake-avx512"])
def test_vector_math_vectorizes_per_isa(tmp_path, march):
    import re
    import shutil
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    kdir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
    src, what = ['#include "nd_kernel.h"'], []
    for i, call in enumerate(VM_CALLS):
        for T, f, s in (("double", "", "d"), ("float", "f", "f")):
            what.append(call.format(f=f, s=s) + " " + T)
            src.append(f"void vm{i}{s}(const {T} *restrict x, {T} *restrict y, long n)\n{{\n"
                       f"    for (long i = 0; i < n; i++) {{ {T} v = x[i]; y[i] = {call.format(f=f, s=s)}; }}\n}}")
    c = tmp_path / "vm.c"
    c.write_text("\n".join(src) + "\n")
    loops = [i + 1 for i, ln in enumerate(c.read_text().splitlines()) if ln.lstrip().startswith("for (")]
    lines = dict(zip(loops, what))
    r = subprocess.run([gcc, "-O3", "-march=" + march, "-fopenmp", "-fno-math-errno", "-ffp-contract=off",
                        "-I" + kdir, "-c", str(c), "-o", str(tmp_path / "vm.o"), "-fopt-info-vec-optimized"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    done = {int(m) for m in re.findall(r"vm\.c:(\d+):\d+: optimized: loop vectorized", r.stderr)}
    known = AVX2_SCALAR if march == "haswell" else ()
    assert not [w for ln, w in lines.items() if ln not in done and not w.startswith(known)], r.stderr[-500:]
    assert len(done) >= len(lines) - (6 if known else 0)
    assert not AVX2_SCALAR and done >= set(lines), sorted(w for ln, w in lines.items() if ln not in done)
