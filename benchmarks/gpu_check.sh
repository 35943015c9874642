#!/usr/bin/env bash
# The checks that need a GPU, in one run of under 6 minutes: the cuda tests (ember's CUDA
# results against its CPU results and against torch CUDA) and the GPU benchmark (W1..W6
# against torch CUDA and a hand-written CuPy floor). Needs CuPy and a GPU; torch with CUDA
# for the torch columns and comparisons. Prints what it ran on first.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=1

python - <<'PY'
import platform
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
print("ember sees a GPU:", ember.cuda.is_available(),
      ember.cuda.get_device_name() if ember.cuda.is_available() else "")
PY

workers=()
if python -c "import xdist" 2>/dev/null; then
    workers=(-n 8)
fi
status=0
echo "== cuda tests"
timeout 230 python -m pytest -m cuda tests/test_cuda.py -q -p no:cacheprovider -rfE \
    "${workers[@]}" || status=1
echo "== GPU benchmark"
timeout 110 python benchmarks/run.py --device cuda --rounds 5 || status=1
exit $status
