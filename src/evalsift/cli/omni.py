"""``evalsift omni sample | annotate | curve``: OmniInput -- precision and recall over a model's input space.

  omni sample --model toy|digits-lr|digits-mlp|lm|hf-lm:DIR|hf-cls:DIR|PATH --out DIR   sample rho(z) (resumable)
  omni annotate --db PATH --samples DIR --per-bin K [--graded]        a yes/no (or graded) project in the app
  omni curve --samples DIR[,DIR2] --judgments SPEC --out DIR          r(z), PR curves within Z, AUPR, report
             [--budget N] [--z-range LO,HI] [--normalise cross-model]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import DataError, ParameterError
from ._common import (add_device, add_quiet, collect_notes, note, nonneg_int, out_dir, positive_float, positive_int, print_json,
                      seed_int)

MODEL_OPTIONS = {"length": "length", "levels": "levels", "vocab": "vocab", "model_seed": "seed",
                 "positions": "positions", "values": "values", "train_steps": "steps", "per_token": "per_token",
                 "positive": "positive", "precision": "precision"}
SAMPLER_OPTIONS = ("steps", "chains", "replicas", "walkers", "beta_max", "direction", "proposal", "block", "step_size",
                   "bin_width",
                   "keep", "burn_in", "thin", "checkpoint_every", "seed", "beta")


def _vocab(text: str) -> int | str:
    """``--vocab``: a size N (the built-in lm; hf-lm: the same as top:N), top:N or a file of tokens (hf-lm,
    hf-cls)."""
    if text.strip().isdigit():
        return positive_int(text)
    return text


def _beta_max(text: str) -> float | str:
    if text == "auto":
        return text
    return positive_float(text)


def _burn_in(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) or a number of steps, got {text!r}") from None
    if v < 0 or (v >= 1 and v != int(v)):
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) or a whole number of steps, got {text!r}")
    return int(v) if v >= 1 else v


def _z_range(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two numbers), got {text!r}") from None
    if not hi > lo:
        raise argparse.ArgumentTypeError(f"expected LO,HI with HI > LO, got {text!r}")
    return lo, hi


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``omni`` with ``sample``, ``annotate`` and ``curve``."""
    om = sub.add_parser("omni", help="OmniInput: sample a model's input space by output value, judge representatives "
                                     "per bin, PR curves over the whole input space")
    add_quiet(om)
    osub = om.add_subparsers(dest="omni_cmd", required=True, metavar="{sample,annotate,curve}")

    s = osub.add_parser("sample", help="sample the output distribution rho(z) and representative inputs (resumable: "
                                       "run it again to continue after an interruption)")
    s.add_argument("--model", required=True, metavar="NAME|PATH",
                   help="toy (a small transformer LM on digit sequences, NLL), toy-paper (the paper's toy: 6 layers, 4 "
                        "heads, 8 digits), digits-lr, digits-mlp (0-vs-1 classifiers on "
                        "8x8 digits, logit), lm (English LM trained on $EVALSIFT_DATA text, NLL), hf-lm:DIR (your "
                        "local Hugging Face causal LM: the NLL of --length tokens), hf-cls:DIR (your local sequence "
                        "classifier: the logit of --positive), or a file: a .py with "
                        "build(**options) -> (model, InputSpace), a .joblib/.pkl scikit-learn classifier")
    s.add_argument("--out", required=True, metavar="DIR", help="folder for omni.json, candidates.npz and the checkpoint")
    g = s.add_argument_group("model options")
    g.add_argument("--length", type=positive_int,
                   help="toy / lm: positions (digits or words; toy default 6, toy-paper 8, lm 8); hf-lm / hf-cls: "
                        "tokens per input (required)")
    g.add_argument("--levels", type=positive_int, help="digits: grey levels of the input space, 2..17 (default 17)")
    g.add_argument("--vocab", type=_vocab, metavar="N|top:N|FILE",
                   help="lm: vocabulary size (default 1000); hf-lm / hf-cls: the tokens of the space: top:N (hf-lm: the "
                        "N most likely at the start of a sequence; hf-cls: the first N ids), or a file with one token "
                        "per line as the tokenizer spells it (or #ID); default: every token but the special ones")
    nll = g.add_mutually_exclusive_group()
    nll.add_argument("--per-token", dest="per_token", action="store_const", const=True, default=None,
                     help="hf-lm: the output is the mean NLL per scored token, the paper's log-perplexity (the "
                          "default; the flag only says so)")
    nll.add_argument("--total", dest="per_token", action="store_const", const=False,
                     help="hf-lm: the output is the sequence's total NLL (the sum over the scored tokens) instead "
                          "of the per-token mean")
    g.add_argument("--positive", metavar="LABEL", help="hf-cls: the label whose logit is the output (a name of the "
                                                       "model's id2label, or an index)")
    g.add_argument("--precision", choices=["fp32", "bf16", "fp16"],
                   help="hf-lm / hf-cls: the model's precision (default fp32; bf16 is for GPUs)")
    g.add_argument("--model-seed", type=nonneg_int, help="seed of the built-in model's training (default 0)")
    g.add_argument("--train-steps", type=positive_int,
                   help="toy / lm: training steps (defaults: toy 1500, toy-paper 600, lm 2500)")
    g.add_argument("--positions", type=positive_int, help="a pickled classifier: positions of its input space")
    g.add_argument("--values", type=positive_int, help="a pickled classifier: values per position (0..V-1)")
    q = s.add_argument_group("sampler")
    q.add_argument("--sampler", default="pt", help="pt (parallel tempering + reweighting), wang_landau, metropolis, "
                                                   "uniform, exact ('evalsift methods' lists them)")
    q.add_argument("--steps", type=positive_int, help="moves per walker (defaults: pt 10000, wang_landau 20000, "
                                                      "metropolis 4000, uniform 250 x 1024 draws); a larger value "
                                                      "extends a finished run in the same --out")
    q.add_argument("--chains", type=positive_int, help="independent chains; their spread is the error bar (default 4)")
    q.add_argument("--replicas", type=positive_int, help="pt: temperatures per chain (default 16)")
    q.add_argument("--walkers", type=positive_int, help="wang_landau / metropolis / uniform: walkers per chain")
    q.add_argument("--beta-max", type=_beta_max, help="pt: the coldest inverse temperature, or auto (default)")
    q.add_argument("--beta", type=float, help="metropolis: the inverse temperature (default 0)")
    q.add_argument("--direction", choices=["auto", "high", "low", "both"],
                   help="pt: the tail of z the cold replicas explore (auto: the model's positive side)")
    q.add_argument("--proposal", choices=["mixed", "single", "block", "gradient", "langevin"],
                   help="moves: mixed (default: one position or a block, by a coin), one position, a block / image "
                        "patch; torch models with forward_onehot: gradient (Gibbs-with-gradients, one position) or "
                        "langevin (the discrete Langevin proposal, every position at once)")
    q.add_argument("--block", type=positive_int, help="block size (positions, or the side of an image patch)")
    q.add_argument("--step-size", type=positive_float, help="--proposal langevin: its step size alpha (default 0.25; "
                                                            "larger: more positions change per move)")
    q.add_argument("--bin-width", type=positive_float, help="width of the output bins (default: from the pilot, "
                                                            "150-300 bins, the low end of the paper's 150-600; exact "
                                                            "needs it)")
    q.add_argument("--keep", type=positive_int, help="candidate inputs kept per replica and bin (default 32)")
    q.add_argument("--burn-in", type=_burn_in, help="steps not recorded: a fraction of --steps or a number")
    q.add_argument("--thin", type=positive_int, help="record every n-th step (default 1)")
    q.add_argument("--checkpoint-every", type=positive_float, help="seconds between checkpoints (default 60)")
    q.add_argument("--seed", type=seed_int, default=None, help="random seed (default 0)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_device(s)
    add_quiet(s)
    s.set_defaults(handler=cmd_sample)

    a = osub.add_parser("annotate", help="a project in the annotation app: people answer a yes/no question about "
                                         "--per-bin representative inputs of every bin")
    a.add_argument("--db", required=True, metavar="PATH", help="the workspace's SQLite store")
    a.add_argument("--samples", required=True, metavar="DIR", help="the --out folder of 'evalsift omni sample'")
    a.add_argument("--per-bin", type=positive_int, default=10, help="representatives per output bin")
    a.add_argument("--bin-width", type=positive_float, help="coarser bins (a whole multiple of the sampling width)")
    a.add_argument("--name", help="project name (default: omni-MODEL-<samples id>)")
    a.add_argument("--question", help="the yes/no question (default: chosen from the model, e.g. 'Is this digit a 1?')")
    a.add_argument("--graded", action="store_true",
                   help="people may also grade an input from 0 (no) to 4 (yes) -- stored as a score in [0, 1], as the "
                        "paper's annotators gave -- besides answering yes or no")
    a.add_argument("--overlap", type=positive_int, default=1, help="answers per input, from different people")
    a.add_argument("--lease-seconds", type=positive_float, default=600.0, help="how long an input stays with one person")
    a.add_argument("--seed", type=seed_int, default=0, help="seed of the representatives' draw")
    a.add_argument("--json", action="store_true", help='print {"project": ID, "admin_token": ..., "items": N}')
    add_quiet(a)
    a.set_defaults(handler=cmd_annotate)

    c = osub.add_parser("curve", help="r(z) from judged representatives, precision/recall over the input space (Eq. "
                                      "3-4), PR curves, AUPR; results.json, pr.png, density.png, grids, report.html")
    c.add_argument("--samples", required=True, metavar="DIR[,DIR2,...]",
                   help="one or more --out folders of 'omni sample' (several: the models are compared)")
    c.add_argument("--judgments", required=True, metavar="SPEC",
                   help="who judges: rule:toy (the toy's exact rule), proxy:digits (a PROXY for a person), "
                        "llm:MODEL (an LLM judge; --judge-url), db:PATH or PATH.db (people's answers in the app), or "
                        "FILE.jsonl (judgments written earlier)")
    c.add_argument("--out", required=True, metavar="DIR", help="folder for the results and the report")
    c.add_argument("--per-bin", type=positive_int, default=10, help="representatives judged per bin (rule, proxy, llm)")
    c.add_argument("--bin-width", type=positive_float, help="coarser bins (a whole multiple of the sampling width)")
    c.add_argument("--seed", type=seed_int, default=0, help="seed of the representatives' draw and the intervals")
    c.add_argument("--project", metavar="ID", help="with a store: the omni project (default: the one for these samples)")
    c.add_argument("--question", help="llm: the yes/no question (default: chosen from the model)")
    c.add_argument("--graded", action="store_true",
                   help="llm: ask for a grade in [0, 1] (e.g. [[0.75]]) instead of yes [[1]] or no [[0]]")
    c.add_argument("--boot", type=positive_int, default=1000, help="draws behind the intervals")
    z = c.add_argument_group("output range Z (Sec. 3.3: the paper's curves are computed inside it)")
    z.add_argument("--z-range", type=_z_range, metavar="LO,HI",
                   help="Z itself (default: from the most positive bin with --min-distinct distinct sampled inputs, "
                        "as far as --budget reaches; with several models, the part of Z they share)")
    z.add_argument("--min-distinct", type=positive_int, default=30,
                   help="distinct sampled inputs the most positive bin of Z must hold (the paper: 30)")
    z.add_argument("--budget", type=positive_int, metavar="N",
                   help="judgments you can afford per model: Z covers N / --per-bin bins, and a rule, proxy or LLM "
                        "judges only those (default: every bin to the end of the sampled range)")
    z.add_argument("--normalise", choices=["entire", "cross-model"], default="entire",
                   help="rho behind the recall within Z: entire (Eq. 1, the share of the input space; default) or "
                        "cross-model (Eq. 5-6; two or more models on one input space: each model's inputs in Z are "
                        "fed to the others, so the models are loaded again: built-in and hf models from what omni.json "
                        "records, a model file only when you name it with --model)")
    z.add_argument("--model", action="append", metavar="SPEC",
                   help="--normalise cross-model: the model of each --samples folder, once per folder in the same "
                        "order (a built-in name, hf-lm:DIR / hf-cls:DIR, or a .py / .pkl model file you trust); its "
                        "files must be those omni.json records. Default: the built-in or hf model omni.json names; a "
                        "model file is never loaded from what a results folder says")
    j = c.add_argument_group("LLM judge (--judgments llm:MODEL)")
    j.add_argument("--judge-url", metavar="URL", help="the OpenAI-compatible server, e.g. http://localhost:8000/v1")
    j.add_argument("--judge-key-env", default="OPENAI_API_KEY", metavar="VAR", help="environment variable with the key")
    j.add_argument("--judge-concurrency", type=positive_int, default=4, help="requests in flight at once")
    j.add_argument("--judge-timeout", type=positive_float, default=60.0, help="seconds per request")
    j.add_argument("--db", metavar="PATH", help="a store that caches the judge's answers (default: evalsift.db)")
    c.add_argument("--json", action="store_true", help="print the results' summary as JSON")
    add_device(c)
    add_quiet(c)
    c.set_defaults(handler=cmd_curve)


# ---------------------------------------------------------------------------------------------- sample
def _model_options(args: argparse.Namespace) -> dict[str, Any]:
    return {opt: getattr(args, flag) for flag, opt in MODEL_OPTIONS.items() if getattr(args, flag, None) is not None}


def build_model(spec: str, options: dict[str, Any], quiet: bool | None = None):
    """``(model, space)`` for ``--model`` with the options given; an option the model does not take is
    named in the error."""
    import inspect

    from ..omninput import load_model, omni_models
    from ..omninput.hf import is_hf_spec

    hf_only = [k for k in ("per_token", "positive", "precision") if k in options]
    if is_hf_spec(spec):
        takes = {"length", "vocab", *hf_only}  # what load_hf_model takes from the command line
    elif hf_only:
        flags = ["--" + (k.replace("_", "-") if k != "per_token" or options[k] else "total") for k in hf_only]
        raise ParameterError(f"{', '.join(flags)} applies to hf-lm:DIR / hf-cls:DIR models, not to --model {spec}",
                             field="model")
    elif isinstance(options.get("vocab"), str):
        raise ParameterError(f"--vocab {options['vocab']}: top:N and files of tokens apply to hf-lm:DIR / hf-cls:DIR "
                             f"models; --model {spec} takes a vocabulary size", field="vocab")
    else:
        takes = set(inspect.signature(omni_models.get(spec)).parameters) if spec in omni_models else set(options)
    wrong = [k for k in options if k not in takes]
    if wrong:
        flags = ", ".join("--" + next(f for f, o in MODEL_OPTIONS.items() if o == k).replace("_", "-") for k in wrong)
        raise ParameterError(f"{flags} does not apply to --model {spec}", field="model")
    if "quiet" in takes:
        options = {**options, "quiet": quiet}
    return load_model(spec, **options)


def _sampler_params(args: argparse.Namespace) -> dict[str, Any]:
    from ..omninput import samplers

    cls = samplers.get(args.sampler)
    names = set(cls._param_names())
    given = {k: getattr(args, k) for k in SAMPLER_OPTIONS if getattr(args, k, None) is not None}
    wrong = [k for k in given if k not in names]
    if wrong:
        raise ParameterError(f"{', '.join('--' + k.replace('_', '-') for k in wrong)} does not apply to --sampler "
                             f"{args.sampler}; its parameters: {', '.join(sorted(names))}", field="sampler")
    return given


def cmd_sample(args: argparse.Namespace) -> int:
    """``evalsift omni sample``."""
    from ..device import device_name
    from ..omninput import Interrupted, OmniSamples, make_sampler
    from ..omninput.samplers.checkpoints import CHECKPOINT
    from ..progress import is_quiet

    params = _sampler_params(args)  # checked before any training
    folder = out_dir(args.out, progress=(f"{CHECKPOINT}.npz",))  # an interrupted run keeps its checkpoint
    sampler = make_sampler(args.sampler, **params)
    sampler._validate()
    model, space = build_model(args.model, _model_options(args), quiet=is_quiet())
    sampler.check_model(model)
    print(f"{model.name}: {space!r}; sampler {args.sampler}; device {device_name(getattr(model, 'device', 'cpu'))}",
          file=sys.stderr)
    try:
        samples = sampler.run(model, space, checkpoint=folder, model_spec=args.model)
    except KeyboardInterrupt:
        print(f"interrupted; the run is saved in {folder}: run the same command again to resume it", file=sys.stderr)
        raise
    except Interrupted:  # pragma: no cover - only with stop_at
        raise
    samples.save(folder)
    _sample_notes(samples)
    if args.json:
        print_json({"summary": samples.summary(), **{k: v for k, v in samples.to_dict().items()
                                                      if k not in ("ln_rho", "ln_rho_chains", "counts", "bins")}})
    else:
        print(samples.summary())
        print(f"wrote {folder / 'omni.json'} and {folder / 'candidates.npz'}", file=sys.stderr)
    assert isinstance(samples, OmniSamples)
    return 0


def _sample_notes(samples) -> None:
    from ..omninput.report import sampler_warnings

    for w in sampler_warnings(samples.diagnostics):
        note(w)


# ---------------------------------------------------------------------------------------------- annotate
def default_question(samples) -> str:
    """The yes/no question for a model's representatives."""
    from ..omninput.judge import DEFAULT_QUESTIONS

    info = samples.model.get("info") or {}
    if info.get("designated_class") is not None:
        return f"Is this a handwritten {info['designated_class']}?"
    if info.get("rule"):
        return f"Is it true that {info['rule'].replace('==', 'equals')}?"
    return DEFAULT_QUESTIONS[samples.space.kind]


def cmd_annotate(args: argparse.Namespace) -> int:
    """``evalsift omni annotate``."""
    from ..omninput import OmniSamples, to_pool
    from ..store import Store
    from ..web import Workspace

    samples = OmniSamples.load(args.samples).with_bin_width(args.bin_width)
    reps = samples.representatives(args.per_bin, seed=args.seed)
    pool = to_pool(samples, reps)
    fp = samples.fingerprint()
    name = args.name or f"omni-{samples.model.get('name')}-{fp[:6]}"
    question = (args.question or default_question(samples)).strip()
    meta = ["bin", "z", "x"] + (["image"] if "image" in pool.metadata else [])
    data = {"omni": {"samples": str(Path(args.samples).resolve()), "fingerprint": fp, "per_bin": args.per_bin,
                     "seed": args.seed, "bin_width": samples.bin_width}}
    pid, token = Workspace(Store(args.db)).create_fixed(name, pool, mode="score", systems=pool.systems,
                                                        question=question, overlap=args.overlap,
                                                        lease_seconds=args.lease_seconds, data=data,
                                                        meta_columns=meta, graded=args.graded)
    if args.json:
        print_json({"project": pid, "admin_token": token, "items": pool.n_items, "question": question})
        return 0
    print(f"project {pid} ({name}) in {args.db}: {pool.n_items} inputs ({args.per_bin} per bin, {samples.bins.size} "
          f"bins); question: {question}")
    print(f"admin token (shown once): {token}")
    print(f"next: evalsift annotate add-annotator --db {args.db} --project {shlex.quote(name)} --name NAME   (prints "
          "the person's "
          f"link); evalsift serve --db {args.db}; then evalsift omni curve --samples {args.samples} --judgments "
          f"db:{args.db} --out DIR")
    return 0


# ---------------------------------------------------------------------------------------------- curve
def _judge_spec_kind(spec: str) -> str:
    kind = spec.partition(":")[0]
    if kind in ("rule", "proxy", "llm", "db"):
        return kind
    if spec.endswith(".db") or spec.endswith(".sqlite"):
        return "db"
    if spec.endswith(".jsonl") or spec.endswith(".ndjson"):
        return "file"
    raise ParameterError(f"--judgments {spec!r}: expected rule:NAME, proxy:NAME, llm:MODEL, db:PATH (or PATH.db) or "
                         "FILE.jsonl", field="judgments")


def _llm_judge(args: argparse.Namespace):
    from ..omninput.judge import omni_template_path
    from ..oracle import make_oracle
    from ..store import DEFAULT_DB, Store

    judge = make_oracle(args.judgments, base_url=args.judge_url, key_env=args.judge_key_env,
                        score_template=omni_template_path(graded=args.graded), scale=(0, 1), concurrency=args.judge_concurrency,
                        timeout=args.judge_timeout)
    judge.cache = Store(args.db or DEFAULT_DB).llm_cache()
    return judge


def cmd_curve(args: argparse.Namespace) -> int:
    """``evalsift omni curve``. The samples' sampler warnings, its notes and whatever else it says on the way
    (:func:`~._common.collect_notes`: note() calls, Python warnings) are one list, printed as ``note:`` lines
    and shown in the report's Warnings box (:func:`~evalsift.omninput.report.curve_warnings`)."""
    from ..omninput.report import curve_warnings

    notes: list[str] = []
    with collect_notes(notes):
        results, paths = _curve(args, notes)
    for n in curve_warnings(results):
        note(n)
    if args.json:
        print_json({"models": [{k: c[k] for k in ("model", "aupr", "auroc", "positive_share", "n_judgments")}
                               | {"aupr_interval": c["intervals"].get("aupr"),
                                  "aupr_interval_note": _no_interval(c), "aupr_common": c.get("aupr_common"),
                                  "z_range": c["in_range"]["z_range"], "aupr_log": c["in_range"]["aupr_log"]}
                               for c in results["models"]], "common_recall": results["common_recall"],
                    "aupr_log_comparison": results["aupr_log_comparison"]})
    else:
        _print_curves(results)
    print(f"wrote {paths['json']}, {paths['pr']}, {paths['html']}", file=sys.stderr)
    return 0


def _curve(args: argparse.Namespace, notes: list[str]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The results of ``omni curve`` and the paths of what it wrote; ``notes`` gets what it has to say."""
    from ..omninput import OmniSamples, common_recall_range, omni_curve, pr_curve
    from ..omninput.curves import label_rates, rescaled_axis
    from ..omninput.judge import labels_for, read_judgments_file
    from ..omninput.report import write_curve_report
    from ..report.plots import require_plots
    from ..store import Store

    require_plots("omni curve's report (its figures)")  # before anything is read or written

    kind = _judge_spec_kind(args.judgments)
    folders = [f.strip() for f in args.samples.split(",") if f.strip()]
    if not folders:
        raise ParameterError("--samples needs at least one folder", field="samples")
    all_samples = [OmniSamples.load(f).with_bin_width(args.bin_width) for f in folders]
    names = [str(s.model.get("name")) for s in all_samples]
    if len(set(names)) < len(names):
        names = [f"{n} ({Path(f).name})" for n, f in zip(names, folders)]
        for s, n in zip(all_samples, names):
            s.model["name"] = n
    if args.normalise == "cross-model" and len(all_samples) < 2:
        raise ParameterError("--normalise cross-model compares models: give two or more --samples folders",
                             field="normalise")
    specs = cross_model_specs(args, folders, all_samples)  # every model checked before anything loads or is judged
    out = out_dir(args.out)
    ranges = _output_ranges(args, all_samples, notes)
    judge_info: dict[str, Any] = {"spec": args.judgments, "kind": kind}
    llm = _llm_judge(args) if kind == "llm" else None
    store = None
    if kind == "db":
        path = args.judgments[3:] if args.judgments.startswith("db:") else args.judgments
        if not Path(path).is_file():
            raise DataError(f"--judgments {args.judgments}: no store at {path}", field="judgments")
        store = Store(path)
    file_judgments = read_judgments_file(args.judgments) if kind == "file" else None
    per_model = []
    for s, zr in zip(all_samples, ranges):
        only = s.bins[zr["mask"]].tolist() if args.budget is not None else None
        reps, js, z_known = _judge_one(args, kind, s, llm, store, file_judgments, judge_info, notes, bins=only)
        ids, z, y = labels_for(s, js, z_known)
        if not ids:
            raise DataError(f"{s.model['name']}: no finished judgment to build r(z) from", field="judgments")
        per_model.append((s, reps, ids, z, y, js))
    curves_raw = []
    for s, _, ids, z, y, _ in per_model:
        rates = label_rates(s, z, y)
        if y.sum() > 0 and not rates.interpolated.any():  # recall needs a judged positive and every bin judged
            curves_raw.append(pr_curve(s.ln_rho, rates.r, s.positive))
    common = common_recall_range(curves_raw) if len(curves_raw) > 1 else None
    cross = _cross_model(all_samples, ranges, notes, specs) if args.normalise == "cross-model" else None
    results: dict[str, Any] = {"models": [], "common_recall": list(common) if common else None,
                               "judge": judge_info, "per_bin": args.per_bin, "seed": args.seed, "notes": notes,
                               "normalise": args.normalise, "cross_model": cross,
                               "rescaled_axis": rescaled_axis([p[0] for p in per_model]) if len(per_model) > 1 else None}
    from ..io._common import atomic_file

    with atomic_file(out / "judgments.jsonl") as f:  # whole or not at all
        for p in per_model:
            for j in p[5]:
                f.write(json.dumps(j.to_dict(), ensure_ascii=False) + "\n")
    labels_maps = []
    for k, ((s, reps, ids, z, y, _), folder) in enumerate(zip(per_model, folders)):
        c = omni_curve(s, z, y, n_boot=args.boot, seed=args.seed,
                       common=common if common and common[1] > common[0] else None)
        c["samples"] = {"folder": str(folder), "summary": s.summary(), "sampler": s.sampler,
                        "diagnostics": s.diagnostics, "model": s.model}
        c["in_range"] = _in_range(s, label_rates(s, z, y), ranges[k], cross, k)
        judged = [int(n) for n in c["judged"] if n > 0]
        c["judged_per_bin"] = {"min": min(judged), "max": max(judged), "bins": len(judged)} if judged else None
        results["models"].append(c)
        labels_maps.append(dict(zip(ids, y.tolist())))
        if _no_interval(c):
            notes.append(f"{s.model['name']}: {c['intervals']['none_note']}")
        if float(y.sum()) == 0:
            notes.append(f"{s.model['name']}: no judged input was positive ({len(y)} judged): precision is 0 at every "
                         "threshold by the estimate and recall is undefined; 'precision <=' bounds how much precision "
                         "there could be (judge more per bin to lower it)")
        if c.get("normalised_note"):
            notes.append(f"{s.model['name']}: {c['normalised_note']}")
        if c["in_range"].get("recall_normalised_note"):
            notes.append(f"{s.model['name']}: within Z, {c['in_range']['recall_normalised_note']}")
        if c["interpolated_mass"] > 0.01 and args.budget is None:
            notes.append(f"{s.model['name']}: r(z) is interpolated in bins holding {c['interpolated_mass']:.1%} of the "
                         "input space (no judged input there): judge more per bin")
    results["aupr_log_comparison"] = _compare(results["models"], ranges, notes) if len(per_model) > 1 else None
    if common is not None and common[1] <= common[0]:
        notes.append("the models' recall ranges do not overlap: no AUPR on a common range")
    if kind == "proxy":
        notes.append("the labels come from a PROXY, not from people: " + judge_info.get("note", ""))
    from ..device import device_report

    results["device"] = device_report()  # the models rebuilt for --normalise cross-model, the digits proxy
    paths = write_curve_report(results, out, [p[0] for p in per_model], [p[1] for p in per_model], labels_maps)
    return results, paths


def _output_ranges(args: argparse.Namespace, samples: list, notes: list[str]) -> list[dict[str, Any]]:
    """Each model's output range Z (Sec. 3.3); with several models, the part of Z they share, when they
    share one (the paper compares models on one Z)."""
    from ..omninput.curves import bins_in_range, common_output_range, output_range

    ranges = []
    for s in samples:
        try:
            r = output_range(s, min_distinct=args.min_distinct, budget=args.budget, per_bin=args.per_bin,
                             z_range=args.z_range)
        except DataError as e:  # too few distinct inputs anywhere: Z starts at the most positive bin instead
            r = output_range(s, min_distinct=1, budget=args.budget, per_bin=args.per_bin)
            r["start"] = f"the most positive bin (no bin holds {args.min_distinct} distinct sampled inputs)"
            notes.append(f"{e}; Z starts at the most positive bin instead")
        ranges.append(r)
    if len(samples) < 2:
        return ranges
    if len({s.positive for s in samples}) > 1:
        notes.append("the models do not call the same side of their output positive: each keeps its own Z, and they "
                     "are not compared on log recall")
        return ranges
    shared = common_output_range([r["z"] for r in ranges])
    masks = [bins_in_range(s, shared) for s in samples] if shared else []
    if shared is None or not all(m.any() for m in masks):
        notes.append("the models' output ranges Z do not overlap (" + "; ".join(
            f"{s.model.get('name')}: [{r['z'][0]:.4g}, {r['z'][1]:.4g}]" for s, r in zip(samples, ranges))
            + "): each keeps its own Z and they are not compared on log recall (give --z-range)")
        return ranges
    return [{**r, "z": list(shared), "mask": m, "n_bins": int(m.sum()),
             "start": r["start"] + ("" if r["start"].startswith("given") else "; then the part every model shares"),
             "own_z": r["z"]} for r, m in zip(ranges, masks)]


_NAME_MODELS = ("name each model with --model SPEC, once per --samples folder and in the same order (a built-in "
                "name such as digits-lr, hf-lm:DIR / hf-cls:DIR, or a model file you trust)")


def cross_model_specs(args: argparse.Namespace, folders: list[str], samples: list) -> list[str]:
    """The spec of each samples folder's model for ``--normalise cross-model`` (Eq. 5-6 feeds each model's inputs to
    the others, so the models are loaded again), every one checked before anything loads.

    A model file (a ``.py`` that is imported, a ``.pkl`` that is unpickled) is loaded only when the user names it
    with ``--model``: a spec read from a samples folder's ``omni.json`` is used only when it is a built-in name (the
    code is evalsift's) or ``hf-lm:DIR`` / ``hf-cls:DIR`` (read as data: :mod:`evalsift.hf_folder`). The files of
    the model named (a folder's config, weights and tokenizer; a file's bytes) must have the fingerprint
    ``omni.json`` records, and a built-in name must be the one that made the samples."""
    from ..omninput import omni_models
    from ..omninput.hf import is_hf_spec
    from ..omninput.zoo import files_fingerprint

    given = list(args.model or [])
    if given and args.normalise != "cross-model":
        raise ParameterError("--model applies to --normalise cross-model (the models are fed each other's inputs); "
                             "leave it out", field="model")
    if args.normalise != "cross-model":
        return []
    if given and len(given) != len(folders):
        raise ParameterError(f"--model: given {len(given)} times for {len(folders)} --samples folders; "
                             + _NAME_MODELS, field="model")
    specs = []
    for k, (folder, s) in enumerate(zip(folders, samples)):
        recorded = s.model.get("spec")
        if given:
            spec = given[k]
        elif not recorded:
            raise DataError(f"--normalise cross-model: the samples in {folder} do not say how their model was built "
                            f"(no model spec in omni.json); {_NAME_MODELS}", field="model")
        elif recorded in omni_models or is_hf_spec(recorded):
            spec = recorded
        else:
            raise DataError(f"--normalise cross-model: the samples in {folder} were made by the model file "
                            f"{recorded!r}, and evalsift does not load a model file that a results folder names "
                            "(importing a .py or unpickling a .pkl runs whatever it holds). If you trust that file, "
                            f"{_NAME_MODELS}, e.g. --model {shlex.quote(str(recorded))} for {folder}", field="model")
        if spec in omni_models:
            if spec != recorded:
                raise DataError(f"--model {spec}: the samples in {folder} were made by "
                                f"{recorded or s.model.get('name')!r}, not by the built-in {spec}; give the model "
                                "that made them", field="model")
        else:
            want, got = s.model.get("files"), files_fingerprint(spec)  # reads files, loads nothing
            if want and got != want:
                raise DataError(f"--model {spec}: its files are not those that made the samples in {folder} "
                                f"(fingerprint {got}; omni.json records {want}); give the model that was sampled",
                                field="model")
        specs.append(spec)
    return specs


def _rebuild_model(samples, spec: str):
    """The model that made ``samples``, loaded from ``spec`` (checked by :func:`cross_model_specs`) with the options
    the samples record; refused when it is not the model that was sampled (the weights' fingerprint)."""
    import inspect

    from ..omninput import load_model, omni_models
    from ..omninput.hf import is_hf_spec

    name = samples.model.get("name")
    info = samples.model.get("info") or {}
    options: dict[str, Any] = {}
    if spec in omni_models:
        # info's "data" is the training text's hash, not a folder: the data comes from $EVALSIFT_DATA, and the
        # fingerprint below says whether it is the text the model was trained on
        takes = set(inspect.signature(omni_models.get(spec)).parameters) - {"quiet", "data", "device"}
        options = {k: info[k] for k in takes if k in info}
    elif is_hf_spec(spec):
        options = {"length": info.get("length"), "vocab": info.get("token_ids"), "precision": info.get("precision"),
                   **({"positive": info["label"]} if "label" in info else {})}
        if str(spec).startswith("hf-lm:"):  # what the samples scored (before the per-token default: the total)
            options["per_token"] = bool(info.get("per_token", False))
    elif str(spec).endswith((".joblib", ".pkl", ".pickle")):
        options = {"positions": samples.space.n_positions, "values": samples.space.n_values}
    model, _ = load_model(spec, **options)
    want = samples.model.get("fingerprint")
    got = model.fingerprint() if hasattr(model, "fingerprint") else None
    if want and got and want != got:
        raise DataError(f"--normalise cross-model: rebuilding {name} from {spec!r} gave a different model than the one "
                        "sampled (fingerprints differ); the model file or its training changed since", field="normalise")
    return model


def _cross_model(samples: list, ranges: list[dict[str, Any]], notes: list[str], specs: list[str]
                 ) -> dict[str, Any] | None:
    from ..omninput.curves import cross_model_normalisation

    if len({tuple(r["z"]) for r in ranges}) > 1:
        notes.append("--normalise cross-model needs one Z for all models and they share none: entire-distribution "
                     "normalisation used instead")
        return None
    out = cross_model_normalisation(samples, [_rebuild_model(s, spec) for s, spec in zip(samples, specs)],
                                    ranges[0]["z"])
    for m in out["models"]:
        if m.get("note"):
            notes.append(m["note"] + "; entire-distribution normalisation used instead")
            return None
    return out


def _in_range(s, rates, zr: dict[str, Any], cross: dict[str, Any] | None, k: int) -> dict[str, Any]:
    """Precision and unnormalised recall within Z for one model (the paper's curve), with its AUPR on log recall."""
    import numpy as np

    from ..omninput.curves import aupr_log, range_curve

    ln = None
    how = "entire (Eq. 1): rho as the share of the input space"
    if cross is not None:
        ln = np.full(s.bins.size, -np.inf)
        ln[zr["mask"]] = cross["models"][k]["ln_rho_hat"]
        how = "cross-model (Eq. 5-6): rho over Z divided by the sampled count in X"
    rc = range_curve(s, rates.r, zr["mask"], ln, rates.interpolated)
    return {"z_range": [float(v) for v in zr["z"]], "n_bins": zr["n_bins"], "start": zr["start"], "end": zr["end"],
            "own_z_range": zr.get("own_z"), "normalisation": how, **rc,
            "aupr_log": aupr_log(np.asarray(rc["recall"]), np.asarray(rc["precision"]))
            if np.sum(np.asarray(rc["recall"]) > 0) >= 2 else None,  # fewer than 2 points of positive recall: no area
            "aupr_log_note": "area under precision over log10(unnormalised recall), the curve's own range within Z"}


def _compare(curves: list[dict[str, Any]], ranges: list[dict[str, Any]], notes: list[str]) -> dict[str, Any] | None:
    from ..omninput.curves import aupr_log_ratios

    if len({tuple(r["z"]) for r in ranges}) > 1:
        return None
    out = aupr_log_ratios([c["in_range"] for c in curves], [c["model"] for c in curves])
    if out is None:
        notes.append("no AUPR ratio: the models' log-recall ranges within Z do not overlap, or the first model has no "
                     "precision there")
    return out


def _judge_one(args: argparse.Namespace, kind: str, s, llm, store, file_judgments, judge_info: dict,
               notes: list[str], bins: list[int] | None = None):
    """``(representatives, judgments, z by item id or None)`` of one model's samples, from the judge of
    ``--judgments`` (``judge_info`` and ``notes`` get what the report says about it); ``bins``: judge only these."""
    from ..omninput import make_labeler
    from ..omninput.judge import judge_with_labeler, judge_with_llm, judgments_from_store

    reps = s.representatives(args.per_bin, seed=args.seed, bins=bins)
    if kind in ("rule", "proxy"):
        lab = make_labeler(args.judgments, model=str(s.model.get("name")), info=s.model.get("info") or {})
        judge_info["note"] = lab.note
        return reps, judge_with_labeler(s, reps, lab), None
    if kind == "llm":
        question = args.question or default_question(s)
        js = judge_with_llm(s, reps, llm, question)
        judge_info.update(note=f"an LLM judge ({llm.model}) asked: {question}", question=question)
        errors = [j for j in js if j.status == "error"]
        if errors:
            notes.append(f"{s.model['name']}: the judge gave no answer for {len(errors)} of {len(js)} inputs (first: "
                         f"{errors[0].detail.get('reason')}); they are left out")
        return reps, js, None
    if kind == "db":
        js, project = judgments_from_store(store, s, args.project)
        judge_info.update(note=f"people's answers in project {project.id} ({project.name}): "
                               f"{project.settings.get('question')}", project=project.id)
        reps = _project_reps(store, project.id, s)  # the inputs the project showed
        return reps, js, dict(zip(reps.ids, reps.z.tolist()))
    judge_info["note"] = f"judgments read from {args.judgments}"
    return reps, file_judgments, None


def _project_reps(store, project_id: int, samples):
    """The inputs a project showed (its items' stored x, z and bin), as Representatives."""
    import numpy as np

    from ..omninput.samples import Representatives

    items = store.items(project_id)
    x = np.array([json.loads(r["meta"]["x"]) for r in items], dtype=samples.space.dtype) if items else \
        np.zeros((0, samples.space.n_positions), dtype=samples.space.dtype)
    z = np.array([float(r["meta"]["z"]) for r in items])
    b = np.floor(z / samples.bin_width).astype(np.int64)
    return Representatives([r["item_id"] for r in items], x, z, b)


def _num(v, spec: str) -> str:
    width = int(spec.split(".")[0])
    return "-".rjust(width) if v is None else format(v, spec)


def _no_interval(curve: dict) -> str | None:
    """'no interval (one label per bin)' when the AUPR has no bootstrap interval for that reason, else None."""
    why = (curve.get("intervals") or {}).get("none")
    return f"no interval ({why})" if why and curve.get("aupr") is not None else None


def _print_curves(results: dict) -> None:
    print(f"judge: {results['judge']['spec']} ({results['judge']['kind']})")
    print("  within the output range Z (Sec. 3.3; recall unnormalised, Eq. 4):")
    print(f"  {'model':<24} {'Z':>20} {'bins':>5} {'AUPR (log10 recall)':>20} {'precision at Z end':>18}")
    for c in results["models"]:
        k = c["in_range"]
        zr = f"[{k['z_range'][0]:.4g}, {k['z_range'][1]:.4g}]"
        print(f"  {c['model']:<24} {zr:>20} {k['n_bins']:5d} {_num(k['aupr_log'], '20.4f')} {k['precision'][-1]:18.4f}")
    cmp_ = results.get("aupr_log_comparison")
    if cmp_:
        lo, hi = cmp_["log10_recall_range"]
        for name, v in cmp_["ratio"].items():
            print(f"  ratio of AUPRs on log10 recall [{lo:.3f}, {hi:.3f}]: {name} / {cmp_['reference']} = {v:.4f}")
    print("  over the whole sampled range (ours: recall normalised by the estimated total of positives):")
    print(f"  {'model':<24} {'AUPR':>7} {'95% interval':>18} {'AUPR common':>11} {'AUROC':>7} {'precision <=':>12} "
          f"{'pos. share':>10} {'judged':>6}")
    for c in results["models"]:
        iv = c["intervals"].get("aupr")
        ac = c.get("aupr_common")
        ivs = (_no_interval(c) or "-") if iv is None else f"[{iv[0]:.4f}, {iv[1]:.4f}]"
        print(f"  {c['model']:<24} {_num(c['aupr'], '7.4f')} {ivs:>18} "
              f"{'-' if ac is None else f'{ac:.4f}':>11} {_num(c['auroc'], '7.4f')} "
              f"{max(c['bands']['precision_hi']):12.4f} {_num(c['positive_share'], '10.3g')} {c['n_judgments']:6d}")
    print("  AUPR: r = mean score per bin, 95% interval by bootstrapping the judged labels within each bin; "
          "'precision <=': the largest precision at any threshold consistent with the judgments (simultaneous 95%, "
          "allowing for positives in bins judged all no). Both assume the judged inputs are uniform within their bins "
          "and rho is exact; '-': not given (a bin nobody judged, or no judged positive)")
    if results.get("common_recall"):
        lo, hi = results["common_recall"]
        print(f"  common recall range: [{lo:.3f}, {hi:.3f}]")
