"""np.max/np.min/np.argmax/np.argmin along axis 0 of a 2-D value in a
captured loop, computed row by row (issue 17, Viterbi's column maxima).

Along axis 0 of rows of contiguous elements the reduction now walks the
matrix row by row, each column's extreme so far in a buffer (the inner loop
stride 1, a compare-and-select); a column at a time it walked the matrix by
its row stride. NumPy's rules must hold unchanged: ties keep the first
index, a column's first NaN is its max/min and argmax/argmin give that
NaN's index, -0.0/0.0 as NumPy orders them, integers of every width, and a
transposed (non-contiguous) operand still reduces correctly (the column
walk).
"""
import numpy as np
import pytest

from oracle import check
from test_loop_capture import run_both, captured


def viterbi_steps(delta, logA, logB, obs):
    T = obs.shape[0]
    S = logA.shape[0]
    psi = np.zeros((T, S), dtype=np.int64)
    for t in range(1, T):
        scores = delta[:, None] + logA
        psi[t] = np.argmax(scores, axis=0)
        delta = np.max(scores, axis=0) + logB[:, obs[t]]
    return delta, psi


def column_extremes(M, k):
    """per step, the extremes of each column of a shifted matrix"""
    acc = np.zeros(M.shape[1], dtype=M.dtype)
    idx = np.zeros(M.shape[1], dtype=np.int64)
    for s in range(k):
        W = M + M[s % M.shape[0]]
        acc = np.maximum(acc, np.max(W, axis=0)) if s else np.min(W, axis=0)
        idx += np.argmax(W, axis=0) - np.argmin(W, axis=0)
    return acc, idx


def column_extremes_of_arg(M, k):
    out = np.zeros((k, M.shape[1]), dtype=M.dtype)
    ix = np.zeros((k, M.shape[1]), dtype=np.int64)
    for s in range(k):
        out[s] = M.max(axis=0)
        ix[s] = M.argmin(axis=0)
    return out, ix


RNG = np.random.default_rng(1703)


def hmm(S, T, dtype=np.float64):
    A = RNG.random((S, S)) + 0.1
    A /= A.sum(axis=1, keepdims=True)
    B = RNG.random((S, 7)) + 0.1
    B /= B.sum(axis=1, keepdims=True)
    return (np.log(np.full(S, 1.0 / S)).astype(dtype), np.log(A).astype(dtype), np.log(B).astype(dtype),
            RNG.integers(0, 7, T))


def ties(dtype):
    M = RNG.integers(-3, 3, (9, 13)).astype(dtype)
    M[:, 4] = 2     # a column of equal values
    return M


def with_nans():
    M = RNG.standard_normal((8, 11))
    M[3, 2] = np.nan
    M[5, 2] = np.nan
    M[0, 5] = np.nan
    M[7, 9] = np.nan
    M[:, 10] = -0.0
    M[2, 10] = 0.0
    M[4, 7] = -np.inf
    return M


@pytest.mark.parametrize("fn,args", [
    (viterbi_steps, hmm(8, 40)),
    (viterbi_steps, hmm(33, 20)),
    (viterbi_steps, hmm(5, 30, np.float32)),
    (column_extremes, (RNG.standard_normal((7, 21)), 5)),
    (column_extremes, (RNG.standard_normal((7, 21)).astype(np.float32), 5)),
    (column_extremes, (ties(np.int64), 4)),
    (column_extremes, (ties(np.int8), 4)),
    (column_extremes, (ties(np.uint16), 4)),
    (column_extremes, (ties(np.float64), 4)),
    (column_extremes, (with_nans(), 3)),
    (column_extremes_of_arg, (with_nans(), 2)),
    (column_extremes_of_arg, (ties(np.int32), 2)),
    (column_extremes_of_arg, (RNG.standard_normal((30, 6)).T, 2)),   # rows not contiguous
    (column_extremes_of_arg, (RNG.standard_normal((1, 6)), 2)),      # one row
    (column_extremes_of_arg, (RNG.standard_normal((6, 1)), 2)),      # one column
])
def test_values(fn, args):
    check(fn, *args, warnings=True)


@pytest.mark.parametrize("fn,args", [
    (viterbi_steps, hmm(16, 50)),
    (column_extremes, (RNG.standard_normal((7, 21)), 5)),
    (column_extremes, (ties(np.int16), 4)),
    (column_extremes_of_arg, (RNG.standard_normal((9, 40)), 3)),
])
def test_is_captured_and_exact(fn, args):
    exp, got, _, _, cf = run_both(fn, *args)
    for x, y in zip(exp, got):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(y, x)
    captured(cf)
