"""Issue 12, point 5: sizes NumPy cannot allocate. NumPy allocates every
array it creates or computes, so an impossible size raises at once -- a
ValueError ("array is too big") when size * itemsize overflows, a
MemoryError ("Unable to allocate ...") when the allocation fails -- while a
lazy graph allocates nothing until it runs, and a fused kernel may never
allocate the value at all (np.ones(2**40).sum() ran for minutes). numdyn
must raise what NumPy raises, before running anything."""
import time

import numpy as np
import pytest

from oracle import check

HUGE = 2**40  # 8 TiB of float64: more than any test machine can allocate


def _overcommit_always():
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


needs_failing_malloc = pytest.mark.skipif(
    _overcommit_always(),
    reason="vm.overcommit_memory=1: NumPy's own 8 TiB allocation would succeed here, so "
           "there is no MemoryError to reproduce")


def bcast(shape, dtype=np.float64):
    return np.broadcast_to(np.ones(1, dtype), shape)


TOO_BIG = {  # size * itemsize overflows: ValueError, whatever the machine
    "add": lambda: bcast((2**62,)) + 1,
    "add_then_sum": lambda: (bcast((2**62,)) + 1).sum(),
    "mul_shape": lambda: (bcast((2**62,)) * 2).shape,
    "2d": lambda: (bcast((2**31, 2**31)) * 2).shape,
    "with_a_zero_dim": lambda: np.ones((0, 2**62, 4)).shape,
    "astype": lambda: bcast((2**62,), np.int8).astype(np.float64).shape,
    "sqrt_sum": lambda: np.sqrt(bcast((2**30, 2**30))).sum(),
    "broadcast_past_intp": lambda: bcast((2**62, 4)).shape,  # NumPy: iterator is too large
    "where": lambda: np.where(bcast((2**62,)) > 0, 1.0, 2.0).shape,
}

CANNOT_ALLOCATE = {  # fits npy_intp, but no machine has it: MemoryError
    "ones_sum": lambda: np.ones(HUGE).sum(),
    "zeros_sum": lambda: np.zeros(HUGE).sum(),
    "empty_sum": lambda: np.empty(HUGE).sum(),
    "full_sum": lambda: np.full(HUGE, 2.5).sum(),
    "int8_max": lambda: np.ones(2**63 - 1, dtype=np.int8).max(),
    "ones_like_of_a_view": lambda: np.ones_like(bcast((HUGE,))).sum(),
    "computed_from_a_view": lambda: (bcast((HUGE,)) * 3.0).sum(),
    "reduce_output": lambda: bcast((HUGE, 2)).sum(axis=1)[:3],
    "arange": lambda: np.arange(HUGE, dtype=np.float64).sum(),
    "copy_of_a_view": lambda: bcast((HUGE,)).copy()[0],
}


def _fast_check(fn, backend):
    t0 = time.perf_counter()
    check(fn, backend=backend)  # same exception type and message as NumPy
    assert time.perf_counter() - t0 < 20


@pytest.mark.parametrize("name", sorted(TOO_BIG))
def test_array_too_big_raises_value_error_like_numpy(name, backend):
    with pytest.raises(ValueError, match="too big|too large"):
        TOO_BIG[name]()
    _fast_check(TOO_BIG[name], backend)


@needs_failing_malloc
@pytest.mark.parametrize("name", sorted(CANNOT_ALLOCATE))
def test_unallocatable_size_raises_memory_error_like_numpy(name, backend):
    with pytest.raises(MemoryError):
        CANNOT_ALLOCATE[name]()
    _fast_check(CANNOT_ALLOCATE[name], backend)


def test_big_but_possible_sizes_still_compute(backend):
    # over the probe size (256 MiB): the probe allocates and frees, the
    # kernel still fuses and computes the value without materializing it
    check(lambda: np.ones(2**26, dtype=np.float64).sum() + bcast((2**25,)).sum(),
          backend=backend)
    check(lambda: (bcast((2**27,), np.float32) * 2).sum(dtype=np.float64), backend=backend)
