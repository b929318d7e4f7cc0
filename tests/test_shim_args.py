"""ufunc.__call__'s keywords go through the shim's one spec parser
(numpy_shim/shim_args.c; issue 11, point 3): NumPy's values, dtypes and
exceptions for out=, where=, dtype=, casting=, order=, subok= and the
keywords the shim leaves to NumPy, traced and eager."""
import numpy as np
import pytest

import numdyn
from oracle import check

X = np.linspace(-1.0, 1.0, 7)

CASES = {
    "unknown keyword": lambda x: np.add(x, 1.0, foo=1),
    "out positional and keyword": lambda x: np.add(x, 1.0, np.empty(7), out=np.empty(7)),
    "out=None with positional out": lambda x: np.add(x, 1.0, np.empty(7), out=None),
    "out keyword": lambda x: np.add(x, 1.0, out=np.empty(7)),
    "out tuple": lambda x: np.multiply(x, 2.0, out=(np.empty(7),)),
    "out tuple too long": lambda x: np.add(x, 1.0, out=(np.empty(7), np.empty(7))),
    "out=None": lambda x: np.add(x, 1.0, out=None),
    "out not an array": lambda x: np.add(x, 1.0, out=[0.0] * 7),
    "two outputs, out tuple": lambda x: np.divmod(x, 0.3, out=(np.empty(7), np.empty(7))),
    "two outputs, one out": lambda x: np.divmod(x, 0.3, out=np.empty(7)),
    "dtype": lambda x: np.add(x, 1, dtype=np.float32),
    "dtype not numeric": lambda x: np.add(x, 1, dtype="U3"),
    "casting": lambda x: np.add(x, 1, out=np.empty(7, np.int64), casting="unsafe"),
    "casting refused": lambda x: np.add(x, 1, out=np.empty(7, np.int64)),
    "casting unknown": lambda x: np.add(x, 1, casting="bogus"),
    "where with out": lambda x: np.add(x, 1.0, where=x > 0, out=np.zeros(7)),
    "where=True": lambda x: np.sqrt(np.abs(x), where=True),
    "order and subok": lambda x: np.sin(x, order="F", subok=True),
    "signature (left to NumPy)": lambda x: np.add(x, 1.0, signature=(None, None, None)),
    "too few inputs": lambda x: np.add(x),
    "too many positionals": lambda x: np.add(x, 1.0, np.empty(7), np.empty(7)),
    "input by keyword": lambda x: np.add(x, x2=1.0),
}


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ufunc_keywords_like_numpy(name, backend):
    check(CASES[name], X, backend=backend)


def test_supported_keywords_stay_in_the_graph():
    def prog(x):
        out = np.empty(7)
        np.add(x, 1.0, out=out, casting="same_kind", order="K", subok=True)
        return np.multiply(out, 2.0, dtype=np.float32, where=True)

    res = numdyn.explain(numdyn.compile(prog))(X)
    np.testing.assert_allclose(res.result, prog(X), rtol=1e-6)
    assert res.result.dtype == np.float32
    assert res.graph_break_count == 0
    left = numdyn.explain(numdyn.compile(CASES["signature (left to NumPy)"]))(X)
    assert left.graph_break_count == 1
    assert "signature=" in left.break_reasons[0].reason


# ------------------------------------------------------------ out= of every family
# One array of exactly the result's shape whose dtype the result casts to is
# taken in-graph; anything else (a list, a tuple where NumPy wants an array,
# another rank or shape, a cast NumPy refuses, a bool out= of max/min) is
# NumPy's to refuse, with its own error -- never a value where NumPy raises.

A = np.arange(12.0).reshape(3, 4) - 5.0
OUT_FNS = {
    "sum": (4, lambda x, o: np.sum(x, axis=0, out=o)),
    "prod": (4, lambda x, o: np.prod(x, axis=0, out=o)),
    "max": (4, lambda x, o: np.max(x, axis=0, out=o)),
    "min method": (4, lambda x, o: x.min(axis=0, out=o)),
    "mean": (4, lambda x, o: np.mean(x, axis=0, out=o)),
    "std": (4, lambda x, o: np.std(x, axis=0, out=o)),
    "var method": (4, lambda x, o: x.var(0, out=o)),
    "argmax": (4, lambda x, o: np.argmax(x, axis=0, out=o)),
    "cumsum": (4, lambda x, o: np.cumsum(x[0], out=o)),
    "cumprod method": (4, lambda x, o: x[0].cumprod(out=o)),
    "clip": (4, lambda x, o: np.clip(x[0], 0, 3, out=o)),
    "matmul": (3, lambda x, o: np.matmul(x[:, :3], x[0, :3], out=o)),
    "dot": (3, lambda x, o: np.dot(x[:, :3], x[0, :3], out=o)),
    "ptp": (4, lambda x, o: np.ptp(x, axis=0, out=o)),
    "nansum": (4, lambda x, o: np.nansum(x, axis=0, out=o)),
    "nanmean": (4, lambda x, o: np.nanmean(x, axis=0, out=o)),
    "add.reduce": (4, lambda x, o: np.add.reduce(x, axis=0, out=o)),
    "add.accumulate": (4, lambda x, o: np.add.accumulate(x[0], out=o)),
    "round": (4, lambda x, o: np.round(x[0], 1, out=o)),
    "any": (4, lambda x, o: np.any(x > 0, axis=0, out=o)),
    "concatenate": (8, lambda x, o: np.concatenate([x[0], x[1]], out=o)),
    "negative": (4, lambda x, o: np.negative(x[0], out=o)),
    "add, out broadcasts the inputs": (4, lambda x, o: np.add(x[0, :1], 1.0, out=o)),
    "nanmin": (4, lambda x, o: np.nanmin(x, axis=0, out=o)),
    "take": (4, lambda x, o: np.take(x[0], [0, 2, 1, 3], out=o)),
    "einsum": (4, lambda x, o: np.einsum("ij->j", x, out=o)),
    "maximum.accumulate": (4, lambda x, o: np.maximum.accumulate(x[0], out=o)),
}
OUTS = {
    "exact": lambda n: np.zeros(n),
    "int": lambda n: np.zeros(n, np.int64),
    "bool": lambda n: np.zeros(n, bool),
    "float32": lambda n: np.zeros(n, np.float32),
    "longer": lambda n: np.zeros(n + 1),
    "one": lambda n: np.zeros(1),
    "list": lambda n: [0.0] * n,
    "1-tuple": lambda n: (np.zeros(n),),
    "2-tuple": lambda n: (np.zeros(n), np.zeros(n)),
    "extra dim": lambda n: np.zeros((1, n)),
    "two rows": lambda n: np.zeros((2, n)),
    "a view": lambda n: np.zeros((2, n))[1],
    "strided": lambda n: np.zeros(2 * n)[::2],
    "complex": lambda n: np.zeros(n, complex),
}


@pytest.mark.parametrize("out", sorted(OUTS))
@pytest.mark.parametrize("fn", sorted(OUT_FNS))
def test_out_like_numpy(fn, out):
    n, f = OUT_FNS[fn]
    check(f, A, OUTS[out](n), backend="eager", warnings=True)


@pytest.mark.parametrize("out", ["exact", "int", "bool", "extra dim"])
@pytest.mark.parametrize("fn", ["sum", "min method", "std", "argmax", "cumsum", "clip", "round", "matmul"])
def test_out_like_numpy_native(fn, out):
    n, f = OUT_FNS[fn]
    check(f, A, OUTS[out](n), backend="native", warnings=True)


def test_max_min_into_a_bool_out_reduce_in_bool():
    # NumPy reduces max/min in the bool out's dtype: min(-4, 0, 4) is False
    check(lambda x, o: x.min(axis=0, out=o), A, np.zeros(4, bool), backend="native")


@pytest.mark.parametrize("positional", [False, True])
def test_ufunc_method_out_tuple_keyword_only(positional):
    if positional:
        def f(x):
            return np.add.reduce(x, 0, None, (np.zeros(4),)), np.add.accumulate(x, 0, None, (np.zeros((3, 4)),))
    else:
        def f(x):
            return np.add.reduce(x, 0, out=(np.zeros(4),)), np.multiply.accumulate(x, axis=1, out=(np.zeros((3, 4)),))
    check(f, A, backend="native")
    if not positional:
        assert numdyn.explain(numdyn.compile(f))(A).graph_break_count == 0


# ------------------------------------------------------------ keepdims= and a bool axis=
# NumPy's C reductions read keepdims as an integer (__index__: None, a str and
# np.bool_ raise TypeError) and refuse a bool axis; argmax/argmin read
# keepdims as a bool; functions written in Python (median, linalg.norm) take
# what they take.

B = np.arange(24.0).reshape(2, 3, 4) - 7.0
RED = ["sum", "prod", "max", "min", "mean", "std", "var", "any", "all", "ptp", "nansum", "nanmean",
       "nanmax", "nanmin", "nanprod", "count_nonzero", "argmax", "argmin", "cumsum", "cumprod", "average",
       "linalg.norm"]
KW = {
    "keepdims=None": dict(axis=1, keepdims=None),
    "keepdims='x'": dict(axis=1, keepdims="x"),
    "keepdims=np.True_": dict(axis=1, keepdims=np.True_),
    "keepdims=2": dict(axis=1, keepdims=2),
    "axis=True": dict(axis=True),
    "axis=np.True_": dict(axis=np.True_),
    "axis=(0, True)": dict(axis=(0, True)),
    "axis=np.int8(1)": dict(axis=np.int8(1)),
}


def _call(name, x, kw):
    kw = dict(kw)
    if name in ("cumsum", "cumprod"):
        kw.pop("keepdims", None)
    if name in ("cumsum", "cumprod", "argmax", "argmin") and isinstance(kw.get("axis"), tuple):
        kw["axis"] = 1
    f = np.linalg.norm if name == "linalg.norm" else getattr(np, name)
    return f(x, **kw)


@pytest.mark.parametrize("kw", sorted(KW))
@pytest.mark.parametrize("name", RED)
def test_keepdims_and_bool_axis_like_numpy(name, kw):
    check(lambda x: _call(name, x, KW[kw]), B, backend="eager", warnings=True)


@pytest.mark.parametrize("axis", [True, np.True_, (True,), 1])
@pytest.mark.parametrize("fn", ["sort", "argsort", "argsort method", "partition", "argpartition",
                                "squeeze", "squeeze method"])
def test_bool_axis_of_sorts_and_squeeze_like_numpy(fn, axis):
    x = np.arange(6.0)[::-1].reshape(2, 3, 1)
    calls = {
        "sort": lambda a: np.sort(a, axis=axis),
        "argsort": lambda a: np.argsort(a, axis=axis),
        "argsort method": lambda a: a.argsort(axis=axis),
        "partition": lambda a: np.partition(a, 0, axis=axis),
        "argpartition": lambda a: np.argpartition(a, 0, axis=axis),
        "squeeze": lambda a: np.squeeze(a[:, :1], axis=axis),
        "squeeze method": lambda a: a[:1].squeeze(axis=axis),
    }
    check(calls[fn], x, backend="eager")


def test_out_is_answered_in_one_place():
    """Whether an out= is taken in-graph (one array of the result's shape
    whose dtype receives the result) is decided by one function of the
    dispatcher, nd_shim_out_result (shim_args.c); no impl re-implements
    the check, so a rule fixed there is fixed for every function."""
    import pathlib
    import re
    shim = pathlib.Path(__file__).resolve().parent.parent / "numpy_shim"
    users = set()
    for f in shim.glob("*.c"):
        text = f.read_text()
        if re.search(r"\bout_refused\s*\(", text):
            users.add(f.name)
    assert users == {"shim_args.c"}, users
    callers = {f.name for f in shim.glob("*.c")
               if f.name != "shim_args.c" and re.search(r"\bnd_shim_out_result\s*\(", f.read_text())}
    assert {"shim_reduce.c", "shim_elementwise.c", "shim_matmul.c"} <= callers, callers


def _clip_out(a, o):
    return np.clip(a, 0.2, 0.8, out=(o,))


def _round_out(a, o):
    return np.round(a, 1, out=o)


def _matmul_out(a, o):
    return np.matmul(a, a.T, out=(o,))


def _sum_out(a, o):
    return np.sum(a, axis=1, out=o)


@pytest.mark.parametrize("fn,shape", [(_clip_out, (3, 4)), (_round_out, (3, 4)),
                                      (_matmul_out, (3, 3)), (_sum_out, (3,))])
@pytest.mark.parametrize("good", [True, False])
def test_out_through_the_one_rule(fn, shape, good):
    """Each function whose out= goes through the rule: a fitting out= is
    written and returned (the very object), a misfit raises NumPy's error."""
    a = np.linspace(0.0, 1.0, 12).reshape(3, 4)
    shape = shape if good else (5,)
    c = numdyn.compile(fn)
    o1, o2 = np.zeros(shape), np.zeros(shape)
    if good:
        r1, r2 = fn(a, o1), c(a, o2)
        assert r1 is o1 and r2 is o2
        np.testing.assert_allclose(o2, o1)
    else:
        with pytest.raises(Exception) as e1:
            fn(a, o1)
        with pytest.raises(Exception) as e2:
            c(a, o2)
        assert type(e2.value) is type(e1.value) and str(e2.value) == str(e1.value)
