#!/usr/bin/env bash
# Reproduce the DiffUse tables: success-rate curves (budgets 5..200, all pairs, 10 seeds) and the
# iterative table (p = 0.2 and 0.1, n = 5, N = 200) on WMT23 en-de (human MQM) and on SummEval
# (each human dimension). Writes bench-out/diffuse/<name>/results.json and success.png.
# Usage: EVALSIFT_DATA=../shared/data bash benchmarks/select/diffuse_tables.sh [OUTDIR]
set -euo pipefail
out=${1:-bench-out/diffuse}
methods=diffuse,random,max_norm,input_clusters,diffuse_concat,diffuse_add,diffuse_cosine,diffuse_rep_random,diffuse_rep_euclidean,diffuse_rep_norm
run() { evalsift --quiet bench pairwise --budgets 5..200 --seeds 10 --iterative --min-labels 5 --max-labels 200 "$@"; }
for p in 0.2 0.1; do
  run --data wmt23/en-de --oracle-metric mqm --methods "$methods" --risk "$p" --out "$out/wmt23-mqm-p$p"
  for dim in coherence consistency fluency relevance; do
    run --data summeval --oracle-metric "$dim" --methods "$methods" --risk "$p" --out "$out/summeval-$dim-p$p"
  done
done
# The k-means variants, curves only, kept apart: diffuse_kmeans (the paper's: flat k-means refitted for
# every budget and every step of the iterative loop) and diffuse_bisect (ours: bisecting, one fit).
evalsift --quiet bench pairwise --data wmt23/en-de --oracle-metric mqm --methods diffuse_kmeans,diffuse_bisect --budgets 5..200 --seeds 10 --out "$out/wmt23-mqm-kmeans"
for dim in coherence consistency fluency relevance; do
  evalsift --quiet bench pairwise --data summeval --oracle-metric "$dim" --methods diffuse_kmeans,diffuse_bisect --budgets 5..200 --seeds 10 --out "$out/summeval-$dim-kmeans"
done
