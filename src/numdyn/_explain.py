"""Formatting of numdyn.explain results (the records come from the C tracer)."""
from dataclasses import dataclass, field
from typing import Any, List


@dataclass
class BreakReason:
    reason: str
    filename: str
    lineno: int
    source: str

    def __str__(self):
        return f"{self.reason}\n    {self.filename}:{self.lineno}: {self.source}"


@dataclass
class ExplainOutput:
    graphs: List[Any] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: List[BreakReason] = field(default_factory=list)
    ops_per_graph: List[List[str]] = field(default_factory=list)
    result: Any = None
    floor: Any = None  # the speed floor's measurement for these arguments (dict) or None
    loops: List[Any] = field(default_factory=list)  # loop capture, per loop (dicts)
    out_guards: List[str] = field(default_factory=list)  # the guards of these arguments' program
    compile_times: str = ""  # numdyn.utils.compile_times() after the call
    # kernels big enough for the OpenMP team that the call ran: the runtime's
    # choice (team / alone / measuring) and its measured times (dicts)
    threads: List[Any] = field(default_factory=list)
    # GPU runs (backend "cuda" / numdyn.device("cuda")): the steps NumPy ran on
    # the host, externs a GPU library ran, NumPy reruns (dicts: event, op, node, why)
    gpu: List[Any] = field(default_factory=list)
    # values read without a graph break that ran the graph so far (an
    # element read outside a call recorded for replay: explain records none)
    value_reads: List[BreakReason] = field(default_factory=list)


    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(ops) for ops in self.ops_per_graph)}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for i, b in enumerate(self.break_reasons, 1):
                lines.append(f"  Break Reason {i}:")
                lines.append(f"    Reason: {b.reason}")
                lines.append(f"    User Stack: {b.filename}:{b.lineno}: {b.source}")
        if self.value_reads:
            lines.append("Value Reads (no graph break; each ran the graph so far):")
            for b in self.value_reads:
                lines.append(f"  {b.filename}:{b.lineno}: {b.source}")
                lines.append(f"    Read: {b.reason}")
        if self.ops_per_graph:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Graph {i}: {', '.join(ops) if ops else '(no ops)'}")
        if self.loops:
            lines.append("Loops:")
            for lp in self.loops:
                lines.append("  " + _loop_line(lp))
        if self.out_guards:
            lines.append("Guards:")
            lines.extend(f"  {g}" for g in self.out_guards)
        if self.threads:
            lines.append(_threads_line(self.threads))
        if self.floor:
            lines.append(_floor_line(self.floor))
        if self.gpu:
            lines.append(_gpu_line(self.gpu))
        return "\n".join(lines)

    __repr__ = __str__


def _us(t):
    return "not measured yet" if t is None else f"{t * 1e6:.1f} us"


def _floor_line(f):
    what = {"numpy": "runs as plain NumPy (numdyn was slower)",
            "original": "runs as the original function, plain NumPy without its captured loops "
                        "(numdyn, and its loops' C, were slower)",
            "numdyn": "runs under numdyn (faster than NumPy)",
            "measuring": "still measuring"}[f["path"]]
    line = (f"Speed Floor: {what} for arguments ({f['signature']}): numdyn "
            f"{_us(f['numdyn_s'])}, NumPy {_us(f['numpy_s'])}")
    if f.get("original_samples"):
        line += f", the original function {_us(f['original_s'])}"
    line += f" per call over {f['calls']} calls"
    if f.get("decided_at"):
        line += (f"; decided at call {f['decided_at']} on {f['numdyn_samples']} numdyn and "
                 f"{f['numpy_samples']} NumPy timed calls")
        if f.get("original_samples"):
            line += f" and {f['original_samples']} of the original"
        if f.get("remeasuring"):
            line += "; now measuring the paths again side by side (a re-check would switch)"
        else:
            line += f"; a path not chosen is probed next at call {f['next_probe']}"
    return line


def _threads_line(ks):
    alone = [k for k in ks if k["choice"] == "alone"]
    team = [k for k in ks if k["choice"] == "team"]
    line = (f"Threads: {len(ks)} kernels big enough for the OpenMP team: {len(team)} run with "
            f"the team, {len(alone)} alone on the calling thread (measured faster there: "
            f"another thread pool, e.g. BLAS after a matmul, held the cores)")
    if len(team) + len(alone) < len(ks):
        line += f", {len(ks) - len(team) - len(alone)} still measuring"
    for k in alone[:8]:
        line += (f"\n  kernel {k['kernel']:016x} ({k['elements']} elements): with the team "
                 f"{_us(k['team_s'])}, alone {_us(k['alone_s'])}")
    return line


def _gpu_line(events):
    host = [e for e in events if e["event"] in ("host_step", "host_graph")]
    line = f"GPU: {len(host)} steps ran on the host with NumPy (operands copied there and back)"
    for e in events:
        line += f"\n  {e['event']}: {e['op']}" + (f" (node {e['node']})" if e["node"] >= 0 else "")
        line += f": {e['why']}"
    return line


def _loop_line(lp):
    if not lp["captured"]:
        return f"line {lp['line']}: not captured: {lp['reason']}"
    s = f"line {lp['line']}: captured (compiled to a C loop)"
    if lp.get("last_fallback"):
        s += f"; last run by Python because {lp['last_fallback']}"
    return s


def build(records, result, floor=None, loops=()):
    out = ExplainOutput(result=result, floor=floor, loops=list(loops))
    for rec in records:
        if rec[0] == "graph":
            _, graph, ops = rec
            out.graphs.append(graph)
            out.ops_per_graph.append(list(ops))
        elif rec[0] == "break":
            reason, filename, lineno, source = rec[1]
            out.break_reasons.append(BreakReason(reason, filename, lineno, source))
        elif rec[0] == "read":
            reason, filename, lineno, source = rec[1]
            out.value_reads.append(BreakReason(reason, filename, lineno, source))
    out.graph_count = len(out.ops_per_graph)
    out.graph_break_count = len(out.break_reasons)
    return out
