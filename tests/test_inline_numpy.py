"""NumPy functions written in Python are traced through NumPy's own code
(numpy_shim/shim_inline.c): same results as NumPy, and for those whose code
only uses what the shim covers, no graph break."""
import warnings

import numpy as np
import pytest

import numdyn
from oracle import check

rng = np.random.default_rng(0)
A = rng.random((4, 6))
S = rng.random((4, 4))
V = rng.random(6)
I = np.array([3, 1, 4, 1, 0, 2])

# (name, function, args, traced without a break)
CASES = [
    ("rot90", lambda a: np.rot90(a), (A,), True),
    ("rot90_k", lambda a: np.rot90(a, 3, axes=(1, 0)), (A,), True),
    ("diag", lambda a: np.diag(a), (S,), True),
    ("diag_1d", lambda v: np.diag(v, 1), (V,), True),
    ("diagflat", lambda v: np.diagflat(v), (V[:3],), False),
    ("meshgrid", lambda a, b: np.meshgrid(a, b), (V, V[:3]), False),
    ("average", lambda a: np.average(a, axis=0), (A,), True),
    ("average_w", lambda a, w: np.average(a, axis=1, weights=w), (A, V), False),
    ("cross", lambda a, b: np.cross(a, b), (A[:, :3], A[:, 3:]), True),
    ("kron", lambda a, b: np.kron(a, b), (S[:2, :2], S[2:, 2:]), True),
    ("insert", lambda a: np.insert(a, 1, 5.0, axis=1), (A,), False),
    ("delete", lambda a: np.delete(a, [0, 2], axis=1), (A,), False),
    ("resize", lambda a: np.resize(a, (3, 5)), (A,), True),
    ("cov", lambda a: np.cov(a), (A,), False),
    ("corrcoef", lambda a: np.corrcoef(a), (A,), False),
    ("ediff1d", lambda v: np.ediff1d(v), (V,), False),
    ("polyval", lambda p, x: np.polyval(p, x), (V[:3], A), False),
    ("vander", lambda v: np.vander(v, 3), (V,), True),
    ("trapezoid", lambda a: np.trapezoid(a, axis=1), (A,), True),
    ("select", lambda a: np.select([a < 0.3, a > 0.7], [a, -a], 0.5), (A,), False),
    ("sinc", lambda a: np.sinc(a), (A,), True),
    ("angle", lambda a: np.angle(a + 1j * a[::-1]), (A,), True),
    ("fix", lambda a: np.fix(a * 10 - 5), (A,), True),
    ("nanmean", lambda a: np.nanmean(np.where(a > 0.8, np.nan, a), axis=0), (A,), True),
    ("nansum", lambda a: np.nansum(np.where(a > 0.8, np.nan, a)), (A,), True),
    ("nanmax", lambda a: np.nanmax(np.where(a > 0.8, np.nan, a), axis=1), (A,), True),
    ("nanmin", lambda a: np.nanmin(np.where(a > 0.8, np.nan, a)), (A,), True),
    ("nanvar", lambda a: np.nanvar(np.where(a > 0.8, np.nan, a), axis=0), (A,), False),
    ("nanstd", lambda a: np.nanstd(np.where(a > 0.8, np.nan, a)), (A,), False),
    ("nanprod", lambda a: np.nanprod(np.where(a > 0.8, np.nan, a), axis=1), (A,), True),
    ("nancumsum", lambda a: np.nancumsum(np.where(a > 0.8, np.nan, a), axis=1), (A,), False),
    ("logspace", lambda a: np.logspace(0, 2, 6) * a, (A,), True),
    ("geomspace", lambda a: np.geomspace(1, 100, 6) * a, (A,), True),
    ("append", lambda a: np.append(a, a[:1], axis=0), (A,), True),
    ("block", lambda a: np.block([[a, a], [a, a]]), (S,), False),
    ("copy", lambda a: np.copy(a[::-1]), (A,), True),
    ("isin", lambda i: np.isin(i, [1, 4]), (I,), False),
    ("gradient", lambda a: np.gradient(a), (A,), True),
    ("gradient_1d", lambda v: np.gradient(v, 0.5, edge_order=2), (V,), True),
    ("matrix_power", lambda s: np.linalg.matrix_power(s, 3), (S,), True),
    ("multi_dot", lambda s: np.linalg.multi_dot([s, s, s]), (S,), True),
    ("pinv", lambda s: np.linalg.pinv(s), (S,), True),
    ("cond", lambda s: np.linalg.cond(s), (S,), False),
]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("name,fn,args,nobreak", CASES, ids=[c[0] for c in CASES])
def test_inlined_numpy_function(backend, name, fn, args, nobreak):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(fn, *args, backend=backend, rtol=1e-9, atol=1e-12)
        if nobreak:
            e = numdyn.explain(fn, *args)
            assert e.graph_break_count == 0, e.break_reasons


def flat_program(a, v):
    r = np.zeros((4, 4), a.dtype)
    r[:3].flat[1::5] = v            # np.diag's own idiom: through a view
    b = a * 2
    b.flat[1] = 7
    b.flat[[0, 5]] = v[:2]
    c = a.T.copy()
    c.flat[2:8] = v[0]
    d = a.copy()
    d.flat[::3] = v[:2]             # NumPy repeats a short value
    return r, b, c, d, a.flat[2], a.T.flat[1:4], len(a.flat), a.flat.copy(), list(a[:1].flat)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_flat_reads_and_writes(backend):
    check(flat_program, A.copy(), np.array([1.0, 2.0, 3.0]), backend=backend)
    check(flat_program, np.arange(24, dtype=np.int16).reshape(4, 6),
          np.array([1, 2, 3], np.int16), backend=backend)
