"""Streaming (non-temporal) stores of outputs far bigger than the caches
(issue 19): only for rows of a tile (ND_TILE elements) or more. A shorter
row ended in a partial non-temporal line and an sfence per row; under the
OpenMP team `(X - lo) / d` over (1200000, 8) float64 ran 110 ms a call
instead of 4.5 ms. The values are the same either way.

The suite's store-check mode (conftest: NUMDYN_CHECK_STORES=1) generates
no streaming branch at all, so these run in a fresh interpreter with it
off and a kernel cache of their own: NumPy is the oracle for outputs just
over the streaming threshold (64 MB), rows shorter and longer than a tile,
with the OpenMP team forced and with the calling thread alone.
"""
import glob
import json
import os
import subprocess
import sys
import textwrap

PROG = """
import json, numpy as np, numdyn
numdyn.config.floor = False
def scale(X, lo, d):
    return (X - lo) / d
bad = []
for team in (True, False):
    numdyn.config.adaptive_threads = not team
    for shape in [(1_048_600, 8), (2_800_000, 3), (16_400, 512), (8200, 1030), (300, 8)]:
        X = np.random.default_rng(0).standard_normal(shape)
        lo = X.min(0)
        d = X.max(0) - lo
        f = numdyn.compile(scale)
        want = scale(X, lo, d)
        for _ in range(3):   # the first calls may run while the kernel compiles
            numdyn.utils.wait_compiles()
            got = f(X, lo, d)
            if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
                bad.append([team, list(shape)])
print(json.dumps({"bad": bad}))
"""


def test_streaming_outputs_match_numpy(tmp_path):
    env = dict(os.environ)
    env.update(NUMDYN_CACHE_DIR=str(tmp_path), NUMDYN_CHECK_STORES="0",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(PROG)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"bad": []}
    srcs = [open(p).read() for p in glob.glob(os.path.join(str(tmp_path), "*.c"))]
    streaming = [s for s in srcs if "nd_stream_copy(" in s]
    assert streaming, "no kernel with a streaming branch was generated"
    # every 2-d pointwise kernel streams only rows of a tile or more
    assert all(">= ND_STREAM_BYTES && n1 >= ND_TILE" in s for s in streaming)
