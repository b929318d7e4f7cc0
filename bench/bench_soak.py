"""Soak: resident memory over many calls of compiled functions, one row per
path through numdyn (issue 12, point 3: RSS must stay flat over 10^6 calls).

    python bench/bench_soak.py [--quick] [--calls N] [--only name,...]

Paths:
- replay_hit:    the same arguments every call (a recorded trace replays);
- replay_miss:   a new Python float every call: the replay guards miss, the
                 entry limit is reached, every call traces (and logs a miss);
- new_shape:     a new shape every call (past the entry limit as well);
- traced:        a function whose helper writes a global (never replayed);
- eager / eager_miss: the eager backend, same arguments / a new float;
- logged:        replay_miss with numdyn's logging on (NUMDYN_LOGS-style
                 hook installed, records dropped by a NullHandler).

Each path warms up (a tenth of the calls, at least 2000) so that caches,
pools and the allocator reach their steady state, then RSS is read before
and after N calls. "growth/call" is (after - before) / N bytes; flat means
well under one byte per call (page-granular RSS noise is a few hundred KiB
in all).
"""
import argparse
import gc
import logging
import os
import sys
import time

import numpy as np

import numdyn


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


_N = 0


def _helper(x):
    """Writes a global: numdyn cannot skip running the function (no replay)."""
    global _N
    _N += 1
    return x


def paths():
    @numdyn.compile
    def axpy(a, s):
        return a * s + 1.0

    @numdyn.compile
    def traced(a, s):
        _helper(None)
        return a * s - 2.0

    @numdyn.compile(backend="eager")
    def eager(a, s):
        return np.sqrt(a * s + 1.0)

    a = np.ones(8)
    shapes = [(1 + i % 97, 1 + (i // 97) % 103) for i in range(97 * 103)]
    return {
        "replay_hit": lambda i: axpy(a, 0.5),
        "replay_miss": lambda i: axpy(a, 0.5 + i * 1e-9),
        "new_shape": lambda i: axpy(np.ones(shapes[i % len(shapes)]), 0.5),
        "traced": lambda i: traced(a, 0.25),
        "eager": lambda i: eager(a, 0.75),
        "eager_miss": lambda i: eager(a, 0.75 + i * 1e-9),
        "logged": lambda i: axpy(a, 0.25 + i * 1e-9),
    }


def soak(name, step, calls):
    log = logging.getLogger("numdyn")
    if name == "logged":
        log.addHandler(logging.NullHandler())
        log.setLevel(logging.DEBUG)
        numdyn.set_logs(graphs=True, graph_breaks=True)
    warm = max(2000, calls // 10)
    for i in range(warm):
        step(i)
    gc.collect()
    r0 = rss()
    t0 = time.perf_counter()
    for i in range(warm, warm + calls):
        step(i)
    dt = time.perf_counter() - t0
    gc.collect()
    r1 = rss()
    return {"path": name, "calls": calls, "us/call": 1e6 * dt / calls,
            "rss_before_MiB": r0 / 2**20, "rss_after_MiB": r1 / 2**20,
            "growth_B/call": (r1 - r0) / calls}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 calls per path")
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    calls = args.calls or (100_000 if args.quick else 1_000_000)
    ps = paths()
    only = [n for n in args.only.split(",") if n] or list(ps)
    print("| path | calls | us/call | RSS before (MiB) | RSS after (MiB) | growth (B/call) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for name in only:
        r = soak(name, ps[name], calls)
        worst = max(worst, r["growth_B/call"])
        print("| %s | %d | %.1f | %.1f | %.1f | %.3f |" % (
            r["path"], r["calls"], r["us/call"], r["rss_before_MiB"], r["rss_after_MiB"],
            r["growth_B/call"]), flush=True)
    print("\nworst growth: %.3f B/call (%s)" % (worst, "flat" if worst < 1.0 else "GROWING"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
