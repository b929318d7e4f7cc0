#!/bin/bash
# One device-machine session of numdyn's GPU checks (issue 16, points 5-6), as
# one command: build the extension with the machine's python3 (the one with
# torch/CuPy), run every CUDA test that needs a GPU, then bench/bench_cuda.py.
# Logs go to $OUT (the device tool brings them back) or ./gpu-out.
#   bash bench/gpu_check.sh [TEST_SECONDS] [BENCH_SECONDS] [BENCH_ARGS...]
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
t0=$(date +%s)
timeout "$TT" python3 -m pytest -q -p no:cacheprovider -n "$(( J > 12 ? 12 : J ))" \
  --timeout 180 -ra --durations=10 \
  tests/test_cuda_device.py tests/test_cuda_gpu_diff.py tests/test_cuda.py \
  tests/test_cuda_runtime.py tests/test_cuda_blas.py tests/test_cuda_emulated_device.py \
  > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -40
# the generated kernels of tests/test_cuda_emulated.py run on the GPU through CuPy
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 100 -k gpu \
  tests/test_cuda_emulated.py > "$OUT/tests_emu_gpu.log" 2>&1
echo "emulated-on-gpu tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests_emu_gpu.log" | tail -20
t0=$(date +%s)
timeout "$BT" python3 bench/bench_cuda.py --markdown "$@" > "$OUT/bench.md" 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
tail -25 "$OUT/bench.md"
# session 26: the per-call work alone (seconds), as is and with the kernels'
# error words in device memory (the form before: a memset and a copy back a call)
for ew in "" 1; do
  NUMDYN_CUDA_DEVICE_ERRWORDS=$ew timeout 60 python3 bench/bench_cuda.py --calls \
    > "$OUT/calls${ew:+_device_errwords}.md" 2>&1
  echo "calls${ew:+ (device error words)} rc=$?"; tail -5 "$OUT/calls${ew:+_device_errwords}.md"
done
