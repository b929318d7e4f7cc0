"""Softmax and logsumexp rows (issue 19): exp(x - x.max(axis, keepdims=True))
cannot overflow (every element is at most its row's maximum; a NaN or +inf
in the row gives NaN), so its kernel carries no per-lane overflow check --
the hot loop is the max pass, one exp+sum pass and the division. Where the
argument is not provably <= 0 the check stays and NumPy's overflow warning
is given.

NumPy is the oracle over float32/float64, both axes, C/F/strided layouts,
rows of huge values, NaN, +-inf and ties; the generated source is read from
NUMDYN_DEBUG_DIR to pin which exps are checked.
"""
import warnings

import numpy as np
import pytest

import numdyn
from fusion_counts import passes
from oracle import check


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax0(x):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[:, 0]


def exp_max_minus_x(x):
    # the reverse difference is >= 0: its exp may overflow
    return np.exp(x.max(axis=-1, keepdims=True) - x).sum(-1)


def exp_x_minus_colmax(x):
    # a row's maximum broadcast along the wrong axis bounds nothing
    return np.exp(x - x.max(axis=-1)[None, :])


def exp_x_minus_min(x):
    return np.exp(x - x.min(axis=-1, keepdims=True)).sum(-1)


def data(shape, dt, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(dt)


def special(dt):
    x = data((12, 40), dt)
    x[1, 3] = np.nan
    x[2, :] = 7.0                        # ties: every element the maximum
    x[3, 5] = np.inf
    x[4, 6] = -np.inf
    x[5, :] = -np.inf                    # a row of -inf: 0/0
    x[6, :] = np.finfo(dt).max           # huge values: x - max is 0
    x[7, ::2] = np.finfo(dt).max
    x[7, 1::2] = -np.finfo(dt).max       # -max - max overflows to -inf: exp 0
    x[8, :] = 1000.0
    x[9, 0] = np.nan
    x[9, 1] = np.inf
    return x


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_softmax_logsumexp_oracle(backend, dt):
    # (C, F and strided rows of softmax: test_fusion_rows.py)
    for fn in (softmax, softmax0, logsumexp):
        x = special(dt)
        x[10:] = data((2, 40), dt)
        with np.errstate(invalid="ignore"):
            check(fn, x, backend=backend, warnings=True)
    a = data((128, 514), dt, 1)
    check(softmax0 if dt == "float32" else logsumexp, np.asfortranarray(a)[::2, ::-2], backend=backend)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_checked_exps_still_warn(backend, dt):
    # spreads past exp's range: NumPy warns overflow, so must numdyn
    x = data((6, 8), dt)
    x[2, 3] = 200.0 if dt == "float32" else 1000.0
    x[2, 4] = -200.0 if dt == "float32" else -1000.0
    for fn in (exp_max_minus_x, exp_x_minus_min):
        check(fn, x, backend=backend, warnings=True)
    sq = data((8, 8), dt)
    sq[:, 0] = 100.0 if dt == "float32" else 800.0
    sq[0, 1:] = -100.0 if dt == "float32" else -800.0
    check(exp_x_minus_colmax, sq, backend=backend, warnings=True)


def test_no_flags_from_softmax_rows():
    # exp of x - max never asks NumPy's errstate (nothing flagged), even
    # with rows of values far past exp's range
    f = numdyn.compile(softmax)
    x = data((256, 64), "float32") * 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x)
        numdyn.utils.wait_compiles()
        q0 = numdyn.utils.counters["errstate_queries"]
        got = f(x)
    assert numdyn.utils.counters["errstate_queries"] == q0
    np.testing.assert_allclose(got, softmax(x), rtol=1e-5, atol=1e-8)


def _sources(tmp_path, monkeypatch, fn, x):
    monkeypatch.setenv("NUMDYN_DEBUG_DIR", str(tmp_path))
    numdyn.compile(fn)(x)
    numdyn.utils.wait_compiles()
    return "".join(p.read_text() for p in tmp_path.rglob("kernel_*.c"))


@pytest.mark.parametrize("fn,checked", [(softmax, False), (logsumexp, False),
                                        (exp_max_minus_x, True), (exp_x_minus_min, True)])
def test_which_exps_are_checked(tmp_path, monkeypatch, fn, checked):
    src = _sources(tmp_path, monkeypatch, fn, data((300, 33), "float32"))
    assert "nd_expf(" in src
    assert ("nd_ckgt_f(" in src) == checked, src


@pytest.mark.parametrize("fn", [softmax, logsumexp])
def test_one_kernel_one_pass(fn):
    for dt in ("float32", "float64"):
        assert passes(fn, data((2048, 512), dt)) == (1, 1.0)
