"""Full reductions in as many chunks as their size gives (issue 13).

A full reduction kernel (x.sum(), np.linalg.norm(b), x.mean()) splits its
outermost dim into chunks whose partial results are combined in chunk
order, so results do not depend on the thread count. The count was 64
whatever the size (or n0 when shorter): a 100-element norm ran 64 chunks of
one or two elements, each with a block's set-up and a partial of its own --
14,000 instructions a norm, and power iteration on 100x100 (one norm a
step) took 5x NumPy's time by numdyn's own path. Now: one chunk per 4096
elements, at most 64 (codegen_loops.c, full reductions).

The values stay NumPy's within the dtype's tolerance and the pairwise
error bound, for sizes around every chunk-count boundary.
"""
import logging
import math
import re

import numpy as np
import pytest

import numdyn
from oracle import check

NOFLOOR = {"floor": False}

SIZES = [1, 2, 7, 63, 64, 65, 100, 255, 256, 257, 4095, 4096, 4097, 8191, 8192,
         40000, 64 * 4096 - 1, 64 * 4096, 64 * 4096 + 5]


def _reductions(x):
    return x.sum(), x.mean(), np.linalg.norm(x), x.max(), x.argmin(), (x * x).sum()


def _norm_step(A, b):
    b = A @ b
    return b / np.linalg.norm(b)


def test_chunk_count_follows_size(caplog):
    """the generated full reduction takes its chunk count from its size"""
    cf = numdyn.compile(lambda x: (x * 2.0).sum(), options=NOFLOOR)
    numdyn.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="numdyn"):
            cf(np.arange(100.0))
    finally:
        numdyn.set_logs(output_code=False)
    lines = re.findall(r"const int64_t nch_ = [^\n]*", caplog.text)
    assert lines, caplog.text[-2000:]
    assert all("tot_" in ln for ln in lines), lines


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128, np.int64])
def test_full_reductions_sizes(n, dt):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * 10
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(n)
    x = x.astype(dt)
    check(_reductions, x, backend="native", compile_kwargs={"options": NOFLOOR})


@pytest.mark.parametrize("shape", [(3, 5), (10, 10), (64, 64), (5, 4096), (70, 4100), (4097, 3)])
def test_full_reductions_2d(shape):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    check(_reductions, x, backend="native", compile_kwargs={"options": NOFLOOR})
    check(_reductions, x.T, backend="native", compile_kwargs={"options": NOFLOOR})


@pytest.mark.parametrize("n", [100, 5000, 300000])
def test_sum_error_bound(n):
    """float32 sums keep pairwise summation's error bound (a sequential
    sum of 300000 float32 ones-ish values would be off by far more)"""
    rng = np.random.default_rng(11)
    x = (rng.random(n) + 0.5).astype(np.float32)
    got = numdyn.compile(lambda v: v.sum(), options=NOFLOOR)(x)
    exact = math.fsum(float(v) for v in x)
    eps = np.finfo(np.float32).eps
    assert abs(float(got) - exact) <= 2 * eps * math.log2(n + 1) * float(np.abs(x).sum()), (got, exact)


def test_power_iteration_steps():
    rng = np.random.default_rng(5)
    M = rng.random((100, 100))
    A = M + M.T

    def power(A, iters):
        b = np.ones(A.shape[0])
        for _ in range(iters):
            b = A @ b
            b /= np.linalg.norm(b)
        return b @ A @ b, b

    f = numdyn.compile(power, options=NOFLOOR)
    for _ in range(3):
        check(power, A, 20, compiled=f)
    check(_norm_step, A, np.ones(100), backend="native", compile_kwargs={"options": NOFLOOR})
