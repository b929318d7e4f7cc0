"""Issue 12, point 3: memory stays flat over many calls, on every path
(replay hit, replay guard miss, a new shape per call past the entry limit,
functions traced on every call, the eager backend). The long run is
bench/bench_soak.py (10^6 calls per path); this is its short form, measured
two ways: Python's allocators (tracemalloc: every PyMem/PyObject allocation
numdyn makes) and the process's resident memory."""
import gc
import os
import tracemalloc

import pytest

from bench_soak import paths  # bench/ is on sys.path (conftest.py)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("path", ["replay_hit", "replay_miss", "new_shape", "traced",
                                  "eager_miss"])
def test_memory_is_flat_over_many_calls(path):
    step = paths()[path]
    for i in range(1500):  # past the replay entry limit; caches and pools warm
        step(i)
    calls = 15000
    gc.collect()
    tracemalloc.start()
    try:
        t0 = tracemalloc.get_traced_memory()[0]
        for i in range(1500, 1500 + calls):
            step(i)
        gc.collect()
        t1 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # before the fix: ~145 bytes per replay miss, ~200 per new shape
    assert (t1 - t0) / calls < 2.0, (path, (t1 - t0) / calls)
    r0 = rss()
    for i in range(1500 + calls, 1500 + 3 * calls):
        step(i)
    gc.collect()
    grew = rss() - r0
    assert grew < 1 << 20, (path, grew)  # 30000 calls x 145 B would be 4.3 MB
