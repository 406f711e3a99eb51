#!/usr/bin/env bash
# Reproduce the stop-rule calibration tables: synthetic pools (gaps 0, 0.02, 0.05, 0.1; ties 0 and
# 0.3; 200 pools per case) with WMT23 en-de (MQM), and SummEval (coherence, relevance), every rule,
# risks 0.05, 0.1, 0.2. Writes bench-out/calibration/<name>/results.json and calibration.png.
# Usage: EVALSIFT_DATA=../shared/data bash benchmarks/decide/calibration_tables.sh [OUTDIR]
set -euo pipefail
out=${1:-bench-out/calibration}
evalsift --quiet bench calibration --data wmt23/en-de --oracle-metric mqm --risks 0.05,0.1,0.2 --out "$out/wmt23-mqm"
for dim in coherence relevance; do
  evalsift --quiet bench calibration --data summeval --oracle-metric "$dim" --no-synthetic --risks 0.05,0.1,0.2 \
    --out "$out/summeval-$dim"
done
