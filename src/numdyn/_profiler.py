"""numdyn.CompileProfiler: what numdyn did while it was active (like
torch._dynamo's CompileProfiler), per compiled function: programs compiled
and their compile time, recompiles with their reasons, graph breaks with
their reasons and source lines; overall: graphs run, kernels compiled,
calls run eagerly, wall time.

    with numdyn.CompileProfiler() as prof:
        f(x); f(y)
    print(prof.report())

It listens to the messages numdyn's C layer logs (the same ones as
NUMDYN_LOGS) and to numdyn.utils' counters and compile times.
"""
import re
import time
from collections import defaultdict

_active = []
_RECOMPILE = re.compile(r"^Recompiling function (.+?): (.*)$", re.S)


def _sync():
    # the C layer formats log messages only while something listens
    import numdyn
    numdyn._sync_log_hook()


def notify(kind, message):
    for p in _active:
        p._note(kind, message)


class CompileProfiler:
    def __init__(self):
        self.recompiles = defaultdict(list)   # function -> [reason]
        self.graph_breaks = []                # "reason at file:line: source"
        self.counters = {}
        self.compile_times = {}
        self.wall_s = 0.0
        self._c0 = self._t0 = self._ct0 = None

    def _note(self, kind, message):
        if kind == "recompiles":
            m = _RECOMPILE.match(message)
            if m:
                self.recompiles[m.group(1)].append(m.group(2))
        elif kind == "graph_breaks":
            self.graph_breaks.append(message[len("graph break: "):]
                                     if message.startswith("graph break: ") else message)

    def __enter__(self):
        from . import _C
        self._c0 = _C._native_counters()
        self._ct0 = _C._compile_times()
        self._t0 = time.perf_counter()
        _active.append(self)
        _sync()
        return self

    def __exit__(self, *exc):
        from . import _C
        self.wall_s = time.perf_counter() - self._t0
        _active.remove(self)
        _sync()
        c1 = _C._native_counters()
        self.counters = {k: c1[k] - self._c0.get(k, 0) for k in c1}
        ct1 = _C._compile_times()
        self.compile_times = {k: v[len(self._ct0.get(k, ())):] for k, v in ct1.items()
                              if len(v) > len(self._ct0.get(k, ()))}
        return False

    def report(self):
        c = self.counters
        lines = ["numdyn compile profile",
                 f"  wall time {self.wall_s:.4f} s; programs compiled {c.get('graph_compiles', 0)}, "
                 f"graphs run {c.get('graphs', 0)}, kernels compiled {c.get('kernels_compiled', 0)}, "
                 f"graph breaks {c.get('graph_breaks', 0)}, calls run eagerly {c.get('eager_calls', 0)}, "
                 f"replayed calls {c.get('replays', 0)}"]
        names = sorted(set(self.compile_times) | set(self.recompiles))
        for name in names:
            ts = self.compile_times.get(name, [])
            lines.append(f"  {name}: {len(ts)} program(s) compiled in {sum(ts):.4f} s")
            for r in self.recompiles.get(name, []):
                lines.append(f"    recompile: {r}")
        if self.graph_breaks:
            lines.append("  graph breaks:")
            for b in self.graph_breaks:
                lines.append(f"    {b}")
        return "\n".join(lines)
