"""Device speed: every neural step of evalsift on the CPU and, when torch sees one, on a CUDA GPU, in one run.

For each device it measures, through evalsift's own code:

- **encoder**: texts/s of the default encoder (``minilm``) through ``embed_texts(..., cache=False)`` on real
  AlpacaEval outputs (``$EVALSIFT_DATA`` or ``../shared/data``; synthetic sentences when absent); on the GPU in the
  encoder's default half precision, with the cosine of every vector to the CPU's fp32 one (the bar: >= 0.999);
- **enumeration**: OmniInput's ``toy-paper`` model (6 layers, 4 heads), every sequence of ``--enum-length`` digits
  through the model's prefix-tree decoding (``subtree``), model time only, as sequences/s and seconds for the
  whole space; the CPU runs a shorter length (``--cpu-enum-length``, 10^6 sequences by default: 10^8 takes minutes
  on two cores), so its row is extrapolated from the rate and says so;
- **pt**: parallel-tempering steps/s on ``toy-paper`` (``--pt-steps`` steps, 4 chains x 16 replicas, mixed moves);
- **hf-lm**: a GPT-2-small-sized causal LM (``GPT2Config()`` defaults, random weights, saved and loaded through
  ``hf-lm:PATH``): NLL of 16-token sequences per second in fp32 and bf16 (the largest |NLL difference| bf16 vs
  fp32 on the same sequences is printed; the target allows bf16 where it stays within 0.05) and gradient
  evaluations (``grad``, what the gradient proposals call) per second.

The ratios (GPU / CPU) are computed in this run only. Usage::

    python benchmarks/embed/device_speed.py [--texts 2000] [--cpu-texts 256] [--out bench-out/device_speed.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from evalsift.embed import MiniLMEncoder, embed_texts  # noqa: E402
from evalsift.io.datasets import data_root  # noqa: E402
from evalsift.omninput import load_model, make_sampler  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402


def texts(n: int) -> tuple[list[str], str]:
    """``n`` distinct AlpacaEval outputs (every model's file in name order), or synthetic sentences."""
    root = data_root()  # $EVALSIFT_DATA, or the shared/data folder beside the checkout (evalsift's own lookup)
    folder = root / "alpaca-eval" / "model_outputs" if root is not None else None
    out: dict[str, None] = {}
    for f in sorted(folder.glob("*.json")) if folder is not None and folder.is_dir() else []:
        for rec in json.loads(f.read_text(encoding="utf-8")):
            if isinstance(rec.get("output"), str) and rec["output"].strip():
                out[rec["output"]] = None
            if len(out) >= n:
                return list(out), f"AlpacaEval outputs ({folder})"
    rng = np.random.default_rng(0)
    words = "the model answers a question about data with care and some numbers in a long reply".split()
    return [" ".join(rng.choice(words, size=rng.integers(8, 120))) + f" {i}" for i in range(n)], "synthetic sentences"


def timed(fn, *args, **kw) -> tuple[Any, float]:
    """``(fn(...), seconds)``, synchronising the GPU around the call."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    out = fn(*args, **kw)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - t


def encoder_speed(device: str, batch: list[str]) -> dict[str, Any]:
    enc = MiniLMEncoder(device=device)
    enc.load()
    embed_texts(batch[:64], enc, cache=False, progress=False)  # warm up (kernels, allocator)
    vecs, s = timed(embed_texts, batch, enc, cache=False, progress=False)
    return {"texts": len(batch), "seconds": s, "texts_per_s": len(batch) / s, "precision": enc.precision,
            "vectors": vecs}


def enumeration_speed(device: str, length: int, quiet: bool) -> dict[str, Any]:
    model, space = load_model("toy-paper", length=length, device=device, quiet=quiet)
    k = max(0, length - 4)  # stems of k digits, 10^4 sequences decoded under each
    stems = np.indices((10,) * k).reshape(k, -1).T if k else np.zeros((1, 0), dtype=np.int64)
    step = max(1, 65536 // 10 ** (length - k))
    model.subtree(stems[:step])  # warm up

    def run() -> float:
        total = 0.0
        for i in range(0, len(stems), step):
            total += float(model.subtree(stems[i:i + step]).sum())
        return total

    _, s = timed(run)
    n = 10 ** length
    return {"length": length, "sequences": n, "seconds": s, "sequences_per_s": n / s,
            "seconds_for_1e8": 1e8 / (n / s)}


def pt_speed(device: str, steps: int, quiet: bool) -> dict[str, Any]:
    model, space = load_model("toy-paper", device=device, quiet=quiet)
    pt = make_sampler("pt", steps=steps, chains=4, replicas=16, bin_width=0.25, seed=0, checkpoint_every=1e9)
    _, s = timed(pt.run, model, space, quiet=True)
    return {"steps": steps, "seconds": s, "steps_per_s": steps / s, "evaluations": int(pt._evals)}


def hf_speed(device: str, folder: Path, n: int, grad_n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    x = None
    ref = None
    for precision in ("fp32", "bf16"):
        if precision == "bf16" and device == "cpu":
            continue  # bf16 matmuls on a CPU without AMX are slower than fp32: not a setting anyone would pick
        # the total NLL of the 16 tokens (hf-lm's default is now the per-token mean): the 0.05 target is on it
        model, space = load_model(f"hf-lm:{folder}", length=16, precision=precision, device=device, per_token=False)
        if x is None:
            x = space.uniform(n, np.random.default_rng(0))
        model(x[: min(64, n)])  # warm up
        z, s = timed(model, x)
        out[f"forward_{precision}_per_s"] = n / s
        if precision == "fp32":
            ref = z
            g_x = x[:grad_n]
            model.grad(g_x[: min(8, grad_n)], space.n_values)
            _, gs = timed(model.grad, g_x, space.n_values)
            out["grad_fp32_per_s"] = grad_n / gs
        else:
            out["bf16_max_abs_nll_diff"] = float(np.abs(z - ref).max())
            g_x = x[:grad_n]
            _, gs = timed(model.grad, g_x, space.n_values)
            out["grad_bf16_per_s"] = grad_n / gs
        out["batch"] = model.batch_size
        del model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    out["sequences"] = n
    return out


def gpt2_small(folder: Path) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config()).save_pretrained(folder)  # 124M parameters, vocabulary 50,257, random weights
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=4096, help="texts for the GPU encoder row")
    ap.add_argument("--cpu-texts", type=int, default=256, help="texts for the CPU encoder row")
    ap.add_argument("--enum-length", type=int, default=8, help="digits enumerated on the GPU (10^L sequences)")
    ap.add_argument("--cpu-enum-length", type=int, default=6, help="digits enumerated on the CPU")
    ap.add_argument("--pt-steps", type=int, default=200)
    ap.add_argument("--cpu-pt-steps", type=int, default=40)
    ap.add_argument("--hf", type=int, default=16384, help="sequences scored by the GPT-2-sized model on the GPU")
    ap.add_argument("--cpu-hf", type=int, default=64)
    ap.add_argument("--sections", default="encoder,enumeration,pt,hf")
    ap.add_argument("--out", default="bench-out/device_speed.json")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    devices = ["cpu"] + (["cuda:0"] if torch.cuda.is_available() else [])
    res: dict[str, Any] = {"machine": {"python": platform.python_version(), "torch": torch.__version__,
                                       "cpu_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
                                       "gpu": torch.cuda.get_device_name(0) if len(devices) > 1 else None},
                           "rows": {}}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; GPU: {res['machine']['gpu'] or 'none'}")
    corpus, source = texts(max(args.texts, args.cpu_texts)) if "encoder" in sections else ([], "")
    with tempfile.TemporaryDirectory() as tmp:
        folder = gpt2_small(Path(tmp) / "gpt2-small") if "hf" in sections else None
        for dev in devices:
            gpu = dev != "cpu"
            row: dict[str, Any] = {}
            if "encoder" in sections:
                r = encoder_speed(dev, corpus[: args.texts if gpu else args.cpu_texts])
                if gpu and "cpu" in res["rows"]:
                    n = min(len(r["vectors"]), res["rows"]["cpu"]["encoder"]["texts"])
                    a, b = res["rows"]["cpu"]["encoder"].pop("vectors_keep")[:n], r["vectors"][:n]
                    r["min_cosine_to_cpu_fp32"] = float(((a * b).sum(1) / np.linalg.norm(a, axis=1)
                                                         / np.linalg.norm(b, axis=1)).min())
                vec = r.pop("vectors")
                if not gpu:
                    r["vectors_keep"] = vec
                row["encoder"] = r
                print(f"{dev:7} encoder  {r['texts_per_s']:10.1f} texts/s ({r['texts']} {source}, {r['precision']})"
                      + (f"; min cosine to CPU fp32 {r['min_cosine_to_cpu_fp32']:.5f}" if "min_cosine_to_cpu_fp32" in r
                         else ""))
            if "enumeration" in sections:
                r = enumeration_speed(dev, args.enum_length if gpu else args.cpu_enum_length, quiet=True)
                row["enumeration"] = r
                print(f"{dev:7} enumerate 10^{r['length']} in {r['seconds']:.2f} s: {r['sequences_per_s']:,.0f} "
                      f"sequences/s -> 10^8 in {r['seconds_for_1e8']:.1f} s"
                      + ("" if r["length"] == 8 else " (extrapolated)"))
            if "pt" in sections:
                r = pt_speed(dev, args.pt_steps if gpu else args.cpu_pt_steps, quiet=True)
                row["pt"] = r
                print(f"{dev:7} pt       {r['steps_per_s']:10.1f} steps/s ({r['steps']} steps, 4 chains x 16 replicas)")
            if "hf" in sections:
                r = hf_speed(dev, folder, args.hf if gpu else args.cpu_hf, 2048 if gpu else 16)
                row["hf"] = r
                line = f"{dev:7} hf-lm    fp32 {r['forward_fp32_per_s']:9.1f} seq/s, grad {r['grad_fp32_per_s']:8.1f}/s"
                if "forward_bf16_per_s" in r:
                    line += (f"; bf16 {r['forward_bf16_per_s']:9.1f} seq/s, grad {r['grad_bf16_per_s']:8.1f}/s, "
                             f"max |NLL bf16 - fp32| {r['bf16_max_abs_nll_diff']:.4f}")
                print(line + f" (GPT-2 small, 16 tokens, batch {r['batch']})")
            res["rows"][dev] = row
    res["rows"].get("cpu", {}).get("encoder", {}).pop("vectors_keep", None)
    if len(devices) > 1:
        c, g = res["rows"]["cpu"], res["rows"][devices[1]]
        ratios = {}
        if "encoder" in sections:
            ratios["encoder_texts_per_s"] = g["encoder"]["texts_per_s"] / c["encoder"]["texts_per_s"]
        if "enumeration" in sections:
            ratios["enumeration_sequences_per_s"] = (g["enumeration"]["sequences_per_s"]
                                                     / c["enumeration"]["sequences_per_s"])
        if "pt" in sections:
            ratios["pt_steps_per_s"] = g["pt"]["steps_per_s"] / c["pt"]["steps_per_s"]
        if "hf" in sections:
            ratios["hf_forward_fp32"] = g["hf"]["forward_fp32_per_s"] / c["hf"]["forward_fp32_per_s"]
            ratios["hf_grad_fp32"] = g["hf"]["grad_fp32_per_s"] / c["hf"]["grad_fp32_per_s"]
        res["ratios_gpu_over_cpu"] = ratios
        print("GPU / CPU: " + ", ".join(f"{k} {v:.1f}x" for k, v in ratios.items()))
    else:
        print("no CUDA GPU: CPU rows only")
    write_json(args.out, res, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
