"""Filling the encoder cache: local vs Ray Data (``evalsift embed cache --backend local|ray``), texts/s per worker.

Takes N distinct WMT23 en-de system outputs (a fixed random sample of the mt-metrics-eval files under
``$EVALSIFT_DATA`` or ``../shared/data``; synthetic sentences when they are absent) and fills a fresh,
empty cache folder with their ``minilm`` vectors (:func:`evalsift.embed.ray_embed.fill_cache`):

- ``local``: this process, torch's default thread count (``local_threads``), then with one thread
  (``local 1 thread``: what one Ray worker gets);
- ``ray W``: a local Ray runtime of ``max(--workers)`` CPUs started once (its start-up time is reported
  apart), then one fill per W in ``--workers`` (default 1 and 2), each on a fresh cache folder; every Ray
  worker loads the model itself, inside the measured time.

Per run: seconds (wall, model load included), texts/s, texts/s per worker, and, for the Ray runs, the
largest absolute difference from the local run's vectors (the bar: 1e-6). The model load in this process
is timed apart (the local runs load it first). On 2 shared cores the figures are under load: re-measure
on idle cores. Usage::

    python benchmarks/embed/ray_throughput.py [--n 300] [--workers 1,2] [--encoder minilm] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from evalsift.embed import EmbeddingCache, get_encoder, text_hash  # noqa: E402
from evalsift.embed.ray_embed import fill_cache  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling: the same WMT23 texts
from embed_throughput import data_root, wmt23_ende_outputs  # noqa: E402


def texts_for(n: int, seed: int = 0) -> tuple[list[str], str]:
    """``n`` texts and where they come from."""
    texts = [t for t in wmt23_ende_outputs(data_root()) if t.strip()]
    if len(texts) >= n:
        return random.Random(seed).sample(texts, n), f"WMT23 en-de system outputs (sample of {n} of {len(texts)})"
    rng = random.Random(seed)
    words = "the model system output translation quality score data a of to and in is was with for on".split()
    return ([f"{i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(6, 30))) for i in range(n)],
            "synthetic sentences (WMT23 absent)")


def vectors(cache_dir: Path, key: str, texts: list[str]) -> np.ndarray:
    """The vectors of ``texts`` stored under ``key`` in ``cache_dir``, in order."""
    found = EmbeddingCache(cache_dir).get_many(key, [text_hash(t) for t in texts])
    return np.stack([found[text_hash(t)] for t in texts])


def run(label: str, texts: list[str], encoder: str, root: Path, here: int, **kw: Any) -> dict[str, Any]:
    """One fill of an empty cache folder; the row of the table."""
    folder = root / label.replace(" ", "-")
    t0 = time.perf_counter()
    info = fill_cache(texts, encoder, cache_dir=folder, progress=False, **kw)
    seconds = time.perf_counter() - t0
    assert info["embedded"] == len(texts), info
    row = {"run": label, "workers": info["workers"] if kw.get("backend") == "ray" else here,
           "device": info["device"], "seconds": round(seconds, 2), "texts_per_s": round(len(texts) / seconds, 2)}
    row["texts_per_s_per_worker"] = round(row["texts_per_s"] / row["workers"], 2)
    row["_folder"] = folder
    print(f"  {label:<16} {row['workers']} worker(s)  {row['seconds']:7.2f} s  {row['texts_per_s']:7.2f} texts/s  "
          f"{row['texts_per_s_per_worker']:7.2f} texts/s/worker", flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300, help="distinct texts (default 300)")
    ap.add_argument("--workers", default="1,2", help="Ray worker counts, comma-separated (default 1,2)")
    ap.add_argument("--encoder", default="minilm", help="a cacheable encoder (default minilm)")
    ap.add_argument("--skip-local-1", action="store_true", help="skip the one-thread local run")
    ap.add_argument("--out", metavar="FILE.json", help="also write the results here")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",") if w.strip()]
    texts, source = texts_for(args.n)
    print(f"{len(texts)} texts: {source}; encoder {args.encoder}", flush=True)

    import torch

    from evalsift.bench.parallel import ray_session

    enc = get_encoder(args.encoder)
    t0 = time.perf_counter()
    if hasattr(enc, "load"):
        enc.load()
    load_s = time.perf_counter() - t0
    print(f"  model load in this process: {load_s:.2f} s (not in the local runs' times)", flush=True)
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="evalsift-ray-bench-") as tmp:
        root = Path(tmp)
        rows.append(run(f"local {threads} thr", texts, args.encoder, root, 1, backend="local"))
        if not args.skip_local_1:
            torch.set_num_threads(1)
            try:
                rows.append(run("local 1 thread", texts, args.encoder, root, 1, backend="local"))
            finally:
                torch.set_num_threads(threads)
        reference = vectors(rows[0]["_folder"], enc.cache_key, texts)
        t0 = time.perf_counter()
        with ray_session(max(counts)) as (ray, _):
            ray.cluster_resources()
            startup_s = time.perf_counter() - t0
            print(f"  Ray runtime start ({max(counts)} CPUs): {startup_s:.2f} s (not in the Ray runs' times)",
                  flush=True)
            for w in counts:
                row = run(f"ray {w}", texts, args.encoder, root, w, backend="ray", workers=w, device="cpu")
                row["max_abs_diff_vs_local"] = float(np.abs(vectors(row["_folder"], enc.cache_key, texts)
                                                           - reference).max())
                print(f"    max |ray - local| = {row['max_abs_diff_vs_local']:.2e}", flush=True)
                rows.append(row)
    for row in rows:
        row.pop("_folder")
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    import ray

    result = {"texts": len(texts), "source": source, "encoder": args.encoder, "model_load_s": round(load_s, 2),
              "ray_startup_s": round(startup_s, 2), "runs": rows,
              "env": {"python": platform.python_version(), "torch": torch.__version__, "ray": ray.__version__,
                      "cpus": os.cpu_count(), "load_average_at_end": load}}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
