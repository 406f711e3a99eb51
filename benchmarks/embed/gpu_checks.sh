#!/usr/bin/env bash
# The GPU checks as one script (issue 31): the tests marked gpu, then the device benchmark (CPU and GPU rows and
# their ratios). Run on a CUDA machine from the repository root, in an environment with evalsift installed:
#   bash benchmarks/embed/gpu_checks.sh [OUT_DIR]
# Without a GPU the gpu tests skip and the benchmark prints CPU rows only.
set -u
out="${1:-bench-out}"
mkdir -p "$out"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
start=$(date +%s)
python -m pytest -m gpu tests/test_device.py -n 0 -p no:cacheprovider -rs 2>&1 | tail -15
echo "gpu tests: $(( $(date +%s) - start )) s"
python benchmarks/embed/device_speed.py --out "$out/device_speed.json" "${@:2}"
