"""Differential program generator: random NumPy programs, NumPy as the oracle.

A generated `Program` is a list of statements over named values, rendered to
Python source and exec'd into a real function `f(a, b, ...)` that calls `np.`
functions, operators, methods, reductions, creation functions, views and
in-place statements. numdyn traces that real code; NumPy runs the same code.

The generator builds a program one statement at a time and runs every
candidate statement with NumPy on the concrete inputs, so it knows each
value's dtype, shape and contents when it picks the next statement (axes that
exist, shapes that broadcast, slices that fit). A candidate that raises is
kept only as the program's last statement (the program then must raise the
same exception under numdyn); otherwise another candidate is drawn.

False alarms from floating-point noise are avoided by a running error
analysis instead of loose tolerances: every floating value carries a bound,
in ulps of its dtype, on how far a correct implementation may be from
NumPy's bits (0 = must be bit-identical: integer work, +-*/ on reals,
comparisons, casts, rounding functions...). A candidate statement whose
inputs carry error, or whose op is not correctly rounded (transcendentals,
power, reductions whose summation order may differ, complex mul/div), is run
again with those inputs perturbed by their bound (random signs, both
directions): if that moves any output by more than a quarter of the
comparison tolerance, flips a comparison, crosses a rounding boundary or an
overflow, the statement is rejected. So the comparisons stay at the oracle's
normal tolerance, and a mismatch is a real one.

`Program.repro()` (also its repr) is a self-contained script that rebuilds
the inputs exactly and runs the comparison: paste it into a bug report.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

# --------------------------------------------------------------------------
# dtypes and tolerances

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "float16", "float32", "float64", "complex64",
          "complex128"]
INT_DTYPES = [d for d in DTYPES if "int" in d]
FLOAT_DTYPES = ["float16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]
INEXACT_DTYPES = FLOAT_DTYPES + COMPLEX_DTYPES

try:  # the shared oracle, once it exists (tests/oracle.py, infra helper)
    from oracle import dtype_tol as _oracle_dtype_tol  # type: ignore
except Exception:  # pragma: no cover - before the oracle lands
    _oracle_dtype_tol = None


def dtype_tol(dt) -> tuple[float, float]:
    """(rtol, atol) the comparison uses for dtype dt."""
    dt = np.dtype(dt)
    if _oracle_dtype_tol is not None:
        t = _oracle_dtype_tol(dt)
        if isinstance(t, tuple) and len(t) == 2:
            return float(t[0]), float(t[1])
        if isinstance(t, dict):
            return float(t.get("rtol", 0.0)), float(t.get("atol", 0.0))
    if dt.kind not in "fc":
        return 0.0, 0.0
    base = np.finfo(dt).dtype
    return {np.dtype("float16"): (1e-3, 1e-3),
            np.dtype("float32"): (1e-5, 1e-6),
            np.dtype("float64"): (1e-12, 1e-14)}[base]


def _eps(dt) -> float:
    return float(np.finfo(np.dtype(dt)).eps)


# --------------------------------------------------------------------------
# literals: everything a program needs is rendered as exact Python source

def _float_lit(x: float) -> str:
    x = float(x)
    if math.isnan(x):
        return "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(x)


def _elem_lit(x) -> str:
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, int):
        return repr(x)
    if isinstance(x, float):
        return _float_lit(x)
    if isinstance(x, complex):
        return f"complex({_float_lit(x.real)}, {_float_lit(x.imag)})"
    raise TypeError(type(x))


def _nested_lit(x) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested_lit(e) for e in x) + "]"
    return _elem_lit(x)


def value_literal(v) -> str:
    """Exact Python source rebuilding v (ndarray, NumPy scalar, Python scalar)."""
    if isinstance(v, np.ndarray):
        dt = v.dtype.name
        if v.size == 0:
            return f"np.zeros({tuple(v.shape)!r}, dtype=np.{dt})"
        body = _nested_lit(v.tolist())
        return f"np.array({body}, dtype=np.{dt})"
    if isinstance(v, np.generic):
        return f"np.{v.dtype.name}({_elem_lit(v.item())})"
    if isinstance(v, (bool, int, float, complex)):
        s = _elem_lit(v)
        return s
    raise TypeError(type(v))


# --------------------------------------------------------------------------
# programs


@dataclass
class Program:
    params: list            # parameter names
    args: list              # concrete argument values
    body: list              # statement source lines (no indentation)
    ret: str                # return expression
    raises: bool = False    # NumPy raises in the last statement
    meta: list = field(default_factory=list)  # (targets, opname) per statement
    mode: str = "all"

    def source(self, name: str = "f") -> str:
        lines = [f"def {name}({', '.join(self.params)}):"]
        lines += ["    " + s for s in self.body]
        lines.append(f"    return {self.ret}")
        return "\n".join(lines) + "\n"

    def function(self, name: str = "f"):
        glb = {"np": np, "__name__": "fuzz_program"}
        exec(compile(self.source(name), f"<fuzz {name}>", "exec"), glb)
        return glb[name]

    def fresh_args(self) -> list:
        out = []
        for a in self.args:
            out.append(a.copy() if isinstance(a, np.ndarray) else a)
        return out

    def repro(self, backend: str = "native") -> str:
        lines = ["import numpy as np", "import numdyn", "", self.source()]
        for p, a in zip(self.params, self.args):
            lines.append(f"{p} = {value_literal(a)}")
        call = ", ".join(self.params)
        lines += [
            "",
            "import copy, warnings",
            "warnings.simplefilter('ignore')",
            "np.seterr(all='ignore')",
            f"args = ({call}{',' if len(self.params) == 1 else ''})",
            "try:",
            "    expected = f(*copy.deepcopy(args))",
            "except Exception as e:",
            "    expected = e",
            "try:",
            f"    actual = numdyn.compile(f, backend={backend!r})(*copy.deepcopy(args))",
            "except Exception as e:",
            "    actual = e",
            "print('numpy :', repr(expected))",
            "print('numdyn:', repr(actual))",
        ]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return "\n" + self.repro()


# --------------------------------------------------------------------------
# running programs with NumPy


class _Quiet:
    """errstate(all='ignore') + warnings ignored: both sides run under it."""

    def __enter__(self):
        self._err = np.errstate(all="ignore")
        self._err.__enter__()
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")
        return self

    def __exit__(self, *exc):
        self._w.__exit__(*exc)
        self._err.__exit__(*exc)
        return False


quiet = _Quiet

_CODE_CACHE: dict = {}


def _code(stmt: str):
    c = _CODE_CACHE.get(stmt)
    if c is None:
        c = compile(stmt, "<fuzz stmt>", "exec")
        if len(_CODE_CACHE) > 20000:
            _CODE_CACHE.clear()
        _CODE_CACHE[stmt] = c
    return c


_GLOBALS = {"np": np, "__builtins__": __builtins__}


def _copy_arg(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _same(x, y) -> bool:
    """Bitwise-equal values (NaN == NaN), same type, dtype and shape."""
    if type(x) is not type(y):
        return False
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype != y.dtype or np.shape(x) != np.shape(y):
            return False
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.dtype.kind in "fc":
            return bool(np.array_equal(xa, ya, equal_nan=True)) and bool(
                np.array_equal(np.signbit(xa.real), np.signbit(ya.real)))
        return bool(np.array_equal(xa, ya))
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float):
        return (x == y) or (math.isnan(x) and math.isnan(y))
    try:
        return bool(x == y)
    except Exception:
        return x is y


def _is_float_value(v) -> bool:
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, complex)) and not isinstance(v, bool)


def _dtype_of(v):
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype
    if isinstance(v, bool):
        return np.dtype(bool)
    if isinstance(v, int):
        return np.dtype(np.int64)
    if isinstance(v, float):
        return np.dtype(np.float64)
    if isinstance(v, complex):
        return np.dtype(np.complex128)
    return None


def _perturb(v, ulps: float, rng, sign: float = 1.0):
    """v moved by ~ulps of its dtype, random sign per element (a new object
    of v's type). ulps is relative to max(|v|, floor) where floor = atol/rtol
    so values near 0 get an absolute perturbation like the comparison's."""
    dt = _dtype_of(v)
    rtol, atol = dtype_tol(dt)
    floor = atol / rtol if rtol else 0.0
    eps = _eps(dt)
    arr = np.asarray(v)
    mag = np.maximum(np.abs(arr).astype(np.float64), floor)
    with np.errstate(all="ignore"):
        r = rng.choice([-1.0, 1.0], size=arr.shape) * sign
        delta = r * max(ulps, 1.0) * eps * mag
        delta = np.where(np.isfinite(delta), delta, 0.0)
        if dt.kind == "c":
            moved = arr.astype(np.complex128) + delta * (1 + 0.5j)
        else:
            moved = arr.astype(np.float64) + delta
        moved = moved.astype(dt)
    if isinstance(v, np.ndarray):
        return moved
    if isinstance(v, np.generic):
        return moved[()]
    return type(v)(moved[()].item())


def _deviation_ulps(ref, other) -> float:
    """How far `other` is from `ref` in ulps of ref's dtype, relative to
    max(|ref|, atol/rtol); inf when they differ in a way no tolerance
    forgives (type, dtype, shape, NaN/inf pattern, a non-float value)."""
    if type(ref) is not type(other):
        return math.inf
    if isinstance(ref, tuple):
        if len(ref) != len(other):
            return math.inf
        return max([0.0] + [_deviation_ulps(a, b) for a, b in zip(ref, other)])
    if not _is_float_value(ref):
        return 0.0 if _same(ref, other) else math.inf
    dt = _dtype_of(ref)
    if _dtype_of(other) != dt or np.shape(ref) != np.shape(other):
        return math.inf
    a = np.asarray(ref)
    b = np.asarray(other)
    parts = [(a.real, b.real), (a.imag, b.imag)] if dt.kind == "c" else [(a, b)]
    rtol, atol = dtype_tol(dt)
    floor = atol / rtol if rtol else 0.0
    eps = _eps(dt)
    worst = 0.0
    for x, y in parts:
        x = x.astype(np.float64)
        y = y.astype(np.float64)
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return math.inf
        fin = np.isfinite(x)
        if not np.array_equal(fin, np.isfinite(y)):
            return math.inf
        if not np.array_equal(x[~fin & ~np.isnan(x)], y[~fin & ~np.isnan(y)]):
            return math.inf
        if fin.any():
            d = np.abs(x[fin] - y[fin]) / (eps * np.maximum(np.abs(x[fin]), floor))
            worst = max(worst, float(d.max()))
    return worst


# --------------------------------------------------------------------------
# the builder: draws one program


_BINOPS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>",
           "<", "<=", ">", ">=", "==", "!="]
_BIN_UFUNCS = ["add", "subtract", "multiply", "true_divide", "divide",
               "floor_divide", "power", "remainder", "mod", "fmod", "maximum",
               "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
               "logaddexp2", "copysign", "heaviside", "logical_and",
               "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
               "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm",
               "nextafter", "ldexp", "greater", "less_equal", "equal",
               "not_equal", "float_power"]
_UN_UFUNCS = ["negative", "positive", "absolute", "fabs", "rint", "sign",
              "conjugate", "exp", "exp2", "expm1", "log", "log2", "log10",
              "log1p", "sqrt", "square", "cbrt", "reciprocal", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
              "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg",
              "degrees", "radians", "invert", "bitwise_count", "isfinite",
              "isinf", "isnan", "signbit", "spacing", "floor", "ceil",
              "trunc", "logical_not"]
_MULTI_OUT = ["divmod", "modf", "frexp"]
# Forward error (ulps of the computing dtype) of ops that are not correctly
# rounded; everything else must match NumPy's bits exactly.
_FWD_ULPS = {
    "exp": 4, "exp2": 4, "expm1": 4, "log": 4, "log2": 4, "log10": 4,
    "log1p": 4, "sqrt": 1, "cbrt": 2, "sin": 4, "cos": 4, "tan": 4,
    "arcsin": 4, "arccos": 4, "arctan": 4, "sinh": 4, "cosh": 4, "tanh": 4,
    "arcsinh": 4, "arccosh": 4, "arctanh": 4, "arctan2": 4, "hypot": 2,
    "logaddexp": 4, "logaddexp2": 4, "power": 8, "float_power": 8, "**": 8,
    "deg2rad": 1, "rad2deg": 1, "degrees": 1, "radians": 1, "round": 1,
}
# Ops whose error is best modelled as a perturbation of their inputs
# (backward error): summation order, complex arithmetic formulas.
_REDUCTIONS = ["sum", "prod", "max", "min", "mean", "std", "var", "any",
               "all", "argmax", "argmin", "cumsum", "cumprod", "ptp",
               "count_nonzero", "nansum", "amax", "amin"]

_PY_INTS = [0, 1, 2, 3, -1, -2, 5, 7, 100, -100, 127, 200, 255, 300, -129,
            40000, 2 ** 31, 2 ** 40, -(2 ** 63), 2 ** 64]
_PY_FLOATS = [0.5, 1.5, -2.25, 0.0, -0.0, 3.0, 2.0, -1.0, 0.1, 1e-3, 1e5,
              65504.0, 1e30, float("nan"), float("inf"), -float("inf")]
_PY_COMPLEX = [1 + 2j, -0.5j, 2 + 0j, complex(0.0, -1.0)]


class Builder:
    """Draws one Program. `mode` selects statement families:
    "arith" (operators and ufuncs), "reduce" (+ reductions, where, clip,
    astype, creation), "all" (everything but views), "views" (everything
    plus views and in-place statements), "rows" (reduced values kept as rows
    broadcast against operands of other widths and ranks, pointwise work and
    matmuls around them)."""

    def __init__(self, draw, mode: str = "all", max_stmts: int = 12):
        self.draw = draw
        self.mode = mode
        self.max_stmts = max_stmts
        self.params: list = []
        self.args: list = []
        self.body: list = []
        self.names: list = []      # value names in definition order
        self.err: dict = {}         # name -> error bound in ulps of its dtype
        self.env: dict = {}         # state after running body with NumPy
        self.mutating = False       # body has in-place statements
        self.meta: list = []        # (targets, opname) per statement
        self.counter = 0
        self.rng = np.random.default_rng(draw(st.integers(0, 2 ** 31 - 1)))

    # ---- small drawing helpers -------------------------------------------
    def d(self, strat):
        return self.draw(strat)

    def choice(self, seq):
        return self.draw(st.sampled_from(seq))

    def randint(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi] (st.integers favours edge values; these
        choices shape the program and want an even spread)."""
        return self.draw(st.sampled_from(range(lo, hi + 1)))

    def chance(self, p: float) -> bool:
        # an integer draw keeps shrinking well-behaved (shrinks toward False)
        return self.draw(st.integers(0, 999)) < int(p * 1000)

    # ---- inputs ------------------------------------------------------------
    def gen_array_values(self, dt: str, shape) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self._gen_array_values(dt, shape)

    def _gen_array_values(self, dt: str, shape) -> np.ndarray:
        rng = self.rng
        n = int(np.prod(shape)) if shape else 1
        kind = np.dtype(dt).kind
        style = rng.integers(0, 10)
        if kind == "b":
            vals = rng.integers(0, 2, n).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dt)
            if kind == "u":
                vals = rng.integers(0, 21, n)
            else:
                vals = rng.integers(-10, 11, n)
            vals = vals.astype(dt)
            if style >= 8:  # a few extremes: wrap-around, overflow
                k = rng.integers(0, n + 1)
                idx = rng.choice(n, size=k, replace=True) if n else []
                ext = np.array([info.min, info.max, info.max - 1, info.min + 1], dtype=dt)
                vals[idx] = ext[rng.integers(0, 4, size=len(idx))]
        else:
            base = "float64" if kind == "f" else "complex128"
            if style < 4:
                re = rng.integers(-6, 7, n).astype(np.float64) * rng.choice([1.0, 0.5, 0.25], n)
            else:
                re = rng.uniform(-4, 4, n)
            if style >= 8:
                k = rng.integers(0, n + 1)
                idx = rng.choice(n, size=k, replace=True) if n else []
                re[idx] = rng.choice([0.0, -0.0, np.nan, np.inf, -np.inf, 1e4, -3e5, 0.5], size=len(idx))
            if kind == "c":
                im = rng.uniform(-3, 3, n)
                if style % 3 == 0:
                    im = rng.integers(-3, 4, n).astype(np.float64)
                vals = (re + 1j * im).astype(base)
            else:
                vals = re
            vals = vals.astype(dt)
        return vals.reshape(shape)

    def gen_inputs(self):
        nin = self.choice([1, 2, 2, 3])
        rank = self.choice([0, 1, 1, 2, 2, 2, 3, 3])
        # a common "full" shape; each input is a broadcast-compatible suffix
        full = [self.choice([1, 2, 3, 4, 5, 2, 3, 0]) if self.chance(0.06) else
                self.choice([1, 2, 3, 4, 5]) for _ in range(rank)]
        if self.chance(0.1) and rank:
            full[self.randint(0, rank - 1)] = 0
        same_dtype = self.chance(0.35)
        dt0 = self.choice(DTYPES)
        for i in range(nin):
            name = "abc"[i]
            dt = dt0 if same_dtype else self.choice(DTYPES)
            kind = self.randint(0, 19)
            if kind == 0:   # a NumPy scalar argument (strong)
                v = self.gen_array_values(dt, ())[()]
            elif kind == 1:  # a Python scalar argument (weak under NEP 50)
                v = self.gen_array_values(self.choice(["bool", "int64", "float64", "complex128"]), ())[()].item()
            elif kind == 2:  # 0-d array
                v = self.gen_array_values(dt, ())
            else:
                r = self.randint(0, rank) if rank else 0
                shp = list(full[rank - r:])
                for j in range(len(shp)):
                    if self.chance(0.2):
                        shp[j] = 1
                v = self.gen_array_values(dt, tuple(shp))
            self.params.append(name)
            self.args.append(v)
            self.names.append(name)
            self.err[name] = 0.0
        self.env = {p: _copy_arg(a) for p, a in zip(self.params, self.args)}

    # ---- operands ------------------------------------------------------------
    def new_name(self) -> str:
        n = f"v{self.counter}"
        self.counter += 1
        return n

    def pick_name(self, pred=None) -> str | None:
        cands = [n for n in self.names if n in self.env and (pred is None or pred(self.env[n]))]
        if not cands:
            return None
        # bias toward recent values: long chains fuse into few kernels
        if self.chance(0.6):
            return cands[-1 - self.randint(0, min(2, len(cands) - 1))]
        return self.choice(cands)

    def scalar_literal(self) -> str:
        k = self.randint(0, 9)
        if k <= 2:
            v = self.choice(_PY_INTS[:10]) if self.chance(0.85) else self.choice(_PY_INTS)
            return f"({v})" if v < 0 else str(v)
        if k <= 5:
            v = self.choice(_PY_FLOATS[:10]) if self.chance(0.85) else self.choice(_PY_FLOATS)
            s = _float_lit(v)
            return f"({s})" if s.startswith("-") else s
        if k == 6:
            return _elem_lit(self.choice(_PY_COMPLEX))
        if k == 7:
            return self.choice(["True", "False"])
        dt = self.choice(DTYPES)
        val = self.gen_array_values(dt, ())[()]
        return value_literal(val)

    def operand(self, p_scalar: float = 0.3) -> str:
        if self.chance(p_scalar):
            return self.scalar_literal()
        n = self.pick_name()
        return n if n is not None else self.scalar_literal()

    def array_name(self, pred=None) -> str | None:
        return self.pick_name(lambda v: isinstance(v, np.ndarray) and (pred is None or pred(v)))

    # ---- statement families ---------------------------------------------------
    def two_operands(self):
        a, b = self.operand(0.15), self.operand(0.35)
        if _is_literal(a) and _is_literal(b) and self.chance(0.95):
            a = self.pick_name() or a   # keep a traced value in play
        if self.chance(0.35):
            a, b = b, a
        return a, b

    def s_binop(self):
        op = self.choice(_BINOPS)
        a, b = self.two_operands()
        t = self.new_name()
        return [t], f"{t} = {a} {op} {b}", op

    def s_binufunc(self):
        f = self.choice(_BIN_UFUNCS)
        a, b = self.two_operands()
        t = self.new_name()
        return [t], f"{t} = np.{f}({a}, {b})", f

    def s_unary(self):
        k = self.randint(0, 9)
        a = self.pick_name() or self.scalar_literal()
        t = self.new_name()
        if k == 0:
            return [t], f"{t} = -{a}", "negative"
        if k == 1:
            return [t], f"{t} = abs({a})", "absolute"
        if k == 2:
            return [t], f"{t} = ~{a}", "invert"
        f = self.choice(_UN_UFUNCS)
        return [t], f"{t} = np.{f}({a})", f

    def s_multi(self):
        f = self.choice(_MULTI_OUT)
        a = self.pick_name() or self.scalar_literal()
        t1, t2 = self.new_name(), self.new_name()
        if f == "divmod":
            b = self.operand(0.4)
            if self.chance(0.3):
                return [t1, t2], f"{t1}, {t2} = divmod({a}, {b})", "divmod"
            return [t1, t2], f"{t1}, {t2} = np.divmod({a}, {b})", "divmod"
        return [t1, t2], f"{t1}, {t2} = np.{f}({a})", f

    def axis_arg(self, ndim: int, single: bool = False) -> str | None:
        k = self.randint(0, 9)
        if k <= 2 or ndim == 0:
            if ndim == 0 and self.chance(0.1):
                return "0"  # AxisError on 0-d
            return None
        if k == 9:
            return str(self.choice([ndim, -ndim - 1]))  # AxisError
        if single or k <= 6 or ndim < 2:
            ax = self.randint(0, ndim - 1)
            return str(ax - ndim if self.chance(0.3) else ax)
        axes = self.d(st.lists(st.integers(0, ndim - 1), min_size=2, max_size=ndim, unique=True))
        return "(" + ", ".join(map(str, axes)) + ")"

    def s_reduce(self):
        r = self.choice(_REDUCTIONS)
        x = self.pick_name(lambda v: isinstance(v, (np.ndarray, np.generic)))
        if x is None:
            return None
        v = self.env[x]
        ndim = np.ndim(v)
        single = r in ("argmax", "argmin", "cumsum", "cumprod")
        ax = self.axis_arg(ndim, single=single)
        kw = []
        if ax is not None:
            kw.append(f"axis={ax}")
        if r not in ("cumsum", "cumprod", "count_nonzero") and self.chance(0.3):
            kw.append("keepdims=True")
        if r in ("sum", "prod", "mean", "cumsum", "cumprod") and self.chance(0.15):
            kw.append(f"dtype=np.{self.choice(['float64', 'float32', 'int64', 'int32', 'complex128', 'uint8'])}")
        if r in ("std", "var") and self.chance(0.3):
            kw.append("ddof=1")
        if r in ("max", "min", "sum", "prod") and self.chance(0.1):
            kw.append(f"initial={self.choice(['0', '1', '-5', '2.5'])}")
        t = self.new_name()
        args = ", ".join(kw)
        method_ok = r not in ("count_nonzero", "nansum", "amax", "amin", "ptp")
        if method_ok and isinstance(v, np.ndarray) and self.chance(0.5):
            return [t], f"{t} = {x}.{r}({args})", r
        return [t], f"{t} = np.{r}({x}{', ' if args else ''}{args})", r

    def s_rowbcast(self):
        """A reduced value kept as a row (keepdims, expand_dims, reshape)
        broadcast against an operand of ANOTHER extent along the reduced
        axis, sometimes of a higher rank: the reduction's domain and its
        consumer's differ (issue 18's class of wrong answers)."""
        x = self.array_name(lambda v: v.ndim >= 1 and v.size > 0 and v.dtype.kind in "biuf")
        if x is None:
            return None
        v = self.env[x]
        ax = v.ndim - 1 if self.chance(0.7) else self.randint(0, v.ndim - 1)
        r = self.choice(["sum", "max", "min", "mean", "prod", "sum"])
        form = self.randint(0, 2)
        if form == 0:
            red = f"{x}.{r}(axis={ax}, keepdims=True)"
        elif form == 1:
            red = f"np.expand_dims(np.{r}({x}, axis={ax}), {ax})"
        else:
            shp = list(v.shape)
            shp[ax] = 1
            red = f"{x}.{r}(axis={ax}).reshape({tuple(shp)!r})"
        oshape = list(v.shape)
        oshape[ax] = self.choice([1, 2, 3, 5, 7, v.shape[ax] + 1, max(v.shape[ax] - 1, 1)])
        if self.chance(0.3):
            oshape = [self.choice([2, 3])] + oshape
        other = None
        if self.chance(0.4):
            other = self.array_name(lambda u: u.shape == tuple(oshape))
        if other is None:
            dt = self.choice(["float64", "float32", "int32", "int64", "bool", "uint8"])
            other = value_literal(self.gen_array_values(dt, tuple(oshape)))
        op = self.choice(["+", "-", "*", "+"])
        t = self.new_name()
        if self.chance(0.3):
            return [t], f"{t} = {other} {op} {red}", r
        return [t], f"{t} = {red} {op} {other}", r

    def s_where(self):
        c = self.pick_name()
        if c is None:
            return None
        if self.chance(0.5):
            other = self.operand(0.3)
            cmp_ = self.choice(["<", ">", "==", ">="])
            c = f"{c} {cmp_} {other}"
        a, b = self.operand(0.3), self.operand(0.3)
        t = self.new_name()
        return [t], f"{t} = np.where({c}, {a}, {b})", "where"

    def s_clip(self):
        x = self.pick_name()
        if x is None:
            return None
        lo = self.choice(["None", "0", "-1", "1.5", "(-2.5)", "3"])
        hi = self.choice(["None", "2", "4", "0.5", "10"])
        if lo == "None" and hi == "None":
            hi = "2"
        t = self.new_name()
        if isinstance(self.env[x], np.ndarray) and self.chance(0.4):
            return [t], f"{t} = {x}.clip({lo}, {hi})", "clip"
        if self.chance(0.2):
            lo = self.operand(0.0)
        return [t], f"{t} = np.clip({x}, {lo}, {hi})", "clip"

    def s_astype(self):
        x = self.pick_name(lambda v: isinstance(v, (np.ndarray, np.generic)))
        if x is None:
            return None
        dt = self.choice(DTYPES)
        v = self.env[x]
        if not self._cast_defined(v, dt):
            return None
        t = self.new_name()
        k = self.randint(0, 3)
        if k == 0:
            return [t], f"{t} = np.asarray({x}, dtype=np.{dt})", "astype"
        if k == 1 and isinstance(v, np.ndarray):
            return [t], f"{t} = {x}.astype(np.{dt}, copy=False)", "astype"
        return [t], f"{t} = {x}.astype(np.{dt})", "astype"

    @staticmethod
    def _cast_defined(v, dt) -> bool:
        """NumPy's float->int casts of NaN/inf/out-of-range values are
        platform-defined garbage: never ask for them."""
        src = np.asarray(v)
        tgt = np.dtype(dt)
        if src.dtype.kind in "fc" and tgt.kind in "iu":
            x = src.real.astype(np.float64)
            if not np.isfinite(x).all():
                return False
            info = np.iinfo(tgt)
            if x.size and (x.min() <= float(info.min) - 1 or x.max() >= float(info.max) + 1):
                return False
        return True

    def shape_literal(self) -> str:
        rank = self.randint(0, 3)
        dims = [self.choice([1, 2, 3, 4]) for _ in range(rank)]
        if rank == 1 and self.chance(0.5):
            return str(dims[0])
        return "(" + ", ".join(map(str, dims)) + ("," if rank == 1 else "") + ")"

    def s_create(self):
        k = self.randint(0, 9)
        t = self.new_name()
        dt = self.choice(DTYPES)
        if k == 0:
            return [t], f"{t} = np.zeros({self.shape_literal()}, dtype=np.{dt})", "zeros"
        if k == 1:
            return [t], f"{t} = np.ones({self.shape_literal()})", "ones"
        if k == 2:
            return [t], f"{t} = np.full({self.shape_literal()}, {self.scalar_literal()})", "full"
        x = self.pick_name(lambda v: isinstance(v, np.ndarray))
        if k in (3, 4, 5) and x is not None:
            f = self.choice(["zeros_like", "ones_like", "full_like"])
            extra = f", {self.scalar_literal()}" if f == "full_like" else ""
            if self.chance(0.3):
                extra += f", dtype=np.{dt}"
            return [t], f"{t} = np.{f}({x}{extra})", f
        if k == 6:
            n = self.randint(0, 6)
            if self.chance(0.5):
                return [t], f"{t} = np.arange({n})", "arange"
            start = self.choice(["0", "1", "-2", "0.5"])
            step = self.choice(["1", "2", "0.5", "-1", "0.25"])
            return [t], f"{t} = np.arange({start}, {n}, {step})", "arange"
        if k == 7:
            n = self.randint(0, 6)
            return [t], f"{t} = np.linspace({self.choice(['0', '-1', '2.5'])}, {self.choice(['1', '3', '-4'])}, {n})", "linspace"
        if k == 8:
            n = self.randint(0, 4)
            return [t], f"{t} = np.eye({n}{', dtype=np.' + dt if self.chance(0.4) else ''})", "eye"
        return [t], f"{t} = np.full({self.shape_literal()}, {self.scalar_literal()}, dtype=np.{dt})", "full"

    def s_round(self):
        x = self.pick_name()
        if x is None:
            return None
        d = self.choice([0, 0, 1, 2, -1])
        t = self.new_name()
        if d == 0 and self.chance(0.5):
            return [t], f"{t} = np.round({x})", "rint"
        return [t], f"{t} = np.round({x}, {d})", "round"

    def s_extern(self):
        """Ops numdyn runs as extern nodes or joins: matmul, dot, sort,
        concatenate, stack."""
        x = self.pick_name(lambda v: isinstance(v, np.ndarray))
        if x is None:
            return None
        v = self.env[x]
        t = self.new_name()
        k = self.randint(0, 6)
        if k == 0 and v.ndim >= 1:
            return [t], f"{t} = {x} @ {x}.T" if v.ndim >= 2 else f"{t} = {x} @ {x}", "matmul"
        if k == 1:
            y = self.pick_name(lambda w: isinstance(w, np.ndarray)) or x
            return [t], f"{t} = np.dot({x}, {y})", "matmul"
        if k == 2 and v.ndim >= 1:
            return [t], f"{t} = np.sort({x}, axis={self.randint(-v.ndim, v.ndim - 1)})", "sort"
        y = self.pick_name(lambda w: isinstance(w, np.ndarray)) or x
        if k in (3, 4) and v.ndim >= 1:
            return [t], f"{t} = np.concatenate(({x}, {y}), axis={self.randint(0, v.ndim - 1)})", "concatenate"
        if k == 5:
            return [t], f"{t} = np.stack([{x}, {y}])", "stack"
        return [t], f"{t} = np.outer({x}, {y})", "outer"

    def s_break(self):
        """Statements that need concrete values (graph breaks: bool of an
        array, float(), .item(), data-dependent shapes) or advanced
        indexing; pending lazy work must be flushed correctly around them."""
        x = self.pick_name(lambda v: isinstance(v, np.ndarray))
        if x is None:
            return None
        v = self.env[x]
        t = self.new_name()
        k = self.randint(0, 8)
        if k == 0:
            return [t], f"{t} = {x}[{x} > {self.choice(['0', '1', '0.5', 'False'])}]", "mask"
        if k == 1:
            return [t], f"{t} = float(np.max({x}))", "float"
        if k == 2:
            y = self.operand(0.2)
            z = self.operand(0.3)
            return [t], f"{t} = {y} * 2 if np.any({x} > 1) else {z} - 1", "cond"
        if k == 3 and v.ndim >= 1 and v.shape[0] > 0:
            return [t], f"{t} = {x}[[0, -1, 0]]", "gather"
        if k == 4 and v.ndim >= 1 and v.shape[0] > 0:
            n = v.shape[0]
            idx = [int(i) for i in self.rng.integers(-n, n, size=self.randint(1, 4))]
            if self.chance(0.05):
                idx.append(n)  # IndexError
            return [t], f"{t} = {x}[np.array({idx})]", "gather"
        if k == 5:
            return [t], f"{t} = np.nonzero({x})[0]", "nonzero"
        if k == 6 and v.size:
            return [t], f"{t} = {x}.item({self.randint(-v.size, v.size - 1)})", "item"
        if k == 7:
            return [t], f"{t} = np.unique({x})", "unique"
        return [t], f"{t} = {x}.sum() if {x}.sum() > 0 else -{x}.max(initial=0)", "cond"

    def s_loop(self):
        """A Python loop repeating one array statement (the same kernels
        again and again; a rebinding, not an in-place write)."""
        x = self.pick_name(lambda v: isinstance(v, (np.ndarray, np.generic)))
        if x is None or x in self.params:
            return None
        op = self.choice(["+", "-", "*", "/", "//", "%"])
        y = self.operand(0.5)
        k = self.randint(1, 4)
        if self.chance(0.3):
            f = self.choice(["maximum", "minimum", "hypot", "add"])
            return [x], f"for _i in range({k}): {x} = np.{f}({x}, {y})", f
        return [x], f"for _i in range({k}): {x} = {x} {op} {y}", op

    def s_adv_write(self):
        """Advanced-index writes: masks, integer arrays (repeated indices:
        last write wins, `+=` adds once), np.add.at (adds every time)."""
        x = self.array_name(lambda v: v.ndim >= 1 and v.shape[0] > 0)
        if x is None:
            return None
        v = self.env[x]
        n = v.shape[0]
        idx = [int(i) for i in self.rng.integers(-n, n, size=self.randint(1, 4))]
        y = self.operand(0.6)
        k = self.randint(0, 4)
        if k == 0:
            return [], f"{x}[{x} > {self.choice(['0', '1', '2.5'])}] = {y}", "setitem"
        if k == 1:
            return [], f"{x}[{idx}] = {y}", "setitem"
        if k == 2:
            return [], f"{x}[{idx}] += {y}", "+="
        if k == 3 and v.flags.writeable:
            # (NumPy's add.at writes even into read-only arrays: not asked)
            return [], f"np.add.at({x}, {idx}, {y})", "add"
        return [], f"{x}[{x} < 0] *= {y}", "*="

    # ---- views and in-place (mode "views") -----------------------------------
    def index_expr(self, shape) -> str:
        parts = []
        ndim = len(shape)
        used = 0
        want = self.randint(1, max(1, ndim))
        ellipsis = ndim > 1 and self.chance(0.15)
        for i in range(want):
            if used >= ndim:
                break
            n = shape[used]
            k = self.randint(0, 9)
            if k == 0:
                parts.append("None")
                continue
            if k <= 2 and n > 0:
                idx = self.randint(-n, n - 1)
                if self.chance(0.03):
                    idx = n  # IndexError
                parts.append(str(idx))
            else:
                start = self.choice([None, 0, 1, -1, 2, -2, n])
                stop = self.choice([None, None, -1, 1, 2, n, n + 2, -n - 1])
                step = self.choice([None, None, 1, 2, -1, -2, 3])
                s = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
                if step is not None:
                    s += ":" + str(step)
                parts.append(s)
            used += 1
        if ellipsis:
            parts.insert(self.randint(0, len(parts)), "...")
        if not parts:
            parts = ["..."]
        return ", ".join(parts)

    def reshape_target(self, shape) -> str:
        size = int(np.prod(shape)) if shape else 1
        if size == 0:
            return "(" + ", ".join(map(str, shape[::-1])) + ("," if len(shape) == 1 else "") + ")"
        dims = []
        rest = size
        for _ in range(self.randint(0, 2)):
            divs = [q for q in range(1, rest + 1) if rest % q == 0]
            q = self.choice(divs)
            dims.append(q)
            rest //= q
        dims.append(rest)
        if self.chance(0.3):
            dims[self.randint(0, len(dims) - 1)] = -1
        return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"

    def s_view(self):
        x = self.array_name()
        if x is None:
            return None
        v = self.env[x]
        t = self.new_name()
        k = self.randint(0, 12)
        if k <= 4 and v.ndim:
            return [t], f"{t} = {x}[{self.index_expr(v.shape)}]", "getitem"
        if k == 5:
            return [t], f"{t} = {x}.T", "T"
        if k == 6 and v.ndim:
            perm = list(self.rng.permutation(v.ndim))
            return [t], f"{t} = np.transpose({x}, {tuple(int(p) for p in perm)!r})", "transpose"
        if k == 7:
            return [t], f"{t} = {x}.reshape({self.reshape_target(v.shape)})", "reshape"
        if k == 8:
            return [t], f"{t} = {x}.ravel()", "ravel"
        if k == 9 and v.ndim:
            return [t], f"{t} = np.flip({x}, {self.randint(-v.ndim, v.ndim - 1)})", "flip"
        if k == 10 and v.ndim >= 2:
            return [t], f"{t} = np.swapaxes({x}, 0, {v.ndim - 1})", "swapaxes"
        if k == 11:
            return [t], f"{t} = np.expand_dims({x}, {self.randint(-v.ndim - 1, v.ndim)})", "expand_dims"
        if k == 12 and v.ndim >= 2 and self.chance(0.5):
            return [t], f"{t} = {x}.diagonal()", "diagonal"
        if v.dtype.kind == "c" and self.chance(0.5):
            return [t], f"{t} = {x}.{self.choice(['real', 'imag'])}", "real"
        if self.chance(0.3):
            shp = (self.choice([2, 3]),) + v.shape
            return [t], f"{t} = np.broadcast_to({x}, {shp!r})", "broadcast_to"
        if self.chance(0.5):
            return [t], f"{t} = np.squeeze({x})", "squeeze"
        return [t], f"{t} = {x}.copy()", "copy"

    def s_inplace(self):
        x = None
        if self.chance(0.5):
            # prefer writing into the caller's arrays and views of them:
            # numdyn must write the final state back into the caller's buffer
            params = [p for p in self.params if isinstance(self.env.get(p), np.ndarray)]
            cands = [n for n in self.names if isinstance(self.env.get(n), np.ndarray)
                     and any(np.shares_memory(self.env[n], self.env[p]) for p in params)]
            if cands:
                x = self.choice(cands)
        if x is None:
            x = self.array_name()
        if x is None:
            return None
        v = self.env[x]
        k = self.randint(0, 9)
        y = self.operand(0.4)
        aug = self.choice(["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="])
        if k <= 2 and v.ndim:
            return [], f"{x}[{self.index_expr(v.shape)}] = {y}", "setitem"
        if k <= 4 and v.ndim:
            return [], f"{x}[{self.index_expr(v.shape)}] {aug} {y}", aug
        if k == 5:
            return [], f"{x}[...] = {y}", "setitem"
        if k == 6:
            f = self.choice(["add", "multiply", "subtract", "maximum", "true_divide", "floor_divide"])
            a = self.operand(0.2)
            if self.chance(0.4) and v.ndim:
                return [], f"np.{f}({a}, {y}, out={x}[{self.index_expr(v.shape)}])", f
            return [], f"np.{f}({a}, {y}, out={x})", f
        if k == 7:
            f = self.choice(["negative", "sqrt", "exp", "absolute", "floor"])
            return [], f"np.{f}({x}, out={x})", f
        if k == 8 and self.chance(0.5):
            return [], f"{x}.fill({self.scalar_literal()})", "fill"
        return [], f"{x} {aug} {y}", aug

    # ---- choosing, validating, accepting statements --------------------------
    def families(self):
        fam = [(self.s_binop, 6), (self.s_binufunc, 4), (self.s_unary, 4)]
        if self.mode == "rows":
            fam += [(self.s_rowbcast, 8), (self.s_reduce, 3), (self.s_extern, 1)]
        if self.mode in ("reduce", "all", "views"):
            fam += [(self.s_reduce, 4), (self.s_where, 2), (self.s_clip, 1),
                    (self.s_astype, 2), (self.s_create, 1), (self.s_round, 1),
                    (self.s_multi, 1)]
        if self.mode in ("all", "views"):
            fam += [(self.s_extern, 1), (self.s_break, 2), (self.s_loop, 1)]
        if self.mode == "views":
            fam += [(self.s_view, 6), (self.s_inplace, 6), (self.s_adv_write, 2)]
        return fam

    def draw_candidate(self):
        fams = self.families()
        total = sum(w for _, w in fams)
        k = self.randint(0, total - 1)
        for fn, w in fams:
            if k < w:
                return fn()
            k -= w
        return None

    def run_body(self, body, perturb=None):
        """Run the statements with NumPy from fresh copies of the args.
        perturb = (index of statement, {name: ulps}, seed, sign): just before
        that statement, rebind those names to perturbed copies (random signs
        from seed, all flipped when sign is -1)."""
        env = {p: _copy_arg(a) for p, a in zip(self.params, self.args)}
        for i, s in enumerate(body):
            if perturb is not None and perturb[0] == i:
                rng = np.random.default_rng(perturb[2])
                for name, ulps in perturb[1].items():
                    env[name] = _perturb(env[name], ulps, rng, perturb[3])
            exec(_code(s), _GLOBALS, env)
        return env

    def try_statement(self, targets, stmt, opname):
        """Run stmt after the current body. Returns ("ok", env, err_updates),
        ("raise", exc) or ("reject",)."""
        body = self.body + [stmt]
        with quiet():
            try:
                if self.mode == "views":
                    # re-run: aliasing between values must be real arrays'
                    snap = self.run_body(self.body)
                    after = self.run_body(self.body)
                else:
                    snap = self.env
                    after = dict(self.env)
                exec(_code(stmt), _GLOBALS, after)
            except Exception as e:  # NumPy refuses this statement
                return ("raise", e)
            # which names did the statement write or change
            changed = [n for n in after if not n.startswith("_") and (n not in snap or not (
                after[n] is snap[n] or _same(after[n], snap[n])))]
            for n in targets:
                if n not in changed:
                    changed.append(n)
            if not changed:
                return ("ok", after, {})
            reads = [n for n in self.names if n in snap and n in _names_in(stmt)]
            fwd = _FWD_ULPS.get(opname, 0)
            loop = re.match(r"for _i in range\((\d+)\)", stmt)
            if loop:
                fwd *= int(loop.group(1))
            backward = _backward_ulps(opname, stmt, snap, reads)
            to_perturb = {}
            for n in reads:
                if not _is_float_value(snap[n]):
                    continue
                u = max(self.err.get(n, 0.0), backward)
                if u > 0:
                    to_perturb[n] = u
            worst = {n: 0.0 for n in changed}
            if to_perturb:
                for sign in (1.0, -1.0):   # both directions, element by element
                    try:
                        pert = self.run_body(body, (len(body) - 1, to_perturb, 1234, sign))
                    except Exception:
                        return ("reject",)
                    for n in changed:
                        dev = _deviation_ulps(after[n], pert.get(n))
                        if not math.isfinite(dev):
                            return ("reject",)
                        worst[n] = max(worst[n], dev)
            updates = {}
            for n in changed:
                val = after[n]
                if not _is_float_value(val):
                    updates[n] = 0.0
                    continue
                dt = _dtype_of(val)
                # forward error is in ulps of the computing dtype: float16
                # computes in float32 and rounds, so 1 ulp at most
                f_ulps = 0.0
                if fwd:
                    f_ulps = 1.0 if np.finfo(dt).bits == 16 else float(fwd)
                    if opname == "round":
                        f_ulps = 2.0
                e = worst[n] + f_ulps
                if n not in targets:  # changed through an alias or in place
                    e = max(e, self.err.get(n, 0.0))
                rtol, _ = dtype_tol(dt)
                if e > 0 and e * _eps(dt) > rtol / 4:
                    return ("reject",)
                updates[n] = e
            return ("ok", after, updates)

    def accept(self, targets, stmt, env, updates, opname=""):
        self.body.append(stmt)
        self.meta.append((list(targets), opname))
        if stmt_mutates(stmt):
            self.mutating = True
        self.env = env
        for n in targets:
            if n not in self.names:
                self.names.append(n)
        for n, e in updates.items():
            self.err[n] = e
            if n not in self.names:
                self.names.append(n)

    def build(self) -> Program:
        self.gen_inputs()
        nstmt = self.randint(1, self.max_stmts)
        allow_raise = self.chance(0.1)
        raised = False
        for _ in range(nstmt):
            done = False
            for _attempt in range(12):
                cand = self.draw_candidate()
                if cand is None:
                    continue
                targets, stmt, opname = cand
                res = self.try_statement(targets, stmt, opname)
                if res[0] == "ok":
                    self.accept(targets, stmt, res[1], res[2], opname)
                    done = True
                    break
                if res[0] == "raise" and allow_raise:
                    self.body.append(stmt)
                    self.meta.append((list(targets), opname))
                    raised = True
                    done = True
                    break
            if raised or not done:
                break
        if raised:
            tgt = self.meta[-1][0]
            ret = tgt[0] if tgt else "None"
            return self.program(ret, raises=True)
        if not self.body:
            # at least one op: a plain add always exists
            t = self.new_name()
            stmt = f"{t} = {self.params[0]} + {self.params[-1]}"
            res = self.try_statement([t], stmt, "+")
            if res[0] != "ok":
                self.body.append(stmt)
                self.meta.append(([t], "+"))
                return self.program(t, raises=True)
            self.accept([t], stmt, res[1], res[2], "+")
        return self.program(self.pick_return())

    def program(self, ret, raises=False) -> Program:
        return Program(list(self.params), list(self.args), list(self.body), ret,
                       raises=raises, meta=list(self.meta), mode=self.mode)

    def pick_return(self) -> str:
        last = self.body[-1]
        tg = self.meta[-1][0]
        if not tg:  # an in-place statement: return what it wrote into
            tg = [_inplace_target(last)]
        rets = [tg[0]]
        others = [n for n in self.names if n in self.env and n not in rets]
        for _ in range(self.randint(0, 2)):
            if others and self.chance(0.5):
                rets.append(self.choice(others))
        if self.mode == "views" and self.chance(0.4):
            rets.append(self.choice(self.params))
        if len(rets) == 1 and self.chance(0.9):
            return rets[0]
        if self.chance(0.2):
            return "[" + ", ".join(rets) + "]"
        return "(" + ", ".join(rets) + ",)"


def _is_literal(src: str) -> bool:
    return not re.fullmatch(r"[a-c]|v\d+", src)


def _names_in(stmt: str) -> set:
    return set(re.findall(r"\b([a-c]|v\d+)\b", stmt))


def _assigned_names(stmt: str) -> list:
    if stmt.startswith("for "):
        return []
    if " = " not in stmt:
        return []
    lhs = stmt.split(" = ", 1)[0]
    if "[" in lhs or "(" in lhs:
        return []
    return [s.strip() for s in lhs.split(",")]


def _inplace_target(stmt: str) -> str:
    m = re.search(r"out=([a-c]|v\d+)", stmt) or re.match(r"np\.add\.at\(([a-c]|v\d+)", stmt)
    if m:
        return m.group(1)
    m = re.match(r"([a-c]|v\d+)", stmt)
    return m.group(1)


def stmt_mutates(stmt: str) -> bool:
    if stmt.startswith("for "):
        return False
    if "out=" in stmt or ".fill(" in stmt:
        return True
    return not _assigned_names(stmt)


def _backward_ulps(opname, stmt, snap, reads) -> float:
    """Input-side error of ops whose result depends on evaluation order."""
    if opname in ("sum", "prod", "mean", "std", "var", "cumsum", "cumprod",
                  "nansum", "matmul"):
        n = 1
        for r in reads:
            n = max(n, int(np.size(snap[r])))
        return 4.0 + n / 4.0
    complex_in = any(_dtype_of(snap[r]) is not None and _dtype_of(snap[r]).kind == "c" for r in reads)
    if complex_in and opname in ("*", "multiply", "/", "true_divide", "divide",
                                 "absolute", "square", "reciprocal", "**",
                                 "power", "*=", "/=", "**=", "abs", "sign"):
        return 4.0
    if complex_in and opname in _FWD_ULPS:
        return 4.0
    return 0.0


def replay(prog: Program, args=None, body=None, meta=None, ret=None):
    """Re-validate prog's statements (optionally with other argument values,
    or a subset of its statements) with the same error analysis the
    generator uses. Returns the validated Program, or None when a statement
    becomes numerically unsafe to compare or NumPy raises before the end."""
    b = Builder.__new__(Builder)
    b.mode = prog.mode
    b.params = list(prog.params)
    b.args = list(prog.args if args is None else args)
    b.names = list(b.params)
    b.err = {p: 0.0 for p in b.params}
    b.env = {p: _copy_arg(a) for p, a in zip(b.params, b.args)}
    b.body, b.meta, b.mutating = [], [], False
    return replay_statements(b, prog, body, meta, ret)


def replay_statements(b, prog, body=None, meta=None, ret=None):
    """The statements of prog (or body/meta) run again on builder b, whose
    arguments and environment the caller set up; the validated program, or
    None (see replay)."""
    body = prog.body if body is None else body
    meta = prog.meta if meta is None else meta
    for i, (stmt, (targets, opname)) in enumerate(zip(body, meta)):
        res = b.try_statement(targets, stmt, opname)
        if res[0] == "ok":
            b.accept(targets, stmt, res[1], res[2], opname)
            continue
        if res[0] == "raise" and i == len(body) - 1:
            b.body.append(stmt)
            b.meta.append((list(targets), opname))
            return b.program(prog.ret if ret is None else ret, raises=True)
        return None
    r = prog.ret if ret is None else ret
    try:
        with quiet():
            eval(compile(r, "<ret>", "eval"), _GLOBALS, dict(b.env))
    except Exception:
        return None
    return b.program(r)


def value_variants(prog: Program, k: int, seed: int = 0) -> list:
    """Up to k copies of prog on new argument values of the same dtypes and
    shapes (so numdyn reuses the same kernels), each validated by replay()."""
    rng = np.random.default_rng(seed)
    out = []
    b = Builder.__new__(Builder)
    for _ in range(k):
        b.rng = np.random.default_rng(rng.integers(0, 2 ** 31))
        args = []
        for a in prog.args:
            if isinstance(a, np.ndarray):
                args.append(b.gen_array_values(a.dtype.name, a.shape))
            elif isinstance(a, np.generic):
                args.append(b.gen_array_values(a.dtype.name, ())[()])
            else:
                args.append(a)
        v = replay(prog, args=args)
        if v is not None and v.raises == prog.raises:
            out.append(v)
    return out


def programs(mode: str = "all", max_stmts: int = 12):
    """Hypothesis strategy producing Program objects."""
    @st.composite
    def _prog(draw):
        return Builder(draw, mode, max_stmts).build()
    return _prog()


# --------------------------------------------------------------------------
# comparing a program under numdyn with NumPy


def _failure(prog: Program, backend: str, compiler=None):
    """The AssertionError text when numdyn disagrees with NumPy on prog,
    else None. compiler(fn) -> callable replaces numdyn.compile (the
    harness's own tests use deliberately wrong ones)."""
    import oracle  # tests/oracle.py
    fn = prog.function()
    with quiet():
        try:
            oracle.check(fn, *prog.fresh_args(), backend=backend,
                         compiled=None if compiler is None else compiler(fn))
        except AssertionError as e:
            return str(e)
    return None


def minimize(prog: Program, backend: str, budget: int = 60, compiler=None,
             kind: str | None = None, replay=replay, failure=_failure) -> Program:
    """Greedy shrink of a failing program: drop statements and returned
    values while numdyn still disagrees with NumPy in the same way (same
    _signature as `kind`, or as prog's own failure); each candidate is
    re-validated, so the smaller program is as free of float noise.
    replay/failure: the program kind's own (fuzz_views_extra's LayoutPrograms
    pass theirs)."""
    if kind is None:
        first = failure(prog, backend, compiler)
        kind = _signature(first) if first else None

    def still_fails(cand):
        msg = failure(cand, backend, compiler)
        return msg is not None and (kind is None or _signature(msg) == kind)

    cur = prog
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        # simpler return first: one returned name
        rets = [r.strip() for r in cur.ret.strip("()[]").split(",") if r.strip()]
        if len(rets) > 1:
            for r in rets:
                tries += 1
                cand = replay(cur, ret=r)
                if cand is not None and still_fails(cand):
                    cur, progress = cand, True
                    break
        last = len(cur.body) - 1 if cur.raises else len(cur.body)
        for i in reversed(range(last)):
            if tries >= budget:
                break
            body = cur.body[:i] + cur.body[i + 1:]
            meta = cur.meta[:i] + cur.meta[i + 1:]
            ret = cur.ret
            gone = cur.meta[i][0]
            if any(re.search(rf"\b{g}\b", ret) for g in gone) and body:
                tgt = meta[-1][0] or [_inplace_target(body[-1])]
                ret = tgt[0]
            tries += 1
            cand = replay(cur, body=body, meta=meta, ret=ret)
            if cand is not None and still_fails(cand):
                cur, progress = cand, True
                break
    return cur


def check_program(prog: Program, backend: str, shrink: bool = True, compiler=None):
    """Run prog with NumPy and with numdyn.compile(backend=...); assert they
    agree (values, dtypes, shapes, returned types, exceptions, arguments).
    On a mismatch the message holds a minimized, self-contained reproducer."""
    msg = _failure(prog, backend, compiler)
    if msg is None:
        return
    small = minimize(prog, backend, compiler=compiler, kind=_signature(msg)) if shrink else prog
    small_msg = _failure(small, backend, compiler) or msg
    raise AssertionError(
        f"numdyn ({backend}) disagrees with NumPy:\n{small_msg}\n"
        f"--- minimized reproducer ---\n{small.repro(backend)}"
        f"--- original program ({len(prog.body)} statements) ---\n{prog.source()}")


# --------------------------------------------------------------------------
# running many programs: one report with the distinct failures


def _signature(msg: str) -> str:
    """A failure's kind, for grouping: its first line without numbers and
    quoted values."""
    first = msg.strip().splitlines()[0] if msg.strip() else msg
    first = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", first)
    first = re.sub(r"\(.*?\)", "(…)", first)
    first = re.sub(r"[-+]?\d[\d.e+-]*", "#", first)
    first = re.sub(r"(\[#\]|\.real|\.imag)+", "", first)  # where in the result
    return first[:160]


def pin_hypothesis_constants() -> bool:
    """Hypothesis (6.1xx and later) biases its draws with constants it mines
    from every local module loaded (tests/, bench/), so a derandomized corpus
    changed whenever any of them was imported or edited: importing
    bench/bench_soak.py at collection time once changed CI's fuzz corpus (and
    with it which programs ran). Fixed-seed runs draw without them: the same
    seed gives the same programs, whatever else is loaded. Idempotent; a
    Hypothesis without the mechanism is left alone (False)."""
    try:
        from hypothesis.internal.conjecture import providers as P
        from hypothesis.internal.constants_ast import Constants
        from hypothesis.internal.floats import float_to_int
        from sortedcontainers import SortedSet
    except ImportError:
        return False
    if getattr(P, "_numdyn_pinned", False):
        return True
    if not hasattr(P, "_get_local_constants"):
        return False
    empty = Constants(integers=SortedSet(), floats=SortedSet(key=float_to_int),
                      bytes=SortedSet(), strings=SortedSet())
    P._get_local_constants = lambda: empty
    P.CONSTANTS_CACHE.cache.clear()
    P._numdyn_pinned = True
    return True


def collect_programs(mode: str, n: int, *, derandomize: bool = True,
                     variants: int = 0, max_stmts: int = 12, sink=None):
    """Generate n programs with hypothesis (a fixed seed when derandomize),
    each followed by up to `variants` value variants. With sink, each
    program is handed to sink(prog) as it is made and nothing is kept."""
    from hypothesis import HealthCheck, given, settings
    out = []
    put = sink if sink is not None else out.append

    if derandomize:
        pin_hypothesis_constants()

    @settings(max_examples=n, deadline=None, derandomize=derandomize,
              database=None, suppress_health_check=list(HealthCheck))
    @given(programs(mode, max_stmts))
    def _collect(prog):
        put(prog)
        # (raising programs mostly fail on types, not values: no variants)
        for v in value_variants(prog, 0 if prog.raises else variants, seed=len(prog.body)):
            put(v)
    _collect()
    return out


_CORPORA = {}


def corpus(mode: str, n: int, variants: int = 0) -> tuple:
    """collect_programs(mode, n, variants=variants) with the fixed seed, made
    once per process and shared by the test modules that check it
    (test_fuzz_views' batches and test_fuzz_programs' replays of the same
    "views" programs: ~20 s of generation each, and the replays then load
    the batches' kernels from the disk cache's kernel index)."""
    key = (mode, n, variants)
    if key not in _CORPORA:
        _CORPORA[key] = tuple(collect_programs(mode, n, variants=variants))
    return _CORPORA[key]


def batch(progs) -> Program:
    """One Program running every program of progs, in order, in one call:
    each keeps its own source as a nested function (its names and text
    unchanged; numdyn remaps np inside nested functions too), and the batch
    returns the tuple of their results. Traced as one function, the batch
    flushes once (plus the programs' own graph breaks), so its kernels
    compile in one compiler run instead of one per program. None of progs
    may raise: an exception would hide the later programs' results."""
    assert progs and not any(p.raises for p in progs)
    params, args, body, calls = [], [], [], []
    for i, p in enumerate(progs):
        mine = [f"p{i}_{n}" for n in p.params]
        params += mine
        args += list(p.args)
        body += p.source(f"prog{i}").rstrip("\n").splitlines()
        calls.append(f"prog{i}({', '.join(mine)})")
    return Program(params, args, body, "(" + ", ".join(calls) + ",)", mode="batch")


def bump_float64(r):
    """r with the first element of every float64 array in it changed: the
    harness's own tests make deliberately wrong compilers with it."""
    if isinstance(r, np.ndarray) and r.dtype == np.float64 and r.size:
        r = r.copy()
        r.flat[0] += 1
        return r
    if isinstance(r, (tuple, list)):
        return type(r)(bump_float64(x) for x in r)
    return r


def assert_batching_blames_like_alone(report_cls, progs, make):
    """The harness's own check: with the wrong compiler `make`, checking
    progs in batches (report_cls(..., batch_size=8)) finds exactly the
    failures that checking them one by one finds, each blamed on its own
    program."""
    alone = report_cls("eager", compiler=make)
    batched = report_cls("eager", compiler=make, batch_size=8)
    for p in progs:
        alone.check(p)
        batched.check(p)
    alone.flush()
    batched.flush()
    assert batched.batches >= len(progs) // 10
    assert batched.ran == alone.ran == len(progs)
    assert 0 < batched.failed == alone.failed < len(progs)
    assert ({sig: g[0] for sig, g in batched.groups.items()}
            == {sig: g[0] for sig, g in alone.groups.items()})
    assert "only in a batch" not in batched.text()


class Report:
    """Outcome of running many programs against one backend.

    Programs are checked in batches of `batch_size` (see batch()): a batch
    that agrees with NumPy on every result and argument clears all its
    programs; one that does not is checked again program by program, so
    each failure is reported (and minimized) as the program's own. A batch
    that fails while each of its programs passes alone is a failure too,
    reported with the batch's reproducer. A program never shares a batch
    with another of the same source (its value variants): those run in a
    later batch, so they exercise kernels cached by an earlier call."""

    def __init__(self, backend: str, max_reports: int | None = None, compiler=None,
                 batch_size: int = 1):
        import os
        self.backend = backend
        self.compiler = compiler
        self.batch_size = batch_size
        # how many kinds of failure get a minimized reproducer
        self.max_reports = (int(os.environ.get("NUMDYN_FUZZ_REPORTS", "4"))
                            if max_reports is None else max_reports)
        self.ran = 0
        self.failed = 0
        self.batches = 0
        self.groups: dict = {}   # signature -> [count, first failing program, message]
        self._open: list = []    # batches being filled: [(sources, programs)]

    def check(self, prog: Program):
        """Check prog (now, or with its batch once the batch is full)."""
        if prog.raises or self.batch_size <= 1:
            self._check_one(prog)
            return
        src = prog.source()
        for i, (sources, progs) in enumerate(self._open):
            if src not in sources:
                break
        else:
            self._open.append((set(), []))
            i = len(self._open) - 1
        sources, progs = self._open[i]
        sources.add(src)
        progs.append(prog)
        if len(progs) >= self.batch_size:
            del self._open[i]
            self._check_batch(progs)

    def flush(self):
        """Check the programs of batches not yet full."""
        while self._open:
            self._check_batch(self._open.pop(0)[1])

    def _check_batch(self, progs):
        if len(progs) == 1:
            self._check_one(progs[0])
            return
        self.batches += 1
        whole = self._batch(progs)
        msg = self._failure_of(whole)
        if msg is None:
            self.ran += len(progs)
            return
        before = self.failed
        for p in progs:
            self._check_one(p)
        if self.failed == before:
            self._record(whole, "only in a batch: " + msg)

    def _check_one(self, prog: Program):
        self.ran += 1
        msg = self._failure_of(prog)
        if msg is not None:
            self._record(prog, msg)

    def _failure_of(self, prog: Program):
        """_fail(prog), the native backend compiling a graph's kernels as a
        few translation units (numdyn.config.background_compile off: up to
        one unit per core) instead of one compiler run per kernel. A batch
        is one graph of tens of kernels: the same kernels' C, in about 35%
        less compiler CPU time (the compiler's start-up, the header and the
        link paid per unit, not per kernel). The rest of the suite runs the
        default, one unit a kernel."""
        import numdyn
        saved = numdyn.config.background_compile
        numdyn.config.background_compile = False
        try:
            return self._fail(prog)
        finally:
            numdyn.config.background_compile = saved

    # what a subclass for another kind of Program replaces
    def _fail(self, prog: Program):
        return _failure(prog, self.backend, self.compiler)

    def _batch(self, progs) -> Program:
        return batch(progs)

    def _minimize(self, prog: Program, kind: str) -> Program:
        return minimize(prog, self.backend, compiler=self.compiler, budget=40, kind=kind)

    def _record(self, prog: Program, msg: str):
        self.failed += 1
        sig = _signature(msg)
        g = self.groups.get(sig)
        if g is None:
            self.groups[sig] = [1, prog, msg]
        else:
            g[0] += 1

    def text(self) -> str:
        lines = [f"numdyn ({self.backend}) disagrees with NumPy on {self.failed} of "
                 f"{self.ran} programs, {len(self.groups)} kinds of failure:"]
        ranked = sorted(self.groups.items(), key=lambda kv: -kv[1][0])
        for sig, (count, _, _) in ranked:
            lines.append(f"  {count:5d} x {sig}")
        for sig, (count, prog, msg) in ranked[:self.max_reports]:
            if prog.mode == "batch":  # nested functions: not shrinkable statement by statement
                small, small_msg = prog, msg
            else:
                small = self._minimize(prog, sig)
                small_msg = self._fail(small) or msg
            lines += ["", "=" * 72, f"[{count} x] {small_msg}", "--- minimized reproducer ---",
                      small.repro(self.backend).rstrip()]
        return "\n".join(lines)

    def assert_ok(self):
        self.flush()
        if self.failed:
            raise AssertionError(self.text())
