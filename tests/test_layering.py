"""Dependencies between numdyn's C layers run one way (DESIGN.md, README's
layout section):

    core <- graph <- guards, passes <- codegen <- toolchain <- runtime
         <- trace <- numpy_shim <- tensor <- module init (src/module.c)

guards/ and passes/ both sit on graph/ and know nothing of each other. Every
`#include "..."` of every .c/.h is resolved as the compiler resolves it (the
including file's folder, then src/, then the repository root) and must name
a file of its own layer or of a layer below. The tracer reaches NumPy
semantics through the table the shim registers (trace.h nd_numpy_entries),
never by including numpy_shim/.
"""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# layer -> the layers it may include (besides itself)
BELOW = {
    "core": set(),
    "graph": {"core"},
    "guards": {"core", "graph"},
    "passes": {"core", "graph"},
    "codegen": {"core", "graph", "passes"},
    "toolchain": {"core", "graph", "passes", "codegen"},
    "runtime": {"core", "graph", "guards", "passes", "codegen", "toolchain"},
    "trace": {"core", "graph", "guards", "passes", "codegen", "toolchain", "runtime"},
    "numpy_shim": {"core", "graph", "guards", "passes", "codegen", "toolchain", "runtime",
                   "trace"},
    # Tensor, DLPack, wrap_numpy, the gradient tape: on top of everything
    "tensor": {"core", "graph", "guards", "passes", "codegen", "toolchain", "runtime",
               "trace", "numpy_shim"},
}
BELOW["module"] = set(BELOW) - {"module"}
SRC_LAYERS = ("core", "graph", "passes", "codegen", "toolchain", "runtime", "trace", "tensor")
# layer -> its contract: the headers another layer may include. Everything
# else in a folder (trace_internal.h, native.h, shim_internal.h...) is
# private to it. core/ is a toolbox: any of its headers (core.h lists them).
CONTRACT = {
    "core": {"src/core/core.h", "src/core/npy.h", "src/core/dtypes.h", "src/core/strides.h",
             "src/core/sb.h", "src/core/counters.h", "src/core/containers.h",
             "src/core/number_slots.h"},
    "graph": {"src/graph/graph.h", "src/graph/graph_py.h", "src/graph/hash.h",
              "src/graph/loop_ir.h"},          # the captured-loop IR (issue 17)
    "guards": {"guards/guards.h"},
    "passes": {"src/passes/schedule.h", "src/passes/loop_types.h", "src/passes/autodiff.h",
               "src/passes/cse.h"},    # common subexpressions: the run's graph
    "codegen": {"src/codegen/codegen.h", "src/codegen/codegen_cuda.h"},
    "toolchain": {"src/toolchain/toolchain.h"},
    "runtime": {"src/runtime/backend.h", "src/runtime/floor.h",
                "src/runtime/cuda.h",    # the CUDA runtime (issue 16)
                "src/runtime/cuda_blas.h"},   # its cuBLAS/cuFFT externs
    "trace": {"src/trace/trace.h"},
    "numpy_shim": {"numpy_shim/shim.h"},
    "tensor": {"src/tensor/tensor.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "src":
        if len(parts) == 2 and parts[1] == "module.c":
            return "module"
        if len(parts) == 3 and parts[1] in SRC_LAYERS:
            return parts[1]
        return None
    if parts[0] in ("guards", "numpy_shim") and len(parts) == 2:
        return parts[0]
    return None


def c_files():
    out = []
    for top in ("src", "guards", "numpy_shim"):
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d not in ("numdyn", "__pycache__")]
            for f in files:
                if f.endswith((".c", ".h", ".def")):
                    out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return sorted(out)


def resolve(rel, inc):
    for base in (os.path.dirname(rel), "src", ".", "kernels"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def test_every_c_file_has_a_layer():
    files = c_files()
    assert len(files) > 40
    strays = [f for f in files if layer_of(f) is None]
    assert not strays, f"C files outside the pipeline's folders: {strays}"


def test_sources_are_in_the_build():
    """The Makefile and setup.py globs see every folder of src/."""
    mk = open(os.path.join(ROOT, "Makefile")).read()
    setup = open(os.path.join(ROOT, "setup.py")).read()
    assert "src/*/*.c" in mk and "src/*/*.c" in setup


def test_includes_run_down_the_pipeline():
    bad = []
    for rel in c_files():
        me = layer_of(rel)
        text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc.startswith("../"):
                bad.append(f"{rel}: #include \"{inc}\" climbs out of its folder; "
                           f"name it from src/ or the root (\"graph/graph.h\")")
                continue
            target = resolve(rel, inc)
            if target is None:
                bad.append(f"{rel}: #include \"{inc}\" names no file of the tree")
                continue
            if target.startswith("kernels" + os.sep):
                continue
            it = layer_of(target)
            if it is None:
                bad.append(f"{rel}: #include \"{inc}\" is outside every layer")
            elif it != me and it not in BELOW[me]:
                bad.append(f"{rel} ({me}) includes {target} ({it}): {it} is not below {me}")
    assert not bad, "includes against the layer order:\n" + "\n".join(bad)


def test_each_layer_has_its_contract_header():
    for layer, headers in CONTRACT.items():
        for h in headers:
            assert os.path.isfile(os.path.join(ROOT, h)), f"{layer}: contract header {h} is missing"


def test_layers_meet_only_through_contract_headers():
    """No module reads another's structs except through its header."""
    bad = []
    for rel in c_files():
        me = layer_of(rel)
        text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            target = resolve(rel, inc)
            if target is None or target.startswith("kernels" + os.sep):
                continue
            it = layer_of(target)
            if it is None or it == me or it == "module":
                continue
            if target.replace(os.sep, "/") not in CONTRACT[it]:
                bad.append(f"{rel} ({me}) includes {target}, private to {it} "
                           f"(its contract: {sorted(CONTRACT[it])})")
    assert not bad, "includes of another layer's private headers:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", ["trace", "runtime", "codegen", "passes", "guards", "graph",
                                   "core"])
def test_no_layer_below_the_shim_names_its_internals(layer):
    """Below the shim, nothing calls a nd_shim_* function: the tracer goes
    through nd_np (trace.h), the backends through the graph's EXTERN
    contract (nd_extern_placeholder)."""
    hits = []
    for rel in c_files():
        if layer_of(rel) != layer:
            continue
        text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for m in re.finditer(r"\bnd_shim_\w+\s*\(", code):
            hits.append(f"{rel}: {m.group(0)}")
    assert not hits, hits


def _shim_declared_names():
    """Functions and variables the shim's headers declare (shim.h, shim_internal.h)."""
    names = set()
    for h in os.listdir(os.path.join(ROOT, "numpy_shim")):
        if not h.endswith(".h"):
            continue
        text = re.sub(r"/\*.*?\*/", "", open(os.path.join(ROOT, "numpy_shim", h), encoding="utf-8").read(),
                      flags=re.S)
        names.update(re.findall(r"^(?:extern\s+)?(?:const\s+)?[A-Za-z_]\w*[\s*]+(nd_\w+)\s*[(\[;=]",
                                text, re.M))
    return names


def test_below_the_shim_only_the_registered_table_reaches_it():
    """The tracer (and everything under it) reaches NumPy semantics only
    through nd_np, the entry table the shim registers at init: no name the
    shim's headers declare -- nd_shim_*, nd_ext_*, nd_xj_*, whatever the
    prefix -- appears below it, in code or in a macro."""
    names = _shim_declared_names()
    assert len(names) > 50 and "nd_shim_array_ufunc" in names and "nd_ext_build" in names
    hits = []
    for rel in c_files():
        if layer_of(rel) not in SRC_LAYERS + ("guards",) or layer_of(rel) == "tensor":
            continue
        code = re.sub(r"/\*.*?\*/", "", open(os.path.join(ROOT, rel), encoding="utf-8").read(), flags=re.S)
        # a name n occurs as \bn\b exactly when it is one of the code's
        # maximal \w+ runs: one scan of the file, not one search per name
        # (8-10 s of a CI run with ~600 names)
        hits += [f"{rel}: {n}" for n in sorted(names & set(re.findall(r"\w+", code)))]
    assert not hits, hits


def test_shim_sources_leave_keyword_parsing_to_the_spec_parser():
    """Argument normalization is declared once (issue 11, point 3): each shim
    function's parameters are a spec that shim_args.c parses; no other shim
    source matches keyword names against NumPy's parameters itself."""
    pat = re.compile(r'(?:strcmp\s*\(\s*\w+\s*,\s*|CompareWithASCIIString\s*\(\s*\w+\s*,\s*)'
                     r'"(out|keepdims|axis|dtype|where|casting|order|subok|initial|ddof)"')
    hits = []
    for name in sorted(os.listdir(os.path.join(ROOT, "numpy_shim"))):
        if name.endswith(".c") and name != "shim_args.c":
            text = open(os.path.join(ROOT, "numpy_shim", name), encoding="utf-8").read()
            hits += [f"numpy_shim/{name}: {m.group(0)}" for m in pat.finditer(text)]
    assert not hits, hits


def test_saving_the_raised_exception_is_spelled_once():
    """Keeping the raised exception across cleanup code is written for two
    CPython APIs (3.12 replaced the type/value/traceback triple by one
    object); core/npy.h spells it once (ND_EXC_SAVE / RESTORE / DROP) and
    the layers use it. Files listed here use the API for something else
    (reading an exception's text or value) or keep their own copy in a
    part of the tree with another owner; the list may only shrink."""
    others = {"src/trace/trace_flush.c", "numpy_shim/shim_inline.c", "src/passes/loop_types.c",
              "src/tensor/tensor_internal.h"}
    users = set()
    for folder in ("src", "numpy_shim", "guards"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if f.endswith((".c", ".h")):
                    path = os.path.join(dirpath, f)
                    if "PyErr_GetRaisedException" in open(path).read():
                        users.add(os.path.relpath(path, ROOT))
    assert users - others == {"src/core/npy.h"}, users
