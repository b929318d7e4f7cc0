"""Compiled functions called from several Python threads at once.

A captured loop's compile releases the GIL (the C compiler runs), so another
thread may run the same loop region meanwhile and add signatures of its own.
The region kept its signatures in one array it grew with realloc while the
first call still pointed into it, and both calls filled the same unclaimed
slot: a thread pool compiling a loop for several dtypes at once crashed
(SIGSEGV in 3 of 4 runs of this test) or ran another signature's state. Each signature
now has its own block, added when its compile ends (src/trace/loop_run.c).
The crash needs an empty kernel cache, so each run is a fresh process.
"""
import os
import subprocess
import sys

SCRIPT = r"""
import threading
import numpy as np
import numdyn

@numdyn.compile
def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s

dts = [np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8, np.uint16, np.int8]
bad = []
go = threading.Barrier(8)

def work(k):
    go.wait()
    for it in range(6):
        a = (np.arange(5 + it) % 7).astype(dts[(k + it) % 8])
        got, want = sumsq(a), sumsq.__wrapped__(a)
        if type(got) is not type(want) or not np.isclose(got, want, rtol=1e-6):
            bad.append((k, it, got, want))

ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print("bad", bad)
"""


def test_loop_compiled_for_many_dtypes_from_threads(tmp_path):
    env = dict(os.environ, NUMDYN_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert p.stdout.strip().splitlines()[-1] == "bad []", p.stdout
