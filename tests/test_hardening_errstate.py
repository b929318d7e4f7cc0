"""Issue 12, point 6: NumPy's floating-point error state. NumPy checks the
floating-point status flags after each ufunc loop and, per np.geterr() /
np.errstate at call time, ignores them, warns (RuntimeWarning "divide by
zero encountered in divide", "overflow encountered in multiply", "invalid
value encountered in cast", ...), raises FloatingPointError with the same
message, calls the np.seterrcall function, prints or logs. Compiled code
must do the same: every mode, every flag, serial and multi-threaded
kernels, and nothing where NumPy reports nothing (NaN in comparisons)."""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import numdyn
from numdyn.utils import counters
from oracle import check

FLOATS = np.array([0.0, 1.0, -2.0, 3.5, 0.0, np.inf, -1.0, 1e308])
INTS = np.array([7, 0, -3, 5, 0, 1], dtype=np.int64)

PROGRAMS = {
    # name: (fn, args)
    "divide_by_zero": (lambda a: a / (a - a) + 1.0, (FLOATS,)),
    "zero_by_zero": (lambda a: (a * 0.0) / (a * 0.0), (FLOATS,)),
    "overflow_multiply": (lambda a: a * 1e300 - 1.0, (FLOATS,)),
    "log_zero": (lambda a: np.log(np.abs(a)) * 2.0, (FLOATS,)),
    "sqrt_negative": (lambda a: np.sqrt(a) + a, (FLOATS,)),
    "inf_minus_inf": (lambda a: (a * 2.0) - (a * 3.0), (FLOATS,)),
    "cast_nan_to_int": (lambda a: (a / a).astype(np.int64), (FLOATS,)),
    "cast_inf_to_int": (lambda a: (a * 10.0).astype(np.int32), (FLOATS,)),
    "cast_overflow_f32": (lambda a: (a * 2.0).astype(np.float32), (FLOATS,)),
    "sum_overflow_f32": (lambda a: (a.astype(np.float32) * np.float32(1e38)).sum(), (np.ones(64),)),
    "underflow": (lambda a: (a * 1e-300) * 1e-300, (np.ones(4),)),
    "int_floor_divide_by_zero": (lambda a: a // (a * 0) + 1, (INTS,)),
    "int_remainder_by_zero": (lambda a: a % (a - a), (INTS,)),
    "two_ops_flag": (lambda a: np.log(a - a) + a * 1e308 * 10.0, (FLOATS,)),
    "clean": (lambda a: np.sin(a[:4]) * 2.0 + 1.0, (FLOATS,)),
}

MODES = ["warn", "raise", "ignore"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_errstate_modes_match_numpy(name, mode):
    fn, args = PROGRAMS[name]
    with np.errstate(all=mode):
        check(fn, *args, warnings=True)


@pytest.mark.parametrize("name", ["divide_by_zero", "overflow_multiply", "cast_nan_to_int",
                                  "int_floor_divide_by_zero"])
def test_default_errstate_warns_like_numpy(name):
    fn, args = PROGRAMS[name]
    assert np.geterr()["divide"] == "warn"
    check(fn, *args, warnings=True)


@pytest.mark.parametrize("settings", [dict(divide="raise", invalid="ignore"),
                                      dict(divide="ignore", over="raise"),
                                      dict(all="ignore", invalid="raise"),
                                      dict(all="warn", under="raise")])
@pytest.mark.parametrize("name", ["two_ops_flag", "zero_by_zero", "underflow", "cast_nan_to_int"])
def test_errstate_per_category(name, settings):
    fn, args = PROGRAMS[name]
    with np.errstate(**settings):
        check(fn, *args, warnings=True)


def test_raise_leaves_caller_arrays_as_numpy_does():
    # the raising op comes before any write: NumPy leaves `out` untouched
    # (writes traced before a raising op: tests/test_errstate_order.py)
    def f(out, a):
        out *= 1.0 / a
        out += 1.0
        return out

    with np.errstate(divide="raise"):
        check(f, np.ones(4), np.array([1.0, 0.0, 2.0, 4.0]), warnings=True)


def test_errstate_decided_at_each_call():
    f = numdyn.compile(lambda a: 1.0 / a)
    a = np.array([1.0, 0.0])
    for _ in range(3):  # traced, then replayed: the state is read at each call
        with pytest.warns(RuntimeWarning, match="^divide by zero encountered in divide$"):
            f(a)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError,
                                                        match="^divide by zero encountered in divide$"):
            f(a)
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(f(a), [1.0, np.inf])


def _inside_block(a):
    with np.errstate(divide="ignore"):
        r = 1.0 / a  # traced inside the block, run after it
    return r + 1.0


def _before_and_inside(a):
    r = 1.0 / a
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.log(a)
    return r + s


def _seterr_inside(a):
    old = np.seterr(divide="raise")
    try:
        return 1.0 / a
    finally:
        np.seterr(**old)


def _nested_states(a):
    with np.errstate(all="ignore"):
        b = a / 0.0
        with np.errstate(invalid="raise"):
            c = b * 2.0
        d = np.sqrt(-a)
    return b + c + d


@pytest.mark.parametrize("fn", [_inside_block, _before_and_inside, _seterr_inside, _nested_states])
@pytest.mark.parametrize("outer", ["warn", "ignore", "raise"])
def test_errstate_inside_the_compiled_function(fn, outer):
    # each op runs under the state it was traced under, whenever the graph runs
    with np.errstate(all=outer):
        check(fn, np.array([0.0, 1.0, 4.0]), warnings=True)


def _calls(fn, *args):
    got = []
    with np.errstate(all="call"):
        old = np.seterrcall(lambda kind, flag: got.append((kind, flag)))
        try:
            fn(*args)
        finally:
            np.seterrcall(old)
    return got


@pytest.mark.parametrize("name", ["divide_by_zero", "two_ops_flag", "cast_nan_to_int", "clean"])
def test_errstate_call(name):
    fn, args = PROGRAMS[name]
    assert _calls(numdyn.compile(fn), *args) == _calls(fn, *args)


def _logged(fn, *args):
    class Log:
        def __init__(self):
            self.lines = []

        def write(self, s):
            self.lines.append(s)

    log = Log()
    with np.errstate(all="log"):
        old = np.seterrcall(log)
        try:
            fn(*args)
        finally:
            np.seterrcall(old)
    return log.lines


@pytest.mark.parametrize("name", ["divide_by_zero", "overflow_multiply", "clean"])
def test_errstate_log(name):
    fn, args = PROGRAMS[name]
    assert _logged(numdyn.compile(fn), *args) == _logged(fn, *args)


@pytest.mark.parametrize("name", ["divide_by_zero", "sqrt_negative"])
def test_errstate_print(name, capfd):
    fn, args = PROGRAMS[name]
    with np.errstate(all="print"):
        fn(*args)
    want = capfd.readouterr().err
    assert want.startswith("Warning: ")
    with np.errstate(all="print"):
        numdyn.compile(fn)(*args)
    assert capfd.readouterr().err == want


def test_flags_from_every_thread_of_a_parallel_kernel():
    # big enough for the kernel's threads; the zero is in the last chunk
    a = np.ones(1 << 21)
    a[-5] = 0.0
    check(lambda a: (1.0 / a).sum(), a, warnings=True)
    check(lambda a: 1.0 / a + 2.0, a, warnings=True)
    with np.errstate(divide="raise"):
        check(lambda a: np.log(a) * 2.0, a, warnings=True)


NAN_QUIET = {
    "less": lambda a: a < 2.0,
    "greater_equal": lambda a: (a >= 1.0).sum(),
    "maximum": lambda a: np.maximum(a, 2.0),
    "max": lambda a: a.max(),
    "argmin": lambda a: np.argmin(a),
    "clip": lambda a: np.clip(a, 0.0, 2.0),
    "where": lambda a: np.where(a > 1.0, a, -a),
    "sign": lambda a: np.sign(a),
    "exp": lambda a: np.exp(a),
}


@pytest.mark.parametrize("name", sorted(NAN_QUIET))
def test_nan_in_comparisons_is_quiet(name):
    # x86's ordered comparisons flag "invalid" on a NaN; NumPy reports nothing
    a = np.array([1.0, np.nan, 3.0] * 100)
    fn = NAN_QUIET[name]
    with np.errstate(all="raise"):
        check(fn, a, warnings=True)
    f = numdyn.compile(fn)
    f(a)
    before = counters["errstate_reruns"]
    f(a)
    assert counters["errstate_reruns"] == before  # no run again by NumPy for these


# arithmetic with a finite scalar cannot raise "invalid" (x + c, x * c and
# x / c, c / x with c != 0, x ** integer, positive ** x): NaN data through
# SLEEF's exp/tanh (which raise the flag inside) is not run again by NumPy
NAN_QUIET_SCALAR = {
    "gauss": lambda a: np.exp(-0.5 * a**2),
    "exp_plus_one": lambda a: np.exp(a) + 1,
    "exp_over_three": lambda a: np.exp(a) / 3.0,
    "two_over_exp": lambda a: 2.0 / np.exp(a),
    "scaled_tanh": lambda a: np.tanh(a) * 2 - 1,
    "two_to_the_a": lambda a: 2.0 ** a,
    "float32_gauss": lambda a: np.exp(np.float32(-0.5) * a.astype(np.float32) ** 2),
}
# ... but these can, and still do what NumPy does
NAN_FLAGGED_SCALAR = {
    "times_zero": lambda a: np.exp(a) * 0.0,
    "minus_inf": lambda a: np.exp(a) - np.inf,
    "negative_base": lambda a: (-2.0) ** a,
    "past_float32": lambda a: np.exp(a.astype(np.float32)) * 1e300,
    "rounds_to_zero": lambda a: np.exp(a) * 1e-320,
}


@pytest.mark.parametrize("name", sorted(NAN_QUIET_SCALAR) + sorted(NAN_FLAGGED_SCALAR))
def test_nan_through_arithmetic_with_a_scalar(name):
    fn = NAN_QUIET_SCALAR.get(name) or NAN_FLAGGED_SCALAR[name]
    a = np.array([0.5, np.nan, -1.0, 2.0, np.nan, np.inf, 3.0] * 50)
    for mode in ("warn", "raise"):
        with np.errstate(all=mode, under="ignore"):
            check(fn, a, warnings=True)


RERUNS = """
import json, numpy as np, numdyn
from numdyn.utils import counters
progs = {progs}
a = np.array([0.5, np.nan, -1.0, 2.0] * 5000)
out = {{}}
for name, src in progs.items():
    f = numdyn.compile(eval(src))
    f(a)
    before = counters["errstate_reruns"]
    f(a)
    out[name] = counters["errstate_reruns"] - before
print(json.dumps(out))
"""


def test_nan_through_arithmetic_with_a_scalar_is_not_run_again():
    # the suite's store-check mode compiles kernels SLEEF raises no flag in:
    # the kernels users run are measured in a process of their own
    src = {"gauss": "lambda a: np.exp(-0.5 * a**2)", "exp_plus_one": "lambda a: np.exp(a) + 1",
           "scaled_tanh": "lambda a: np.tanh(a) * 2 - 1",
           "two_over_exp": "lambda a: 2.0 / np.exp(a)",
           "sin": "lambda a: np.sin(a) * 2.0"}  # (sin may flag "invalid": run again)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               NUMDYN_CHECK_STORES="0", NUMDYN_FLOOR="0")
    r = subprocess.run([sys.executable, "-c", RERUNS.format(progs=repr(src))], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    reruns = json.loads(r.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in reruns.items() if k != "sin"} == dict.fromkeys(
        ["gauss", "exp_plus_one", "scaled_tanh", "two_over_exp"], 0), reruns


def test_nothing_is_run_again_when_no_flag_or_ignored():
    fn, args = PROGRAMS["divide_by_zero"]
    f = numdyn.compile(fn)
    with np.errstate(all="ignore"):
        f(*args)
        before = counters["errstate_reruns"]
        f(*args)
    assert counters["errstate_reruns"] == before
    g = numdyn.compile(PROGRAMS["clean"][0])
    g(FLOATS)
    before = counters["errstate_reruns"]
    g(FLOATS)
    assert counters["errstate_reruns"] == before


# ---------------------------------------------------------------- point 6's "also"
FLOAT_SCALARS = [float("nan"), float("inf"), -float("inf"), 1e300, np.float64("nan"),
                 np.float32("nan"), np.float16("inf"), np.float64(1e300), 2.0**63, 3.75]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("value", FLOAT_SCALARS, ids=repr)
def test_float_scalar_into_integer_array(value, dtype):
    # NumPy: ValueError "cannot convert float NaN to integer", OverflowError
    # for inf / out of range, or (some NumPy scalars) a cast with a warning
    def f(a):
        a[0] = value
        a[1:] = value
        return a

    check(f, np.arange(3).astype(dtype), warnings=True)


@pytest.mark.parametrize("fn", [np.var, np.std, lambda a: a.var(axis=0), lambda a: np.std(a, ddof=1)])
def test_float16_var_std_overflow(fn):
    a = np.array([[60000, 2], [-60000, 1], [3, 4]], dtype=np.float16)
    check(fn, a, warnings=True)
    check(lambda a: a * a + 1, a, warnings=True)


@pytest.mark.parametrize("index", [np.uint64(2**64 - 1), np.uint64(2**63), 2**63, 2**64,
                                   -2**63 - 1, np.int64(-2), (0, np.uint64(2**63))], ids=repr)
def test_huge_integer_index(index):
    check(lambda a: a[index], np.arange(6).reshape(2, 3) if isinstance(index, tuple) else np.arange(3))

    def put(a):
        a[index] = 1
        return a

    check(put, np.arange(6).reshape(2, 3) if isinstance(index, tuple) else np.arange(3))


class Reflects:
    __array_ufunc__ = None

    def __radd__(self, other):
        return "radd"

    def __rsub__(self, other):
        return "rsub"

    def __rmul__(self, other):
        return "rmul"

    def __rpow__(self, other):
        return "rpow"


class NoReflection:
    __array_ufunc__ = None


@pytest.mark.parametrize("fn", [lambda a: a + Reflects(), lambda a: (a * 2) - Reflects(),
                                lambda a: a * Reflects(), lambda a: a ** Reflects(),
                                lambda a: a + NoReflection(), lambda a: a - NoReflection(),
                                lambda a: a // NoReflection(), lambda a: divmod(a, NoReflection()),
                                lambda a: np.add(a, Reflects()), lambda a: Reflects() + a])
def test_array_ufunc_none_defers(fn):
    check(fn, np.arange(3.0))


# ---- NumPy's ComplexWarning: every cast that drops an imaginary part warns,
# on every call (a replayed call must not lose it), and a warnings filter of
# "error" makes it an exception with the caller's arrays as NumPy leaves them.
CPLX = np.array([1 + 2j, 3 - 1j, 0.5j])


def _cw_astype(c, b):
    return (c * 2).astype(np.float64)


def _cw_slice(c, b):
    b[:] = c * 2
    return b


def _cw_element(c, b):
    b[1] = (c * 2)[0]
    return b


def _cw_fill(c, b):
    b.fill((c * 2)[1])
    return b


def _cw_copyto(c, b):
    np.copyto(b, c * 2, casting="unsafe")
    return b


def _cw_out(c, b):
    np.add(c, c, out=b, casting="unsafe")
    return b


def _cw_full(c, b):
    return np.full(3, (c * 2)[0], dtype=np.float32) + b


def _cw_array(c, b):
    return np.array(c * 2, dtype=np.int64)


def _cw_none(c, b):
    return np.abs(c) + c.real + b  # no cast drops an imaginary part: no warning


COMPLEX_CASTS = [_cw_astype, _cw_slice, _cw_element, _cw_fill, _cw_copyto, _cw_out,
                 _cw_full, _cw_array, _cw_none]


@pytest.mark.parametrize("fn", COMPLEX_CASTS, ids=lambda f: f.__name__)
def test_complex_warning_every_call(fn, backend):
    for _ in range(3):  # the later calls would replay
        check(fn, CPLX, np.zeros(3), backend=backend, warnings=True)


@pytest.mark.parametrize("fn", COMPLEX_CASTS[:-1], ids=lambda f: f.__name__)
def test_complex_warning_as_error(fn):
    import warnings
    f = numdyn.compile(fn)
    for _ in range(2):
        b_np, b_nd = np.zeros(3), np.zeros(3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(np.exceptions.ComplexWarning):
                fn(CPLX.copy(), b_np)
            with pytest.raises(np.exceptions.ComplexWarning):
                f(CPLX.copy(), b_nd)
        np.testing.assert_array_equal(b_nd, b_np)
