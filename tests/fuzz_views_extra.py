"""The differential generator (fuzz_gen.py, mode "views") extended with
argument layouts, aliased arguments and more view / in-place statements.

fuzz_gen's programs take fresh C-contiguous arguments. Here every array
argument is built from a *base* array by a recipe, each time it is needed:

- the base in a layout: C, Fortran (np.asfortranarray), strided (a view
  [1::2, 1::2, ...] of a bigger array whose other elements hold other
  values) or negative strides ([::-1, ..., ::-2] of a bigger array);
- arguments that alias: the same array twice (`f(a, a)`), a reversed or
  transposed view of the other argument (`f(a, a[::-1])`, `f(a, a.T)`), or
  two shifted overlapping views of one base (`f(B[:-1], B[1:])`).

The oracle builds each side's arguments fresh from the recipes (so the
aliasing is real, and the layouts are what numdyn sees), compares returned
values and the arguments after the call, and also every base array: a
write may not reach memory outside the views NumPy wrote through.

Statement kinds added to fuzz_gen's: moveaxis, fliplr/flipud,
squeeze(axis=), diagonal(offset, axis1, axis2), np.real/np.imag,
expand_dims with several axes, atleast_2d; np.copyto (slices, where=,
casting=), out= on reductions (into a slice of the input too), overlapping
self-assignments (`x[1:] = x[:-1] + y`, `x[:-1] += x[1:]`, `x[::-1] = x`),
np.put / ndarray.put, in-place sort of a view, masked writes with a mask
from another array, out= into an overlapping view, np.<ufunc>.at with
several index arrays; split/array_split pieces (views), tile, repeat, pad,
roll, triu/tril, take, stack family, concatenate of views; einsum, argsort,
cumsum over views, linalg.solve, matmul of views.

fuzz_gen.py belongs to another helper: this module only subclasses and
calls it. Every generated program is validated with NumPy (fuzz_gen's
error analysis), so a mismatch is a real one; `LayoutProgram.repro()` is a
self-contained script.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

import fuzz_gen as fg

# --------------------------------------------------------------------------
# layouts: one function, also pasted into every reproducer

LAYOUT_SRC = '''
def _layout(a, kind):
    """a's values in layout kind: "C", "F", "strided" or "neg" (views of a
    bigger array whose other elements hold other values)."""
    a = np.asarray(a)
    if kind == "C":
        return a.copy()
    if kind == "F":
        return np.asfortranarray(a).copy(order="F")
    if a.ndim == 0:
        big = np.zeros(3, a.dtype)
        v = big[1, ...]
    elif kind == "strided":
        big = np.zeros(tuple(2 * n + 1 for n in a.shape), a.dtype)
        v = big[tuple(slice(1, None, 2) for _ in a.shape)]
    else:
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        v = big[tuple(slice(None, None, -1) for _ in a.shape[:-1]) + (slice(None, None, -2),)]
    big[...] = (np.arange(big.size) % 7).reshape(big.shape).astype(a.dtype)
    v[...] = a
    return v
'''
_ns: dict = {"np": np}
exec(LAYOUT_SRC, _ns)
layout = _ns["_layout"]

LAYOUTS = ["C", "C", "F", "strided", "neg"]


@dataclass(repr=False)
class LayoutProgram(fg.Program):
    """A Program whose arguments are built from bases by recipes:
    bases[k] = (values, layout); recipes[i] = ("base", k, suffix) for
    argument i = built base k + suffix (source text such as "", "[::-1]",
    ".T", "[1:]"), or ("value",) for a scalar argument args[i] as is."""
    bases: list = field(default_factory=list)
    recipes: list = field(default_factory=list)

    def build(self):
        """(fresh arguments, the base arrays they view)."""
        built = [layout(v, lay) for v, lay in self.bases]
        args = []
        for a, r in zip(self.args, self.recipes):
            if r[0] == "value":
                args.append(a)
            else:
                args.append(eval("B" + r[2], {"np": np}, {"B": built[r[1]]}))
        return args, built

    def fresh_args(self) -> list:
        return self.build()[0]

    def repro(self, backend: str = "native") -> str:
        lines = ["import numpy as np", "import numdyn", LAYOUT_SRC, self.source(), "",
                 "def make():"]
        for k, (v, lay) in enumerate(self.bases):
            lines.append(f"    B{k} = _layout({fg.value_literal(v)}, {lay!r})")
        parts = []
        for a, r in zip(self.args, self.recipes):
            parts.append(fg.value_literal(a) if r[0] == "value" else f"B{r[1]}{r[2]}")
        bases = ", ".join(f"B{k}" for k in range(len(self.bases)))
        lines.append(f"    return ({', '.join(parts)},), ({bases}{',' if len(self.bases) == 1 else ''})")
        lines += [
            "",
            "import warnings",
            "warnings.simplefilter('ignore')",
            "np.seterr(all='ignore')",
            "for name, fn in (('numpy ', f), ('numdyn', numdyn.compile(f, backend=%r))):" % backend,
            "    args, bases = make()",
            "    try:",
            "        r = fn(*args)",
            "    except Exception as e:",
            "        r = e",
            "    print(name, repr(r), 'bases after:', bases)",
        ]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return "\n" + self.repro()


# --------------------------------------------------------------------------
# the builder

_SMALL_IDX = [0, 1, -1, 2, -2]


class LayoutBuilder(fg.Builder):
    """fuzz_gen's "views" builder with layouts, aliased arguments and the
    extra statement kinds."""

    def __init__(self, draw, max_stmts: int = 10):
        super().__init__(draw, "views", max_stmts)
        self.bases: list = []
        self.recipes: list = []

    # ---- drawing: from the program's own RNG (seeded by hypothesis) --------------
    # Hypothesis' derandomized draws favour the first choice of every list
    # (rank 0, the first dtype...); the fixed CI corpus wants an even spread
    # of shapes, layouts and statements. Shrinking is minimize()'s job.
    def choice(self, seq):
        seq = list(seq)
        return seq[int(self.rng.integers(0, len(seq)))]

    def randint(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    # ---- inputs --------------------------------------------------------------
    def gen_inputs(self):
        """fuzz_gen's inputs (a common broadcast shape, each array a suffix of
        it, some scalars), but arrays mostly of the full rank: views and
        layouts need dimensions."""
        nin = self.choice([1, 2, 2, 3])
        rank = self.choice([0, 1, 2, 2, 2, 3, 3])
        full = [self.choice([1, 2, 3, 4, 5, 0]) if self.chance(0.06) else
                self.choice([2, 3, 4, 5, 1]) for _ in range(rank)]
        same_dtype = self.chance(0.5)
        dt0 = self.choice(fg.DTYPES)
        for i in range(nin):
            dt = dt0 if same_dtype else self.choice(fg.DTYPES)
            kind = self.randint(0, 19)
            if kind == 0:
                v = self.gen_array_values(dt, ())[()]
            elif kind == 1:
                v = self.gen_array_values(self.choice(["bool", "int64", "float64", "complex128"]), ())[()].item()
            else:
                r = rank if self.chance(0.75) else self.randint(0, rank)
                shp = list(full[rank - r:])
                for j in range(len(shp)):
                    if self.chance(0.12):
                        shp[j] = 1
                v = self.gen_array_values(dt, tuple(shp))
            self.params.append("abc"[i])
            self.args.append(v)
            self.names.append("abc"[i])
            self.err["abc"[i]] = 0.0
        self.bases, self.recipes = [], []
        for v in self.args:
            if isinstance(v, np.ndarray):
                self.recipes.append(("base", len(self.bases), ""))
                self.bases.append((v, self.choice(LAYOUTS)))
            else:
                self.recipes.append(("value",))
        arrs = [i for i, r in enumerate(self.recipes) if r[0] == "base"]
        if len(self.params) >= 2 and arrs and arrs[0] == 0 and self.chance(0.35):
            self.alias_second()
        self.args = self.build_args()
        self.env = dict(zip(self.params, self.args))

    def alias_second(self):
        """Argument 1 becomes a view of argument 0's base."""
        v0, lay = self.bases[0]
        kinds = ["same"]
        if v0.ndim >= 1:
            kinds += ["rev", "shift", "shift"]
        if v0.ndim >= 2:
            kinds.append("T")
        kind = self.choice(kinds)
        if kind == "shift":
            base = self.gen_array_values(v0.dtype.name, (v0.shape[0] + 1,) + v0.shape[1:])
            self.bases[0] = (base, lay)
            self.recipes[0] = ("base", 0, "[:-1]")
            self.recipes[1] = ("base", 0, "[1:]")
        else:
            suffix = {"same": "", "rev": "[::-1]", "T": ".T"}[kind]
            self.recipes[1] = ("base", 0, suffix)
        used = {r[1] for r in self.recipes if r[0] == "base"}
        if len(used) != len(self.bases):  # argument 1's own base is gone: renumber
            keep = sorted(used)
            self.bases = [self.bases[k] for k in keep]
            self.recipes = [r if r[0] == "value" else ("base", keep.index(r[1]), r[2])
                            for r in self.recipes]

    def build_args(self):
        return LayoutProgram(self.params, self.args, [], "None", bases=self.bases,
                             recipes=self.recipes).build()[0]

    def run_body(self, body, perturb=None):
        env = dict(zip(self.params, self.build_args()))
        for i, s in enumerate(body):
            if perturb is not None and perturb[0] == i:
                rng = np.random.default_rng(perturb[2])
                for name, ulps in perturb[1].items():
                    env[name] = fg._perturb(env[name], ulps, rng, perturb[3])
            exec(fg._code(s), fg._GLOBALS, env)
        return env

    def program(self, ret, raises=False):
        return LayoutProgram(list(self.params), list(self.args), list(self.body), ret,
                             raises=raises, meta=list(self.meta), mode=self.mode,
                             bases=list(self.bases), recipes=list(self.recipes))

    # ---- helpers ---------------------------------------------------------------
    def target(self, pred=None):
        """An array name to write into: preferably the caller's arrays and
        views of them (numdyn must write those back)."""
        ok = (lambda v: isinstance(v, np.ndarray) and (pred is None or pred(v)))
        if self.chance(0.6):
            params = [p for p in self.params if isinstance(self.env.get(p), np.ndarray)]
            cands = [n for n in self.names if ok(self.env.get(n))
                     and any(np.shares_memory(self.env[n], self.env[p]) for p in params)]
            if cands:
                return self.choice(cands)
        return self.array_name(pred)

    def same_shape_name(self, shape, exclude=None):
        cands = [n for n in self.names if isinstance(self.env.get(n), np.ndarray)
                 and self.env[n].shape == shape and n != exclude]
        return self.choice(cands) if cands else None

    def axis(self, ndim):
        ax = self.randint(0, ndim - 1)
        return ax - ndim if self.chance(0.3) else ax

    # ---- extra views --------------------------------------------------------------
    def s_view_extra(self):
        x = self.array_name()
        if x is None:
            return None
        v = self.env[x]
        nd = v.ndim
        t = self.new_name()
        k = self.randint(0, 9)
        if k == 0 and nd:
            return [t], f"{t} = np.moveaxis({x}, {self.axis(nd)}, {self.axis(nd)})", "moveaxis"
        if k == 1 and nd >= 2:
            src = tuple(int(i) for i in self.rng.permutation(nd)[:2])
            return [t], f"{t} = np.moveaxis({x}, {list(src)}, {[0, -1]})", "moveaxis"
        if k == 2:
            return [t], f"{t} = np.fliplr({x})" if nd >= 2 or self.chance(0.1) else f"{t} = np.flipud({x})", "flip"
        if k == 3 and nd:
            ones = [i for i, n in enumerate(v.shape) if n == 1]
            ax = self.choice(ones) if ones and self.chance(0.9) else self.randint(0, nd - 1)
            if self.chance(0.5):
                return [t], f"{t} = np.squeeze({x}, axis={ax})", "squeeze"
            return [t], f"{t} = {x}.squeeze({ax})", "squeeze"
        if k == 4 and nd >= 2:
            a1, a2 = (int(i) for i in self.rng.permutation(nd)[:2])
            off = self.choice([0, 1, -1, 2, -3])
            return [t], f"{t} = {x}.diagonal({off}, {a1}, {a2})", "diagonal"
        if k == 5:
            return [t], f"{t} = np.{self.choice(['real', 'imag'])}({x})", "real"
        if k == 6:
            axes = sorted({0, self.randint(-1, nd)})
            return [t], f"{t} = np.expand_dims({x}, {tuple(axes)!r})", "expand_dims"
        if k == 7 and nd:
            perm = [int(p) - nd if self.chance(0.3) else int(p) for p in self.rng.permutation(nd)]
            return [t], f"{t} = {x}.transpose({', '.join(map(str, perm))})", "transpose"
        if k == 8:
            return [t], f"{t} = np.atleast_2d({x})", "atleast_2d"
        if nd:
            return [t], f"{t} = {x}[{self.index_expr(v.shape)}][{self.index_expr(v.shape)}]", "getitem"
        return None

    # ---- extra in-place statements ----------------------------------------------------
    def s_inplace_extra(self):
        x = self.target()
        if x is None:
            return None
        v = self.env[x]
        nd = v.ndim
        y = self.operand(0.4)
        k = self.randint(0, 13)
        if k == 0:
            return [x], f"np.copyto({x}, {y})", "setitem"
        if k == 1 and nd:
            return [x], f"np.copyto({x}[{self.index_expr(v.shape)}], {y})", "setitem"
        if k == 2:
            z = self.same_shape_name(v.shape) or x
            cmp_ = self.choice(["!=", ">", "<="])
            return [x], f"np.copyto({x}, {y}, where={z} {cmp_} 0)", "setitem"
        if k == 3:
            yv = self.env.get(y)
            if yv is not None and not self._cast_defined(yv, v.dtype):
                return None
            return [x], f"np.copyto({x}, {y}, casting='unsafe')", "astype"
        if k == 4 and nd >= 1:
            return self.reduce_out(x, v)
        if k == 5 and nd >= 1 and v.shape[0] >= 2:
            op = self.choice(["+", "*", "-", "|", "//"])
            aug = self.choice(["+=", "*=", "-=", "^="])
            forms = [f"{x}[1:] = {x}[:-1] {op} {y}", f"{x}[:-1] {aug} {x}[1:]",
                     f"{x}[::-1] = {x}", f"{x}[1:] += {x}[:-1]", f"{x}[2:] = {x}[:-2]"]
            if nd >= 2 and v.shape[1] >= 2:
                forms += [f"{x}[:, 1:] = {x}[:, :-1]", f"{x}[:, ::-1] {aug} {x}",
                          f"{x}[1:, 1:] = {x}[:-1, :-1] {op} {x}[1:, :-1]"]
            if nd >= 2 and v.shape[0] == v.shape[1]:
                forms.append(f"{x}[...] = {x}.T")
            return [x], self.choice(forms), op if self.chance(0.5) else "setitem"
        if k == 6 and v.size:
            n = v.size
            idx = [int(i) for i in self.rng.integers(-n, n, size=self.randint(1, 4))]
            if self.chance(0.3):
                return [x], f"{x}.put({idx}, {y})", "setitem"
            mode = self.choice(["", "", ", mode='wrap'", ", mode='clip'"])
            if mode:
                idx = [i * 3 for i in idx]
            return [x], f"np.put({x}, {idx}, {y}{mode})", "setitem"
        if k == 7 and nd:
            view = self.choice(["", "[::-1]", f"[{self.index_expr(v.shape)}]"])
            return [x], f"{x}{view}.sort(axis={self.randint(-1, 0)})", "sort"
        if k == 8 and nd:
            z = self.same_shape_name(v.shape, exclude=x)
            if z is None:
                return None
            aug = self.choice(["=", "+=", "*="])
            return [x], f"{x}[{z} != 0] {aug} {y}", "setitem" if aug == "=" else aug
        if k == 9 and nd:
            f = self.choice(["add", "multiply", "subtract", "maximum"])
            view = self.choice(["[::-1]", ".T", f"[{self.index_expr(v.shape)}]"])
            return [x], f"np.{f}({x}{view}, {y}, out={x})", f
        if k == 10 and nd:
            f = self.choice(["negative", "absolute", "square", "positive"])
            return [x], f"np.{f}({x}, out={x}[::-1])", f
        if k == 11 and nd >= 2 and v.size:
            i0 = [int(i) for i in self.rng.integers(-v.shape[0], v.shape[0], size=3)]
            i1 = [int(i) for i in self.rng.integers(-v.shape[1], v.shape[1], size=3)]
            f = self.choice(["add", "maximum", "multiply"])
            return [x], f"np.{f}.at({x}, ({i0}, {i1}), {y})", f
        if k == 12 and nd:
            w = self.new_name()
            view = f"[{self.index_expr(v.shape)}]"
            aug = self.choice(["+=", "*=", "-="])
            return [w], f"{w} = {x}{view}; {w} {aug} {y}", aug
        return None

    def reduce_out(self, x, v):
        """A reduction written into x (or a slice of x) with out=."""
        r = self.choice(["sum", "max", "min", "prod"])
        nd = v.ndim
        k = self.randint(0, 3)
        if k == 0 and nd >= 2:
            return [x], f"np.{r}({x}, axis=0, out={x}[0])", r
        if k == 1:
            return [x], f"{x}.{r}(axis=-1, keepdims=True, out={x}[..., :1])", r
        # another array whose reduction over some axis has x's shape
        for n in self.names:
            z = self.env.get(n)
            if not isinstance(z, np.ndarray) or z.ndim != nd + 1:
                continue
            for ax in range(z.ndim):
                if z.shape[:ax] + z.shape[ax + 1:] == v.shape:
                    return [x], f"np.{r}({n}, axis={ax}, out={x})", r
        if self.chance(0.3) and v.size == 1:
            return [x], f"np.{r}({x}, axis=None, keepdims=True, out={x})", r
        return None

    # ---- joining and reshaping -------------------------------------------------------
    def s_join_extra(self):
        x = self.array_name()
        if x is None:
            return None
        v = self.env[x]
        nd = v.ndim
        t = self.new_name()
        k = self.randint(0, 10)
        if k == 0 and nd:
            ax = self.axis(nd)
            n = self.randint(1, 3)
            i = self.randint(0, n - 1)
            f = self.choice(["split", "array_split"])
            return [t], f"{t} = np.{f}({x}, {n}, axis={ax})[{i}]", f
        if k == 1:
            reps = self.choice(["2", "(2, 1)", "(1, 2, 1)", "0"])
            return [t], f"{t} = np.tile({x}, {reps})", "tile"
        if k == 2:
            if nd and self.chance(0.5):
                ax = self.randint(0, nd - 1)
                reps = [int(r) for r in self.rng.integers(0, 3, size=v.shape[ax])]
                return [t], f"{t} = np.repeat({x}, {reps}, axis={ax})", "repeat"
            return [t], f"{t} = np.repeat({x}, {self.randint(0, 3)})", "repeat"
        if k == 3:
            pw = self.choice(["1", "(0, 2)", "((1, 0),)" if nd == 1 else "1"])
            mode = self.choice(["", ", mode='edge'", ", constant_values=3"])
            if mode == ", mode='edge'" and v.size == 0:
                mode = ""
            return [t], f"{t} = np.pad({x}, {pw}{mode})", "pad"
        if k == 4:
            if nd and self.chance(0.6):
                return [t], f"{t} = np.roll({x}, {self.randint(-3, 3)}, axis={self.axis(nd)})", "roll"
            return [t], f"{t} = np.roll({x}, {self.randint(-3, 5)})", "roll"
        if k == 5 and nd:
            return [t], f"{t} = np.{self.choice(['triu', 'tril'])}({x}, {self.randint(-2, 2)})", "triu"
        if k == 6 and nd:
            ax = self.randint(0, nd - 1)
            n = v.shape[ax]
            if n == 0:
                return [t], f"{t} = np.take({x}, [], axis={ax})", "take"
            idx = [int(i) for i in self.rng.integers(-n, n, size=self.randint(1, 4))]
            mode = self.choice(["", ", mode='wrap'", ", mode='clip'"])
            if mode:
                idx = [i * 2 for i in idx]
            return [t], f"{t} = np.take({x}, {idx}, axis={ax}{mode})", "take"
        if k == 7:
            y = self.same_shape_name(v.shape) or x
            f = self.choice(["vstack", "hstack", "column_stack", "dstack", "stack"])
            return [t], f"{t} = np.{f}(({x}, {y}))", "stack"
        if k == 8 and nd:
            ax = self.randint(0, nd - 1)
            return [t], f"{t} = np.concatenate(({x}, {x}[::-1], {x}.copy()), axis={ax})", "concatenate"
        if k == 9:
            y = self.array_name() or x
            return [t], f"{t} = np.outer({x}[::-1], {y})", "outer"
        return None

    # ---- extern nodes ---------------------------------------------------------------
    def s_extern_extra(self):
        x = self.array_name()
        if x is None:
            return None
        v = self.env[x]
        nd = v.ndim
        t = self.new_name()
        k = self.randint(0, 7)
        if k <= 1:
            pats = {0: ["->", ",->"], 1: ["i->", "i,i->", "i,j->ij", "i->i"],
                    2: ["ij->ji", "ij->i", "ij,ij->ij", "ij,kj->ik", "ij,ij->"],
                    3: ["ijk->kji", "ijk->j", "ijk,ijk->ik"]}.get(nd, ["..."])
            if nd == 2 and v.shape[0] == v.shape[1]:
                pats.append("ii->i")
            p = self.choice(pats)
            if p == "...":
                return None
            n_ops = p.split("->")[0].count(",") + 1
            y = x if n_ops == 1 or self.chance(0.5) else (self.same_shape_name(v.shape) or x)
            ops = x if n_ops == 1 else f"{x}, {y}[::-1]" if nd else f"{x}, {y}"
            return [t], f"{t} = np.einsum({p!r}, {ops})", "matmul"
        if k == 2 and nd:
            return [t], f"{t} = np.argsort({x}[::-1], axis={self.axis(nd)}, kind='stable')", "argsort"
        if k == 3 and nd:
            view = self.choice(["[::-1]", ".T", ""])
            return [t], f"{t} = np.cumsum({x}{view}, axis={self.axis(nd)})", "cumsum"
        if k == 4 and nd == 2 and min(v.shape) >= 1:
            n = min(v.shape)
            return ([t], f"{t} = np.linalg.solve(np.eye({n}) * 100 + {x}[:{n}, :{n}].T, "
                         f"{x}[:{n}, 0])", "matmul")
        if k == 5 and nd >= 1:
            view = self.choice(["[::-1]", ""])
            if nd == 1:
                return [t], f"{t} = {x}{view} @ {x}", "matmul"
            return [t], f"{t} = {x}{view} @ {x}.T[::-1]" if nd == 2 else f"{t} = {x} @ np.swapaxes({x}, -1, -2)", "matmul"
        if k == 6 and nd:
            return [t], f"{t} = np.sort({x}.T, axis=None)", "sort"
        return None

    def families(self):
        return super().families() + [(self.s_view_extra, 4), (self.s_inplace_extra, 6),
                                     (self.s_join_extra, 3), (self.s_extern_extra, 2)]


# --------------------------------------------------------------------------
# validation replays (fuzz_gen.replay, for LayoutPrograms)


def replay(prog: LayoutProgram, bases=None, body=None, meta=None, ret=None):
    """prog re-validated (other base values, a subset of its statements);
    None when a statement becomes unsafe to compare."""
    b = LayoutBuilder.__new__(LayoutBuilder)
    b.mode = prog.mode
    b.params = list(prog.params)
    b.bases = list(prog.bases if bases is None else bases)
    b.recipes = list(prog.recipes)
    b.args = list(prog.args)
    b.args = b.build_args()
    b.names = list(b.params)
    b.err = {p: 0.0 for p in b.params}
    b.env = dict(zip(b.params, b.args))
    b.body, b.meta, b.mutating = [], [], False
    return fg.replay_statements(b, prog, body, meta, ret)


def value_variants(prog: LayoutProgram, k: int, seed: int = 0) -> list:
    """prog on new base values of the same dtypes and shapes (the same
    kernels again), each validated."""
    rng = np.random.default_rng(seed)
    b = fg.Builder.__new__(fg.Builder)
    out = []
    for _ in range(k):
        b.rng = np.random.default_rng(rng.integers(0, 2 ** 31))
        bases = [(b.gen_array_values(v.dtype.name, v.shape), lay) for v, lay in prog.bases]
        p = replay(prog, bases=bases)
        if p is not None and p.raises == prog.raises:
            out.append(p)
    return out


def programs(max_stmts: int = 10):
    @st.composite
    def _prog(draw):
        return LayoutBuilder(draw, max_stmts).build()
    return _prog()


def collect_programs(n: int, *, derandomize: bool = True, variants: int = 0, sink=None,
                     seed: int | None = None):
    """n generated programs (hypothesis; a fixed seed when derandomize or
    seed), each followed by up to `variants` value variants."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    out = []
    put = sink if sink is not None else out.append
    if derandomize or seed is not None:
        import fuzz_gen
        fuzz_gen.pin_hypothesis_constants()  # the same programs whatever is loaded

    @settings(max_examples=n, deadline=None, derandomize=derandomize and seed is None,
              database=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def _collect(prog):
        put(prog)
        for v in value_variants(prog, 0 if prog.raises else variants, seed=len(prog.body)):
            put(v)
    if seed is not None:
        _collect = hseed(seed)(_collect)
    _collect()
    return out


# --------------------------------------------------------------------------
# comparing with numdyn


def failure(prog: LayoutProgram, backend: str, compiler=None):
    """The AssertionError text when numdyn disagrees with NumPy on prog
    (results, arguments after the call, base arrays after the call)."""
    import oracle
    fn = prog.function()
    made = []

    def make_args():
        args, bases = prog.build()
        made.append(bases)
        return args

    with fg.quiet():
        try:
            oracle.check(fn, make_args=make_args, backend=backend, check_layout=True,
                         compiled=None if compiler is None else compiler(fn))
            np_bases, nd_bases = made
            for k, (x, y) in enumerate(zip(nd_bases, np_bases)):
                oracle.assert_same(x, y, path=f"base array B{k} after the call")
        except AssertionError as e:
            return str(e)
    return None


def minimize(prog: LayoutProgram, backend: str, budget: int = 40, compiler=None,
             kind: str | None = None) -> LayoutProgram:
    """Greedy shrink: fuzz_gen.minimize with LayoutProgram's replay and failure."""
    return fg.minimize(prog, backend, budget, compiler, kind, replay=replay, failure=failure)


def batch(progs) -> LayoutProgram:
    """fuzz_gen.batch() for LayoutPrograms: each program's arguments are
    still built from its own bases (aliasing stays within a program), and
    the batch's bases are all of theirs, each compared after the call."""
    whole = fg.batch(progs)
    bases, recipes = [], []
    for p in progs:
        off = len(bases)
        bases += p.bases
        recipes += [("base", r[1] + off, r[2]) if r[0] == "base" else r for r in p.recipes]
    return LayoutProgram(whole.params, whole.args, whole.body, whole.ret, mode="batch",
                         bases=bases, recipes=recipes)


class Report(fg.Report):
    """fuzz_gen.Report for LayoutPrograms (batches, failures, reproducers)."""

    def __init__(self, backend: str, max_reports: int = 4, compiler=None, batch_size: int = 1):
        super().__init__(backend, max_reports=max_reports, compiler=compiler,
                         batch_size=batch_size)

    def _fail(self, prog: LayoutProgram):
        return failure(prog, self.backend, self.compiler)

    def _batch(self, progs) -> LayoutProgram:
        return batch(progs)

    def _minimize(self, prog: LayoutProgram, kind: str) -> LayoutProgram:
        return minimize(prog, self.backend, compiler=self.compiler, kind=kind)
