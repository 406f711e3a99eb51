"""OmniInput on the toy, against the exact answer (issue 11's validation and cost tables).

The toy: a small causal transformer LM trained on digit sequences whose sum is divisible by 30; its
output is a sequence's NLL, and the rule "sum divisible by 30" is the judge. The whole space
(10^length sequences) is enumerated for the exact rho(z) and r(z); every sampler runs over several
seeds and is compared with it (evalsift.omninput.validate.compare_to_exact):

- L1 and KL of the normalised rho over bins holding >= 1e-6 of the space, and the mass of such bins
  never reached;
- max and mean |r error| over those bins, from every candidate kept and from --per-bin judged ones;
- AUPR (estimate, exact) and whether the 95% interval from the judgments covers the exact AUPR.

Cost: in the rare low-NLL bins (below the bulk of the positives, each holding < --rare of the space),
each sampler's relative error across seeds e gives the uniform draws that would do as well,
(1 - p) / (p e^2); the ratio to the sampler's own model evaluations is printed, with throughput.

    python benchmarks/omni/omni_toy.py --length 8 --seeds 5 --out bench-out/omni-toy   (about 25 minutes)

The paper's toy (Sec. 3.2: 6 layers, 4 heads, 8 digits; ``toy-paper``), with Gibbs-with-gradients and
the discrete Langevin proposal as the tempered replicas' moves:

    python benchmarks/omni/omni_toy.py --model toy-paper --samplers pt-gwg,pt-dlp --seeds 1 --calibration 0 \
        --out bench-out/omni-toy-paper

The exact table is cached in ``$EVALSIFT_CACHE/omni/exact-*.npz``, keyed by the model's fingerprint
(its weights), the space, the rule and the bin width; ``--no-cache`` enumerates again.

Prints markdown tables and writes results.json. Timing figures are from this one run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from evalsift.omninput import load_model, make_sampler
from evalsift.omninput.validate import compare_to_exact, exact_table, uniform_equivalent
from evalsift.omninput.zoo import toy_rule

# label: (sampler, parameters); pt, wang_landau, uniform: about the same number of model evaluations each (1.3M).
# pt-gwg / pt-dlp: parallel tempering whose replicas move by Gibbs-with-gradients / the discrete Langevin
# proposal (a forward and a backward pass per move, so fewer steps)
SAMPLERS = {
    "pt": ("pt", {"steps": 20000}),
    "wang_landau": ("wang_landau", {"steps": 20000, "walkers": 16}),
    "uniform": ("uniform", {"steps": 1250, "walkers": 256}),
    "pt-gwg": ("pt", {"steps": 4000, "proposal": "gradient"}),
    "pt-dlp": ("pt", {"steps": 4000, "proposal": "langevin", "step_size": 0.25}),
}
OLD_TOY = {"train_steps": 300, "d_model": 32, "layers": 1}  # the defaults of --model toy (issue 11's tables)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["toy", "toy-paper"], default="toy",
                    help="toy (small, the tables of issue 11) or toy-paper (the paper's 6 layers, 4 heads)")
    ap.add_argument("--length", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--bin-width", type=float, default=0.25)
    ap.add_argument("--per-bin", type=int, default=10)
    ap.add_argument("--rare", type=float, default=1e-4, help="a bin below this share of the space is rare")
    ap.add_argument("--samplers", default="pt,wang_landau,uniform", help=f"any of {', '.join(SAMPLERS)}")
    ap.add_argument("--pt-steps", type=int, default=None, help="override the steps of pt, pt-gwg and pt-dlp")
    ap.add_argument("--train-steps", type=int, default=None, help="toy training steps (toy: 300, a graded r(z); 1500 "
                                                                  "and d_model 64, 2 layers: a nearly perfect toy; "
                                                                  "toy-paper: its own default)")
    ap.add_argument("--d-model", type=int, default=None, help="toy: 32; toy-paper: its own default")
    ap.add_argument("--layers", type=int, default=None, help="toy: 1; toy-paper: 6")
    ap.add_argument("--no-cache", action="store_true", help="enumerate again even when the exact table is cached")
    ap.add_argument("--calibration", type=int, default=100, help="annotation seeds for the calibration of the "
                                                                   "judgment-based intervals (0: skip)")
    ap.add_argument("--out", default="bench-out/omni-toy")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rule = toy_rule

    t0 = time.time()
    opts = {"train_steps": args.train_steps, "d_model": args.d_model, "layers": args.layers}
    if args.model == "toy":
        opts = {k: OLD_TOY[k] if v is None else v for k, v in opts.items()}
    opts = {("steps" if k == "train_steps" else k): v for k, v in opts.items() if v is not None}
    model, space = load_model(args.model, length=args.length, **opts)
    t_train = time.time() - t0
    t0 = time.time()
    exact, cached = cached_exact_table(model, space, args.bin_width, rule, refresh=args.no_cache)
    t_exact = time.time() - t0
    print(f"{args.model} length {args.length} ({model.info.get('layers')} layers, d_model {model.info.get('d_model')}): "
          f"{space.size:,} sequences; training {t_train:.0f} s (or cached), enumeration {t_exact:.0f} s"
          f"{' (read from the cache: ' + cached + ')' if cached else ''}; {exact.bins.size} bins of width "
          f"{args.bin_width}; positives "
          f"{exact.positives.sum():,} ({exact.positives.sum() / exact.count.sum():.4f}); exact AUPR "
          f"{exact.aupr('low'):.4f}", file=sys.stderr)
    mass = exact.mass
    # rare low-NLL bins: below the bin holding the most positives, each holding < --rare of the space
    spike = int(np.argmax(exact.positives))
    rare = [int(b) for b, m in zip(exact.bins[:spike], mass[:spike]) if 0 < m < args.rare]
    results: dict = {"model": model.info, "model_name": args.model, "exact_cached": bool(cached), "length": args.length, "size": space.size, "bin_width": args.bin_width,
                     "exact_aupr": exact.aupr("low"), "train_seconds": t_train, "enumeration_seconds": t_exact,
                     "rare_bins": rare, "rare_mass": {str(b): float(mass[list(exact.bins).index(b)]) for b in rare},
                     "runs": {}}
    for name in args.samplers.split(","):
        kind, params = SAMPLERS[name][0], dict(SAMPLERS[name][1])
        if kind == "pt" and args.pt_steps:
            params["steps"] = args.pt_steps
        runs = []
        for seed in range(args.seeds):
            s = make_sampler(kind, bin_width=args.bin_width, seed=seed, **params).run(model, space, quiet=True)
            cmp = compare_to_exact(s, exact, rule, per_bin=args.per_bin, seed=seed)
            est = dict(zip(s.bins.tolist(), s.mass().tolist()))
            cmp["rare_ratio"] = {str(b): est.get(b, 0.0) / float(mass[list(exact.bins).index(b)]) for b in rare}
            cmp["evaluations_per_second"] = s.evaluations / s.seconds if s.seconds else None
            cmp["diagnostics"] = {k: s.diagnostics.get(k) for k in ("round_trips", "swap_acceptance_min",
                                                                    "chain_sd_max", "stages", "one_over_t",
                                                                    "acceptance")}
            cmp["params"] = {"sampler": kind, **params}
            runs.append(cmp)
            print(f"{name} seed {seed}: L1 {cmp['l1']:.4f} KL {cmp['kl']:.5f} r err max {cmp['r_error_max']:.3f} "
                  f"AUPR {cmp['aupr']:.4f} {s.seconds:.0f} s", file=sys.stderr)
        results["runs"][name] = runs
    if args.calibration:
        results["calibration"] = calibration(model, space, exact, args)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=float), encoding="utf-8")
    print_tables(results)
    return 0


def cached_exact_table(model, space, bin_width: float, rule, refresh: bool = False):
    """The exact table, from ``$EVALSIFT_CACHE/omni/exact-<key>.npz`` when an earlier run stored it (key: the
    model's fingerprint, the space's, the rule and the bin width); ``(table, path or '')``, '' when enumerated now."""
    import hashlib

    from evalsift.omninput.validate import ExactTable
    from evalsift.omninput.zoo import cache_dir

    key = json.dumps({"model": model.fingerprint(), "space": space.fingerprint(), "rule": "toy_rule(modulus=30)",
                      "bin_width": bin_width}, sort_keys=True)
    path = cache_dir() / f"exact-{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz"
    if path.is_file() and not refresh:
        a = np.load(path)
        return ExactTable(bin_width, a["bins"], a["count"], a["positives"]), str(path)
    exact = exact_table(model, space, bin_width, rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, bins=exact.bins, count=exact.count, positives=exact.positives, key=np.array(key))
    tmp.replace(path)
    return exact, ""


def calibration(model, space, exact, args) -> list[dict]:
    """Do the judgment-based statements hold? rho is exact (enumeration; up to 400 inputs kept per bin, a
    uniform subsample), only the judged inputs are random: over --calibration annotation seeds, how often
    the AUPR interval holds the exact AUPR and the simultaneous bands hold the exact precision and recall
    at every threshold."""
    from evalsift.omninput.curves import omni_curve, pr_curve

    s = make_sampler("exact", bin_width=args.bin_width, keep=400).run(model, space, quiet=True)
    assert np.array_equal(s.bins, exact.bins)
    truth = pr_curve(np.log(exact.count.astype(float)), exact.r, s.positive)
    a_true = exact.aupr(s.positive)
    rows = []
    for per_bin in (10, 30):
        cov_a = cov_p = cov_r = 0
        est = []
        for seed in range(args.calibration):
            reps = s.representatives(per_bin, seed=1000 + seed)
            c = omni_curve(s, reps.z, toy_rule(reps.x).astype(float), n_boot=400, seed=seed)
            lo, hi = c["intervals"]["aupr"]
            cov_a += lo <= a_true <= hi
            b = c["bands"]
            cov_p += bool(np.all((np.array(b["precision_lo"]) <= truth["precision"] + 1e-12)
                                 & (truth["precision"] <= np.array(b["precision_hi"]) + 1e-12)))
            cov_r += bool(np.all((np.array(b["recall_lo"]) <= truth["recall"] + 1e-12)
                                 & (truth["recall"] <= np.array(b["recall_hi"]) + 1e-12)))
            est.append(c["aupr"])
        n = args.calibration
        rows.append({"per_bin": per_bin, "runs": n, "aupr_exact": a_true, "aupr_mean": float(np.mean(est)),
                     "aupr_interval_coverage": cov_a / n,
                     "precision_band_coverage": cov_p / n, "recall_band_coverage": cov_r / n,
                     "aupr_rmse": float(np.sqrt(np.mean((np.array(est) - a_true) ** 2)))})
        print(f"calibration per_bin {per_bin}: {rows[-1]}", file=sys.stderr)
    return rows


def _ms(v: list[float]) -> str:
    v = [x for x in v if x is not None]
    if not v:
        return "-"
    return f"{np.mean(v):.4g} ± {np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0:.2g}"


def print_tables(res: dict) -> None:
    print(f"\n### Toy, length {res['length']} ({res['size']:,} sequences), bins of {res['bin_width']} nats; exact AUPR "
          f"{res['exact_aupr']:.4f}; mean ± s.e. over seeds\n")
    print("| sampler | evaluations | seconds | L1 of rho | KL | heavy bins reached | max abs r error (all candidates) | "
          "mean abs r error | max abs r error (10 judged/bin) | AUPR | exact AUPR in 95% interval |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, runs in res["runs"].items():
        cov = sum(r["aupr_covered"] for r in runs)
        print(f"| {name} | {_ms([r['evaluations'] for r in runs])} | {_ms([r['seconds'] for r in runs])} | "
              f"{_ms([r['l1'] for r in runs])} | "
              f"{_ms([r['kl'] for r in runs])} | {_ms([r['heavy_bins_reached'] for r in runs])} of "
              f"{runs[0]['heavy_bins']} | {_ms([r['r_error_max'] for r in runs])} | "
              f"{_ms([r['r_error_mean'] for r in runs])} | {_ms([r['r_judged_error_max'] for r in runs])} | "
              f"{_ms([r['aupr'] for r in runs])} | {cov} of {len(runs)} |")
    if res.get("calibration"):
        print("\n### Do the statements from the judgments hold? rho exact, only the judged inputs random\n")
        print("| judged per bin | runs | exact AUPR | AUPR (mean over runs) | RMSE | 95% AUPR interval holds the exact "
              "AUPR | precision band holds at every threshold | recall band holds |")
        print("|---|---|---|---|---|---|---|---|")
        for c in res["calibration"]:
            print(f"| {c['per_bin']} | {c['runs']} | {c['aupr_exact']:.4f} | {c['aupr_mean']:.4f} | "
                  f"{c['aupr_rmse']:.4f} | {c['aupr_interval_coverage']:.2f} | {c['precision_band_coverage']:.2f} | "
                  f"{c['recall_band_coverage']:.2f} |")
    rare = res["rare_bins"]
    if not rare:
        print("\n(no rare low-NLL bins at this bin width)")
        return
    print(f"\n### Rare low-NLL bins (< 1e-4 of the space each; {len(rare)} bins): uniform draws needed to match each "
          "sampler's relative error, as a multiple of the sampler's evaluations\n")
    print("| sampler | bin (NLL) | share of the space | relative error (RMS over seeds) | uniform draws needed | "
          "ratio to the sampler's evaluations | evaluations / s |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in res["runs"].items():
        ev = float(np.mean([r["evaluations"] for r in runs]))
        eps = float(np.mean([r["evaluations_per_second"] or 0 for r in runs]))
        for b in rare:
            p = res["rare_mass"][str(b)]
            ratios = np.array([r["rare_ratio"][str(b)] for r in runs])
            rel = float(np.sqrt(np.mean((ratios - 1.0) ** 2)))
            need = uniform_equivalent(p, rel) if rel > 0 else float("inf")
            print(f"| {name} | {b * res['bin_width']:.2f} | {p:.2e} | {rel:.3f} | {need:.3g} | {need / ev:.3g} | "
                  f"{eps:,.0f} |")


if __name__ == "__main__":
    sys.exit(main())
