# numdyn developer entry points. See README.md.
PYTHON ?= python3
BUILD ?= build/dev
EXT_SUFFIX := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
NP_INC := $(shell $(PYTHON) -c "import numpy;print(numpy.get_include())" 2>/dev/null)
PY_INC := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_paths()['include'])")
SRCS := $(wildcard src/*.c src/*/*.c numpy_shim/*.c guards/*.c)
OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS))
HDRS := $(wildcard src/*/*.h src/*/*.def numpy_shim/*.h guards/*.h)
DEV_CFLAGS ?= -std=c11 -O2 -g -fPIC -Wall -Wextra -Wno-unused-parameter \
  -Wno-missing-field-initializers -fvisibility=hidden \
  -DNPY_NO_DEPRECATED_API=NPY_2_0_API_VERSION -DNPY_TARGET_VERSION=NPY_2_0_API_VERSION
ifeq ($(WERROR),1)
DEV_CFLAGS += -Werror
endif

.PHONY: dev
# Fast incremental build into $(BUILD) (one per developer/helper):
#   make dev BUILD=/tmp/nd-me && PYTHONPATH=/tmp/nd-me python -c 'import numdyn'
dev: $(BUILD)/numdyn/_C$(EXT_SUFFIX)
	@mkdir -p $(BUILD)/numdyn
	@for f in src/numdyn/*.py; do ln -sf $(CURDIR)/$$f $(BUILD)/numdyn/; done
	@ln -sfn $(CURDIR)/kernels $(BUILD)/numdyn/kernels

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DEV_CFLAGS) -I$(NP_INC) -I$(PY_INC) -Isrc -I. -Ikernels -c $< -o $@

$(BUILD)/numdyn/_C$(EXT_SUFFIX): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(OBJS) -ldl

# ---------------------------------------------------------------------------
# User / CI entry points. Everything below runs inside an isolated virtual
# environment at $(VENV) made from $(PYTHON); nothing is installed into the
# interpreter you run make with. Each step is a stamp file, so a second
# `make test` with nothing changed goes straight to pytest.
#   make test       set up, build (the real setup.py build, -Werror), whole suite
#   make demo       set up, build, NumPy vs numdyn on a few real functions
#   make test-asan  the suite against an AddressSanitizer+UBSan build
#   make fuzz-asan  the differential generators under the sanitizers
#   make fuzz       the long differential run (hypothesis profile "fuzz")
#   make bench      every bench/bench_*.py, markdown table for BENCHMARKS.md
#   make wheel      a wheel in dist/
VENV ?= .venv
VPY := $(VENV)/bin/python
PYTEST_ARGS ?= -q -ra --durations=25
# `make test` runs the suite on this many workers (pytest-xdist; "auto": one
# per core): most of its time is one core's -- pytest itself, and cc
# compiling kernels one after another -- so two workers on two cores nearly
# halve it. PYTEST_JOBS=0 runs it in one process. Work stealing: a worker
# that runs out takes half of another's queue (test durations vary from
# milliseconds to a minute); tests/conftest.py starts the longest first.
PYTEST_JOBS ?= auto
PYTEST_DIST = $(if $(filter 0,$(PYTEST_JOBS)),,--dist worksteal)
# A hung test fails after this many seconds instead of stalling CI.
TEST_TIMEOUT ?= 900
FUZZ_EXAMPLES ?= 20000
# torch (the CPU build; 2.13.0 is on this machine's disk) and jax are the
# other sides of the tensor-interop and autodiff tests: without them those
# tests would be skipped, and a skipped test is not a passing one. NVRTC (PyPI's
# nvidia-cuda-nvrtc-cu12, ~90 MB, no GPU needed) compiles the generated CUDA in
# tests/test_cuda*.py. cloudpickle: how Dask/Ray/loky workers receive compiled
# functions (tests/test_ctl_pickle.py).
TEST_DEPS := "setuptools>=64" wheel "numpy>=2.0" "pytest>=7" "hypothesis>=6" pytest-timeout pytest-xdist \
  torch==2.13.0 jax jaxlib nvidia-cuda-nvrtc-cu12 cloudpickle
# What the extension build depends on. Lists that make cannot see through
# timestamps (files added or removed, the test requirements) are recorded in
# build/*.txt, rewritten only when they change, so a change rebuilds too.
EXT_INPUTS := $(sort $(wildcard src/*.c src/*/*.c src/*/*.h src/*/*.def \
  numpy_shim/*.c numpy_shim/*.h guards/*.c guards/*.h)) setup.py pyproject.toml
EXT_LIST := build/ext-sources.txt
DEPS_LIST := build/test-deps.txt
record = $(shell mkdir -p build; echo '$(2)' | cmp -s - $(1) || echo '$(2)' > $(1))
$(call record,$(EXT_LIST),$(EXT_INPUTS))
$(call record,$(DEPS_LIST),$(PYTHON) $(TEST_DEPS))

.PHONY: sysdeps venv build test demo test-asan fuzz-asan fuzz bench wheel clean check-werror

# The extension exactly as `pip install .` builds it: Python's own CFLAGS
# (-DNDEBUG -fwrapv -O3 ...) then setup.py's -Wall -Wextra -Werror, into
# $(BUILD)/setup. It sees warnings `make dev WERROR=1` does not (asserts
# compiled out change what gcc's flow analysis finds). Use your BUILD dir.
check-werror:
	$(PYTHON) setup.py -q build_ext --build-temp $(BUILD)/setup/tmp \
	  --build-lib $(BUILD)/setup/lib

# The C compiler is required; SLEEF only makes the native backend faster.
sysdeps:
	@command -v $(CC) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "numdyn: no C compiler ($(CC)); installing gcc with apt-get"; \
	    { apt-get install -y -q gcc >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && apt-get install -y -q gcc >/dev/null; }; }; \
	  fi; \
	  command -v $(CC) >/dev/null 2>&1 || { \
	    echo "numdyn: no C compiler found (CC=$(CC)). Install gcc or clang, or set CC." >&2; \
	    exit 1; }; }
	@if printf '#include <sleef.h>\n' | $(CC) -E -x c - >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "numdyn: SLEEF headers missing; installing libsleef-dev with apt-get"; \
	  apt-get install -y -q libsleef-dev >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q libsleef-dev >/dev/null; } || \
	  echo "numdyn: WARNING: could not install libsleef-dev; the native backend will use libm loops (slower)." >&2; \
	else \
	  echo "numdyn: WARNING: SLEEF (libsleef-dev) is not installed and cannot be installed here (needs root and apt-get): the native backend will use libm loops (slower). Install it with: sudo apt-get install libsleef-dev" >&2; \
	fi

$(VENV)/.deps-stamp: pyproject.toml $(DEPS_LIST)
	@want=$$($(PYTHON) -c 'import sys;print(sys.version)'); \
	if [ -x $(VPY) ] && [ "$$($(VPY) -c 'import sys;print(sys.version)')" != "$$want" ]; then \
	  echo "numdyn: $(VENV) was made with another Python; making it again"; rm -rf $(VENV); fi; \
	test -x $(VPY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "numdyn: '$(PYTHON) -m venv' failed; on Debian/Ubuntu install python3-venv." >&2; exit 1; }
	$(VPY) -m pip install -q --disable-pip-version-check --no-compile $(TEST_DEPS)
	@env -u PYTHONDONTWRITEBYTECODE $(VPY) -c "$$WARM_IMPORTS"
	@touch $@

# pip byte-compiles every module it installs unless --no-compile: for torch,
# JAX and their dependencies two thirds of the install's CPU time (50 -> 17 s
# measured). The modules the tests import are compiled once instead, by
# importing them with bytecode writing on (a PYTHONDONTWRITEBYTECODE in the
# environment would otherwise make every test process compile them again).
export WARM_IMPORTS
define WARM_IMPORTS
import importlib
for m in ("numpy", "pytest", "xdist", "hypothesis", "torch", "jax.numpy"):
    try:
        importlib.import_module(m)
    except Exception as e:
        print(f"numdyn: importing {m} in the new environment failed: {e!r}")
endef

# An editable install: Python files under src/numdyn are live; C changes
# rebuild the extension with setup.py's flags (-Wall -Wextra -Werror).
$(VENV)/.build-stamp: $(VENV)/.deps-stamp $(EXT_INPUTS) $(EXT_LIST)
	$(VPY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
	@touch $@

venv: $(VENV)/.deps-stamp
build: sysdeps $(VENV)/.build-stamp

# Two passes (tests/conftest.py, VECTOR_FILES): the suite with store checks,
# then the vectorized-kernel slice without them (exit 5: PYTEST_ARGS
# selected nothing for that pass). Each pass leaves every test's time in
# build/test-times*.xml (JUnit XML): `python bench/ci_profile.py --durations
# build/test-times.xml` sums it per file and lists the longest tests.
VECTOR_TESTS = tests/test_semantics_ufuncs.py tests/test_codegen_complex_vec.py \
  tests/test_codegen_libm.py tests/test_complex_fma_and_square.py tests/test_fusion_softmax.py
test: build
	NUMDYN_SPLIT_PASSES=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(VPY) -m pytest --timeout=$(TEST_TIMEOUT) -n $(PYTEST_JOBS) $(PYTEST_DIST) \
	  --junitxml=build/test-times.xml $(PYTEST_ARGS) || [ $$? = 5 ]
	NUMDYN_SPLIT_PASSES=1 NUMDYN_CHECK_STORES=0 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} \
	  $(VPY) -m pytest --timeout=$(TEST_TIMEOUT) -n $(PYTEST_JOBS) $(PYTEST_DIST) \
	  --junitxml=build/test-times-vector.xml $(PYTEST_ARGS) $(VECTOR_TESTS) || [ $$? = 5 ]

demo: build
	$(VPY) bench/demo.py

bench: build
	$(VPY) bench/run_all.py --output build/benchmarks.md

fuzz: build
	@test -n "$(wildcard tests/test_fuzz_*.py)" || { echo "no tests/test_fuzz_*.py yet" >&2; exit 1; }
	HYPOTHESIS_PROFILE=fuzz NUMDYN_FUZZ=1 NUMDYN_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  $(VPY) -m pytest --timeout=0 $(PYTEST_ARGS) $(wildcard tests/test_fuzz_*.py)

# The sanitized extension is built apart (build/asan) and put first on the
# path, so the normal install in $(VENV) stays as it is. libasan must be the
# first library loaded, hence LD_PRELOAD; leaks are not checked (CPython
# keeps much alive until exit by design).
ASAN_LIB = $(shell $(CC) -print-file-name=libasan.so)
# --capture=sys: a sanitizer writes its report to fd 2 and stops the
# process; pytest's default fd capture would swallow the report with it.
# The generated kernels are built sanitized too ($CC's extra words reach the
# kernel compiler), in store-check mode, and glibc's own heap checks
# (MALLOC_CHECK_=3) are on for whatever ASan does not intercept.
SANITIZED_CC = $(CC) -fsanitize=address,undefined -fno-omit-frame-pointer
test-asan: sysdeps $(VENV)/.deps-stamp
	NUMDYN_SANITIZE=1 $(VPY) setup.py -q build --build-base build/asan \
	  --build-lib build/asan/lib
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	MALLOC_CHECK_=3 NUMDYN_CHECK_STORES=1 CC="$(SANITIZED_CC)" \
	LD_PRELOAD=$(ASAN_LIB) PYTHONPATH=$(CURDIR)/build/asan/lib \
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} NUMDYN_EXPECT_BUILD=$(CURDIR)/build/asan/lib \
	  $(VPY) -m pytest --timeout=$(TEST_TIMEOUT) --capture=sys -p no:cacheprovider $(PYTEST_ARGS)

# The differential generators (random programs, views, layouts, the
# reduced-rows class) and the wrong-answer regressions under the sanitizers:
# `make fuzz-asan`, longer with FUZZ_EXAMPLES=N.
SANITIZE_TESTS = tests/test_fuzz_programs.py tests/test_fuzz_views.py \
  tests/test_fuzz_layouts.py tests/test_wrong_answers.py
fuzz-asan:
	$(MAKE) test-asan PYTEST_ARGS="$(PYTEST_ARGS) $(SANITIZE_TESTS)"

wheel: $(VENV)/.deps-stamp
	$(VPY) -m pip wheel -q --no-deps -w dist .

clean:
	rm -rf build dist $(VENV) *.egg-info src/*.egg-info src/numdyn/_C*.so
