#!/bin/bash
# One device-machine session of numdyn's GPU checks (issue 16, points 5-6), as
# one command: build the extension with the machine's python3 (the one with
# torch/CuPy), run every CUDA test that needs a GPU, then bench/bench_cuda.py.
# Logs go to $OUT (the device tool brings them back) or ./gpu-out.
#   bash bench/gpu_check.sh [TEST_SECONDS] [BENCH_SECONDS] [BENCH_ARGS...]
# SUITE_SECONDS (default 120; 0: skipped) bounds the suite subset on the CUDA
# backend; ROWS_PROBE=1 runs bench/cuda_rows_probe.py (~1 min, bounded by
# PROBE_SECONDS, default 120) before the bench. CALLS_SECONDS (default 60)
# bounds each per-call run; ERRW_CALLS=0 skips its device-error-words twin.
# TESTS=0 / EMU_GPU=0 skip the GPU tests / the emulated kernels on the GPU;
# BENCH_SECONDS 0 skips the bench and the per-call figures (device time is
# 15 minutes a session: a run picks what it needs).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
TT=${1:-240}; BT=${2:-200}; shift 2 2>/dev/null
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
J=$(nproc)
t0=$(date +%s)
make dev BUILD=/tmp/ndb PYTHON=python3 -j"$J" > "$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export PYTHONPATH=/tmp/ndb NUMDYN_CACHE_DIR=/tmp/ndc
if [ "${TESTS:-1}" = 1 ]; then
t0=$(date +%s)
timeout "$TT" python3 -m pytest -q -p no:cacheprovider -n "$(( J > 12 ? 12 : J ))" \
  --timeout 180 -ra --durations=10 \
  tests/test_cuda_device.py tests/test_cuda_gpu_diff.py tests/test_cuda.py \
  tests/test_cuda_runtime.py tests/test_cuda_blas.py tests/test_cuda_emulated_device.py \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -40
fi
if [ "${EMU_GPU:-1}" = 1 ]; then
# the generated kernels of tests/test_cuda_emulated.py run on the GPU through CuPy
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 100 -k gpu \
  tests/test_cuda_emulated.py > "$OUT/tests_emu_gpu.log" 2>&1
echo "emulated-on-gpu tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests_emu_gpu.log" | tail -20
fi
if [ "${ROWS_PROBE:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout "${PROBE_SECONDS:-120}" python3 bench/cuda_rows_probe.py > "$OUT/rows_probe.md" 2>&1
  echo "rows probe rc=$? $(( $(date +%s) - t0 )) s"; tail -60 "$OUT/rows_probe.md"
fi
if [ "$BT" -gt 0 ]; then
t0=$(date +%s)
timeout "$BT" python3 bench/bench_cuda.py --markdown "$@" > "$OUT/bench.md" 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
tail -25 "$OUT/bench.md"
# session 26: the per-call work alone (seconds), as is and with the kernels'
# error words in device memory (the form before: a memset and a copy back a call)
for ew in "" 1; do
  [ -n "$ew" ] && [ "${ERRW_CALLS:-1}" = 0 ] && continue
  NUMDYN_CUDA_DEVICE_ERRWORDS=$ew timeout "${CALLS_SECONDS:-60}" python3 bench/bench_cuda.py --calls \
    > "$OUT/calls${ew:+_device_errwords}.md" 2>&1
  echo "calls${ew:+ (device error words)} rc=$?"; tail -5 "$OUT/calls${ew:+_device_errwords}.md"
done
fi
# issue 16 point 5: the suite's NumPy-semantics subset with the CUDA backend
# (tests/conftest.py: NUMDYN_TEST_BACKEND=cuda makes the backend fixture and
# numdyn.compile's default "cuda"): the differential program generator's
# tests and the semantics tests. -v: a run cut by the timeout still shows
# which tests passed and failed. SUITE_SECONDS=0 skips it; last, so that it
# cannot starve the benchmarks.
ST=${SUITE_SECONDS:-120}
if [ "$ST" -gt 0 ]; then
  t0=$(date +%s)
  NUMDYN_TEST_BACKEND=cuda HYPOTHESIS_PROFILE=ci timeout "$ST" python3 -m pytest -v -p no:cacheprovider \
    -n "$J" -ra --timeout 150 -k "fuzz_programs or fuzz_views or semantics or test_scalar" \
    tests/test_fuzz_programs.py tests/test_fuzz_views.py tests/test_semantics_ufuncs.py \
    tests/test_semantics_reductions.py tests/test_scalar_semantics.py > "$OUT/suite_cuda.log" 2>&1
  echo "suite on cuda rc=$? $(( $(date +%s) - t0 )) s: $(grep -c ' PASSED ' "$OUT/suite_cuda.log") passed," \
       "$(grep -c ' FAILED ' "$OUT/suite_cuda.log") failed, $(grep -c ' SKIPPED ' "$OUT/suite_cuda.log") skipped"
  grep -E " FAILED |^E  .*(Error|assert)" "$OUT/suite_cuda.log" | head -30
fi
