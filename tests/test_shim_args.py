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
