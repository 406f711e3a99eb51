"""minilm-int8 against minilm-onnx (fp32): speed, cosine to the fp32 vectors, DiffUse's picks and decisions.

One run prints (and ``--out FILE.json`` writes):

1. **speed**: texts/s of ``minilm-onnx`` (fp32, its defaults) and ``minilm-int8`` (its defaults) on the same
   real texts (``--n`` WMT23 en-de outputs + ``--n`` SummEval summaries, seeded), interleaved chunk by chunk
   so that the load of a shared machine falls on both; the ratio (target >= 2x);
2. **cosine** of each int8 vector to the fp32 vector of the same text: mean, 1st percentile and min, on the
   speed texts and on every distinct WMT23 en-de output (target: mean >= 0.99);
3. **DiffUse** (``diffuse``: Ward on difference vectors, budget ``--budget``, default 20) on WMT23 en-de with
   MQM as the oracle, the DiffUse paper's protocol (``evalsift.bench.pairwise``: per system pair and seed, a
   seeded 80% test set): per (pair, seed), the decision -- the majority of MQM verdicts on the picked items
   -- with int8 vectors against fp32 vectors (target: identical on >= 95% of the pairs), the overlap of the
   picked items, and each one's agreement with the test set's winner;
4. with ``--variants``, the quantisation recipes compared (each quantised from the fp32 export into a
   scratch folder): texts/s ratio and cosine stats on the speed texts, batched (16) and text by text.

The vectors of section 3 go through the embedding cache (``$EVALSIFT_CACHE``): the first run embeds the
6,000 distinct en-de outputs with both encoders (minutes on 2 cores), later runs read them.

    python benchmarks/embed/int8_encoder.py [--n 150] [--seeds 3] [--budget 20] [--variants] [--out int8.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalsift.bench.pairwise import bench_oracle, pair_cases, restricted_pairs
from evalsift.embed import embed_texts
from evalsift.embed import onnx as eonnx
from evalsift.embed.onnx import OnnxInt8MiniLMEncoder, OnnxMiniLMEncoder
from evalsift.io import load
from evalsift.select.diffuse import DiffUse
from evalsift.stats import count_verdicts, majority

VARIANTS = {  # name -> recipe for eonnx.quantise_onnx (the chosen one is eonnx.INT8_QUANTISATION)
    "all ops (embedding too), per channel": {"op_types": ["MatMul", "Attention", "EmbedLayerNormalization"],
                                             "exclude": []},
    "MatMul + Attention, per channel": {"op_types": ["MatMul", "Attention"], "exclude": []},
    "MatMul only, per channel": {"op_types": ["MatMul"], "exclude": []},
    "MatMul + Attention, per tensor": {"op_types": ["MatMul", "Attention"], "exclude": [], "per_channel": False},
    "MatMul + Attention, per channel, reduce_range": {"op_types": ["MatMul", "Attention"], "exclude": [],
                                                      "reduce_range": True},
    "MatMul + Attention, per channel, FFN out fp32": {"op_types": ["MatMul", "Attention"], "exclude": ["ffn-out"]},
    "MatMul + Attention, per channel, FFN out fp32 in layers 0 and 5": {
        "op_types": ["MatMul", "Attention"], "exclude": ["ffn-out:0,5"]},
    "MatMul + Attention, per channel, layer 5 fp32": {"op_types": ["MatMul", "Attention"], "exclude": ["layer:5"]},
}


def data_dir() -> Path:
    """``$EVALSIFT_DATA`` or the ``shared/data`` folder above this checkout."""
    if os.environ.get("EVALSIFT_DATA"):
        return Path(os.environ["EVALSIFT_DATA"])
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    sys.exit("no data folder: set EVALSIFT_DATA to the folder holding wmt23/ and summeval/")


def real_texts(n: int, seed: int = 12) -> tuple[list[str], list[str]]:
    """``n`` distinct WMT23 en-de outputs and ``n`` distinct SummEval summaries, sampled with a fixed seed."""
    d = data_dir()
    wmt = list(dict.fromkeys(line for p in sorted((d / "wmt23/mt-metrics-eval-v2/wmt23/system-outputs/en-de")
                                                  .glob("*.txt")) for line in p.read_text(encoding="utf-8").splitlines()))
    summ = list(dict.fromkeys(s["sys_summ"] for doc in json.loads((d / "summeval/summeval.json").read_text(
        encoding="utf-8")).values() for s in doc["sys_summs"].values()))
    rng = random.Random(seed)
    return rng.sample(wmt, n), rng.sample(summ, n)


def cos_stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Mean, 1st percentile and min of the per-row cosine of ``a`` and ``b``."""
    c = np.sum(eonnx._unit(a) * eonnx._unit(b), axis=1)
    return {"n": int(len(c)), "mean": float(c.mean()), "p1": float(np.percentile(c, 1)), "min": float(c.min())}


def timed_interleaved(encoders: dict[str, object], texts: list[str], chunk: int = 50) -> dict[str, dict]:
    """Each encoder's vectors and seconds on ``texts``, chunk by chunk in turn (load falls on all alike)."""
    out = {k: {"vectors": [], "seconds": 0.0} for k in encoders}
    for k, enc in encoders.items():  # warm up: load the model, first-call allocations
        enc.encode(texts[:4])
    for start in range(0, len(texts), chunk):
        part = texts[start:start + chunk]
        for k, enc in encoders.items():
            t = time.perf_counter()
            out[k]["vectors"].append(enc.encode(part))
            out[k]["seconds"] += time.perf_counter() - t
    for k in out:
        out[k]["vectors"] = np.concatenate(out[k]["vectors"])
        out[k]["texts_per_s"] = len(texts) / out[k]["seconds"]
    return out


def speed_and_cosine(fp32, int8, wmt: list[str], summ: list[str]) -> dict:
    texts = [t for pair in zip(wmt, summ) for t in pair]  # mixed, so every chunk has both kinds
    res = timed_interleaved({"fp32": fp32, "int8": int8}, texts)
    kinds = np.array([i % 2 for i in range(len(texts))])
    a, b = res["int8"]["vectors"], res["fp32"]["vectors"]
    return {"texts": len(texts), "load_avg_1min": os.getloadavg()[0],
            "fp32_texts_per_s": res["fp32"]["texts_per_s"], "int8_texts_per_s": res["int8"]["texts_per_s"],
            "ratio": res["int8"]["texts_per_s"] / res["fp32"]["texts_per_s"],
            "cosine": {"all": cos_stats(a, b), "wmt23": cos_stats(a[kinds == 0], b[kinds == 0]),
                       "summeval": cos_stats(a[kinds == 1], b[kinds == 1])}}


def variants(fp32: OnnxMiniLMEncoder, wmt: list[str], summ: list[str]) -> dict:
    """Every recipe of :data:`VARIANTS`: ratio to fp32 and cosine to fp32, batched (16) and text by text."""
    texts = [t for pair in zip(wmt, summ) for t in pair]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="int8-variants-") as tmp:
        for name, change in VARIANTS.items():
            recipe = {**eonnx.INT8_QUANTISATION, **change}
            target = Path(tmp) / "onnx" / f"v{len(rows)}.onnx"
            t0 = time.perf_counter()
            eonnx.quantise_onnx(fp32.onnx_file, target, recipe)
            built = time.perf_counter() - t0
            one, batched = (OnnxInt8MiniLMEncoder(batch_size=bs, allow_batch_dependence=True) for bs in (1, 16))
            for enc in (one, batched):
                enc._session, enc._tokenizer = eonnx._session(target, None), fp32._tokenizer
            res = timed_interleaved({"fp32": fp32, "int8 alone": one, "int8 batch 16": batched}, texts)
            want = res["fp32"]["vectors"]
            rows[name] = {"recipe": recipe, "seconds_to_quantise": built, "mb": target.stat().st_size / 1e6,
                          "ratio_alone": res["int8 alone"]["texts_per_s"] / res["fp32"]["texts_per_s"],
                          "ratio_batch16": res["int8 batch 16"]["texts_per_s"] / res["fp32"]["texts_per_s"],
                          "cosine_alone": cos_stats(res["int8 alone"]["vectors"], want),
                          "cosine_alone_wmt23": cos_stats(res["int8 alone"]["vectors"][0::2], want[0::2]),
                          "cosine_batch16": cos_stats(res["int8 batch 16"]["vectors"], want),
                          "batch_dependence_max_abs": float(np.abs(res["int8 alone"]["vectors"]
                                                                   - res["int8 batch 16"]["vectors"]).max()),
                          "load_avg_1min": os.getloadavg()[0]}
            r = rows[name]
            print(f"  {name:66s} x{r['ratio_alone']:.2f} alone, x{r['ratio_batch16']:.2f} batched | cosine "
                  f"alone mean {r['cosine_alone']['mean']:.4f} p1 {r['cosine_alone']['p1']:.4f} min "
                  f"{r['cosine_alone']['min']:.4f} (WMT mean {r['cosine_alone_wmt23']['mean']:.4f}) | batched mean "
                  f"{r['cosine_batch16']['mean']:.4f} min {r['cosine_batch16']['min']:.4f}", flush=True)
    return rows


def diffuse_agreement(fp32, int8, budget: int, seeds: int) -> dict:
    """Per (system pair, seed) of WMT23 en-de (MQM oracle): DiffUse's decision and picks with each encoder."""
    pool = load("wmt23/en-de")
    oracle = bench_oracle("mqm", pool)
    texts = [o for s in pool.systems for o in pool.outputs[s] if o is not None]
    t = time.perf_counter()
    vf = embed_texts(texts, fp32, progress=False)
    t_fp32 = time.perf_counter() - t
    t = time.perf_counter()
    vi = embed_texts(texts, int8, progress=False)
    t_int8 = time.perf_counter() - t
    first = {}
    for i, text in enumerate(texts):
        first.setdefault(text, i)
    idx = list(first.values())
    cos_all = cos_stats(vi[idx], vf[idx])
    restricted, _ = restricted_pairs(pool, oracle, None, "int8 benchmark")
    rows = []
    for case in pair_cases(restricted, oracle, seeds, 0.8):
        picks, decisions = {}, {}
        for name, enc in (("fp32", fp32), ("int8", int8)):
            sel = DiffUse(encoder=enc, seed=case.seed).fit(case.pool).select(budget)
            picks[name] = set(int(i) for i in sel.items)
            sa, sb, _ = count_verdicts(case.truth[sel.items])
            decisions[name] = majority(sa, sb)
        rows.append({"a": case.a, "b": case.b, "seed": case.seed, "true_winner": case.true_winner,
                     "fp32": decisions["fp32"], "int8": decisions["int8"],
                     "overlap": len(picks["fp32"] & picks["int8"]) / budget})
    decisive = [r for r in rows if r["true_winner"] != "tie"]
    pairs = sorted({(r["a"], r["b"]) for r in rows})
    same_per_pair = [all(r["fp32"] == r["int8"] for r in rows if (r["a"], r["b"]) == p) for p in pairs]
    return {
        "budget": budget, "seeds": seeds, "pairs": len(pairs), "runs": len(rows),
        "embed_seconds": {"fp32": t_fp32, "int8": t_int8, "texts": len(texts), "distinct": len(idx)},
        "cosine_all_en_de_outputs": cos_all,
        "decision_identical": float(np.mean([r["fp32"] == r["int8"] for r in rows])),
        "pairs_decision_identical_every_seed": float(np.mean(same_per_pair)),
        "pick_overlap_mean": float(np.mean([r["overlap"] for r in rows])),
        "pick_overlap_min": float(np.min([r["overlap"] for r in rows])),
        "success_fp32": float(np.mean([r["fp32"] == r["true_winner"] for r in decisive])),
        "success_int8": float(np.mean([r["int8"] == r["true_winner"] for r in decisive])),
        "runs_detail": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=150, help="WMT23 and SummEval texts each for speed and cosine (150)")
    ap.add_argument("--budget", type=int, default=20, help="DiffUse budget (20, the README's)")
    ap.add_argument("--seeds", type=int, default=3, help="test sets per system pair (3)")
    ap.add_argument("--sections", default="speed,diffuse", help="comma-separated: speed, diffuse, variants")
    ap.add_argument("--variants", action="store_true", help="also compare the quantisation recipes (section 4)")
    ap.add_argument("--out", metavar="FILE.json", help="write every figure here")
    args = ap.parse_args(argv)
    sections = set(args.sections.split(",")) | ({"variants"} if args.variants else set())
    fp32, int8 = OnnxMiniLMEncoder(), OnnxInt8MiniLMEncoder()
    t = time.perf_counter()
    fp32.load()
    int8.load()
    result: dict = {"cpu_count": os.cpu_count(), "recipe": eonnx.INT8_QUANTISATION,
                    "int8_file": str(int8.onnx_file), "seconds_to_load_or_build": time.perf_counter() - t,
                    "int8_built_now": int8.exported}
    print(f"fp32: {fp32.onnx_file.name}  int8: {int8.onnx_file.name} ({int8.onnx_file.stat().st_size / 1e6:.0f} MB"
          f"{', quantised now' if int8.exported else ''})")
    wmt, summ = real_texts(args.n)
    if "speed" in sections:
        s = result["speed"] = speed_and_cosine(fp32, int8, wmt, summ)
        print(f"speed on {s['texts']} texts (load {s['load_avg_1min']:.1f} on {os.cpu_count()} cores): fp32 "
              f"{s['fp32_texts_per_s']:.1f} texts/s, int8 {s['int8_texts_per_s']:.1f} texts/s, ratio x{s['ratio']:.2f}")
        for k, c in s["cosine"].items():
            print(f"  cosine int8 vs fp32, {k:8s}: mean {c['mean']:.4f}  p1 {c['p1']:.4f}  min {c['min']:.4f} (n={c['n']})")
    if "variants" in sections:
        print("quantisation recipes (ratio to fp32; cosine to fp32):")
        result["variants"] = variants(fp32, wmt, summ)
    if "diffuse" in sections:
        d = result["diffuse"] = diffuse_agreement(fp32, int8, args.budget, args.seeds)
        c = d["cosine_all_en_de_outputs"]
        print(f"all {c['n']} distinct WMT23 en-de outputs: cosine mean {c['mean']:.4f} p1 {c['p1']:.4f} "
              f"min {c['min']:.4f} (embedding: fp32 {d['embed_seconds']['fp32']:.0f} s, int8 "
              f"{d['embed_seconds']['int8']:.0f} s; 0 when cached)")
        print(f"DiffUse budget {d['budget']}, {d['pairs']} pairs x {d['seeds']} seeds = {d['runs']} runs: decision "
              f"identical {d['decision_identical']:.1%} of runs, on every seed for {d['pairs_decision_identical_every_seed']:.1%}"
              f" of pairs; picks shared {d['pick_overlap_mean']:.1%} on average (min {d['pick_overlap_min']:.0%}); "
              f"agrees with the test set's winner: fp32 {d['success_fp32']:.1%}, int8 {d['success_int8']:.1%}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
