"""Gathers x[idx] inside captured loops (issue 17, point 1): idx a 1-D
integer array -- a name or a slice of an index array with bounds read from
another array, as CSR's `cols = col[ptr[i]:ptr[i + 1]]` -- used in a
product, a reduction or an elementwise slice store. NumPy's semantics: each
index checked against x's length, negative ones from the end, the first bad
one raising IndexError with NumPy's message at the iteration NumPy raises it
(rows stored before it stay stored in an argument), every index dtype NumPy
takes for it; a bool array is a mask and stays with Python. Plain Python is
the oracle; one compile per function serves every case (a mode argument)."""
import numpy as np

import numdyn
from loop_gen import check_calls


def csr_rows(ptr, col, val, x, y, mode):
    for i in range(ptr.size - 1):
        cols = col[ptr[i]:ptr[i + 1]]
        vals = val[ptr[i]:ptr[i + 1]]
        if mode == 0:
            y[i] = vals @ x[cols]
        elif mode == 1:
            y[i] = np.dot(x[cols], vals) + np.sum(x[cols])
        elif cols.size:
            y[i] = (x[cols] * 2.0 - vals).max()
    return y


def scatter_rows(idx, x, out):
    # elementwise: a row of `out` from a gather, whole-array index names
    for r in range(out.shape[0]):
        out[r, :] = x[idx] * r + 1
    return out


def _csr(rng, n, m, nnz_row, idt):
    counts = rng.integers(0, nnz_row + 1, n)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(idt)
    col = rng.integers(0, m, int(ptr[-1])).astype(idt)
    return ptr, col


def test_csr_gathers_over_index_dtypes_and_modes():
    cf = numdyn.compile(csr_rows, options={"floor": False})
    rng = np.random.default_rng(7)
    for idt, vdt in ((np.int64, np.float64), (np.uint32, np.float32)):
        ptr, col = _csr(rng, 9, 12, 4, idt)
        val = rng.standard_normal(col.size).astype(vdt)
        x = rng.standard_normal(12).astype(vdt)
        for mode in (0, 1, 2):
            check_calls(csr_rows, (ptr, col, val, x, np.zeros(8, vdt), mode), repeat=False, compiled=cf)
    info = cf._loop_info()
    assert info[0]["captured"] and info[0].get("last_fallback") is None, info


def test_gather_index_errors_and_negative_indices():
    cf = numdyn.compile(csr_rows, options={"floor": False})
    ptr = np.array([0, 2, 3, 5], np.int64)
    x = np.arange(4.0)
    val = np.ones(5)
    for col in (np.array([0, -1, 2, -4, 3]),          # negative: from the end
                np.array([0, 1, 7, 2, 3]),            # 7: IndexError in row 1
                np.array([0, 1, 2, -5, 3])):          # -5: IndexError in row 2
        for mode in (0, 2):
            # y is an argument: rows stored before the error stay stored
            check_calls(csr_rows, (ptr, col, val, x, np.full(3, 9.0), mode), repeat=False, compiled=cf)
    info = cf._loop_info()
    assert info[0]["captured"] and info[0].get("last_fallback") is None, info
    # a bool index is a mask: Python runs it, as NumPy computes it
    check_calls(csr_rows, (ptr, np.array([True, False, True, True, False]), val, x, np.zeros(3), 0),
                repeat=False, compiled=cf)


def test_gather_in_an_elementwise_store():
    cf = numdyn.compile(scatter_rows, options={"floor": False})
    for idx in (np.array([3, 0, -1, 2], np.int32), np.array([0, 1, 9, 2])):
        check_calls(scatter_rows, (idx, np.arange(5.0) * 0.5, np.zeros((3, 4))), repeat=False, compiled=cf)
    info = cf._loop_info()
    assert info[0]["captured"] and info[0].get("last_fallback") is None, info


def gathered_rows(ptr, col, x, y):
    for i in range(len(y)):
        g = x[col[ptr[i]:ptr[i + 1]]]     # a new array (NumPy copies), not a view of x
        g[0:1] = -1.0                     # so this never reaches x
        y[i] = g.sum() + x[0]
    return y, g, x


def test_a_gather_given_to_a_name_is_a_new_array():
    cf = numdyn.compile(gathered_rows, options={"floor": False})
    ptr, x = np.array([0, 2, 3, 5]), np.arange(6.0)
    for col in (np.array([1, 4, 0, -1, 2]), np.array([1, 4, 9, 0, 2])):
        check_calls(gathered_rows, (ptr, col, x, np.zeros(3)), repeat=False, compiled=cf)
        info = cf._loop_info()
        assert info[0]["captured"] and info[0].get("last_fallback") is None, info
