"""Peak memory of reading a big HELM ``per_instance_stats.json``: ``read_helm`` (streamed with ijson) against
``json.load`` of the same file.

HELM's per-instance stats of one run can reach several GB (3.6 GB has been seen); ``evalsift.io.read_helm`` reads
the top-level list one entry at a time and keeps one float per (item, metric). Target (issue 43): peak RSS under
200 MB for a ~500 MB file.

The script writes (into a temporary folder, or ``--dir``) one HELM run folder -- ``run_spec.json`` and a
synthetic ``per_instance_stats.json`` in HELM's layout (``json.dumps(..., indent=2)`` of ``PerInstanceStats``
entries, each stat a full ``Stat``: name {name, split}, count, sum, sum_squared, min, max, mean, variance, stddev;
written entry by entry with ``tests/_harness_layouts.write_json_list``, never held whole) -- of ``--instances``
test instances x ``--stats`` stats per instance x ``--trials`` train trials (values: seeded random floats at full
precision, as HELM writes them). Then, each in a fresh Python process, alone:

- ``read_helm``: ``evalsift.io.helm.read_helm(run)``;
- ``json.load``: ``json.load(open(per_instance_stats.json))`` (what a reader that does not stream needs just
  to parse the file, before any Pool).

and reports for each the child's peak RSS (``VmHWM`` of ``/proc/self/status``; ``ru_maxrss`` of the children
as well), its RSS before the call (``base``: Python, numpy, evalsift imported), seconds, and the ratio
``json.load`` peak / ``read_helm`` peak. The Pool itself is ``instances x stats`` floats (8 bytes each, per
system) plus the item ids and columns; the default shape -- few instances, many stats each -- keeps that small
beside the file, so what is measured is the reading.

    python benchmarks/io/helm_memory.py [--mb 500] [--stats 200] [--trials 1] [--dir DIR] [--out bench-out/helm_memory.json]

``--mb`` sets the file size (the number of instances follows from it and ``--stats``; ``--instances`` overrides).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))
from _harness_layouts import helm_stat, write_json_list
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

#: names of real HELM per-instance stats (BasicGenerationMetric and friends), then metric_NNN
NAMES = ["num_references", "num_train_trials", "num_prompt_tokens", "num_completion_tokens", "num_output_tokens",
         "training_co2_cost", "training_energy_cost", "inference_runtime", "batch_size", "finish_reason_length",
         "finish_reason_stop", "finish_reason_endoftext", "finish_reason_unknown", "num_train_instances",
         "prompt_truncated", "max_prob", "exact_match", "quasi_exact_match", "prefix_exact_match",
         "quasi_prefix_exact_match", "logprob", "num_perplexity_tokens", "num_bytes", "f1_score", "rouge_l",
         "bleu_1", "bleu_4"]

CHILD_READ = """
import json, resource, sys, time
def rss(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import numpy, evalsift.io.helm as h
base = rss('VmRSS:')
t = time.perf_counter()
pool = h.read_helm(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"peak": rss('VmHWM:'), "base": base, "held": rss('VmRSS:'), "seconds": dt,
                  "items": pool.n_items, "metrics": len(pool.metrics), "systems": pool.n_systems,
                  "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

CHILD_JSON = """
import json, resource, sys, time
def rss(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import numpy, evalsift.io.helm
base = rss('VmRSS:')
t = time.perf_counter()
with open(sys.argv[1], 'rb') as f:
    data = json.load(f)
dt = time.perf_counter() - t
print(json.dumps({"peak": rss('VmHWM:'), "base": base, "held": rss('VmRSS:'), "seconds": dt, "entries": len(data),
                  "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def entries(instances: int, stats: int, trials: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    names = (NAMES + [f"metric_{k:03d}" for k in range(stats)])[:stats]
    for trial in range(trials):
        for i in range(instances):
            yield {"instance_id": f"id{i}", "train_trial_index": trial,
                   "stats": [helm_stat(n, rng.random(), split="test") for n in names]}


def entry_bytes(stats: int) -> int:
    """Bytes one entry takes in the file (measured on a sample entry)."""
    one = next(entries(1, stats, 1))
    return len(json.dumps(one, indent=2).replace("\n", "\n  ")) + 4


def write_run(folder: Path, instances: int, stats: int, trials: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"name": "synthetic:model=org_model", "scenario_spec": {"class_name": "synthetic", "args": {}},
            "adapter_spec": {"method": "generation", "model": "org/model", "model_deployment": "org/model",
                             "num_train_trials": trials}, "metric_specs": [], "groups": ["synthetic"]}
    (folder / "run_spec.json").write_text(json.dumps(spec, indent=2))
    write_json_list(folder / "per_instance_stats.json", entries(instances, stats, trials))
    (folder / "shape.json").write_text(json.dumps({"instances": instances, "stats": stats, "trials": trials}))
    return folder


def child(code: str, arg: Path) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", code, str(arg)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["children_ru_maxrss"] = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
    return got


def mb(x: float) -> str:
    return f"{x / 2**20:,.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=500, help="size of the synthetic per_instance_stats.json")
    ap.add_argument("--stats", type=int, default=200, help="stats per instance")
    ap.add_argument("--trials", type=int, default=1, help="train trials (entries per instance)")
    ap.add_argument("--instances", type=int, default=None, help="instances (default: from --mb)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the run folder here and reuse it")
    ap.add_argument("--skip-json", action="store_true", help="do not run the json.load baseline")
    ap.add_argument("--out", type=Path, default=HERE.parents[1] / "bench-out" / "helm_memory.json")
    a = ap.parse_args()
    instances = a.instances or max(1, int(a.mb * 2**20 / (entry_bytes(a.stats) * a.trials)))
    tmp = None
    if a.dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="helm-memory-")
        root = Path(tmp.name)
    else:
        root = a.dir
    run = root / "runs" / "synthetic" / "synthetic:model=org_model"
    shape = {"instances": instances, "stats": a.stats, "trials": a.trials}
    if not ((run / "shape.json").is_file() and json.loads((run / "shape.json").read_text()) == shape):
        t = time.perf_counter()
        write_run(run, instances, a.stats, a.trials)
        print(f"wrote {run / 'per_instance_stats.json'} in {time.perf_counter() - t:.0f} s")
    size = (run / "per_instance_stats.json").stat().st_size
    print(f"file: {mb(size)} ({size:,} bytes): {instances:,} instances x {a.stats} stats x {a.trials} trial(s) "
          f"= {instances * a.stats * a.trials:,} stat entries; Pool: {instances:,} items x {a.stats} metrics x 1 system")
    res: dict[str, Any] = {"file_bytes": size, "shape": shape, "python": sys.version.split()[0]}
    res["read_helm"] = child(CHILD_READ, run)
    r = res["read_helm"]
    if "error" in r:
        print("read_helm failed:", r["error"])
    else:
        print(f"read_helm: peak {mb(r['peak'])} (base {mb(r['base'])}, held after {mb(r['held'])}), "
              f"{r['seconds']:.1f} s, {r['items']:,} items x {r['metrics']} metrics; target peak < 200 MiB: "
              f"{'met' if r['peak'] < 200 * 2**20 else 'MISSED'}")
    if not a.skip_json:
        res["json_load"] = child(CHILD_JSON, run / "per_instance_stats.json")
        j = res["json_load"]
        if "error" in j:
            print("json.load failed:", j["error"])
        else:
            print(f"json.load: peak {mb(j['peak'])} (base {mb(j['base'])}), {j['seconds']:.1f} s")
            if "error" not in r:
                res["ratio_json_over_read_helm"] = j["peak"] / r["peak"]
                print(f"peak json.load / read_helm = {j['peak'] / r['peak']:.1f}x")
    write_json(a.out, res)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
