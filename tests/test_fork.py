"""A process forked after numdyn ran kernels on its OpenMP team works.

libgomp's thread pool does not survive fork(): a child (multiprocessing's
default start method on Linux) whose kernel opened a parallel region waited
forever for threads that do not exist in it. The child now runs every
kernel alone (src/runtime/runtime_par.c, pthread_atfork).
"""
import multiprocessing as mp
import warnings

import numpy as np
import pytest

import numdyn


def _big(x):
    return np.exp(x).sum() + np.sqrt(np.abs(x)).mean()


_cbig = numdyn.compile(_big)


def _child(i):
    x = np.linspace(0.0, 1.0, 400_000) * (i + 1)
    return float(_cbig(x)), float(_big(x))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="no fork() on this platform")
def test_forked_child_runs_kernels():
    x = np.linspace(0.0, 1.0, 2_000_000)
    assert _cbig(x) == _big(x)          # the parent's kernels ran (with the team where it pays)
    numdyn.utils.wait_compiles()
    assert _cbig(x) == _big(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python >= 3.12: fork of a threaded process
        with mp.get_context("fork").Pool(2) as pool:
            res = pool.map_async(_child, range(4)).get(timeout=120)
    for got, want in res:
        assert got == pytest.approx(want, rel=1e-12)
