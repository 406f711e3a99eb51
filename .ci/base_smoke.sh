#!/usr/bin/env bash
# CI: the base package alone (`pip install .`, no extras, no torch) in a fresh venv: its size, then a smoke test of
# compare, arena, winrate, estimate and select diffuse --encoder tfidf on the offline demo and example data, and the
# errors that name the extra a missing feature needs. Everything it makes lives in one temporary folder, removed at
# the end. Usage: bash .ci/base_smoke.sh [PYTHON]   (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-python3}"
# What `pip install .` may add to a bare venv, in MB (site-packages, bytecode included, as pip installs it). The
# issue's target is 250 MB; numpy + scipy + scikit-learn alone take about 280 MB installed (measured in this script's
# output), so the bar is the measured base plus a small margin: a new dependency that grows it fails CI.
MAX_MB="${EVALSIFT_BASE_MAX_MB:-330}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
bare_kb="$(du -sk "$site" | cut -f1)"
bare_dists="$(ls -d "$site"/*.dist-info | wc -l)"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check . 2>&1 | grep -v "^WARNING: Location" || true
"$work/venv/bin/python" -c 'import evalsift' || { echo "base install: evalsift does not import" >&2; exit 1; }
kb="$(du -sk "$site" | cut -f1)"
dists="$(( $(ls -d "$site"/*.dist-info | wc -l) - bare_dists - 1 ))"
mb="$(( (kb - bare_kb) / 1024 ))"
echo "base install: ${mb} MB added to a bare venv by 'pip install .' ($dists distributions besides evalsift)"
( cd "$site" && du -sm numpy numpy.libs scipy scipy.libs sklearn 2>/dev/null | awk '{s+=$1} END {print "  of which numpy + scipy + scikit-learn: " s " MB"}' )
for heavy in matplotlib sacrebleu torch pytest playwright pandas pyarrow; do
  if "$work/venv/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$heavy') is None)"; then
    echo "base install: $heavy is installed, but it belongs to an extra" >&2; exit 1
  fi
done
if [ "$mb" -gt "$MAX_MB" ]; then
  echo "base install: ${mb} MB > ${MAX_MB} MB" >&2; exit 1
fi

es="$work/venv/bin/evalsift"
cd "$work"
unset EVALSIFT_DATA
export EVALSIFT_CACHE="$work/cache" HF_HUB_OFFLINE=1
run() { echo "+ evalsift $*"; "$es" "$@" > "$work/last.out" 2> "$work/last.err" || {
  cat "$work/last.out" "$work/last.err" >&2; echo "base smoke: 'evalsift $*' failed" >&2; exit 1; }; }
# a command that must fail with an error naming the fix ($1: text the error must hold)
fails() { local want="$1"; shift; echo "+ evalsift $* (must fail, naming: $want)"
  if "$es" "$@" > "$work/last.out" 2> "$work/last.err"; then echo "base smoke: 'evalsift $*' succeeded" >&2; exit 1; fi
  grep -qF -- "$want" "$work/last.err" || { cat "$work/last.err" >&2; echo "base smoke: the error lacks '$want'" >&2; exit 1; }
  if grep -q "Traceback" "$work/last.err"; then cat "$work/last.err" >&2; echo "base smoke: a traceback" >&2; exit 1; fi; }

run data example mt-bench --out ex/mt_bench
run data example arena --out ex/arena
run compare --data demo --a A --b B --oracle metric:human
run compare --data demo --a A --b B --oracle metric:human --method diffuse --encoder tfidf
run arena --data ex/arena/battles.jsonl --out lb
test -s lb/leaderboard.html
run winrate --data ex/mt_bench/model_judgment/gpt-4_pair.jsonl --baseline cedar-7b --out wr
test -s wr/results.json
run rank --data ex/mt_bench/model_judgment/gpt-4_single.jsonl --out rk
run select anchors --data demo --metric human --budget 20 --out anchors.jsonl
run estimate --data demo --metric human --system C --items anchors.jsonl --out est
test -s est/estimate.json
run select diffuse --data demo --a A --b B --encoder tfidf --budget 10 --out picks.jsonl
test -s picks.jsonl
# the bench commands write their tables and leave the figures out, saying which extra draws them
run bench subset --data demo --human-metric human --methods random --props 0.5 --seeds 1 --out bs
test -s bs/results.json && test ! -e bs/subset.png
grep -qF "evalsift[plots]" "$work/last.err" || { cat "$work/last.err" >&2; echo "base smoke: no note of the plots extra" >&2; exit 1; }
# what needs an extra says which, and writes nothing
fails "--encoder tfidf" select diffuse --data demo --a A --b B --budget 10 --out nopicks.jsonl
grep -qF "evalsift[embed]" "$work/last.err"
test ! -e nopicks.jsonl
fails "evalsift[plots]" profile --data demo --metric human --dims length --samples 20 --out noprof
test ! -e noprof
"$work/venv/bin/python" - <<'EOF'
from evalsift.errors import MissingDependencyError
from evalsift.metrics import rouge, sentence_bleu
assert rouge("the cat sat", "the cat sat") == 1.0
try:
    sentence_bleu("the cat", ["the cat"])
except MissingDependencyError as e:
    assert "evalsift[metrics]" in str(e), e
else:
    raise SystemExit("sentence_bleu ran without sacrebleu")
print("+ metrics: ROUGE without an extra; BLEU's error names evalsift[metrics]")
EOF
echo "base smoke: green ($("$work/venv/bin/python" --version))"
