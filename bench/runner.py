"""Timing and reporting shared by numdyn's benchmarks.

    from runner import timeit_interleaved, report, machine_description

    t = timeit_interleaved({"numpy": f, "numdyn": numdyn.compile(f)}, (x, y))
    report([{"benchmark": "softmax f32 (16,16,128,256)", **t}])

Conventions for bench/bench_*.py (bench/run_all.py collects them):
- define ``run(quick=False) -> list[dict]``: one row per benchmark with the key
  "benchmark" (its name), then median seconds per call under "numpy",
  "numdyn" and any other contender ("numexpr", "numba", "torch", ...), and an
  optional "note" string. A contender that could not run is left out of the
  row (or given None) -- never a made-up figure;
- and ``if __name__ == "__main__": report(run())`` so the file also runs alone.
- Check results against NumPy before timing them (a fast wrong answer is not
  a result).
"""
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

__all__ = ["timeit_interleaved", "report", "machine_description", "format_time"]

_TARGET_SAMPLE = 0.01  # seconds: one sample is `number` calls lasting at least this


def _calibrate(fn, args):
    """Calls per sample so that one sample lasts >= ~10 ms."""
    n = 1
    while n < 1 << 24:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        dt = time.perf_counter() - t0
        if dt >= _TARGET_SAMPLE:
            break
        n = n * 10 if dt <= 0 else max(n + 1, math.ceil(n * 1.1 * _TARGET_SAMPLE / dt))
    return n


def timeit_interleaved(fns, args=(), *, repeat=15, warmup=2, number=None, min_time=0.2):
    """Median seconds per call of each fn(*args), as {name: seconds}.

    Samples are interleaved: every round takes one sample of each function
    (in a rotating order, reversed every other cycle), so drift (frequency scaling, other load) hits all
    of them alike. `warmup` calls of each come first (compiles, caches);
    `number` calls make one sample (default: enough for ~10 ms, chosen per
    function); at least `repeat` rounds are taken, and more -- up to 4x --
    until every function has run for `min_time` seconds in total.
    """
    names = list(fns)
    if not names:
        return {}
    for name in names:
        for _ in range(warmup):
            fns[name](*args)
    # numdyn compiles in the background by default: the kernels the warm-up
    # calls started are built, and loaded by one more call, before timing
    nd = sys.modules.get("numdyn")
    if nd is not None and hasattr(nd.utils, "wait_compiles"):
        nd.utils.wait_compiles()
        for name in names:
            fns[name](*args)
        # the speed floor's calls while kernels compiled in the background
        # ran NumPy's path and were no step of its schedule: it measures its
        # paths once they are built (a one-time cost per signature, like the
        # compile, that the warm calls timed here must not include), so
        # numdyn's functions are called until their floor has decided
        for name in names:
            info = getattr(fns[name], "_floor_info_for", None)
            for _ in range(warmup):
                i = info(*args) if info is not None else None
                if not i or (i["path"] != "measuring" and not i["remeasuring"]):
                    break
                fns[name](*args)
    numbers = {n: (number if number else _calibrate(fns[n], args)) for n in names}
    samples = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    rounds = 0
    perf = time.perf_counter
    while rounds < repeat or (min(spent.values()) < min_time and rounds < 4 * repeat):
        k = rounds % len(names)
        order = names[k:] + names[:k]
        if (rounds // len(names)) % 2:
            # rotation keeps the cyclic order (numdyn always right after
            # NumPy of three): every other cycle reversed, so each function
            # follows each other one equally often (under load the call
            # after a long single-threaded one finds the OpenMP team asleep)
            order.reverse()
        for name in order:
            fn, num = fns[name], numbers[name]
            t0 = perf()
            for _ in range(num):
                fn(*args)
            dt = perf() - t0
            samples[name].append(dt / num)
            spent[name] += dt
        rounds += 1
    return {n: statistics.median(samples[n]) for n in names}


def format_time(t):
    """Seconds as a short human figure: 812 ns, 3.41 us, 12.3 ms, 1.20 s."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "-"
    if t < 1e-6:
        return f"{t * 1e9:.0f} ns"
    if t < 1e-3:
        return f"{t * 1e6:.3g} us"
    if t < 1:
        return f"{t * 1e3:.3g} ms"
    return f"{t:.3g} s"


def _ratio(base, t):
    if base is None or t is None or t <= 0:
        return "-"
    return f"{base / t:.2f}x"


def report(rows, file=sys.stdout, *, markdown=False, title=None, describe_machine=None):
    """Print a table: benchmark | numpy | numdyn | ratio | other contenders.

    rows: dicts with "benchmark", "numpy", "numdyn" (median seconds per call)
    and optionally other contenders and "note". ratio = numpy / numdyn, so
    > 1 means numdyn is faster; each other contender shows its time and its
    own numpy/contender ratio. The machine description comes first (unless
    describe_machine=False; markdown tables leave it to the caller).
    """
    rows = list(rows)
    if describe_machine is None:
        describe_machine = not markdown
    if describe_machine:
        print(machine_description(), file=file)
        print(file=file)
    if title:
        print(f"### {title}" if markdown else title, file=file)
        if markdown:
            print(file=file)
    fixed = {"benchmark", "numpy", "numdyn", "note"}
    extras = []
    for r in rows:
        for k in r:
            if k not in fixed and k not in extras:
                extras.append(k)
    header = ["benchmark", "numpy", "numdyn", "ratio (numpy/numdyn)"] + extras
    has_note = any(r.get("note") for r in rows)
    if has_note:
        header.append("note")
    table = []
    for r in rows:
        base = r.get("numpy")
        line = [str(r.get("benchmark", "?")), format_time(base), format_time(r.get("numdyn")),
                _ratio(base, r.get("numdyn"))]
        for k in extras:
            t = r.get(k)
            line.append("-" if t is None else f"{format_time(t)} ({_ratio(base, t)})")
        if has_note:
            line.append(str(r.get("note") or ""))
        table.append(line)
    if markdown:
        print("| " + " | ".join(header) + " |", file=file)
        print("|" + "|".join(["---"] + ["---:"] * (len(header) - 1 - has_note) +
                             (["---"] if has_note else [])) + "|", file=file)
        for line in table:
            print("| " + " | ".join(c.replace("|", "\\|") for c in line) + " |", file=file)
    else:
        widths = [max(len(h), *(len(l[i]) for l in table)) if table else len(h)
                  for i, h in enumerate(header)]
        def fmt(cells):
            return "  ".join(c.ljust(w) if i == 0 or (has_note and i == len(cells) - 1)
                             else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
        print(fmt(header), file=file)
        print("  ".join("-" * w for w in widths), file=file)
        for line in table:
            print(fmt(line), file=file)
    file.flush()


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "?"


def _compiler():
    cc = os.environ.get("CC") or "cc"
    exe = shutil.which(cc.split()[0]) if cc else None
    if not exe:
        return f"{cc}: not found"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        first = (out.stdout or out.stderr).splitlines()[0].strip()
        return f"{cc} ({first})"
    except (OSError, subprocess.SubprocessError, IndexError):
        return cc


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    isa = [x for x in ("avx512f", "avx2", "fma", "sse4_2", "neon") if x in flags]
                    return " ".join(isa) or "-"
    except OSError:
        pass
    return "?"


def _threads():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def machine_description():
    """A few lines naming what the figures were measured on."""
    import numpy
    try:
        import numdyn
        nd = getattr(numdyn, "__version__", "?")
    except Exception as e:
        nd = f"not importable ({type(e).__name__})"
    omp = os.environ.get("OMP_NUM_THREADS", "unset")
    lines = [
        f"CPU: {_cpu_model()} ({_cpu_flags()}); {os.cpu_count()} logical cores, "
        f"{_threads()} usable; OMP_NUM_THREADS={omp}",
        f"Memory: {_mem_total()}; OS: {platform.system()} {platform.release()}",
        f"Compiler: {_compiler()}",
        f"Python {platform.python_version()} ({sys.implementation.name}); NumPy {numpy.__version__}; "
        f"numdyn {nd}",
    ]
    others = []
    for mod in ("numexpr", "numba", "torch"):
        try:
            m = __import__(mod)
            others.append(f"{mod} {getattr(m, '__version__', '?')}")
        except Exception:
            pass
    if others:
        lines.append("Also installed: " + ", ".join(others))
    blas = _numpy_blas()
    if blas:
        lines.append(f"NumPy BLAS: {blas}")
    return "\n".join(lines)


def _numpy_blas():
    try:
        import numpy
        cfg = numpy.show_config(mode="dicts")
        b = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{b.get('name', '?')} {b.get('version', '')}".strip()
    except Exception:
        return ""
