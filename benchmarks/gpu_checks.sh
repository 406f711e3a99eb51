#!/usr/bin/env bash
# The old path of the GPU checks (benchmarks/embed/gpu_checks.sh since benchmarks/ was grouped by capability).
exec bash "$(dirname "$0")/embed/gpu_checks.sh" "$@"
