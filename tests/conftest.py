"""Test-session set-up shared by every numdyn test.

- A kernel cache directory private to this test run (NUMDYN_CACHE_DIR),
  so the suite never reads or writes the user's ~/.cache/numdyn and compiled
  kernels are reused across tests, xdist workers and nested pytest runs of
  one run. Set NUMDYN_TEST_CACHE_DIR to keep it between runs (it must be
  owned by you, mode 0700).
- Store-check mode (NUMDYN_CHECK_STORES=1): generated kernels check every
  store against their output's bounds; with NUMDYN_SPLIT_PASSES=1 (`make
  test`) the VECTOR_FILES slice runs in a pass without it instead.
- The speed floor off (NUMDYN_FLOOR=0) except where a test asks for it.
- Background compiles on (numdyn's default) with an unbounded compile budget
  (NUMDYN_COMPILE_BUDGET=inf): every call waits for its compilers, so
  counters and CompileErrors are per call, as a user's test suite asserting
  them would set it; tests/test_first_call.py tests the default budget.
- Hypothesis profiles:
    "ci"   derandomized (fixed seed), no deadline: the default under CI=true
           and in `make test` (which sets HYPOTHESIS_PROFILE=ci);
    "dev"  the default otherwise: random search, no deadline;
    "fuzz" the long search of `make fuzz` (NUMDYN_FUZZ=1, or
           HYPOTHESIS_PROFILE=fuzz); NUMDYN_FUZZ_EXAMPLES sets its size.
  Tests that choose their own max_examples should scale it with
  `settings().max_examples` or read NUMDYN_FUZZ_EXAMPLES, so that `make fuzz`
  searches longer.
- A `backend` fixture: every test taking it runs once per backend
  ("eager", "native"; NUMDYN_TEST_BACKEND=cuda: "cuda" alone, and
  numdyn.compile's default backend "cuda" -- bench/gpu_check.sh).
- numdyn.reset() after each test (when numdyn provides it), so one test's
  caches, counters and marks don't leak into the next.
"""
import os
import shutil
import signal
import sys
import tempfile

import pytest

# tests/ itself holds helper modules (oracle.py, fuzz_gen.py); bench/ holds
# the NumPy programs the benchmarks time and the tests check (programs.py).
_TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _TESTS)
sys.path.append(os.path.join(os.path.dirname(_TESTS), "bench"))

# ---- kernel cache: before anything imports numdyn -------------------------
# Compiling kernels is most of the suite's CPU time (cc ran 75 of the 86 CPU
# seconds of test_fusion_rows + test_semantics_reductions), so one run has
# one cache: the session that makes it exports it as NUMDYN_RUN_CACHE_DIR,
# and its xdist workers and the pytest runs its tests start (test_verify's
# NUMDYN_DEBUG slice) use it instead of compiling the same kernels again.
# The disk cache is safe for concurrent processes (src/toolchain/
# cache_disk.c); only the session that made the directory removes it.
_OWN_CACHE = None
if os.environ.get("NUMDYN_TEST_CACHE_DIR"):
    os.makedirs(os.environ["NUMDYN_TEST_CACHE_DIR"], mode=0o700, exist_ok=True)
    os.environ["NUMDYN_CACHE_DIR"] = os.environ["NUMDYN_TEST_CACHE_DIR"]
elif os.path.isdir(os.environ.get("NUMDYN_RUN_CACHE_DIR", "")):
    os.environ["NUMDYN_CACHE_DIR"] = os.environ["NUMDYN_RUN_CACHE_DIR"]
else:
    _OWN_CACHE = tempfile.mkdtemp(prefix="numdyn-test-cache-")  # mode 0700
    os.environ["NUMDYN_CACHE_DIR"] = os.environ["NUMDYN_RUN_CACHE_DIR"] = _OWN_CACHE

# ---- store-check mode: every generated kernel checks that each store lands
# inside its output's bytes (a stray store raises SystemError instead of
# corrupting the heap). NUMDYN_CHECK_STORES=0 turns it off for a run.
os.environ.setdefault("NUMDYN_CHECK_STORES", "1")
# That conditional store per element changes the loops GCC builds (on an
# AVX-512 host they still vectorize, with masked stores: every unit of
# test_join's checked run had a vectorized loop, session 22), so the loops
# users run (plain and streaming stores, SLEEF's calls, complex parts,
# vector reductions, remainder loops) are not what a checked run tests. The
# kernel-running tests of VECTOR_FILES are the slice that runs without the
# checks: `make test` sets NUMDYN_SPLIT_PASSES=1 and runs the suite twice --
# checked, those tests left out; then NUMDYN_CHECK_STORES=0, only those.
# Without NUMDYN_SPLIT_PASSES a run keeps every test it collects.
VECTOR_FILES = ("test_semantics_ufuncs.py", "test_codegen_complex_vec.py", "test_codegen_libm.py",
                "test_complex_fma_and_square.py", "test_fusion_softmax.py", "test_probe10_nan_flags.py",
                "test_floor12_vector_casts.py")

# ---- the speed floor (numdyn.config.floor) would, after a few calls, run a
# compiled function as plain NumPy when that is faster: the suite tests
# numdyn's own paths, so it is off by default here; tests/test_floor.py turns
# it on per function (options={"floor": True}).
os.environ.setdefault("NUMDYN_FLOOR", "0")
# ---- numdyn.config.accumulated_recompile_limit (torch's 256 recompiles per
# process, all functions together) would make the suite's later tests run
# eagerly once its earlier ones recompiled that often: unbounded here;
# tests/test_control_torch_api.py sets it per test.
os.environ.setdefault("NUMDYN_ACCUMULATED_RECOMPILE_LIMIT", "1000000000")
# kernels compile in the background (the default) but every call waits for
# them (counters and CompileErrors are per call, whatever the load);
# test_first_call.py tests the default budget, in processes of its own too
os.environ.setdefault("NUMDYN_COMPILE_BUDGET", "inf")

# ---- under `make test-asan` (libasan preloaded) jaxlib aborts at import
# (ASan's __cxa_throw interceptor CHECK-fails on its C++ exceptions): the
# JAX comparisons are skipped there, and run everywhere else (`make test`
# installs jax).
if "libasan" in os.environ.get("LD_PRELOAD", ""):
    sys.modules["jax"] = None  # importorskip("jax") then skips

# ---- hypothesis profiles ----------------------------------------------------
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test requirement; tests that need it fail loudly
    settings = None

if settings is not None:
    _slow_ok = [HealthCheck.too_slow, HealthCheck.data_too_large,
                HealthCheck.filter_too_much]
    settings.register_profile(
        "ci", derandomize=True, deadline=None, print_blob=True,
        suppress_health_check=_slow_ok, database=None)
    settings.register_profile(
        "dev", deadline=None, print_blob=True, suppress_health_check=_slow_ok)
    settings.register_profile(
        "fuzz", deadline=None, print_blob=True, suppress_health_check=_slow_ok,
        max_examples=int(os.environ.get("NUMDYN_FUZZ_EXAMPLES", "20000")))

    def _profile():
        if os.environ.get("HYPOTHESIS_PROFILE"):
            return os.environ["HYPOTHESIS_PROFILE"]
        if os.environ.get("NUMDYN_FUZZ"):
            return "fuzz"
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            return "ci"
        return "dev"

    PROFILE = _profile()
    settings.load_profile(PROFILE)
    if PROFILE == "ci":
        # fixed-seed examples must not depend on which local modules are
        # loaded (see fuzz_gen.pin_hypothesis_constants)
        import fuzz_gen
        fuzz_gen.pin_hypothesis_constants()


def pytest_report_header(config):
    lines = [f"numdyn kernel cache: {os.environ['NUMDYN_CACHE_DIR']}"]
    if settings is not None:
        lines.append(f"hypothesis profile: {PROFILE}")
    try:
        import numdyn
        lines.append(f"numdyn: {os.path.dirname(numdyn.__file__ or '?')}")
    except Exception as e:  # reported by the tests themselves
        lines.append(f"numdyn: import failed: {type(e).__name__}: {e}")
    return lines


def pytest_sessionstart(session):
    # `make test-asan` runs against a separate build; make sure that is the
    # numdyn the tests see, not the one installed in the venv.
    expect = os.environ.get("NUMDYN_EXPECT_BUILD")
    if expect:
        import numdyn
        where = os.path.realpath(numdyn.__file__)
        if not where.startswith(os.path.realpath(expect) + os.sep):
            raise pytest.UsageError(
                f"numdyn was imported from {where}, not from the build in {expect}")


def _vector_slice(item):
    """a test of VECTOR_FILES that runs kernels (not its eager-backend case)"""
    if os.path.basename(str(item.fspath)) not in VECTOR_FILES:
        return False
    spec = getattr(item, "callspec", None)
    return spec is None or spec.params.get("backend") != "eager"


# ---- the longest tests first. Under xdist (`make test`: -n auto --dist
# worksteal) a worker that runs out of tests takes half of another's queue,
# but not the test that worker is running: a 40 s test started last would
# end the run 40 s after the rest. So the tests a CI run's --durations
# shows longest (a test file or a test, by node id prefix) start first.
# Keep it to what takes ~10 s or more: the tests of 8 s or more in the
# --durations=25 of the CI run of 9ad2109 (2-core machine, 19:17 pytest).
# Worksteal hands each worker a contiguous half of this order, so these
# all start on one worker, in this order -- which matters where tests share
# kernels: the fuzzers' replays (4 programs a batch) load from the disk
# cache's kernel index what the 32-program batches of the same programs
# compiled, but not the other way round (a 32-program unit with one kernel
# not indexed compiles whole). So each batch test comes before its replay
# (test_suite_order.py): replayed[native-rows] after test_fuzz_programs
# [native-rows] took 8.8 s CPU instead of 15.4 for the batch test after it
# (34.1 s CPU for the pair instead of 43.2, fresh cache, load 10-11).
SLOW_FIRST = (
    "tests/test_verify.py::test_a_slice_of_the_suite_passes_under_numdyn_debug",   # 70 s
    "tests/test_fuzz_views.py::test_fuzz_views[native",                           # 43 s
    "tests/test_fuzz_layouts.py::test_fuzz_layouts[native",                       # 37-41 s
    "tests/test_cuda_emulated_device.py",                                         # 31 s
    "tests/test_fuzz_programs.py::test_fuzz_programs[native",                     # 9-26 s
    "tests/test_fuzz_programs.py::test_fuzz_programs_replayed[native",            # 17-24 s
    "tests/test_first_call.py::test_programs_give_numpys_answers_while_their_kernels_compile",  # 17 s
    # session 27's loaded run (load ~13, ~4x the quiet times above):
    # 138 s, and 25-37 s for each of test_loop_programs' parts
    "tests/test_loops_extreme.py::test_max_min_of_float_slices_as_numpy",
    "tests/test_loops_fuzz.py::test_loop_programs[",
    "tests/test_fusion_tall.py::test_tall_float32_against_exact",                 # 16 s
    "tests/test_fusion_tall.py::test_flags_left_on_pool_threads_are_not_the_kernels",  # 16 s
    "tests/test_fusion_rowstats.py::test_narrow_rows_oracle[native-16",           # 14-15 s
    "tests/test_cuda_codegen.py::test_fuzz_programs_compile",                     # 8-14 s
    "tests/test_fusion_tall.py::test_tall_values[native",                         # 13 s
    "tests/test_fusion_horizontal.py::test_var_std_variants[native",              # 10 s
    "tests/test_packaging.py::test_wheel",                # 9 s (setup: the wheel, once per run)
)


def _slow_rank(item):
    for rank, prefix in enumerate(SLOW_FIRST):
        if item.nodeid.startswith(prefix):
            return rank
    return len(SLOW_FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_slow_rank)   # stable: the rest keep their order
    if os.environ.get("NUMDYN_SPLIT_PASSES") != "1":
        return
    unchecked = os.environ.get("NUMDYN_CHECK_STORES") == "0"
    keep = [it for it in items if _vector_slice(it) == unchecked]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[it for it in items if _vector_slice(it) != unchecked])
        items[:] = keep


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


# ---- the suite on the GPU (issue 16, point 5): NUMDYN_TEST_BACKEND=cuda runs
# the `backend` fixture's compiled runs with backend="cuda" instead of
# "native" ("eager" left out: it runs NumPy on the host), and numdyn.compile
# called without a backend (or with "native") compiles for "cuda". The
# subset that holds to NumPy's semantics whatever the backend (the
# differential program generator's tests, the semantics tests) is
# bench/gpu_check.sh's GPU suite run; tests of the native backend's own
# machinery (C compiler, counters of C kernels) are not meant to pass so.
TEST_BACKEND = os.environ.get("NUMDYN_TEST_BACKEND", "")
if TEST_BACKEND not in ("", "native", "cuda"):
    raise pytest.UsageError(f"NUMDYN_TEST_BACKEND={TEST_BACKEND!r}: 'cuda' or unset")
BACKENDS = ["cuda"] if TEST_BACKEND == "cuda" else ["eager", "native"]


def pytest_configure(config):
    if TEST_BACKEND != "cuda":
        return
    import functools

    import numdyn
    if not numdyn.cuda.is_available():
        raise pytest.UsageError("NUMDYN_TEST_BACKEND=cuda: no CUDA device (" +
                                str(numdyn.cuda.unavailable_reason()) + ")")
    compile_ = numdyn.compile

    @functools.wraps(compile_)
    def compile_on_cuda(fn=None, *args, backend="native", **kwargs):
        return compile_(fn, *args, backend="cuda" if backend == "native" else backend, **kwargs)
    numdyn.compile = compile_on_cuda


@pytest.fixture(params=BACKENDS)
def backend(request):
    """The numdyn backend a test runs with; each test runs once per backend."""
    return request.param


@pytest.fixture
def background_compiles(monkeypatch, tmp_path):
    """numdyn compiling in the background into a private cache (the test's
    kernels are built in it, not found) with no compile budget: a call never
    waits for the compiler, whatever the machine's load -- NumPy runs what is
    still compiling"""
    import numdyn
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(tmp_path / "cache"))
    numdyn.utils.reset()
    monkeypatch.setattr(numdyn.config, "background_compile", True)
    monkeypatch.setattr(numdyn.config, "compile_budget", 0.0)
    yield
    numdyn.utils.wait_compiles()
    numdyn.utils.reset()


_CONFIG_SWITCHES = ("cache_size_limit", "verbose", "floor", "loop_capture", "suppress_errors",
                    "enabled", "error_on_recompile", "background_compile", "compile_budget",
                    "adaptive_threads", "automatic_dynamic_shapes")


@pytest.fixture
def floor_times():
    """The speed floor's clock, scripted: floor_times(numdyn_s, numpy_s,
    original_s) makes each timed call of a path count as the next of its
    seconds (cyclically; runtime_floor.c's _floor_test_times), so a
    decision is the same under any load; the clock again after the test."""
    from numdyn import _C

    def set_(numdyn_s=(), numpy_s=(), original_s=()):
        _C._floor_test_times(list(numdyn_s), list(numpy_s), list(original_s))
    yield set_
    _C._floor_test_times([], [], [])


@pytest.fixture(autouse=True)
def _numdyn_reset():
    # Ctrl-C handling (test_hardening_interrupt.py) needs Python's SIGINT
    # handler and an unblocked SIGINT; a test -- or numdyn -- that leaves
    # either changed fails here, by name, instead of a later test failing
    # for no visible reason.
    handler = signal.getsignal(signal.SIGINT)
    # numdyn's global switches (numdyn.config, the stance) as the test found
    # them, put back afterwards: a test that sets one by hand and fails before
    # restoring it must not change what later tests in this process see
    nd = sys.modules.get("numdyn")
    cfg = getattr(nd, "config", None) if nd is not None else None
    saved = {k: getattr(cfg, k) for k in _CONFIG_SWITCHES if hasattr(cfg, k)} if cfg else {}
    yield
    for k, v in saved.items():
        if getattr(cfg, k) != v:
            setattr(cfg, k, v)
    c = getattr(nd, "_C", None) if nd is not None else None
    if c is not None and hasattr(c, "_set_stance"):
        c._set_stance("default")
    assert signal.getsignal(signal.SIGINT) is handler, "this test left SIGINT's Python handler changed"
    if hasattr(signal, "pthread_sigmask"):
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []), \
            "this test left SIGINT blocked"
    nd = sys.modules.get("numdyn")
    reset = getattr(nd, "reset", None) if nd is not None else None
    if reset is not None:
        reset()
