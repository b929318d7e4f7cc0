"""An innermost loop that carries a float scalar through an assignment that
reads it (Cholesky's `s -= L[i, k] * L[j, k]`) is an in-order sum: NumPy's
rounding forbids reassociating it, so vectorized it stays a chain of adds
plus a prologue and an epilogue per run; its proved copy is kept scalar
(issue 17, "at least as fast as numba"). The oracle is plain Python/NumPy."""
import numpy as np

from loop_gen import arr, check_calls
from programs_loops import cholesky_loops


def dot_rows(A, B):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        s = 0
        for k in range(A.shape[1]):
            if A[i, k] > 0:
                s = s + A[i, k] * B[i, k]
        out[i] = s
    return out


def test_cholesky(monkeypatch, capfd):
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    M = arr("float64", (9, 9), seed=1)
    A = M @ M.T + 9 * np.eye(9)
    check_calls(cholesky_loops, (A,), (A[:1, :1],))
    assert '__asm__ __volatile__("");' in capfd.readouterr().err


def test_sum_under_a_branch_of_several_types():
    check_calls(dot_rows, (arr("float64", (4, 7), seed=2), arr("float64", (4, 7), seed=3)))


def horner(coefs, x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        acc = 0.0
        for k in range(coefs.shape[0]):
            acc = acc * x[i] + coefs[k]
        y[i] = acc
    return y


def test_a_scaled_recurrence_is_no_sum(monkeypatch, capfd):
    # acc * x + c is no reduction GCC's vectorizer takes: no barrier, which
    # cost the loop unrolled by 4; the result stays NumPy's to the last bit
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    check_calls(horner, (arr("float64", 12, seed=4), arr("float64", 30, seed=5)),
                (arr("float64", 1, seed=6), arr("float64", 3, seed=7)), rtol=0, atol=0)
    err = capfd.readouterr().err
    assert "#pragma GCC unroll 4" in err and "__asm__ __volatile__" not in err, err[-3000:]
