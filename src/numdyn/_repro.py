"""What a NUMDYN_DEBUG_DIR repro.py needs besides the function's own source.

A function of the user's script (``__main__``) or a nested one is copied into
repro.py as source text; the names that text reads -- module globals and
closure variables: helper functions and classes of the same script, imported
modules and functions, numbers, strings, arrays -- must be defined there too,
or the script compares two NameErrors. ``source_env(target)`` gives the lines
that define them (with the arrays to save next to the script), and
``function_source(fn)`` a function's text without its decorators (the
``@numdyn.compile`` above the function: repro.py calls the plain function
as NumPy's side and compiles it itself)."""
import ast
import inspect
import textwrap
import types

import numpy as np

_MAX_DEPTH = 8  # helpers of helpers copied, at most this deep
_MAX_ITEMS = 4096  # a longer container or string is not written into repro.py


def function_source(fn):
    """fn's source from its ``def`` line (decorators dropped), dedented;
    OSError/TypeError when it has none."""
    src = textwrap.dedent(inspect.getsource(fn))
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    node = tree.body[0] if tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
        src = "\n".join(src.splitlines()[node.lineno - 1:]) + "\n"
    return src


def _code_names(code, out):
    """the global names code (and the code nested in it) reads"""
    out.update(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            _code_names(c, out)
    return out


def _unwrap(v):
    seen = 0
    while hasattr(v, "__wrapped__") and seen < 8 and not isinstance(v, types.ModuleType):
        v, seen = v.__wrapped__, seen + 1
    return v


def _literal(v):
    """v's repr when evaluating it gives v back (numbers, strings, None and
    containers of them), np.float64(...) for NumPy scalars; else None"""
    if isinstance(v, np.generic) and v.dtype.kind in "biufc":
        return f"np.{type(v).__name__}({v.item()!r})"
    if isinstance(v, (tuple, list, dict, frozenset, set, str, bytes)) and len(v) > _MAX_ITEMS:
        return None  # not written out as text
    if isinstance(v, (bool, int, float, complex, str, bytes, type(None), tuple, list, dict, frozenset, set)):
        try:
            r = repr(v)
            if ast.literal_eval(r) == v or v != v:
                return r
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass
    return None


class _Env:
    def __init__(self, arrays, budget):
        self.imports, self.values, self.defs = [], [], []
        self.arrays, self.budget = arrays, budget
        self.done = set()

    def name(self, name, v, home, depth):
        """define `name` bound to v (read by code of module `home`); what
        cannot be written (an object whose repr or source fails) is named
        in a comment: the debugging output must not fail the call"""
        if name in self.done:
            return
        self.done.add(name)
        try:
            self._define(name, v, home, depth)
        except Exception as e:  # noqa: BLE001 -- any user object's repr/source may raise
            self.values.append(f"# {name}: not rebuilt ({type(e).__name__})")

    def _define(self, name, v, home, depth):
        if isinstance(v, types.ModuleType):
            mod = v.__name__
            if (name, mod) in (("np", "numpy"), ("numpy", "numpy"), ("numdyn", "numdyn")):
                return  # repro.py imports these itself
            self.imports.append(f"import {mod}" if name == mod else f"import {mod} as {name}")
            return
        lit = _literal(v)
        if lit is not None:
            self.values.append(f"{name} = {lit}")
            return
        if type(v) is np.ndarray and v.dtype.kind in "biufc":
            if v.nbytes <= self.budget:
                key = f"g_{name}"
                self.arrays[key], self.budget = v, self.budget - v.nbytes
                self.values.append(f"{name} = inputs[{key!r}].copy()  # {v.dtype} {v.shape!r}")
            else:  # too big to save: random values of its shape and dtype
                self.values.append(f"{name} = (rng.standard_normal({v.shape!r}) * 4)"
                                   f".astype({str(v.dtype)!r})  # not saved: {v.nbytes} bytes")
            return
        if isinstance(v, np.dtype):
            self.values.append(f"{name} = np.dtype({str(v)!r})")
            return
        u = _unwrap(v)
        if isinstance(u, (types.FunctionType, type)):
            mod, qual = getattr(u, "__module__", None), getattr(u, "__qualname__", "")
            if mod and mod != "__main__" and mod != home and "<locals>" not in qual:
                # importable: by reference (a compiled one keeps its decorator)
                self.imports.append(f"import {mod}")
                self.values.append(f"{name} = {mod}.{qual}")
                return
            if depth < _MAX_DEPTH and getattr(u, "__name__", None) == name and \
                    (isinstance(u, type) or u.__name__ != "<lambda>"):
                try:
                    src = function_source(u)
                except (OSError, TypeError):
                    src = None
                if src is not None:
                    self.defs.append(src)
                    self.collect(u, depth + 1)
                    return
        self.values.append(f"# {name}: a {type(v).__qualname__} the function reads is not rebuilt")

    def collect(self, target, depth=0):
        """the names target's code reads: its globals and closure cells"""
        if isinstance(target, type):
            for attr in vars(target).values():
                attr = getattr(attr, "__func__", attr)
                if isinstance(attr, types.FunctionType):
                    self.collect(attr, depth)
            return
        code = getattr(target, "__code__", None)
        if code is None:
            return
        glb = getattr(target, "__globals__", {})
        home = glb.get("__name__")
        for name, cell in zip(code.co_freevars, target.__closure__ or ()):
            try:
                self.name(name, cell.cell_contents, home, depth)
            except ValueError:  # an empty cell
                pass
        for name in sorted(_code_names(code, set())):
            if name in glb and not (name.startswith("__") and name.endswith("__")):
                self.name(name, glb[name], home, depth)
            # builtins and attribute names (x.sum: 'sum') need nothing


def source_env(target, arrays, budget):
    """lines defining what target's source reads (imports, values, helper
    sources), in that order; the arrays it reads are added to `arrays` (as
    ``g_<name>``, read back from repro.py's ``inputs``) while their bytes fit
    in `budget`, larger ones become random arrays (repro.py's ``rng``)"""
    env = _Env(arrays, budget)
    env.done.add(target.__name__)
    env.collect(target)
    lines = [i for i in dict.fromkeys(env.imports) if i]
    if env.values:
        lines += [""] + env.values
    for d in env.defs:
        lines += ["", d.rstrip("\n")]
    return "\n".join(lines) + ("\n\n" if lines else "")


__all__ = ["function_source", "source_env"]
