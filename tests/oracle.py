"""NumPy as the oracle: run a function with NumPy and with numdyn, compare.

    from oracle import check, assert_same, dtype_tol

    check(fn, *args, backend="eager", **kwargs)

runs ``fn(*args, **kwargs)`` with plain NumPy on one deep copy of the
arguments and ``numdyn.compile(fn, backend=backend)`` on another, then
asserts that both give the same thing:

- the same returned structure (tuple / list / dict / namedtuple, nested);
- for every array: the same type (ndarray, not a 0-d array where NumPy gives a
  scalar or the reverse), shape, dtype, and values (exact for bool / integer
  dtypes, within ``dtype_tol(dtype)`` for inexact ones, NaN where NaN is,
  infinities of the same sign; signed zeros only with ``signed_zeros=True``);
- for NumPy and Python scalars: the same type and value;
- for ``np.random.Generator`` / ``RandomState`` objects: the same state;
- the same exception (type, and message unless ``exc_match`` / ``exc_normalize``
  relax it) when NumPy raises;
- optionally the same warnings (``warnings=True``);
- afterwards, the same state of every ndarray passed in (mutation must match
  what NumPy left in the caller's arrays).

The deep copy of all arguments is made in one go, so aliasing between the
arguments (``check(f, a, a)``) is kept. Views of one another are not (a deep
copy of a view owns its data): pass ``make_args=lambda: (base, base[1:])`` to
build each side's arguments fresh when a test needs views of a common base.

``compiled=`` injects the callable to compare against NumPy instead of
``numdyn.compile(fn, ...)``; the oracle's own tests use it with deliberately
wrong fakes.
"""
import copy
import re
import warnings as _warnings

import numpy as np

__all__ = ["check", "assert_same", "dtype_tol", "Outcome", "run_capturing"]

# (rtol, atol) per dtype kind/size. Generated code may use other (correctly
# rounded to ~1 ulp) math libraries than NumPy and another summation order,
# so inexact results get a few ulp of room; bool and integers are exact.
_TOL = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(np.float32): (1e-5, 1e-8),
    np.dtype(np.float64): (1e-12, 1e-15),
    np.dtype(np.complex64): (1e-5, 1e-8),
    np.dtype(np.complex128): (1e-12, 1e-15),
}
if hasattr(np, "longdouble"):
    _TOL[np.dtype(np.longdouble)] = (1e-12, 1e-15)
    _TOL[np.dtype(np.clongdouble)] = (1e-12, 1e-15)


def dtype_tol(dt):
    """Default (rtol, atol) for comparing values of dtype `dt`: (0, 0) for
    bool and integers (exact), a few ulp for floats and complex."""
    dt = np.dtype(dt)
    if dt.kind in "fc":
        return _TOL.get(dt, (1e-12, 1e-15))
    return (0.0, 0.0)


class Outcome:
    """What one run produced: a value or an exception, and warnings."""

    __slots__ = ("value", "exc", "warnings")

    def __init__(self, value=None, exc=None, warnings=()):
        self.value = value
        self.exc = exc
        self.warnings = list(warnings)

    def __repr__(self):
        if self.exc is not None:
            return f"Outcome(raised {type(self.exc).__name__}: {self.exc})"
        return f"Outcome({self.value!r})"


def run_capturing(fn, args, kwargs, record_warnings=False):
    """Call fn(*args, **kwargs); return an Outcome holding its result or the
    exception it raised (never raises itself, except KeyboardInterrupt)."""
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always" if record_warnings else "ignore")
        try:
            value = fn(*args, **kwargs)
        except Exception as e:  # the exception is the result being compared
            return Outcome(exc=e, warnings=caught)
    return Outcome(value=value, warnings=caught)


def _strided_copy(a):
    """A copy of ndarray a with a's strides (deepcopy makes a strided or
    reversed view contiguous, so a test passing one would test another
    layout): its elements in a fresh buffer laid out as a's are."""
    it = a.itemsize
    if (a.ndim == 0 or a.size == 0 or a.flags.c_contiguous or a.flags.f_contiguous
            or type(a) is not np.ndarray or a.dtype.hasobject
            or any(s % it for s in a.strides)):
        return copy.deepcopy(a)
    lo = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0)
    buf = np.zeros((hi - lo) // it + 1, dtype=a.dtype)
    out = np.ndarray(a.shape, a.dtype, buffer=buf, offset=-lo, strides=a.strides)
    out[...] = a
    if not a.flags.writeable:
        out.flags.writeable = False
    return out


def layout_copy(obj, memo=None):
    """copy.deepcopy of a nest of tuples/lists/dicts whose ndarrays keep
    their strides (_strided_copy); an object met twice is copied once, as
    deepcopy's memo does (`f(a, a)` gets one array twice)."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, np.ndarray):
        out = _strided_copy(obj)
    elif type(obj) in (tuple, list):
        out = type(obj)(layout_copy(v, memo) for v in obj)
    elif type(obj) is dict:
        out = {k: layout_copy(v, memo) for k, v in obj.items()}
    else:
        out = copy.deepcopy(obj, memo)
    memo[id(obj)] = out
    return out


def check(fn, *args, backend=None, rtol=None, atol=None, compiled=None,
          make_args=None, signed_zeros=False, exc_match=None,
          exc_normalize=None, warnings=False, check_layout=False,
          check_args=True, check_aliasing=False, compile_kwargs=None, **kwargs):
    """Compare fn under NumPy with fn compiled by numdyn; AssertionError on
    any difference. Returns NumPy's result (or None when NumPy raised).

    backend        numdyn backend name ("eager", "native", ...); None: numdyn's default
    rtol, atol     override the per-dtype tolerances of dtype_tol()
    compiled       use this callable instead of numdyn.compile(fn, backend=...)
    make_args      zero-argument callable returning the positional args tuple
                   (called once per side; for views sharing a base)
    signed_zeros   also require the sign of zeros to match
    exc_match      regex the compiled side's message must match (search), instead
                   of being equal to NumPy's
    exc_normalize  callable str -> str applied to both messages before comparing
    warnings       also compare the warnings (category, message) raised
    check_layout   also compare C/F contiguity of returned arrays
    check_args     compare the arguments' state after the call (mutation)
    check_aliasing also require each returned array to be / share memory with
                   the same arguments as NumPy's (`return x`, `return x[1:]`)
    compile_kwargs extra keyword arguments for numdyn.compile
    """
    if make_args is not None:
        if args:
            raise TypeError("check(): pass either *args or make_args, not both")
        np_args, np_kwargs = tuple(make_args()), copy.deepcopy(kwargs)
        nd_args, nd_kwargs = tuple(make_args()), copy.deepcopy(kwargs)
    else:
        np_args, np_kwargs = layout_copy((args, kwargs))
        nd_args, nd_kwargs = layout_copy((args, kwargs))

    if compiled is None:
        import numdyn
        ckw = dict(compile_kwargs or {})
        if backend is not None:
            ckw["backend"] = backend
        compiled = numdyn.compile(fn, **ckw)

    expected = run_capturing(fn, np_args, np_kwargs, warnings)
    actual = run_capturing(compiled, nd_args, nd_kwargs, warnings)
    opts = dict(rtol=rtol, atol=atol, signed_zeros=signed_zeros,
                check_layout=check_layout)
    name = getattr(fn, "__qualname__", repr(fn))

    if expected.exc is not None or actual.exc is not None:
        _compare_exceptions(expected.exc, actual.exc, exc_match, exc_normalize,
                            name, expected, actual)
    else:
        assert_same(actual.value, expected.value, path=f"{name}() result", **opts)
        if check_aliasing:
            _compare_aliasing(actual.value, nd_args, nd_kwargs,
                              expected.value, np_args, np_kwargs, name)
    if warnings:
        _compare_warnings(expected.warnings, actual.warnings, name)
    if check_args:
        assert_same(nd_args, np_args, path=f"{name}() positional args after the call", **opts)
        assert_same(nd_kwargs, np_kwargs, path=f"{name}() keyword args after the call", **opts)
    return expected.value


def _arrays(obj, path="result"):
    """(path, ndarray) for every array in a nest of tuples/lists/dicts."""
    if isinstance(obj, np.ndarray):
        yield path, obj
    elif isinstance(obj, (tuple, list)):
        for i, v in enumerate(obj):
            yield from _arrays(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _arrays(v, f"{path}[{k!r}]")


def _alias_pattern(value, args, kwargs):
    params = list(_arrays(args, "args")) + list(_arrays(kwargs, "kwargs"))
    out = {}
    for rpath, r in _arrays(value):
        out[rpath] = [(ppath, "is" if r is p else "shares memory with")
                      for ppath, p in params if r is p or np.shares_memory(r, p)]
    return out


def _compare_aliasing(act, nd_args, nd_kwargs, exp, np_args, np_kwargs, name):
    a = _alias_pattern(act, nd_args, nd_kwargs)
    e = _alias_pattern(exp, np_args, np_kwargs)
    for path in e:
        if a.get(path) != e[path]:
            raise AssertionError(f"{name}() {path}: aliasing differs: NumPy's "
                                 f"{e[path] or 'is a new array'}; compiled "
                                 f"{a.get(path) or 'is a new array'}")


def _exc_text(e):
    return f"{type(e).__module__}.{type(e).__qualname__}: {e}"


def _compare_exceptions(exp, act, exc_match, exc_normalize, name, expected, actual):
    if exp is None:
        raise AssertionError(
            f"{name}(): NumPy returned {_short(expected.value)} but the compiled "
            f"function raised {_exc_text(act)}") from act
    if act is None:
        raise AssertionError(
            f"{name}(): NumPy raised {_exc_text(exp)} but the compiled function "
            f"returned {_short(actual.value)}") from exp
    if type(act) is not type(exp):
        raise AssertionError(
            f"{name}(): exception type differs: NumPy raised {_exc_text(exp)}; "
            f"compiled raised {_exc_text(act)}") from act
    m_exp, m_act = str(exp), str(act)
    if exc_normalize is not None:
        m_exp, m_act = exc_normalize(m_exp), exc_normalize(m_act)
    if exc_match is not None:
        if not re.search(exc_match, m_act):
            raise AssertionError(
                f"{name}(): exception message {m_act!r} does not match {exc_match!r} "
                f"(NumPy said {m_exp!r})") from act
    elif m_exp != m_act:
        raise AssertionError(
            f"{name}(): exception message differs for {type(exp).__name__}:\n"
            f"  NumPy:    {m_exp!r}\n  compiled: {m_act!r}") from act


def _compare_warnings(exp, act, name):
    def key(ws):
        return sorted({(w.category.__name__, str(w.message)) for w in ws})
    if key(exp) != key(act):
        raise AssertionError(f"{name}(): warnings differ:\n  NumPy:    {key(exp)}\n"
                             f"  compiled: {key(act)}")


def _short(v, n=200):
    r = " ".join(repr(v).split())
    return r if len(r) <= n else r[:n] + "..."


def assert_same(actual, expected, *, rtol=None, atol=None, signed_zeros=False,
                check_layout=False, path="value"):
    """Assert `actual` is what NumPy's `expected` is: same nesting, types,
    shapes, dtypes, and values within tolerance. `path` names the value in
    the error message."""
    ta, te = type(actual), type(expected)
    if ta is not te:
        raise AssertionError(
            f"{path}: type differs: got {ta.__module__}.{ta.__qualname__}, NumPy gives "
            f"{te.__module__}.{te.__qualname__} ({_short(actual, 80)} vs {_short(expected, 80)})")
    kw = dict(rtol=rtol, atol=atol, signed_zeros=signed_zeros, check_layout=check_layout)
    if isinstance(expected, np.ndarray):
        _assert_arrays(actual, expected, path=path, **kw)
    elif isinstance(expected, np.generic):
        if actual.dtype != expected.dtype:
            raise AssertionError(f"{path}: scalar dtype differs: got {actual.dtype}, "
                                 f"NumPy gives {expected.dtype}")
        _assert_values(np.asarray(actual), np.asarray(expected), path=path, rtol=rtol,
                       atol=atol, signed_zeros=signed_zeros)
    elif isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            raise AssertionError(f"{path}: length differs: got {len(actual)}, "
                                 f"NumPy gives {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, path=f"{path}[{i}]", **kw)
    elif isinstance(expected, dict):
        if list(actual.keys()) != list(expected.keys()):
            raise AssertionError(f"{path}: keys differ: got {list(actual.keys())}, "
                                 f"NumPy gives {list(expected.keys())}")
        for k in expected:
            assert_same(actual[k], expected[k], path=f"{path}[{k!r}]", **kw)
    elif isinstance(expected, (bool, int, str, bytes, type(None))):
        if actual != expected:
            raise AssertionError(f"{path}: got {actual!r}, NumPy gives {expected!r}")
    elif isinstance(expected, (float, complex)):
        dt = np.float64 if isinstance(expected, float) else np.complex128
        _assert_values(np.asarray(actual, dt), np.asarray(expected, dt), path=path,
                       rtol=rtol, atol=atol, signed_zeros=signed_zeros)
    elif isinstance(expected, np.dtype):
        if actual != expected:
            raise AssertionError(f"{path}: got dtype {actual}, NumPy gives {expected}")
    elif isinstance(expected, (np.random.Generator, np.random.RandomState)):
        # a random generator (an argument): the same state, so the same stream
        def state(g):
            return g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state(legacy=False)
        assert_same(state(actual), state(expected), path=f"{path} state", **kw)
    else:
        try:
            same = bool(actual == expected)
        except Exception as e:
            raise AssertionError(f"{path}: cannot compare {te.__qualname__} values: {e}")
        if not same:
            raise AssertionError(f"{path}: got {_short(actual)}, NumPy gives {_short(expected)}")


def _assert_arrays(a, e, *, path, rtol, atol, signed_zeros, check_layout):
    if a.shape != e.shape:
        raise AssertionError(f"{path}: shape differs: got {a.shape}, NumPy gives {e.shape}")
    if a.dtype != e.dtype:
        raise AssertionError(f"{path}: dtype differs: got {a.dtype}, NumPy gives {e.dtype}")
    if check_layout and e.ndim > 1 and e.size > 1:
        la = (a.flags.c_contiguous, a.flags.f_contiguous)
        le = (e.flags.c_contiguous, e.flags.f_contiguous)
        if la != le:
            raise AssertionError(f"{path}: layout differs: got C/F contiguous={la}, "
                                 f"NumPy gives {le}")
    _assert_values(a, e, path=path, rtol=rtol, atol=atol, signed_zeros=signed_zeros)


def _assert_values(a, e, *, path, rtol, atol, signed_zeros):
    dt = e.dtype
    if dt.kind == "c":
        _assert_values(a.real, e.real, path=f"{path}.real", rtol=rtol, atol=atol,
                       signed_zeros=signed_zeros)
        _assert_values(a.imag, e.imag, path=f"{path}.imag", rtol=rtol, atol=atol,
                       signed_zeros=signed_zeros)
        return
    if dt.kind != "f":
        if dt.kind in "biuSUVMm" or dt == object:
            eq = np.asarray(a == e)
            if eq.shape != e.shape:
                eq = np.broadcast_to(eq, e.shape)
        else:
            raise AssertionError(f"{path}: oracle cannot compare dtype {dt}")
        if not eq.all():
            _fail_values(a, e, ~eq, path, "exact")
        return
    drtol, datol = dtype_tol(dt)
    rtol = drtol if rtol is None else rtol
    atol = datol if atol is None else atol
    # Compare in float64 (or longdouble) so the difference itself is exact
    # enough; a float16 difference could overflow to inf.
    wide = np.longdouble if dt == np.longdouble else np.float64
    aw, ew = a.astype(wide), e.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        nan_a, nan_e = np.isnan(aw), np.isnan(ew)
        same = (aw == ew) | (nan_a & nan_e)
        finite = np.isfinite(aw) & np.isfinite(ew)
        close = finite & (np.abs(aw - ew) <= atol + rtol * np.abs(ew))
    ok = same | close
    if not ok.all():
        _fail_values(a, e, ~ok, path, f"rtol={rtol:g}, atol={atol:g}")
    if signed_zeros:
        zero = (ew == 0) & (aw == 0)
        bad = zero & (np.signbit(aw) != np.signbit(ew))
        if bad.any():
            _fail_values(a, e, bad, path, "sign of zero")


def _fail_values(a, e, bad, path, how):
    bad = np.asarray(bad)
    n = int(bad.sum())
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    msg = (f"{path}: {n} of {max(e.size, 1)} values differ ({how}); first at index {idx}: "
           f"got {a[idx]!r}, NumPy gives {e[idx]!r}")
    if e.dtype.kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(a.astype(np.float64) - e.astype(np.float64))[bad]
        d = d[np.isfinite(d)]
        if d.size:
            msg += f"; max abs difference {d.max():.3g}"
    if e.size <= 20:
        msg += f"\n  got:   {a!r}\n  NumPy: {e!r}"
    raise AssertionError(msg)
