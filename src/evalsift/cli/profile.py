"""``evalsift profile``: how the data shapes an evaluation (Kovatchev & Lease 2024): dimensions, strata
against the random band, the similarity of splits, OOD prediction; results.json and report.html."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..errors import DataError, ParameterError
from ._common import (add_data, add_device, add_quiet, collect_notes, device_line, load_data, name_list, note,
                      out_dir, positive_int, seed_int)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``profile``."""
    p = sub.add_parser("profile", help="data dimensions, strata vs the random band, split similarity, OOD prediction; "
                                       "writes results.json and a self-contained report.html")
    add_data(p)
    p.add_argument("--metric", required=True, help="the score column whose mean per system is the performance")
    p.add_argument("--dims", type=name_list, metavar="D1,D2,...",
                   help="dimensions (default: those the data allows that do not come from --metric: length, "
                        "perplexity or ngram_perplexity, difficulty (PVI) with gold labels, noise with annotators' "
                        "labels, ambiguity with runs' probabilities; score_difficulty, irt_difficulty, "
                        "discriminability only when named, marked circular); 'evalsift methods' lists them all")
    p.add_argument("--lm", metavar="DIR", help="a local causal language model (a save_pretrained folder; nothing is "
                                               "downloaded) for the paper's perplexity")
    p.add_argument("--classifier", metavar="DIR",
                   help="a local sequence classifier to fine-tune (a save_pretrained folder, e.g. BERT; nothing is "
                        "downloaded; safetensors weights only) for the paper's difficulty (PVI against the same model "
                        "fine-tuned on empty inputs) and ambiguity (the variability of the held-out gold-label "
                        "probability over the epochs), cross-fitted in 5 folds; needs texts and gold labels "
                        "(default: TF-IDF models)")
    p.add_argument("--classifier-epochs", type=int, metavar="N",
                   help="--classifier: fine-tuning epochs of the run behind ambiguity (default 10, the paper's, as "
                        "in dataset cartography; at least 2)")
    p.add_argument("--classifier-pvi-epochs", type=int, metavar="N",
                   help="--classifier: fine-tuning epochs of the two models behind PVI (default 3, the paper's; at "
                        "least 1; equal to --classifier-epochs: one run serves both)")
    p.add_argument("--topics", metavar="FIELD", help="metadata field whose values are the splits (e.g. domain): "
                                                     "their similarity vectors and OOD prediction between them")
    p.add_argument("--ood-protocol", default="leave_target_out", choices=["leave_target_out", "paper"],
                   help="held-out scheme of the OOD prediction (with --topics): leave_target_out (ours: each split "
                        "predicted by a regression that never saw it) or paper (Kovatchev & Lease Sec. 5: random "
                        "source-target pairs held out, repeated)")
    p.add_argument("--ood-pairs", choices=["both", "full", "topics"],
                   help="--ood-protocol paper: the source-target pairs: full data -> each topic (the paper's SQuAD "
                        "setting), every ordered pair of topics (its MNLI setting), or both (default)")
    p.add_argument("--ood-test-pairs", type=positive_int, metavar="N",
                   help="--ood-protocol paper: pairs held out per repeat (default 5, the paper's SQuAD setting)")
    p.add_argument("--ood-repeats", type=positive_int, metavar="N",
                   help="--ood-protocol paper: repeats with different held-out pairs (default 5)")
    p.add_argument("--models", type=name_list, metavar="A,B", help="the two systems of the profile (default: the two best)")
    p.add_argument("--lower-is-better", action="store_true", help="the metric is better when lower (an error count)")
    p.add_argument("--samples", type=positive_int, default=200, help="random samples behind every band")
    p.add_argument("--seed", type=seed_int, default=0, help="random seed")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for results.json and report.html")
    add_device(p)
    add_quiet(p)
    p.set_defaults(handler=cmd_profile)


def _check_metric(pool, metric: str) -> None:
    if metric not in pool.scores:
        raise DataError(f"--metric: the data has no metric {metric!r}; its metrics are {', '.join(pool.metrics)}. "
                        "Name one of them (NAME-ref computes chrF-ref, BLEU-ref, ROUGE-L-ref).", field="metric")


def _ood_options(args: argparse.Namespace) -> dict:
    extra = {k: v for k, v in (("pairs", args.ood_pairs), ("test_pairs", args.ood_test_pairs),
                               ("repeats", args.ood_repeats)) if v is not None}
    if args.ood_protocol != "paper":
        if extra:
            flag = "--ood-" + next(iter(extra)).replace("_", "-")
            raise ParameterError(f"{flag} applies to the paper's held-out scheme only; add --ood-protocol paper or "
                                 f"leave {flag} out.", field=flag[2:].replace("-", "_"))
        return {}
    if not args.topics:
        raise ParameterError("--ood-protocol paper needs --topics FIELD (the splits whose pairs are held out).",
                             field="topics")
    return {"protocol": "paper", **extra}


def cmd_profile(args: argparse.Namespace) -> int:
    """``evalsift profile``. What it says on the way (its notes, the profile's, Python warnings) is one list
    (:func:`~._common.collect_notes`), printed as ``note:`` lines and shown in the report's Warnings box."""
    notes: list[str] = []
    with collect_notes(notes):
        res, paths = _profile(args, notes)
    for n in notes:
        note(n)
    line = device_line()
    if line is not None:
        print(line, file=sys.stderr)
    _print_table(res)
    print(f"wrote {paths['json']} and {paths['html']}", file=sys.stderr)
    return 0


def _profile(args: argparse.Namespace, notes: list[str]) -> tuple[dict, dict]:
    from ..device import device_report
    from ..report.plots import require_plots
    from ..transparency.report import profile_pool, write_report

    require_plots("evalsift profile's report (its figures)")  # before anything is read or written
    folder = out_dir(args.out)
    pool = load_data(args)
    _check_metric(pool, args.metric)
    if args.topics and args.topics not in pool.metadata:
        raise DataError(f"--topics: the data has no metadata field {args.topics!r}; its fields are "
                        f"{', '.join(pool.metadata) or '(none)'}. Name one of them, or leave --topics out.",
                        field="topics")
    if args.lm is not None:
        from ..hf_folder import read_model_folder

        if not (Path(args.lm) / "config.json").is_file():
            raise DataError(f"--lm: {args.lm!r} is not a local model folder (no config.json); give a folder written by "
                            "save_pretrained, or leave --lm out to use ngram_perplexity. Nothing is downloaded.",
                            field="lm")
        # checked before any work: safetensors only, no auto_map, a causal LM (else: what the folder is)
        read_model_folder(args.lm, option="--lm", field="lm").require(
            "causal-lm", instead="perplexity needs a language model's next-token probabilities")
    classifier = _classifier(args)
    res = profile_pool(pool, args.metric, dims=args.dims, topics=args.topics, models=args.models,
                       higher_is_better=not args.lower_is_better, seed=args.seed, n_samples=args.samples,
                       ood_options=_ood_options(args), lm_path=args.lm, notes=notes, classifier=classifier)
    if classifier is not None and not any(v.get("method") == "classifier" for v in res["computed_by"].values()):
        notes.append(f"--classifier {args.classifier} was not used: it fine-tunes for difficulty and ambiguity, which "
                     "need texts and gold labels (a per-item gold field) and must be among --dims when --dims is given")
    res["device"] = device_report()
    return res, write_report(res, folder)


def _classifier(args: argparse.Namespace):
    """The ``--classifier`` to fine-tune with its settings (checked before any work), or None."""
    from ..transparency.dimensions.finetune import FineTunedClassifier, check_classifier_folder

    given = {k: v for k, v in (("epochs", args.classifier_epochs), ("pvi_epochs", args.classifier_pvi_epochs))
             if v is not None}
    if args.classifier is None:
        if given:
            flag = "--classifier-" + next(iter(given)).replace("_", "-")
            raise ParameterError(f"{flag} applies to --classifier DIR (the model to fine-tune); add --classifier or "
                                 f"leave {flag} out.", field="classifier_" + next(iter(given)))
        return None
    check_classifier_folder(args.classifier, name="--classifier")
    if given.get("epochs") is not None and given["epochs"] < 2:
        raise ParameterError(f"--classifier-epochs {given['epochs']}: give at least 2 (ambiguity is the "
                             f"variability over epochs); the default is {FineTunedClassifier.epochs}.",
                             field="classifier_epochs")
    if given.get("pvi_epochs") is not None and given["pvi_epochs"] < 1:
        raise ParameterError(f"--classifier-pvi-epochs {given['pvi_epochs']}: give at least 1; the default is "
                             f"{FineTunedClassifier.pvi_epochs}.", field="classifier_pvi_epochs")
    return FineTunedClassifier(args.classifier, **given)


def _print_table(res: dict) -> None:
    print(f"{res['data']}: {res['n_items']} items, {len(res['systems'])} systems, performance = mean {res['metric']}")
    print(f"  {'dimension':<18} {'% significant':>13} {'rank changes':>12} {'mean sigma':>11}")
    for s in res["summary"]:
        rank = str(s["n_rank_significant"]) if s.get("rank_change_possible", True) else "n/a"
        tag = " (circular)" if s.get("circular") else " (baseline)" if s.get("baseline") else ""
        print(f"  {s['dimension']:<18} {s['pct_significant']:13.1f} {rank:>12} {s['mean_sigma']:11.4g}{tag}")
    corr = res.get("correlation")
    if corr:
        k = len(corr["dimensions"])
        off = [abs(v) for i in range(k) for j in range(i + 1, k)
               if isinstance(v := corr["rho"][i][j], float) and math.isfinite(v)]
        if off:
            print(f"  largest |Spearman rho| between two dimensions: {max(off):.2f} (Sec. 3.1; matrix in results.json)")
    for key, what in (("ood", "all dimensions"), ("ood_label_free", "label-free dimensions")):
        o = res.get(key)
        if o:
            n_rep = len(o.get("per_repeat") or [])
            how = f"paper's protocol, mean of {n_rep} repeats" if n_rep else "leave-one-split-out"
            print(f"OOD prediction by {res['similarity']['field']} ({what}; {how}; {len(o['predictions'])} held-out rows): "
                  f"MAD {o['mad']:.4g} vs no-change {o['mad_no_change']:.4g}, R2 {o['r2']:.3f} vs "
                  f"{o['r2_no_change']:.3f}" + ("" if o.get("beats_no_change", True) else
                                                 " -- worse than no change (see the note)"))
