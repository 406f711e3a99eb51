"""OmniInput on the two 0-vs-1 digit classifiers (issue 11): rho(z) over all 17^64 8x8 images, checked
against the exact answer for the logistic regression, PR curves and AUPR from a proxy judge, and the
representative images per bin.

1. ``evalsift omni sample --model digits-lr`` and ``--model digits-mlp`` (parallel tempering).
2. The logistic regression is linear in the pixels, so its exact ln rho is a convolution of 64
   per-pixel distributions (evalsift.omninput.validate.additive_exact): the sampled ln rho is compared
   bin by bin, and so is a uniform sampler's with the same number of model evaluations.
3. ``evalsift omni curve --samples LR,MLP --judgments proxy:digits`` (a k-NN stand-in for a person, see
   DigitsProxy; only a proxy) gives r(z), PR curves, AUPR and the grids; copies of the figures go to
   docs/ with --docs.
4. The proxy's own behaviour on real digits it never saw (its calibration split): how often it says yes
   to a real 1 and to other digits, and to uniform noise.

    python benchmarks/omni/omni_digits.py --steps 20000 --out bench-out/omni-digits --docs

Prints markdown tables; timings are from this one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.cli import main as cli
from evalsift.omninput import OmniSamples, load_model, make_sampler
from evalsift.omninput.judge import DigitsProxy
from evalsift.omninput.validate import additive_exact

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--per-bin", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench-out/omni-digits")
    ap.add_argument("--docs", action="store_true", help="copy the figures into docs/")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    q = ["--quiet"]
    t = {}
    for name in ("lr", "mlp"):
        t0 = time.time()
        assert cli([*q, "omni", "sample", "--model", f"digits-{name}", "--steps", str(args.steps), "--seed",
                    str(args.seed), "--out", str(out / name)]) == 0
        t[name] = time.time() - t0
    lr = OmniSamples.load(out / "lr")

    # 2. the exact check of the logistic regression
    model, space = load_model("digits-lr")
    w, b = model.estimator.coef_[0], float(model.estimator.intercept_[0])
    bins, ln = additive_exact(np.outer(w, np.arange(17.0)), b, lr.bin_width)
    exact = dict(zip(bins.tolist(), ln.tolist()))
    uni = make_sampler("uniform", bin_width=lr.bin_width, steps=max(1, lr.evaluations // (4 * 256)),
                       seed=args.seed).run(model, space, quiet=True)
    rows = []
    for label, s in (("pt", lr), ("uniform", uni)):
        err = np.array([s.ln_rho[i] - exact[int(bb)] for i, bb in enumerate(s.bins)])
        top = float(bins.max() * lr.bin_width)
        rows.append({"sampler": label, "evaluations": s.evaluations, "seconds": s.seconds,
                     "bins_reached": int(s.bins.size), "bins_exact": int(bins.size),
                     "z_max_reached": float(s.edges[-1]), "z_max_exact": top + lr.bin_width,
                     "median_abs_error": float(np.median(np.abs(err))),
                     "error_top5": [float(e) for e in err[-5:]],
                     "top5_bins_z": [float(x * lr.bin_width) for x in s.bins[-5:]]})
    # 3. curves with the proxy
    assert cli([*q, "omni", "curve", "--samples", f"{out / 'lr'},{out / 'mlp'}", "--judgments", "proxy:digits",
                "--per-bin", str(args.per_bin), "--seed", str(args.seed), "--out", str(out / "curve")]) == 0
    res = json.loads((out / "curve" / "results.json").read_text())
    # 4. the proxy on real digits it never saw
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    proxy = DigitsProxy()
    d = load_digits()
    _, cal, _, ycal = train_test_split(d.data, d.target, test_size=0.2, random_state=0, stratify=d.target)
    says = proxy(cal)
    noise = proxy(np.random.default_rng(args.seed).integers(0, 17, size=(100000, 64)))
    proxy_row = {"yes_on_real_1s": float(says[ycal == 1].mean()), "yes_on_real_other_digits":
                 float(says[ycal != 1].mean()), "yes_on_uniform_noise": float(noise.mean()),
                 "real_1s": int((ycal == 1).sum()), "real_others": int((ycal != 1).sum())}
    summary = {"exact_check": rows, "curves": [{k: m.get(k) for k in (
        "model", "aupr", "aupr_common", "auroc", "positive_share", "positive_share_band", "n_judgments",
        "interpolated_mass")} | {"aupr_interval": m["intervals"]["aupr"], "precision_at_most":
                                 max(m["bands"]["precision_hi"]), "decision": m.get("decision"),
                                 "diagnostics": {k: m["samples"]["diagnostics"].get(k) for k in (
                                     "round_trips", "swap_acceptance_min", "chain_sd_max", "drift_bins_max",
                                     "evaluations_per_second")},
                                 "test_accuracy": m["samples"]["model"]["info"].get("test_accuracy")}
        for m in res["models"]], "proxy": proxy_row, "sample_seconds": t, "common_recall": res["common_recall"]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    if args.docs:
        for src, dst in (("pr.png", "omni-digits-pr.png"), ("density.png", "omni-digits-density.png"),
                         ("grid-digits-lr.png", "omni-digits-grid-lr.png"),
                         ("grid-digits-mlp.png", "omni-digits-grid-mlp.png")):
            shutil.copy(out / "curve" / src, ROOT / "docs" / dst)
    print_tables(summary)
    return 0


def print_tables(s: dict) -> None:
    print("\n### The logistic regression's ln rho against the exact convolution (17^64 images, ln|X| = 181.3)\n")
    print("| sampler | model evaluations | seconds | bins reached | highest z reached (exact) | median abs error of "
          "ln rho | error in the 5 highest bins reached (nats) |")
    print("|---|---|---|---|---|---|---|")
    for r in s["exact_check"]:
        print(f"| {r['sampler']} | {r['evaluations']:,} | {r['seconds']:.0f} | {r['bins_reached']} of {r['bins_exact']} | "
              f"{r['z_max_reached']:.1f} ({r['z_max_exact']:.1f}) | {r['median_abs_error']:.3f} | "
              f"{', '.join(f'{e:+.2f}' for e in r['error_top5'])} |")
    print("\n### PR over the input space, judged by the proxy (PROXY, not people)\n")
    print("| model | held-out accuracy | AUPR [95%] | precision at most (any threshold) | share of the space called "
          "'1' (z > 0) | judged | round trips | drift (bins) | chains' sd of ln rho (max) | evaluations / s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in s["curves"]:
        lo, hi = c["aupr_interval"]
        dg = c["diagnostics"]
        print(f"| {c['model']} | {c['test_accuracy']:.3f} | {c['aupr']:.4f} [{lo:.4f}, {hi:.4f}] | "
              f"{c['precision_at_most']:.3f} | {c['decision']['predicted_positive_share']:.3g} | {c['n_judgments']} | "
              f"{dg['round_trips']} | {dg['drift_bins_max']:.2f} | {dg['chain_sd_max']:.2f} | "
              f"{dg['evaluations_per_second']:,.0f} |")
    p = s["proxy"]
    print(f"\nThe proxy on real digits it never saw: yes to {p['yes_on_real_1s']:.1%} of {p['real_1s']} real 1s, "
          f"{p['yes_on_real_other_digits']:.1%} of {p['real_others']} other digits, "
          f"{p['yes_on_uniform_noise']:.2%} of 100,000 uniform noise images.")


if __name__ == "__main__":
    sys.exit(main())
