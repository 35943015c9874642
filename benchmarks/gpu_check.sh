#!/usr/bin/env bash
# The checks that need a GPU, in one run of under 6 minutes: the GPU benchmark (W1..W6 against
# torch CUDA and a hand-written CuPy floor, W3's peak GPU memory), then the cuda tests (ember's
# CUDA results against its CPU results and against torch CUDA): first the device, module,
# random-number, save/load, profiler and workload tests, then the op table, then NCCL's
# collectives and DDP in a world of one process. Needs CuPy and a
# GPU; torch with CUDA for the torch columns and comparisons. Prints what it ran on first and
# stops there without a GPU. Each step has its own time limit (SIGINT first, so that pytest
# still prints what failed); where $OUT is set, the log and the figures are written there too.
#
#     bash benchmarks/gpu_check.sh            # PYTHON=... picks the interpreter (python3)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
out="${OUT:-}"
if [ -n "$out" ]; then
    exec > >(tee "$out/gpu_check.log") 2>&1
fi

"$PY" - <<'PY' || exit 1
import platform
import sys
import numpy
import ember
print("python", platform.python_version(), "numpy", numpy.__version__)
try:
    import cupy
    print("cupy", cupy.__version__, "GPUs:", cupy.cuda.runtime.getDeviceCount())
except Exception as error:  # noqa: BLE001
    print("cupy unavailable:", error)
try:
    import torch
    print("torch", torch.__version__, "cuda:", torch.cuda.is_available())
except ImportError:
    print("torch not installed")
if not ember.cuda.is_available():
    print("ember sees no GPU: nothing to check here")
    sys.exit(1)
print("ember sees", ember.cuda.get_device_name())
PY

workers=()
if "$PY" -c "import xdist" 2>/dev/null; then
    workers=(-n 12)
fi
pytest=("$PY" -m pytest tests/test_cuda.py -m cuda -q -p no:cacheprovider -rfE --durations=5)
status=0
step() {  # step LIMIT_SECONDS NAME COMMAND...: one timed step; a failure marks the run failed
    local limit=$1 name=$2 start=$SECONDS
    shift 2
    echo "== $name"
    timeout -s INT -k 15 "$limit" "$@" || status=1
    echo "== $name: $((SECONDS - start)) s"
}
step 110 "GPU benchmark" "$PY" benchmarks/run.py --device cuda --rounds 5 \
    ${out:+--json "$out/gpu_bench.json"}
step 80 "cuda tests: devices, ember.cuda, random numbers, nn, profiler, workloads" \
    "${pytest[@]}" -k "not op_table and not ops_match" "${workers[@]}"
step 170 "cuda tests: the op table against the CPU and against torch CUDA" \
    "${pytest[@]}" -k "op_table or ops_match" "${workers[@]}"
step 120 "NCCL on one GPU: collectives and DDP (needs mpi4py with an MPI library)" \
    "$PY" -m pytest tests/test_distributed_nccl.py -m cuda -q -p no:cacheprovider -rfEs
echo "== gpu_check: $SECONDS s, $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
