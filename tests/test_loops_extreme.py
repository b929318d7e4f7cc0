"""np.max / np.min of float slices inside a captured loop (issue 17): the C
loop reduces them in vector lanes (kernels/nd_loop.h ndl_max_d & co.), and
must still give NumPy's answer -- a NaN where there is one, every other
value bit for bit -- at lengths where the lanes are used (>= 16 doubles,
>= 32 floats), with the NaN or the zero in the lanes' part or in the tail.
(Which of -0.0 and 0.0 NumPy's own max returns depends on its SIMD lanes and
the data's alignment: zeros are compared as values.)
Plain Python/NumPy is the oracle; one compile serves every case."""
import numpy as np

import numdyn


def extremes(a, M, out, b, N, out2):
    for i in range(out.shape[0]):
        out[i, 0] = np.max(a[i:])
        out[i, 1] = np.min(a[: a.shape[0] - i])
        out[i, 2] = np.max(M[i:, 1:])            # rows of contiguous elements
        out[i, 3] = np.min(np.abs(M[::2, i::3]) - 1.0)   # strided rows
        out2[i, 0] = np.max(b[i:])               # float32
        out2[i, 1] = np.min(N[i:, 1:])
    return out, out2


def cases(dt):
    rng = np.random.default_rng(17)
    n = 70
    base = rng.standard_normal(n).astype(dt)
    M0 = rng.standard_normal((9, 40)).astype(dt)
    out = []
    out.append((base.copy(), M0.copy()))
    for pos in (0, 5, 17, 40, 66, n - 1):       # a NaN in the lanes or the tail
        a = base.copy()
        a[pos] = np.nan
        M = M0.copy()
        M[pos % 9, pos % 40] = np.nan
        out.append((a, M))
    a = base.copy()                               # two NaNs: the first wins
    a[[20, 50]] = [np.nan, -np.nan]
    out.append((a, M0.copy()))
    for zeros in ([0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0]):
        a = -np.abs(base) - 1.0                   # max is a zero: which one
        a[[10, 55]] = zeros
        M = -np.abs(M0) - 1.0
        M[3, 7], M[6, 30] = zeros
        M[0, 0], M[8, 39] = zeros
        out.append((a.astype(dt), M.astype(dt)))
        b = np.abs(base) + 1.0                    # min is a zero
        b[[3, 68]] = zeros
        out.append((b.astype(dt), (np.abs(M0) + 1.0).astype(dt)))
    a = base.copy()
    a[30] = np.inf
    a[31] = -np.inf
    out.append((a, M0.copy()))
    return out


def bits(x):
    x = np.asarray(x)
    nan = np.isnan(x)
    v = np.where(nan | (x == 0), 0, x).view(np.int64 if x.dtype == np.float64 else np.int32)
    return nan, v


def test_max_min_of_float_slices_as_numpy():
    f = numdyn.compile(extremes)   # one compile: float64 and float32 operands in one loop
    before = numdyn.utils.counters["loop_runs"]
    for (a, M), (b, N) in zip(cases(np.float64), cases(np.float32)):
        want = extremes(a, M, np.zeros((6, 4)), b, N, np.zeros((6, 2), dtype=np.float32))
        for _ in range(2):   # a first call may run Python while the C compiles
            got = f(a, M, np.zeros((6, 4)), b, N, np.zeros((6, 2), dtype=np.float32))
            numdyn.utils.wait_compiles()
            for w, g in zip(want, got):
                wn, wv = bits(w)
                gn, gv = bits(g)
                np.testing.assert_array_equal(gn, wn)
                np.testing.assert_array_equal(gv, wv)
    assert numdyn.utils.counters["loop_runs"] > before
