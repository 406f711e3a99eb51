#!/usr/bin/env bash
# Reproduce the needed-to-match tables (subset2evaluate's Tables 2/3 setting) on WMT23 en-de and SummEval.
# Writes bench-out/subset/<name>/results.json and subset.png.
# Usage: EVALSIFT_DATA=../shared/data bash benchmarks/select/subset_tables.sh [OUTDIR]
set -euo pipefail
out=${1:-bench-out/subset}
methods=random,metric_avg,metric_var,metric_cons,diversity,diversity_bleu,diversity_chrf,irt,irt_fisher,kmeans
run() { evalsift --quiet bench subset --seeds 10 --methods "$methods" "$@"; }
for metric in MetricX-23-refA COMET-refA chrF-refA; do
  run --data wmt23/en-de --human-metric mqm --metric "$metric" --out "$out/wmt23-mqm-$metric"
done
for dim in coherence consistency fluency relevance; do
  run --data summeval --human-metric "$dim" --metric chrF-ref --out "$out/summeval-$dim-chrF-ref"
done
