"""Loop programs: the oracle helpers and a random generator for issue 17
(Python loops over array elements, captured as native loops).

Three parts, used by tests/test_loops_elements.py, tests/test_loops_errors.py
and tests/test_loops_fuzz.py:

- ``check_calls(fn, args1, args2, ...)``: plain Python/NumPy is the oracle.
  One ``numdyn.compile(fn)`` is called on a deep copy of each argument tuple
  (and once more on the first: the second call of a signature may take
  another path than the first), the plain function on another copy; both
  must give the same result (exact Python type: int/float/bool vs NumPy
  scalar vs ndarray; dtype; value, exact for ints and bools, within the
  dtype's tolerance for floats), the same exception (type and message), the
  same argument contents afterwards -- for a raising call, the state the
  arrays were in at the moment of the exception -- and the same warning
  categories (``warnings.catch_warnings(record=True)``; categories only, not
  messages). Returns the plain side's outcomes, so tests can also assert
  that their program does what they say (raises at iteration k, builds a
  Python int past 2**63, wraps an int8).

- ``make_function(src)``: exec a function from source text. The source is
  written to a real file (and registered in linecache), so loop capture,
  which reads the function's source (AST), sees it like any other function.

- ``loop_programs()``: a hypothesis strategy of random small loop programs
  (1-3 nested for/while loops over small ranges, scalar locals of Python
  int/float/bool and NumPy scalar types, element loads and stores of 1-D and
  2-D arrays of several dtypes with indices derived from the loop variables
  -- in range, and sometimes not, so IndexError is reached at some iteration
  -- if/elif/else, break/continue, arithmetic including // and % with zero
  divisors). Each program comes with two argument sets of the same types
  (other values and sizes): the compiled function is reused for the second.
  Only correctly rounded float operations are generated (+ - * / // % sqrt
  abs floor min max comparisons), so plain and compiled must agree to the
  bit up to the oracle's tolerance, and any difference is a real one.
"""
from __future__ import annotations

import ast
import atexit
import copy
import hashlib
import inspect
import linecache
import math
import os
import random
import shutil
import tempfile
import textwrap
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from oracle import assert_same

DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "uint32",
          "uint64", "bool"]
INT_DTYPES = [d for d in DTYPES if "int" in d]


# --------------------------------------------------------------------------
# the oracle


class Outcome:
    """One call: its value or exception, and the warning categories raised."""

    __slots__ = ("value", "exc", "categories")

    def __init__(self, value=None, exc=None, categories=()):
        self.value = value
        self.exc = exc
        self.categories = tuple(categories)

    def __repr__(self):
        if self.exc is not None:
            return f"Outcome(raised {type(self.exc).__name__}: {self.exc})"
        return f"Outcome({self.value!r})"


def run(fn, args) -> Outcome:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(*args)
        except Exception as e:  # the exception is the outcome compared
            return Outcome(exc=e, categories=_categories(caught))
    return Outcome(value=value, categories=_categories(caught))


def _categories(caught):
    return sorted({w.category.__name__ for w in caught})


def _short(v, n=300):
    r = " ".join(repr(v).split())
    return r if len(r) <= n else r[:n] + "..."


def compare(exp: Outcome, act: Outcome, exp_args, act_args, where: str, *,
            rtol=None, atol=None, warn=True):
    """AssertionError unless the compiled side's outcome and arguments are
    the plain side's."""
    if exp.exc is not None or act.exc is not None:
        if exp.exc is None:
            raise AssertionError(f"{where}: plain returned {_short(exp.value)}, compiled "
                                 f"raised {type(act.exc).__name__}: {act.exc}") from act.exc
        if act.exc is None:
            raise AssertionError(f"{where}: plain raised {type(exp.exc).__name__}: "
                                 f"{exp.exc}, compiled returned {_short(act.value)}")
        if type(act.exc) is not type(exp.exc) or str(act.exc) != str(exp.exc):
            raise AssertionError(
                f"{where}: exception differs:\n  plain:    {type(exp.exc).__name__}: "
                f"{exp.exc}\n  compiled: {type(act.exc).__name__}: {act.exc}") from act.exc
    else:
        assert_same(act.value, exp.value, path=f"{where}: result", rtol=rtol, atol=atol)
    assert_same(list(act_args), list(exp_args), rtol=rtol, atol=atol,
                path=f"{where}: arguments after the call"
                     + (" (at the exception)" if exp.exc is not None else ""))
    if warn and act.categories != exp.categories:
        raise AssertionError(f"{where}: warning categories differ: plain "
                             f"{list(exp.categories)}, compiled {list(act.categories)}")


def check_calls(fn, *arg_sets, backend="native", rtol=None, atol=None, warn=True,
                repeat=True, compiled=None):
    """Compile fn once; call it on a copy of each argument tuple (then on the
    first again when repeat) and compare each call with plain fn on another
    copy. Returns the plain side's Outcomes, one per argument set."""
    if compiled is None:
        import numdyn
        compiled = numdyn.compile(fn, backend=backend)
    sets = [tuple(a) for a in arg_sets]
    if repeat:
        sets.append(sets[0])
    name = getattr(fn, "__qualname__", repr(fn))
    outs = []
    for k, args in enumerate(sets):
        exp_args = copy.deepcopy(args)
        act_args = copy.deepcopy(args)
        exp = run(fn, exp_args)
        act = run(compiled, act_args)
        compare(exp, act, exp_args, act_args, f"{name}() call {k} ({backend})",
                rtol=rtol, atol=atol, warn=warn)
        outs.append(exp)
    return outs[:len(arg_sets)]


def arr(dtype, shape, seed=0, lo=None, hi=None):
    """Deterministic test data: floats in [0.25, 4.25) (or [lo, hi)), ints
    in [-9, 10) ([0, 10) unsigned, or [lo, hi)), random bools."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        lo = 0.25 if lo is None else lo
        hi = 4.25 if hi is None else hi
        return (lo + rng.random(shape) * (hi - lo)).astype(dt)
    lo = (0 if dt.kind == "u" else -9) if lo is None else lo
    hi = 10 if hi is None else hi
    return rng.integers(lo, hi, shape).astype(dt)


# --------------------------------------------------------------------------
# wrong answers numdyn gives today outside captured loops (in straight-line
# code, and in loops left to the tracer): name -> (what, reproducer fn, its
# args). test_loops_errors.py pins each with a strict xfail; the random
# programs tolerate them, narrowly, only while the reproducer here still
# shows the bug (so a fix switches the tolerance off by itself). "warn"
# (NumPy's warnings missing, everything else right) is the kind known_bug
# recognizes. None today.

KNOWN_BUGS = {}
_KB_PRESENT = {}


def bug_present(name) -> bool:
    """Whether numdyn still gives the known wrong answer `name`."""
    if name not in _KB_PRESENT:
        _, fn, args = KNOWN_BUGS[name]
        try:
            check_calls(fn, args, repeat=False)
            _KB_PRESENT[name] = False
        except AssertionError:
            _KB_PRESENT[name] = True
    return _KB_PRESENT[name]


def known_bug(fn, args) -> str | None:
    """The KNOWN_BUGS entry explaining why compiled fn disagrees with plain fn
    on args, or None. "warn": everything agrees but warnings the plain run
    gave are missing."""
    if "warn" in KNOWN_BUGS and bug_present("warn"):
        try:
            check_calls(fn, args, warn=False)
            return "warn"
        except AssertionError:
            pass
    return None


# --------------------------------------------------------------------------
# functions from source text

_SRC_DIR = None
_SERIAL = [0]


def _src_dir():
    global _SRC_DIR
    if _SRC_DIR is None:
        _SRC_DIR = tempfile.mkdtemp(prefix="numdyn-loopsrc-")
        atexit.register(shutil.rmtree, _SRC_DIR, True)
    return _SRC_DIR


def make_function(src: str, name: str = "f", extra_globals=None):
    """The function `name` defined by src, exec'd from a real source file
    (so inspect.getsource and linecache see its text)."""
    src = textwrap.dedent(src)
    _SERIAL[0] += 1
    digest = hashlib.sha1(src.encode()).hexdigest()[:12]
    path = os.path.join(_src_dir(), f"loop_{_SERIAL[0]}_{digest}.py")
    with open(path, "w") as fh:
        fh.write(src)
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)
    glb = {"np": np, "math": math, "__name__": f"loop_gen_{_SERIAL[0]}"}
    glb.update(extra_globals or {})
    exec(compile(src, path, "exec"), glb)
    return glb[name]


def outer_loop_lines(fn):
    """First line (in fn's source file) of each outermost for/while loop of
    fn, in source order (loops in nested functions excluded)."""
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    out = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)) and not top:
                continue
            if isinstance(child, (ast.For, ast.While, ast.AsyncFor)):
                out.append(first + child.lineno - 1)
                continue
            visit(child, False)
    visit(tree, True)
    return out


# --------------------------------------------------------------------------
# operator grids: one function per (dtype, group) evaluating many operand
# pairs per iteration, logging every iteration's value into an array of the
# result's own dtype (a lossless store) and returning the last values.

def _pytype_dtype(v):
    if isinstance(v, np.generic):
        return v.dtype.name
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64" if -2 ** 63 <= v < 2 ** 63 else None
    if isinstance(v, float):
        return "float64"
    return None


def grid_source(exprs, samples):
    """Source of f(A, B) evaluating each expression of `exprs` (over the
    names a = A[i], b = B[i], i) at every i; expressions that raise on any
    sample (a, b, i) are left out (the error tests cover them). Returns
    (source, kept expressions)."""
    kept, logs = [], []
    for e in exprs:
        code = compile(e, "<grid>", "eval")
        vals = []
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for a, b, i in samples:
                    vals.append(eval(code, {"np": np, "math": math}, {"a": a, "b": b, "i": i}))
        except Exception:
            continue
        kinds = {(type(v), _pytype_dtype(v)) for v in vals}
        kept.append(e)
        logs.append(kinds.pop()[1] if len(kinds) == 1 else None)
    lines = ["def f(A, B):", "    n = len(A)"]
    for k, dt in enumerate(logs):
        if dt is not None:
            lines.append(f"    L{k} = np.zeros(n, np.{dt})")
    lines.append("    for i in range(n):")
    lines.append("        a = A[i]")
    lines.append("        b = B[i]")
    for k, (e, dt) in enumerate(zip(kept, logs)):
        lines.append(f"        x{k} = {e}")
        if dt is not None:
            lines.append(f"        L{k}[i] = x{k}")
    outs = [f"x{k}" for k in range(len(kept))] + [f"L{k}" for k, dt in enumerate(logs) if dt]
    lines.append(f"    return ({', '.join(outs)},)")
    return "\n".join(lines) + "\n", kept


# --------------------------------------------------------------------------
# the generator of random loop programs

@dataclass
class LoopProgram:
    params: list
    args: tuple          # first argument set
    args2: tuple         # second: same types, other values and sizes
    source: str          # def f(...): ...

    def function(self):
        return make_function(self.source)

    def repro(self) -> str:
        from fuzz_gen import value_literal as lit
        out = ["import math, numpy as np, numdyn", "", self.source.rstrip(), ""]
        for tag, args in (("args", self.args), ("args2", self.args2)):
            out.append(f"{tag} = ({''.join(lit(a) + ', ' for a in args)})")
        out += ["", "from loop_gen import check_calls  # tests/loop_gen.py",
                "check_calls(f, args, args2)"]
        return "\n".join(out) + "\n"

    def __repr__(self):
        return "\n" + self.repro()


FUZZ_DTYPES = DTYPES
_CMP = ["<", "<=", ">", ">=", "==", "!="]
_ARITH = ["+", "-", "*", "/", "//", "%"]
_AUG = ["+=", "-=", "*=", "//=", "%="]
_LOCAL_INITS = ["0", "1", "-2", "0.0", "1.5", "-0.5", "True", "np.int64(3)",
                "np.int32(-2)", "np.int8(5)", "np.uint8(7)", "np.float32(0.5)",
                "np.float64(2.0)", "np.uint64(4)"]


class _Gen:
    """Draws one LoopProgram. Keeps every generated program finite and small:
    loops run at most a few hundred iterations, and Python ints grow at most
    linearly in digits (a product, power or shift has at most one operand
    that reads a local; exponents and shift counts are small literals)."""

    def __init__(self, draw):
        self.draw = draw
        # the program's shape (dtypes, ranks, depth) is drawn through
        # hypothesis; its details come from a generator seeded by one draw
        # (drawing each of them through hypothesis cost 50 ms a program)
        self.r = random.Random(draw(st.integers(0, 2 ** 31 - 1)))
        self.arrays = {}       # name -> (dtype, ndim)
        self.locals = []
        self.loop_vars = []    # (name, array name or None, axis) in scope
        self.depth = 0         # loops around the statement being made
        self.ifs = 0           # ifs around it (at most 2)
        self.counter = 0

    # ---- drawing helpers ----------------------------------------------------
    def choice(self, seq):
        seq = list(seq)
        return seq[self.r.randrange(len(seq))]

    def chance(self, p):
        return self.r.random() < p

    def randint(self, lo, hi):
        return self.r.randint(lo, hi)

    def pct(self):
        return self.r.randrange(100)

    # ---- values -------------------------------------------------------------
    def values(self, dt, shape, rng):
        dt = np.dtype(dt)
        if dt.kind == "b":
            return rng.random(shape) < 0.5
        if dt.kind == "f":
            v = rng.choice([-2.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0],
                           size=shape)
            v = v + rng.integers(0, 2, shape) * rng.random(shape)
            if rng.random() < 0.1 and v.size:
                v.flat[rng.integers(v.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e30])
            return v.astype(dt)
        info = np.iinfo(dt)
        lo, hi = (0, 12) if dt.kind == "u" else (-6, 12)
        v = rng.integers(lo, hi, shape).astype(dt)
        if rng.random() < 0.25 and v.size:  # values that overflow quickly
            big = [int(info.max), int(info.min), int(info.max) // 2 + 1]
            v.flat[rng.integers(v.size)] = big[rng.integers(3)]
        return v

    def make_args(self, rng, scale):
        out = []
        for name, shape in self.shapes.items():
            dt = self.arrays[name][0]
            shape = tuple(max(0, s + scale) for s in shape)
            out.append(self.values(dt, shape, rng))
        out += [p + scale if isinstance(p, int) and not isinstance(p, bool) else p
                for p in self.scalar_args]
        return tuple(out)

    # ---- expressions ------------------------------------------------------
    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def size_expr(self, arrname, axis):
        if axis == 0 and self.chance(0.5):
            return f"len({arrname})"
        return f"{arrname}.shape[{axis}]"

    def index(self, arrname, axis):
        """An index expression for axis `axis` of arrname: mostly in range."""
        size = self.size_expr(arrname, axis)
        mine = [v for v, a, ax in self.loop_vars if a == arrname and ax == axis]
        anyv = [v for v, _, _ in self.loop_vars]
        r = self.pct()
        if mine and r < 55:
            v = self.choice(mine)
            return self.choice([v, v, f"-1 - {v}", f"{size} - 1 - {v}", f"{v} - 1"])
        if anyv and r < 80:
            return f"{self.choice(anyv)} % {size}"
        if anyv and r < 90:  # may leave the array: IndexError at some iteration
            return self.choice([f"{self.choice(anyv)} + 1", f"{self.choice(anyv)}",
                                f"-{self.choice(anyv)} - 2"])
        return self.choice(["0", "-1", "1"])

    def element(self, arrname=None):
        if arrname is None:
            arrname = self.choice(sorted(self.arrays))
        dt, ndim = self.arrays[arrname]
        idx = [self.index(arrname, ax) for ax in range(ndim)]
        if ndim == 2 and self.chance(0.3):
            return f"{arrname}[{idx[0]}][{idx[1]}]"
        return f"{arrname}[{', '.join(idx)}]"

    def literal(self):
        return self.choice(["0", "1", "2", "3", "-1", "7", "0.5", "2.0", "-1.5", "0.0",
                            "np.int8(3)", "np.uint8(2)", "np.float32(1.5)",
                            "np.int64(-4)", "np.float64(0.25)", "True", "np.uint32(5)"])

    def atom(self, no_locals=False):
        r = self.pct()
        if r < 35 and self.arrays:
            return self.element()
        if r < 55 and self.loop_vars:
            return self.choice([v for v, _, _ in self.loop_vars])
        if r < 75 and self.locals and not no_locals:
            return self.choice(self.locals)
        if r < 80 and self.arrays:
            return f"len({self.choice(sorted(self.arrays))})"
        return self.literal()

    def int_atom(self):
        """Something integer-valued (for bitwise operators and shifts)."""
        ints = [a for a, (dt, _) in self.arrays.items() if dt in INT_DTYPES or dt == "bool"]
        r = self.pct()
        if r < 40 and ints:
            return self.element(self.choice(ints))
        if r < 70 and self.loop_vars:
            return self.choice([v for v, _, _ in self.loop_vars])
        if r < 80 and self.locals:
            return f"int({self.choice(self.locals)})"
        return self.choice(["3", "5", "-2", "np.int8(6)", "np.uint8(9)", "np.int32(-7)"])

    def expr(self, depth=0, no_locals=False):
        if depth >= 2 or self.chance(0.3):
            return self.atom(no_locals)
        r = self.pct()
        d = depth + 1
        if r < 40:
            op = self.choice(_ARITH)
            if op == "*":  # at most one side reads a local: linear growth
                return f"({self.expr(d, no_locals)} * {self.expr(d, True)})"
            return f"({self.expr(d, no_locals)} {op} {self.expr(d, no_locals)})"
        if r < 45:
            return f"({self.atom(True)} ** {self.choice(['0', '1', '2', '3'])})"
        if r < 55:
            op = self.choice(["&", "|", "^"])
            if self.chance(0.3):
                return f"({self.int_atom()} {self.choice(['<<', '>>'])} {self.randint(0, 9)})"
            return f"({self.int_atom()} {op} {self.int_atom()})"
        if r < 65:
            f = self.choice(["min", "max"])
            return f"{f}({self.expr(d, no_locals)}, {self.expr(d, no_locals)})"
        if r < 75:
            f = self.choice(["abs({})", "-{}", "math.fabs({})", "np.abs({})", "np.floor({})",
                             "math.floor({})", "np.sqrt(abs({}))", "math.sqrt(abs({}))",
                             "float({})", "int({})", "bool({})", "~{}"])
            inner = self.int_atom() if f == "~{}" else self.expr(d, no_locals)
            return "(" + f.format(inner) + ")"
        if r < 85:
            return f"({self.expr(d, no_locals)} if {self.cond(d)} else {self.expr(d, no_locals)})"
        return self.atom(no_locals)

    def cond(self, depth=0):
        r = self.pct()
        d = depth + 1
        if depth < 2 and r < 15:
            return f"({self.cond(d)} {self.choice(['and', 'or'])} {self.cond(d)})"
        if depth < 2 and r < 20:
            return f"(not {self.cond(d)})"
        if r < 30:
            return f"({self.atom()} < {self.atom()} <= {self.atom()})"
        return f"({self.expr(depth + 1)} {self.choice(_CMP)} {self.atom()})"

    # ---- statements -------------------------------------------------------
    def block(self, indent, in_loop, can_continue, n=None):
        n = self.randint(1, 3) if n is None else n
        out = []
        for _ in range(n):
            out += self.stmt(indent, in_loop, can_continue)
        return out

    def stmt(self, indent, in_loop, can_continue):
        pad = "    " * indent
        r = self.pct()
        if r < 14 and self.depth < self.max_depth:
            return self.loop(indent)
        if r < 34 and self.arrays:
            arrname = self.choice(sorted(self.arrays))
            target = self.element(arrname)
            if self.chance(0.5):
                return [f"{pad}{target} {self.choice(_AUG)} {self.expr()}"]
            return [f"{pad}{target} = {self.expr()}"]
        ones = [n for n in sorted(self.arrays) if self.arrays[n][1] == 1]
        if r < 38 and ones and self.chance(0.35):
            # strided 1-D slices: a scalar stored or added into every s-th
            # element, or a sum over them
            arrname = self.choice(ones)
            sl = self.choice(["::2", "1::2", "::-1", "-2::-2", ":-1:3", "::-3", "1:-1:2"])
            idxs = [n for n in ones if self.arrays[n][0] in INT_DTYPES and self.arrays[n][0] != "uint64"]
            if idxs and self.chance(0.3):
                # a gather x[I] by an integer array (its values may leave x:
                # IndexError), summed or dotted with a slice of x
                ia = self.choice(idxs)
                if self.chance(0.5):
                    return [f"{pad}{self.choice(self.locals)} = np.sum({arrname}[{ia}])"]
                return [f"{pad}{self.choice(self.locals)} = {arrname}[{ia}] @ {arrname}[:len({ia})]"]
            if self.chance(0.5):
                op = self.choice(["=", "+=", "-=", "*="])
                return [f"{pad}{arrname}[{sl}] {op} {self.expr(1, True)}"]
            return [f"{pad}{self.choice(self.locals)} = np.sum({arrname}[{sl}])"]
        twos = [n for n in sorted(self.arrays) if self.arrays[n][1] == 2]
        if r < 40 and twos and self.chance(0.3):
            # 2-D parts: a scalar stored or added into a block, a sum over one
            arrname = self.choice(twos)
            sl = ", ".join(self.choice([":", "1:", ":-1", "::2", "::-1", "1:-1"]) for _ in range(2))
            if self.chance(0.3):
                # a chained row slice A[i][lo:hi] (the 2-index form A[i, lo:hi])
                sl = f"{self.index(arrname, 0)}][{self.choice([':', '1:', ':-1', '::2', '::-1'])}"
            if self.chance(0.5):
                op = self.choice(["=", "+=", "-=", "*="])
                return [f"{pad}{arrname}[{sl}] {op} {self.expr(1, True)}"]
            return [f"{pad}{self.choice(self.locals)} = np.sum({arrname}[{sl}])"]
        same = [(p, q) for p in sorted(self.arrays) for q in sorted(self.arrays)
                if p < q and self.arrays[p] == self.arrays[q] and "T" not in (p, q)]
        if r < 42 and same and self.chance(0.3):
            p, q = self.choice(same)
            if self.chance(0.6):
                return [f"{pad}{p}, {q} = {q}, {p}"]   # the names swap their arrays
            # a name given a new array like another, or another's array
            # (the loop's pool of arrays; p aliasing q afterwards)
            if self.chance(0.5):
                p, q = q, p
            mk = self.choice([f"{q}.copy()", f"np.copy({q})", f"np.zeros_like({q})", q])
            return [f"{pad}{p} = {mk}"]
        if r < 44:
            return [f"{pad}{self.choice(self.locals)} {self.choice(_AUG)} {self.expr(0, True)}"]
        if r < 58:
            tgt = self.choice(self.locals)
            return [f"{pad}{tgt} = {self.expr()}"]
        if r < 62 and len(self.locals) >= 2:
            a, b = self.r.sample(self.locals, 2)
            return [f"{pad}{a}, {b} = {b}, ({a} + {self.expr(1, True)})"]
        if r < 80 and self.ifs < 2:
            self.ifs += 1
            out = [f"{pad}if {self.cond()}:"] + self.block(indent + 1, in_loop, can_continue)
            if self.chance(0.3):
                out += [f"{pad}elif {self.cond()}:"] + self.block(indent + 1, in_loop, can_continue)
            if self.chance(0.5):
                out += [f"{pad}else:"] + self.block(indent + 1, in_loop, can_continue)
            self.ifs -= 1
            return out
        if in_loop and r < 90:
            kw = "continue" if can_continue and self.chance(0.5) else "break"
            return [f"{pad}if {self.cond()}:", f"{pad}    {kw}"]
        tgt = self.choice(self.locals)
        return [f"{pad}{tgt} = {self.expr()}"]

    def bound(self):
        """A small loop bound, with the array (and axis) it comes from."""
        r = self.pct()
        if r < 65 and self.arrays:
            a = self.choice(sorted(self.arrays))
            ax = self.randint(0, self.arrays[a][1] - 1)
            return self.size_expr(a, ax), a, ax
        if r < 80 and "n" in self.params:
            return "n", None, 0
        if r < 90 and self.loop_vars:
            return f"{self.choice([v for v, _, _ in self.loop_vars])} + 1", None, 0
        return str(self.randint(0, 4)), None, 0

    def loop(self, indent):
        pad = "    " * indent
        self.depth += 1
        v = self.fresh("i")
        stop, a, ax = self.bound()
        kind = self.pct()
        out = []
        if kind < 60:
            form = self.randint(0, 4)
            if form == 0:
                head = f"for {v} in range({stop}):"
            elif form == 1:
                head = f"for {v} in range({self.randint(0, 2)}, {stop}):"
            elif form == 2:
                head = f"for {v} in range({self.randint(0, 1)}, {stop}, {self.randint(2, 3)}):"
            else:  # downwards
                end, step = self.choice(["-1", "0"]), self.randint(1, 2)
                head = f"for {v} in range({stop} - 1, {end}, -{step}):"
            out.append(pad + head)
            self.loop_vars.append((v, a, ax))
            body = self.block(indent + 1, True, True)
        elif kind < 75:
            # enumerate / zip / for x in a (of 1-D arrays) and over ranges
            ones = [n for n in sorted(self.arrays) if self.arrays[n][1] == 1]
            e = self.fresh("e")
            form = self.randint(0, 5)
            elems = []
            if a and ax == 0 and self.arrays[a][1] == 1 and form <= 1:
                start = ", 1" if form == 1 else ""
                head = f"for {v}, {e} in enumerate({a}{start}):"
                elems = [e]
                if form == 1:
                    a = None   # v runs 1..len: not an index of a
            elif ones and form == 2:
                head = f"for {e} in {self.choice(ones)}:"
                elems, a = [e], None
            elif len(ones) >= 2 and form == 3:
                p, q = self.r.sample(ones, 2)
                e2 = self.fresh("e")
                head = f"for {e}, {e2} in zip({p}, {q}):"
                elems, a = [e, e2], None
            elif ones and form == 4:
                head = f"for {v}, {e} in zip(range({self.randint(0, 2)}, {stop}), {self.choice(ones)}):"
                elems = [e]
            else:
                head = f"for {e}, {v} in enumerate(range({stop})):"
                self.locals.append(e)
                elems = []
                a = None
                e_counter = e
            out.append(pad + head)
            # (for e in a / zip(a, b) bind no loop variable v)
            self.loop_vars.append((v, a, ax) if f" {v}" in head else (e, None, 0))
            if f" {v}" not in head:
                elems.remove(e)
            self.locals += elems
            body = self.block(indent + 1, True, True)
            for x in elems:
                self.locals.remove(x)
            if head.endswith(f"in enumerate(range({stop})):"):
                self.locals.remove(e_counter)
        elif kind < 88:  # while with the step at the end: no continue
            out += [f"{pad}{v} = 0", f"{pad}while {v} < {stop}"
                    + (f" and {self.cond(1)}" if self.chance(0.3) else "") + ":"]
            self.loop_vars.append((v, a, ax))
            body = self.block(indent + 1, True, False)
            body.append(f"{pad}    {v} += 1")
        else:  # while True with the step and the exit test first
            out += [f"{pad}{v} = -1", f"{pad}while True:", f"{pad}    {v} += 1",
                    f"{pad}    if {v} >= {stop}:", f"{pad}        break"]
            self.loop_vars.append((v, a, ax))
            body = self.block(indent + 1, True, True)
        out += body
        self.loop_vars.pop()
        if kind < 60 and self.chance(0.15):
            out += [f"{pad}else:"] + [f"{pad}    {self.choice(self.locals)} += 1"]
        self.depth -= 1
        return out

    def build(self) -> LoopProgram:
        self.max_depth = self.draw(st.integers(1, 3))
        narr = self.draw(st.integers(1, 3))
        self.shapes = {}
        for k in range(narr):
            name = "ABC"[k]
            dt = self.draw(st.sampled_from(FUZZ_DTYPES))
            ndim = self.draw(st.integers(1, 2))
            shape = tuple(self.randint(0, 5) if self.chance(0.1) else self.randint(2, 5)
                          for _ in range(ndim))
            self.arrays[name] = (dt, ndim)
            self.shapes[name] = shape
        self.params = list(self.arrays)
        self.scalar_args = []
        if self.chance(0.4):
            self.params.append("n")
            self.scalar_args.append(self.randint(0, 5))
        if self.chance(0.3):
            self.params.append("x")
            self.scalar_args.append(self.choice([0.5, -1.25, 3.0, 0.0]))
            self.locals.append("x")
        body = []
        for k in range(self.randint(1, 3)):
            name = f"s{k}"
            body.append(f"    {name} = {self.choice(_LOCAL_INITS)}")
            self.locals.append(name)
        created = None
        if self.chance(0.3):
            created = "T"
            src = self.choice(sorted(self.arrays))
            dt, ndim = self.arrays[src]
            mk = self.choice(["copy", "zeros", "ones"])
            if mk == "copy":
                body.append(f"    T = {src}.copy()")
            else:
                dt = self.choice(FUZZ_DTYPES)
                body.append(f"    T = np.{mk}({src}.shape, np.{dt})")
            self.arrays["T"] = (dt, ndim)
        for _ in range(self.randint(1, 2)):
            body += self.loop(1)
        rets = list(self.locals)
        if created:
            rets.append(created)
        body.append(f"    return ({', '.join(rets)},)")
        src = f"def f({', '.join(self.params)}):\n" + "\n".join(body) + "\n"
        seed = self.draw(st.integers(0, 2 ** 31 - 1))
        args = self.make_args(np.random.default_rng(seed), 0)
        args2 = self.make_args(np.random.default_rng(seed + 1), self.randint(-1, 2))
        return LoopProgram(self.params, args, args2, src)


def _platform_dependent(prog: LoopProgram) -> bool:
    """Runs whose result NumPy itself leaves to the C compiler/CPU: casts of
    out-of-range or NaN floats to integers ("invalid value encountered in
    cast")."""
    fn = prog.function()
    for args in (prog.args, prog.args2):
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
            warnings.simplefilter("always")
            try:
                fn(*copy.deepcopy(args))
            except Exception:
                pass
        if any("in cast" in str(w.message) for w in caught):
            return True
    return False


def loop_programs():
    """Hypothesis strategy of LoopProgram."""
    @st.composite
    def _prog(draw):
        from hypothesis import assume
        prog = _Gen(draw).build()
        assume(not _platform_dependent(prog))
        return prog
    return _prog()
