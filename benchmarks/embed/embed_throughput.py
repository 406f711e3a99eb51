"""Embedding throughput: MiniLM cold / warm-from-disk / from-memo, sentence-transformers vs ONNX Runtime, TF-IDF.

Encodes N distinct texts (default: every distinct WMT23 en-de system output in mt-metrics-eval
layout under ``$EVALSIFT_DATA`` or ``../shared/data``; synthetic sentences when that is absent) with
the default ``minilm`` encoder into a fresh temporary cache directory, and measures:

- model load time (separately),
- cold: ``embed_texts`` with empty memo and empty disk cache (hash, encode, store),
- warm disk: memo cleared, as in a new process; every vector comes from SQLite (best of 3),
- memo: the same call again in the same process (best of 3),
- tfidf: ``embed_texts(texts, "tfidf")`` (fitted on the call's texts, never cached),
- onnx vs st (issue 12): the reference ``minilm`` (sentence-transformers) against ``minilm-onnx``
  (ONNX Runtime fp32) on the same texts, both through ``embed_texts(..., cache=False)`` with the same
  ``--batch-size``, interleaved chunk by chunk (``--chunk`` texts; the order of the two alternates),
  so load from other processes falls on both alike: texts/s of each, the ratio (target >= 2.5) and
  the cosine between the two vectors of every text (min, 1st percentile, mean; the bar is 0.999 on
  every text). The ONNX file comes from the evalsift cache (exported there first if absent; the
  export time is printed separately).

``--texts wmt`` (default) uses the WMT23 outputs; ``--texts mixed`` half WMT23 outputs and half SummEval
summaries (a fixed sample). Ratios are measured in this run only. Usage::

    python benchmarks/embed/embed_throughput.py [--n 2000] [--texts wmt|mixed] [--sections cache,onnx,tfidf]
                                          [--out bench-out/embed_throughput.json]
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
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from evalsift.embed import Encoder, MiniLMEncoder, OnnxMiniLMEncoder, clear_memo, embed_texts  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


def data_root() -> Path:
    """``$EVALSIFT_DATA`` or the ``shared/data`` folder next to the repository."""
    env = os.environ.get("EVALSIFT_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def wmt23_ende_outputs(root: Path) -> list[str]:
    """Distinct lines of every WMT23 en-de system output file, in file then line order."""
    folder = root / "wmt23" / "mt-metrics-eval-v2" / "wmt23" / "system-outputs" / "en-de"
    lines: dict[str, None] = {}
    for path in sorted(folder.glob("*.txt")):
        lines.update(dict.fromkeys(path.read_text(encoding="utf-8").splitlines()))
    return list(lines)


def synthetic_sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct pseudo-sentences of 6 to 30 words (deterministic)."""
    rng = random.Random(seed)
    words = ("the model system output translation judge quality score annotator item test data "
             "a of to and in is was with for on by from good bad better worse result cost").split()
    return [f"{i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(6, 30))) for i in range(n)]


def summeval_summaries(root: Path) -> list[str]:
    """Distinct SummEval system summaries, in document then system order."""
    path = root / "summeval" / "summeval.json"
    if not path.exists():
        return []
    docs = json.loads(path.read_text(encoding="utf-8"))
    return list(dict.fromkeys(s["sys_summ"] for doc in docs.values() for s in doc["sys_summs"].values()))


def load_texts(n: int | None, kind: str = "wmt") -> tuple[list[str], str]:
    """The texts to encode and a description of where they came from.

    ``wmt``: WMT23 en-de outputs in file order. ``mixed``: ``n`` (default 2000) texts, half a seeded
    sample of WMT23 outputs and half of SummEval summaries, shuffled together.
    """
    texts = wmt23_ende_outputs(data_root())
    source = "WMT23 en-de system outputs (distinct)"
    if kind == "mixed" and texts:
        summ = summeval_summaries(data_root())
        rng, n = random.Random(0), n or 2000
        half = min(n // 2, len(summ))
        texts = rng.sample(texts, n - half) + rng.sample(summ, half)
        rng.shuffle(texts)
        source = f"{n - half} WMT23 en-de outputs + {half} SummEval summaries (seeded sample, shuffled)"
    if not texts:
        texts, source = synthetic_sentences(n or 2000), "synthetic sentences (WMT23 data not found)"
    return texts[:n] if n else texts, source


def word_pieces(texts: list[str]) -> dict[str, float]:
    """Length distribution of the texts in the model's word pieces (truncated at 256, as encoded)."""
    from evalsift.embed.onnx import _model_dir, _tokenizer

    lengths = np.array([len(e.ids) for e in _tokenizer(_model_dir("the benchmark")).encode_batch(texts)])
    return {"mean": round(float(lengths.mean()), 1), "p50": float(np.median(lengths)),
            "p90": float(np.percentile(lengths, 90)), "max": int(lengths.max()),
            "truncated_share": round(float(np.mean(lengths >= 256)), 3)}


class CountingEncoder(Encoder):
    """Delegates to another encoder and counts the texts it really encodes."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim, self.count = inner, inner.name, inner.dim, 0

    @property
    def cache_key(self) -> str:
        return self.inner.cache_key

    def encode(self, texts: list[str]) -> np.ndarray:
        self.count += len(texts)
        return self.inner.encode(texts)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``(fn(), seconds)``."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def phase(n: int, seconds: float, encoded: int) -> dict[str, float]:
    """One measurement as seconds, texts/s and how many texts the model encoded."""
    return {"seconds": round(seconds, 4), "texts_per_s": round(n / seconds, 1), "texts_encoded": encoded}


def run_minilm(texts: list[str], batch_size: int, progress: bool) -> dict[str, Any]:
    """Load time, then cold, warm-disk and memo phases into a fresh temporary cache dir."""
    enc = CountingEncoder(MiniLMEncoder(batch_size=batch_size))
    _, load_s = timed(enc.inner.load)
    out: dict[str, Any] = {"encoder": enc.cache_key, "model_load_s": round(load_s, 3)}
    with tempfile.TemporaryDirectory(prefix="evalsift-bench-") as cache_dir:
        def call() -> np.ndarray:
            return embed_texts(texts, enc, cache_dir=cache_dir, progress=progress, batch_size=batch_size)

        results = {}
        for name, fresh_memo, repeats in (("cold", True, 1), ("warm_disk", True, 3), ("memo", False, 3)):
            before, best = enc.count, float("inf")
            for _ in range(repeats):  # best of `repeats`: the fast phases take milliseconds
                if fresh_memo:
                    clear_memo()
                results[name], seconds = timed(call)
                best = min(best, seconds)
            out[name] = phase(len(texts), best, enc.count - before)
        out["cache_file_bytes"] = sum(p.stat().st_size for p in Path(cache_dir).glob("embeddings.sqlite*"))
    out["max_abs_diff_warm_vs_cold"] = float(np.abs(results["warm_disk"] - results["cold"]).max())
    clear_memo()
    return out


def ratios(r: dict[str, Any]) -> dict[str, float]:
    """Throughput ratios between the phases (same run)."""
    rate = {k: r[k]["texts_per_s"] for k in ("cold", "warm_disk", "memo")}
    return {
        "warm_disk_over_cold": round(rate["warm_disk"] / rate["cold"], 1),
        "memo_over_cold": round(rate["memo"] / rate["cold"], 1),
        "memo_over_warm_disk": round(rate["memo"] / rate["warm_disk"], 1),
    }


def run_tfidf(texts: list[str]) -> dict[str, Any]:
    """TF-IDF + SVD throughput on the same texts (after a warm-up call that imports scikit-learn)."""
    embed_texts(texts[:20], "tfidf", progress=False)
    x, seconds = timed(lambda: embed_texts(texts, "tfidf", progress=False))
    return {**phase(len(texts), seconds, len(texts)), "dim": int(x.shape[1])}


def run_onnx_vs_st(texts: list[str], batch_size: int, chunk: int) -> dict[str, Any]:
    """sentence-transformers (``minilm``) vs ONNX Runtime (``minilm-onnx``) on the same texts, interleaved.

    Both go through ``embed_texts(chunk, enc, cache=False, batch_size=...)``, the path a user waits
    for on a cold cache; the chunks alternate which encoder runs first. Model loads (and an ONNX export
    when the cache has none) are timed apart, before the measured loop.
    """
    st, fast = MiniLMEncoder(batch_size=batch_size), OnnxMiniLMEncoder()
    _, st_load = timed(st.load)
    _, onnx_load = timed(fast.load)
    warm = texts[:8]
    for enc in (st, fast):  # first calls allocate; keep them out of the measurement
        embed_texts(warm, enc, cache=False, progress=False, batch_size=batch_size)
    secs = {"st": 0.0, "onnx": 0.0}
    vecs: dict[str, list[np.ndarray]] = {"st": [], "onnx": []}
    for i, start in enumerate(range(0, len(texts), chunk)):
        part = texts[start:start + chunk]
        pair = (("st", st), ("onnx", fast))
        for name, enc in (pair if i % 2 == 0 else pair[::-1]):
            start_s = time.perf_counter()
            x = embed_texts(part, enc, cache=False, progress=False, batch_size=batch_size)
            seconds = time.perf_counter() - start_s
            secs[name] += seconds
            vecs[name].append(x)
    a, b = np.vstack(vecs["st"]), np.vstack(vecs["onnx"])
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    n = len(texts)
    return {
        "st": {"encoder": st.cache_key, "model_load_s": round(st_load, 3), **phase(n, secs["st"], n)},
        "onnx": {"encoder": fast.cache_key, "load_s": round(onnx_load, 3), "exported_now": fast.exported,
                 "onnx_file": str(fast.onnx_file), "batch_size": fast.batch_size, **phase(n, secs["onnx"], n)},
        "ratio_onnx_over_st": round(secs["st"] / secs["onnx"], 2),
        "target_ratio": 2.5,
        "cosine": {"min": float(cos.min()), "p1": float(np.percentile(cos, 1)), "mean": float(cos.mean()),
                   "texts_below_0.999": int(np.sum(cos < 0.999))},
        "max_abs_diff": float(np.abs(a - b).max()),
        "chunk": chunk,
    }


def environment() -> dict[str, Any]:
    """Versions and CPU facts that the numbers depend on."""
    import torch

    try:
        import onnxruntime
        ort_version = onnxruntime.__version__
    except ImportError:
        ort_version = None
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"python": platform.python_version(), "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "onnxruntime": ort_version, "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "load_average_at_end": load}


def report(result: dict[str, Any]) -> None:
    """Print the numbers."""
    print(f"{result['n_texts']} texts from {result['source']}")
    if "word_pieces" in result:
        w = result["word_pieces"]
        print(f"word pieces per text: mean {w['mean']}, median {w['p50']:.0f}, p90 {w['p90']:.0f}, max {w['max']}; "
              f"{w['truncated_share']:.1%} truncated at 256")
    if "minilm" in result:
        m = result["minilm"]
        print(f"minilm model load: {m['model_load_s']:.2f} s")
        for name in ("cold", "warm_disk", "memo"):
            p = m[name]
            print(f"minilm {name:9s}: {p['texts_per_s']:>12,.1f} texts/s  ({p['seconds']:.3f} s, "
                  f"{p['texts_encoded']} encoded)")
        print("ratios: " + ", ".join(f"{k} = {v:,}x" for k, v in result["ratios"].items()))
    if "onnx_vs_st" in result:
        o = result["onnx_vs_st"]
        st, fast, c = o["st"], o["onnx"], o["cosine"]
        print(f"minilm (sentence-transformers): {st['texts_per_s']:>8,.1f} texts/s  ({st['seconds']:.1f} s)")
        print(f"minilm-onnx (onnxruntime fp32): {fast['texts_per_s']:>8,.1f} texts/s  ({fast['seconds']:.1f} s; "
              f"load {fast['load_s']:.1f} s{', exported now' if fast['exported_now'] else ''})")
        print(f"ratio onnx / st: {o['ratio_onnx_over_st']:.2f}x (target {o['target_ratio']}x: "
              f"{'met' if o['ratio_onnx_over_st'] >= o['target_ratio'] else 'NOT met'})")
        print(f"cosine per text: min {c['min']:.7f}, p1 {c['p1']:.7f}, mean {c['mean']:.7f}; "
              f"{c['texts_below_0.999']} below 0.999; max |diff| {o['max_abs_diff']:.2e}")
    if "tfidf" in result:
        t = result["tfidf"]
        print(f"tfidf          : {t['texts_per_s']:>12,.1f} texts/s  ({t['seconds']:.3f} s, dim {t['dim']})")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print it and write JSON to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="use only the first N texts (default: all)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", type=Path, default=Path("bench-out/embed_throughput.json"))
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--texts", choices=("wmt", "mixed"), default="wmt",
                    help="wmt: WMT23 en-de outputs; mixed: half WMT23 outputs, half SummEval summaries")
    ap.add_argument("--sections", default="cache,onnx,tfidf",
                    help="comma-separated: cache (minilm cold/disk/memo), onnx (minilm-onnx vs minilm), tfidf")
    ap.add_argument("--chunk", type=int, default=256, help="texts per interleaved chunk in the onnx section")
    args = ap.parse_args(argv)
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    unknown = sections - {"cache", "onnx", "tfidf"}
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    texts, source = load_texts(args.n, args.texts)
    result: dict[str, Any] = {"n_texts": len(texts), "source": source, "batch_size": args.batch_size}
    try:
        result["word_pieces"] = word_pieces(texts)
    except Exception:  # noqa: BLE001 -- the tokenizer package is optional; the numbers do not need it
        pass
    if "cache" in sections:
        result["minilm"] = run_minilm(texts, args.batch_size, not args.quiet)
        result["ratios"] = ratios(result["minilm"])
    if "onnx" in sections:
        result["onnx_vs_st"] = run_onnx_vs_st(texts, args.batch_size, args.chunk)
    if "tfidf" in sections:
        result["tfidf"] = run_tfidf(texts)
    result["environment"] = environment()
    report(result)
    write_json(args.out, result)
    return result


if __name__ == "__main__":
    main()
