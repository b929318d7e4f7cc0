"""The minifier (NUMDYN_REPRO_AFTER=compile|accuracy), like torch's.

When the native backend fails to compile a graph (compile), or a new
program's results differ from NumPy's beyond tolerance (accuracy), the C
runtime hands the graph and every node's NumPy value here. The graph is
re-emitted as NumPy source (a node kind the emitter does not write becomes
an input holding its value); then it is shrunk while the failure persists:
first to the earliest single node whose own computation fails, then by
cutting its inputs one by one (a cut node becomes an input). The result is
written as a standalone script, repro.py, with the inputs it needs
(inputs.npz), under $NUMDYN_DEBUG_DIR/minifier/ (else ./numdyn_minifier/);
run it to see the failure (exit status 1 when it reproduces).
"""
import os
import time

import numpy as np

_TRIALS = 80  # compiles the search may spend


def _tol(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f" or dt.kind == "c":
        return {2: 1e-2, 4: 1e-4, 8: 1e-9}.get(dt.itemsize if dt.kind == "f" else dt.itemsize // 2,
                                             1e-9)
    return 0.0


def _differs(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return True
    t = _tol(want.dtype)
    if t == 0.0:
        return not np.array_equal(got, want)
    return not np.allclose(got, want, rtol=t, atol=t, equal_nan=True)


def _literal(v, dtype, weak):
    v = v.item() if isinstance(v, np.generic) else v
    if weak:
        return repr(v)
    return f"np.{np.dtype(dtype).name}({v!r})"


def _emit_node(n, ref):
    """NumPy source of node n (ref(i): the name of node i), or None."""
    op, a = n.op, n.attrs
    ins = [ref(i) for i in n.inputs]
    dt = np.dtype(n.dtype).name
    if op == "ufunc" and isinstance(getattr(np, a.get("ufunc", ""), None), np.ufunc):
        u = getattr(np, a["ufunc"])
        if u.nout != 1:
            return None
        return f"np.{a['ufunc']}({', '.join(ins)})"
    if op == "cast" and len(ins) == 1:
        return f"np.asarray({ins[0]}).astype(np.{dt})"
    if op == "where" and len(ins) == 3:
        return f"np.where({', '.join(ins)})"
    if op == "reduce" and isinstance(getattr(np, a.get("reduce", ""), None), np.ufunc):
        acc = np.dtype(a["acc_dtype"]).name
        e = (f"np.{a['reduce']}.reduce({ins[0]}, axis={tuple(a['axes'])!r}, "
             f"keepdims={bool(a.get('keepdims'))}, dtype=np.{acc})")
        return e if acc == dt else f"np.asarray({e}).astype(np.{dt})"
    if op == "scan" and isinstance(getattr(np, a.get("ufunc", ""), None), np.ufunc):
        acc = np.dtype(a["acc_dtype"]).name
        e = f"np.{a['ufunc']}.accumulate({ins[0]}, axis={a['axis']}, dtype=np.{acc})"
        return e if acc == dt else f"{e}.astype(np.{dt})"
    return None


def _program(nodes, outs, cuts):
    """(source of `def repro(...)`, parameter node ids) computing outs."""
    need, order, params = set(), [], []

    def visit(i):
        if i in need:
            return
        need.add(i)
        n = nodes[i]
        if i in cuts or n.op in ("input", "scalar"):
            order.append(i)
            return
        for j in n.inputs:
            visit(j)
        order.append(i)

    for o in outs:
        visit(o)
    order.sort()
    lines = []
    for i in order:
        n = nodes[i]
        if n.op == "scalar" and i not in cuts:
            a = n.attrs
            lines.append(f"    v{i} = {_literal(a['value'], n.dtype, a.get('weak'))}")
        elif n.op == "input" or i in cuts:
            params.append(i)
        else:
            lines.append(f"    v{i} = {_emit_node(n, lambda j: f'v{j}')}")
    rets = ", ".join(f"v{o}" for o in outs)
    src = (f"def repro({', '.join(f'v{i}' for i in params)}):\n" + "\n".join(lines) +
           f"\n    return ({rets},)\n")
    return src, params


def _check(mode, src, args, budget, nout):
    """Compile and run the emitted program once: per output, whether it
    fails (compile: a CompileError fails them all; accuracy: it differs
    from NumPy's run of the same program), or None when the trial could
    not tell (budget spent, another error)."""
    import numdyn
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    ns = {"np": np}
    exec(compile(src, "<numdyn minifier>", "exec"), ns)
    fn = ns["repro"]
    try:
        got = numdyn.compile(fn)(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    except numdyn.CompileError:
        return [True] * nout if mode == "compile" else None
    except Exception:  # another failure is not the one being minified
        return None
    if mode == "compile":
        return [False] * nout
    want = fn(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    return [_differs(g, w) for g, w in zip(got, want)]


def _fails(mode, src, args, budget, nout=1):
    r = _check(mode, src, args, budget, nout)
    return bool(r) and any(r)


def minify(mode, graph, values, native, error):
    """Called by the C runtime (runtime_debug.c); returns the repro's path,
    or None when the graph does not fail (accuracy: results agree). The
    search's own compiles write no NUMDYN_DEBUG_DIR artifacts."""
    import numdyn
    debug_dir = os.environ.pop("NUMDYN_DEBUG_DIR", None)
    # every trial waits for its compile: one NumPy ran meanwhile
    # (background_compile) would look like a trial that does not fail
    budget_s = numdyn.config.compile_budget
    numdyn.config.compile_budget = float("inf")
    try:
        return _minify(mode, graph, values, native, error, debug_dir)
    finally:
        numdyn.config.compile_budget = budget_s
        if debug_dir is not None:
            os.environ["NUMDYN_DEBUG_DIR"] = debug_dir


def _minify(mode, graph, values, native, error, debug_dir):
    nodes = list(graph)
    outs = list(graph.outputs)
    if mode == "accuracy":
        if native is None or not any(_differs(g, values[o]) for g, o in zip(native, outs)):
            return None
    # nodes the emitter cannot write start as inputs holding their values
    cuts = {n.index for n in nodes
            if n.op not in ("input", "scalar") and _emit_node(n, str) is None
            and values[n.index] is not None}
    budget = [_TRIALS]

    def trial(o, c):
        src, params = _program(nodes, o, c)
        return _fails(mode, src, [values[p] for p in params], budget, len(o)), src, params

    first = _first_differing(nodes, cuts, values, budget) if mode == "accuracy" else None
    if first is not None:  # one compile found the failure and where it starts
        ok = True
    else:
        ok, src, params = trial(outs, cuts)
    note = "the whole graph"
    if ok:
        if first is None:
            first = _earliest(mode, nodes, cuts, values, budget, trial)
        if first is not None:
            outs = [first]
        # cut every input of the failing computation at once (it is the
        # earliest failing node: what it reads is right), else one by one
        src, params = _program(nodes, outs, cuts)
        inner = {i for i in range(len(nodes)) if f"v{i} =" in src and i not in outs
                 and nodes[i].op not in ("input", "scalar") and i not in cuts}
        if inner and trial(outs, cuts | inner)[0]:
            cuts = cuts | inner
            inner = set()
        changed = bool(inner)
        while changed and budget[0] > 0:  # cut inputs while it still fails
            changed = False
            src, params = _program(nodes, outs, cuts)
            inner = [i for i in range(len(nodes)) if f"v{i} =" in src and i not in outs
                     and nodes[i].op not in ("input", "scalar") and i not in cuts]
            for i in inner:
                if trial(outs, cuts | {i})[0]:
                    cuts = cuts | {i}
                    changed = True
                    break
        src, params = _program(nodes, outs, cuts)
        note = f"minimized to {src.count(chr(10)) - 2} line(s) computing node(s) {outs}"
    else:
        note = "the re-emitted NumPy program did not fail: this is the whole graph as emitted"
    return _write(mode, src, [values[p] for p in params], note, error, graph, debug_dir)


def _candidates(nodes, cuts):
    return [k for k in range(len(nodes)) if nodes[k].op not in ("input", "scalar") and k not in cuts]


def _first_differing(nodes, cuts, values, budget):
    """accuracy: every candidate node an output of one program, one compile;
    the earliest whose value differs from NumPy's, or None"""
    cands = _candidates(nodes, cuts)
    if not cands:
        return None
    src, params = _program(nodes, cands, cuts)
    flags = _check("accuracy", src, [values[p] for p in params], budget, len(cands))
    return next((k for k, f in zip(cands, flags) if f), None) if flags else None


def _earliest(mode, nodes, cuts, values, budget, trial):
    """The earliest node whose value fails: the shortest failing prefix of
    the candidates, by bisection (a prefix holds no node after the earliest
    failing one, so it fails exactly when it reaches that node)."""
    cands = _candidates(nodes, cuts)
    if not cands:
        return None
    lo, hi = 0, len(cands)  # the whole list fails (it holds the failing graph's outputs)
    while hi - lo > 1 and budget[0] > 0:
        mid = (lo + hi) // 2
        if trial(cands[:mid], cuts)[0]:
            hi = mid
        else:
            lo = mid
    return cands[hi - 1] if hi - lo == 1 else None


def _write(mode, src, args, note, error, graph, root):
    base = os.path.join(root, "minifier") if root else os.path.abspath("numdyn_minifier")
    d = os.path.join(base, f"repro_{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}_{id(graph):x}")
    os.makedirs(d, mode=0o700, exist_ok=True)
    np.savez(os.path.join(d, "inputs.npz"), *[np.asarray(a) for a in args])
    what = ("the native backend fails to compile it" if mode == "compile"
            else "numdyn's native result differs from NumPy's")
    lines = [
        f"# numdyn minifier repro ({mode}): {what}.",
        f"# {note}.",
        f"# original error: {error!s}".replace("\n", "\n# ") if error is not None else "#",
        "import os, sys",
        "import numpy as np",
        "import numdyn",
        "",
        src,
        "here = os.path.dirname(os.path.abspath(__file__))",
        "data = np.load(os.path.join(here, 'inputs.npz'))",
        f"args = [data[f'arr_{{i}}'] for i in range({len(args)})]",
        "want = repro(*[np.copy(a) for a in args])",
        "try:",
        "    got = numdyn.compile(repro)(*args)",
        "except numdyn.CompileError as e:",
        "    print('reproduced: the native backend fails to compile:', e)",
        "    sys.exit(1)",
        "for g, w in zip(got, want):",
        "    if not np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):",
        "        print('reproduced: numdyn differs from NumPy')",
        "        sys.exit(1)",
        "print('not reproduced')",
        "",
    ]
    path = os.path.join(d, "repro.py")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    import warnings
    warnings.warn(f"numdyn minifier: {what}; repro written to {path}", RuntimeWarning, stacklevel=2)
    return path
