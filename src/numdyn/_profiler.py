"""numdyn.CompileProfiler: what numdyn did while it was active (like
torch._dynamo's CompileProfiler), per compiled function: calls and their
run time, graphs run, calls replayed and calls run eagerly, programs
compiled and their compile time, recompiles with their reasons, graph
breaks with their reasons and source lines (counted); overall: graphs run,
kernels compiled, calls run eagerly, wall time.

    with numdyn.CompileProfiler() as prof:
        f(x); f(y)
    print(prof.report())

It listens to the messages numdyn's C layer logs (the same ones as
NUMDYN_LOGS) and to numdyn.utils' counters and compile times.
"""
import re
import threading
import time
from collections import Counter, defaultdict

_active = []
_RECOMPILE = re.compile(r"^Recompiling function (.+?): (.*)$", re.S)


def _sync():
    # the C layer formats log messages only while something listens
    import numdyn
    numdyn._sync_log_hook()


def notify(kind, message):
    for p in _active:
        p._note(kind, message)


_FIELDS = ("calls", "seconds", "graphs", "graph_breaks", "replayed", "eager")


class CompileProfiler:
    def __init__(self):
        self.recompiles = defaultdict(list)   # function -> [reason]
        self.graph_breaks = []                # "reason at file:line: source"
        # function -> {"calls", "seconds", "graphs", "graph_breaks", "replayed", "eager"}
        self.functions = defaultdict(lambda: dict.fromkeys(_FIELDS, 0))
        self.breaks_by_function = defaultdict(Counter)  # function -> {break: times}
        self._calls = threading.local()       # the thread's running top-level calls
        self.counters = {}
        self.compile_times = {}
        self.wall_s = 0.0
        self._c0 = self._t0 = self._ct0 = None

    def _stack(self):
        st = getattr(self._calls, "stack", None)
        if st is None:
            st = self._calls.stack = []
        return st

    def _note(self, kind, message):
        if kind == "call_begin":
            self._stack().append(message)
        elif kind == "call":
            name, seconds, graphs, breaks, replayed, eager = message
            st = self._stack()
            if st:
                st.pop()
            f = self.functions[name]
            f["calls"] += 1
            f["seconds"] += seconds
            f["graphs"] += graphs
            f["graph_breaks"] += breaks
            f["replayed"] += replayed
            f["eager"] += eager
        elif kind == "recompiles":
            m = _RECOMPILE.match(message)
            if m:
                self.recompiles[m.group(1)].append(m.group(2))
        elif kind == "graph_breaks":
            b = message[len("graph break: "):] if message.startswith("graph break: ") else message
            self.graph_breaks.append(b)
            st = self._stack()
            self.breaks_by_function[st[-1] if st else "(outside compiled calls)"][b] += 1

    def __enter__(self):
        from . import _C
        self._c0 = _C._native_counters()
        # lengths, not the lists: the C layer appends to the same lists
        self._ct0 = {k: len(v) for k, v in _C._compile_times().items()}
        self._t0 = time.perf_counter()
        _active.append(self)
        _C._set_profiling(True)
        _sync()
        return self

    def __exit__(self, *exc):
        from . import _C
        self.wall_s = time.perf_counter() - self._t0
        _active.remove(self)
        _C._set_profiling(bool(_active))
        _sync()
        c1 = _C._native_counters()
        self.counters = {k: c1[k] - self._c0.get(k, 0) for k in c1}
        ct1 = _C._compile_times()
        self.compile_times = {k: list(v[self._ct0.get(k, 0):]) for k, v in ct1.items()
                              if len(v) > self._ct0.get(k, 0)}
        return False

    def report(self):
        c = self.counters
        lines = ["numdyn compile profile",
                 f"  wall time {self.wall_s:.4f} s; programs compiled {c.get('graph_compiles', 0)}, "
                 f"graphs run {c.get('graphs', 0)}, kernels compiled {c.get('kernels_compiled', 0)}, "
                 f"graph breaks {c.get('graph_breaks', 0)}, calls run eagerly {c.get('eager_calls', 0)}, "
                 f"replayed calls {c.get('replays', 0)}"]
        names = sorted(set(self.compile_times) | set(self.recompiles) | set(self.functions)
                       | set(self.breaks_by_function))
        for name in names:
            ts = self.compile_times.get(name, [])
            line = f"  {name}: {len(ts)} program(s) compiled in {sum(ts):.4f} s"
            if name in self.functions:
                f = self.functions[name]
                line += (f"; {f['calls']} call(s) in {f['seconds']:.4f} s, graphs run {f['graphs']}, "
                         f"replayed {f['replayed']}, run eagerly {f['eager']}, "
                         f"graph breaks {f['graph_breaks']}")
            lines.append(line)
            for r in self.recompiles.get(name, []):
                lines.append(f"    recompile: {r}")
            for b, k in self.breaks_by_function.get(name, {}).items():
                lines.append(f"    graph break{f' (x{k})' if k > 1 else ''}: {b}")
        return "\n".join(lines)
