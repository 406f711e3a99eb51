"""Writers of four evaluation tools' published file layouts, for the tests, the docs' examples
(``tests/test_docs_examples.py``) and ``benchmarks/io/helm_memory.py``.

None imports the tool (HELM, RewardBench, Every Eval Ever and Arena-Hard-Auto are not installed here); each writes
the files the way the tool's own writer does, read from the tool's source:

- HELM (stanford-crfm/helm): ``benchmark/runner.py`` (``Runner.run_one`` writes ``run_spec.json``,
  ``scenario_state.json``, ``stats.json``, ``per_instance_stats.json`` as ``json.dumps(asdict_without_nones(...),
  indent=2)``), ``metrics/statistic.py`` (``Stat``: count, sum, sum_squared, min, max, mean, population variance,
  stddev), ``metrics/metric.py`` (``PerInstanceStats``; ``Metric.evaluate``: per train trial, the instances'
  stats merged by ``MetricName`` (name, split, sub_split, perturbation), then each trial's mean merged into
  the run's stat: ``stats.json``'s ``count`` is the number of trials and its ``mean`` the mean of the trial
  means), ``metrics/metric_name.py``, ``scenarios/scenario.py`` (``Instance``, ``Reference``),
  ``adaptation/request_state.py``, ``run_spec.py``, ``run_expander.py`` (run names ``<scenario>:<args>,model=<org>_<name>``).
- RewardBench (allenai/reward-bench): ``scripts/run_rm.py`` / ``run_generative.py`` (the scored dataset's
  ``to_dict()`` plus ``model``, ``model_type``, ``chat_template``; the per-subset ``num_correct / num_total``
  in ``results_grouped``), ``rewardbench/utils.py`` (``save_to_hub``: ``json.dumps(indent=4, sort_keys=True)``
  to ``results/<eval-set-scores|eval-set>/<model>.json``).
- Every Eval Ever (evaleval/every_eval_ever): ``schemas/instance_level_eval.schema.json`` and
  ``schemas/eval.schema.json`` (0.3.0), ``converters/*/instance_level_adapter.py`` (one ``json.dumps`` line per
  record, ``<uuid>_samples.jsonl`` beside ``<uuid>.json`` in ``data/<collection>/<developer>/<model>/``).
- Arena-Hard-Auto (lmarena/arena-hard-auto), v2.0, as its ``gen_judgment.py`` / ``gen_answer.py`` write them:
  ``data/<bench>/model_judgment/<judge>/<model>.jsonl`` (``{uid, category, judge, model, baseline, games:
  [{score, judgment, prompt}]}``), ``model_answer/<model>.jsonl`` (``messages`` and ``metadata``: token_len,
  header, list and bold counts) and ``question.jsonl``; :func:`arena_hard_world` draws the labels of a judge that
  favours assistant A and long answers.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

# ============================================================================================== HELM
MISSING = object()  #: a value callback's answer for "this metric wrote no stat for this instance"


def helm_stat(name: str, value: float | bool | None, *, split: str | None = "test", sub_split: str | None = None,
              perturbation: dict[str, Any] | None = None) -> dict[str, Any]:
    """``asdict_without_nones(Stat(MetricName(...)).add(value))``: one value, or none (``value=None``: count 0)."""
    mname: dict[str, Any] = {"name": name}
    for k, v in (("split", split), ("sub_split", sub_split), ("perturbation", perturbation)):
        if v is not None:
            mname[k] = v
    if value is None:
        return {"name": mname, "count": 0, "sum": 0, "sum_squared": 0}
    x = (1 if value else 0) if isinstance(value, bool) else value
    return {"name": mname, "count": 1, "sum": x, "sum_squared": x * x, "min": x, "max": x, "mean": x / 1,
            "variance": 0.0, "stddev": 0.0}


def _merge(into: dict[str, Any], other: dict[str, Any]) -> None:
    """``Stat.merge``: sums, counts, min, max, then mean and population variance from them."""
    into["sum"] += other["sum"]
    into["sum_squared"] += other["sum_squared"]
    for k, f in (("min", min), ("max", max)):
        if other.get(k) is not None:
            into[k] = f(into[k], other[k]) if into.get(k) is not None else other[k]
    into["count"] += other["count"]
    if into["count"]:
        into["mean"] = into["sum"] / into["count"]
        pvar = into["sum_squared"] / into["count"] - into["mean"] ** 2
        into["variance"] = 0 if pvar < 0 else pvar
        into["stddev"] = math.sqrt(into["variance"])


def _empty(name: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "count": 0, "sum": 0, "sum_squared": 0}


def _key(name: dict[str, Any]) -> str:
    return json.dumps(name, sort_keys=True)


def write_json_list(path: Path, entries: Iterable[Any]) -> int:
    """Write ``entries`` as ``json.dumps(list(entries), indent=2)`` would, one entry at a time (never the whole
    list in memory); the number of bytes written."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        first = True
        for e in entries:
            text = json.dumps(e, indent=2).replace("\n", "\n  ")
            chunk = ("[\n  " if first else ",\n  ") + text
            f.write(chunk)
            n += len(chunk)
            first = False
        tail = "[]" if first else "\n]"
        f.write(tail)
        n += len(tail)
    return n


def helm_run_name(scenario: str, args: dict[str, Any], model: str) -> str:
    """``<scenario>:<k>=<v>,...,model=<org>_<name>`` (``RunExpander``: ``/`` in values sanitised to ``_``)."""
    parts = [f"{k}={v}" for k, v in args.items()] + [f"model={model.replace('/', '_')}"]
    return f"{scenario}:{','.join(parts)}"


def write_helm_run(runs_dir: Path, *, scenario: str, args: dict[str, Any], model: str,
                   instances: Sequence[dict[str, Any]],
                   value: Callable[[int, int, str], Any],
                   metric_groups: Sequence[Sequence[str]],
                   num_train_trials: int = 1, method: str = "generation", deployment: str | None = None,
                   completion: Callable[[int, int], str] | None = None,
                   choices: bool = False, with_spec: bool = True, with_state: bool = True) -> Path:
    """One HELM run folder under ``runs_dir`` (a suite folder), as ``Runner.run_one`` writes it; its path.

    ``instances``: ``{id, text, references: [(text, correct)], split, sub_split?, perturbation?}``;
    ``value(i, trial, metric)`` gives instance ``i``'s value of ``metric`` in a train trial (None: a stat with
    no value; :data:`MISSING`: no stat). ``metric_groups``: the metrics each HELM ``Metric`` of the run computes,
    in order (each writes its own PerInstanceStats, as the runner concatenates them). ``completion(i, trial)``:
    the model's text; ``choices``: multiple-choice joint (letters A, B, ... mapped to the references' texts).
    """
    name = helm_run_name(scenario, args, model)
    folder = runs_dir / name.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    adapter = {"method": method, "max_train_instances": 5, "num_outputs": 1, "num_train_trials": num_train_trials,
               "num_trials": 1, "model_deployment": deployment or f"huggingface/{model.split('/')[-1]}",
               "model": model, "temperature": 0.0, "max_tokens": 5, "stop_sequences": ["\n"]}
    if with_spec:
        spec = {"name": name, "scenario_spec": {"class_name": f"helm.benchmark.scenarios.{scenario}_scenario.Scenario",
                                               "args": dict(args)},
                "adapter_spec": adapter,
                "metric_specs": [{"class_name": f"helm.benchmark.metrics.group{g}.Metric", "args": {}}
                                 for g in range(len(metric_groups))],
                "data_augmenter_spec": {"perturbation_specs": [], "should_augment_eval_instances": False},
                "groups": [scenario]}
        (folder / "run_spec.json").write_text(json.dumps(spec, indent=2))

    def instance_dict(inst: dict[str, Any]) -> dict[str, Any]:
        d: dict[str, Any] = {"input": {"text": inst["text"]},
                             "references": [{"output": {"text": t}, "tags": ["correct"] if ok else []}
                                            for t, ok in inst["references"]],
                             "split": inst["split"]}
        if inst.get("sub_split") is not None:
            d["sub_split"] = inst["sub_split"]
        d["id"] = inst["id"]
        if inst.get("perturbation") is not None:
            d["perturbation"] = inst["perturbation"]
        return d

    pis: list[dict[str, Any]] = []
    stats: list[dict[str, Any]] = []
    for group in metric_groups:  # one HELM Metric.evaluate per group
        global_stats: dict[str, dict[str, Any]] = {}
        for trial in range(num_train_trials):
            trial_stats: dict[str, dict[str, Any]] = {}
            for i, inst in enumerate(instances):
                got = []
                for metric in group:
                    v = value(i, trial, metric)
                    if v is MISSING:
                        continue
                    got.append(helm_stat(metric, v, split=inst["split"], sub_split=inst.get("sub_split"),
                                         perturbation=inst.get("perturbation")))
                for st in got:
                    k = _key(st["name"])
                    if k not in trial_stats:
                        trial_stats[k] = dict(st)
                    else:
                        _merge(trial_stats[k], st)
                if got:
                    entry: dict[str, Any] = {"instance_id": inst["id"]}
                    if inst.get("perturbation") is not None:
                        entry["perturbation"] = inst["perturbation"]
                    entry["train_trial_index"] = trial
                    entry["stats"] = got
                    pis.append(entry)
            for k, st in trial_stats.items():  # Stat.take_mean per trial, merged into the run's stat (merge_stat)
                if not st["count"]:  # take_mean of an empty stat is the stat itself
                    global_stats.setdefault(k, _empty(st["name"]))
                    continue
                m = st["mean"]
                taken = {"name": st["name"], "count": 1, "sum": m, "sum_squared": m * m, "min": m, "max": m,
                         "mean": m, "variance": 0.0, "stddev": 0.0}
                if k not in global_stats:
                    global_stats[k] = taken
                else:
                    _merge(global_stats[k], taken)
        stats.extend(global_stats.values())
    (folder / "stats.json").write_text(json.dumps(stats, indent=2))
    write_json_list(folder / "per_instance_stats.json", pis)
    if with_state:
        states = []
        for trial in range(num_train_trials):
            for i, inst in enumerate(instances):
                text = completion(i, trial) if completion else f"answer {i}"
                rs: dict[str, Any] = {"instance": instance_dict(inst), "train_trial_index": trial}
                if choices:
                    rs["output_mapping"] = {chr(65 + j): t for j, (t, _) in enumerate(inst["references"])}
                rs["request"] = {"model_deployment": adapter["model_deployment"], "model": model, "embedding": False,
                                 "prompt": f"Few-shot examples ...\n{inst['text']}\nAnswer:", "temperature": 0.0,
                                 "num_completions": 1, "max_tokens": 5, "stop_sequences": ["\n"]}
                token = {"text": text, "logprob": -0.5}
                rs["result"] = {"success": True, "embedding": [],
                                "completions": [{"text": text, "logprob": -0.5, "tokens": [token]}],
                                "cached": False, "request_time": 0.1}
                rs["num_train_instances"] = 5
                rs["prompt_truncated"] = False
                rs["num_conditioning_tokens"] = 0
                states.append(rs)
        (folder / "scenario_state.json").write_text(json.dumps({"adapter_spec": adapter, "request_states": states},
                                                               indent=2))
    return folder


def helm_expected_means(run: Path) -> dict[tuple[str, str | None, str | None, str | None], float | None]:
    """``stats.json`` of a run as ``(name, split, sub_split, perturbation name) -> mean`` (None: count 0)."""
    out = {}
    for st in json.loads((run / "stats.json").read_text()):
        n = st["name"]
        p = n.get("perturbation")
        out[(n["name"], n.get("split"), n.get("sub_split"), p["name"] if p else None)] = st.get("mean")
    return out


# ============================================================================================== RewardBench
def write_rewardbench(root: Path, model: str, rows: Sequence[dict[str, Any]], *, model_type: str = "Seq. Classifier",
                      chat_template: str | None = "tulu", ids: bool = True, scores: bool = True,
                      aggregate: bool = True) -> Path:
    """``<root>/eval-set-scores/<model>.json`` as ``run_rm.py`` saves it (and ``<root>/eval-set/<model>.json``, the
    per-subset accuracies, with ``aggregate``); the scores file's path.

    ``rows``: ``{subset, id, result, chosen, rejected, text_chosen, text_rejected}`` per prompt (``scores=False``:
    a generative judge's file, no ``scores_*`` columns; ``ids=False``: ``run_dpo.py``'s file, no ``id`` column)."""
    cols: dict[str, Any] = {"text_chosen": [r.get("text_chosen", "") for r in rows],
                            "text_rejected": [r.get("text_rejected", "") for r in rows],
                            "results": [r["result"] for r in rows], "subset": [r["subset"] for r in rows]}
    if ids:
        cols["id"] = [r["id"] for r in rows]
    if scores:
        cols["scores_chosen"] = [r["chosen"] for r in rows]
        cols["scores_rejected"] = [r["rejected"] for r in rows]
    cols["model"] = model
    cols["model_type"] = model_type
    cols["chat_template"] = chat_template
    path = root / "eval-set-scores" / f"{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cols, indent=4, sort_keys=True))
    if aggregate:
        grouped: dict[str, Any] = {"model": model, "model_type": model_type, "chat_template": chat_template}
        for sub in sorted({r["subset"] for r in rows}):  # np.unique order
            res = [r["result"] for r in rows if r["subset"] == sub]
            grouped[sub] = sum(res) / len(res)
        agg = root / "eval-set" / f"{model}.json"
        agg.parent.mkdir(parents=True, exist_ok=True)
        agg.write_text(json.dumps(grouped, indent=4, sort_keys=True))
    return path


# ============================================================================================== Every Eval Ever
SCHEMA_VERSION = "0.3.0"


def eee_uuid(seed: int) -> str:
    """A UUIDv4 (the publisher refuses any other), drawn from ``seed``."""
    return str(uuid.UUID(int=random.Random(seed).getrandbits(128), version=4))


def eee_sample(*, evaluation_id: str, model_id: str, evaluation_name: str, sample_id: str, score: float,
               is_correct: bool, raw: str, reference: Sequence[str], output: str | None = None,
               evaluation_result_id: str | None = None, metadata: dict[str, str] | None = None,
               token_usage: dict[str, int] | None = None, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One ``InstanceLevelEvaluationLog`` line as ``model_dump(mode='json')`` gives it (fields in schema order)."""
    rec: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id, "model_id": model_id,
                           "evaluation_name": evaluation_name, "evaluation_result_id": evaluation_result_id,
                           "sample_id": sample_id, "sample_hash": None,
                           "interaction_type": "single_turn" if messages is None else "multi_turn",
                           "input": {"raw": raw, "formatted": None, "reference": list(reference), "choices": None},
                           "output": {"raw": [output or ""], "reasoning_trace": None} if messages is None else None,
                           "messages": messages,
                           "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": output or "",
                                                   "extraction_method": "exact_match", "is_terminal": True}],
                           "evaluation": {"score": score, "is_correct": is_correct, "num_turns": None,
                                          "tool_calls_count": None},
                           "token_usage": ({**token_usage, "input_tokens_cache_write": None,
                                            "input_tokens_cache_read": None, "reasoning_tokens": None}
                                           if token_usage else None),
                           "performance": None, "error": None, "metadata": metadata}
    return rec


def write_every_eval(root: Path, *, model_id: str, collection: str, samples: Sequence[dict[str, Any]],
                     results: Sequence[dict[str, Any]], seed: int, evaluation_id: str,
                     library: tuple[str, str] = ("lm_eval", "0.4.13")) -> tuple[Path, Path]:
    """``root/data/<collection>/<developer>/<model>/<uuid>.json`` (the aggregate ``EvaluationLog`` with ``results``
    as its ``evaluation_results``) and ``<uuid>_samples.jsonl`` beside it (one line per sample record); both paths."""
    developer, _, name = model_id.partition("/")
    folder = root / "data" / collection / developer / name
    folder.mkdir(parents=True, exist_ok=True)
    file_uuid = eee_uuid(seed)
    samples_path = folder / f"{file_uuid}_samples.jsonl"
    text = "\n".join(json.dumps(s, ensure_ascii=False, allow_nan=False) for s in samples)
    samples_path.write_text(text + "\n", encoding="utf-8")
    agg = {"schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id, "retrieved_timestamp": "1760000000",
           "source_metadata": {"source_name": "local run", "source_type": "evaluation_run",
                               "source_organization_name": "evalsift tests", "evaluator_relationship": "third_party"},
           "eval_library": {"name": library[0], "version": library[1]},
           "model_info": {"name": name, "id": model_id, "developer": developer},
           "evaluation_results": list(results),
           "detailed_evaluation_results": {"format": "jsonl",
                                           "file_path": f"data/{collection}/{developer}/{name}/{samples_path.name}",
                                           "hash_algorithm": "sha256", "checksum": "0" * 64,
                                           "total_rows": len(samples)}}
    agg_path = folder / f"{file_uuid}.json"
    agg_path.write_text(json.dumps(agg, indent=2))
    return agg_path, samples_path


def eee_result(evaluation_name: str, score: float, *, evaluation_result_id: str | None = None,
               metric_id: str | None = None, description: str | None = None, n: int | None = None) -> dict[str, Any]:
    """One aggregate ``EvaluationResult`` (``score_details.score`` the tool's aggregate)."""
    cfg: dict[str, Any] = {"evaluation_description": description or evaluation_name, "lower_is_better": False,
                           "score_type": "continuous", "min_score": 0.0, "max_score": 1.0}
    if metric_id:
        cfg["metric_id"] = metric_id
    res: dict[str, Any] = {"evaluation_name": evaluation_name,
                           "source_data": {"dataset_name": evaluation_name, "source_type": "hf_dataset"},
                           "metric_config": cfg, "score_details": {"score": score}}
    if evaluation_result_id:
        res = {"evaluation_result_id": evaluation_result_id, **res}
    if n is not None:
        res["score_details"]["uncertainty"] = {"num_samples": n}
    return res


# ============================================================================================== Arena-Hard-Auto
AH_BASELINE = "o3-mini-2025-01-31"  #: v2.0's default baseline of its hard_prompt category
AH_JUDGE = "gpt-4.1"  #: v2.0's default judge (show_result.py --judge-names)


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """One ``json.dumps`` line per row (the parent folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def arena_hard_meta(tokens: int, headers: int, lists: int, bold: int) -> dict[str, Any]:
    """Arena-Hard's answer metadata, in gen_answer.py's key order (show_result.py reads them in that order)."""
    return {"token_len": tokens, "header_count": {"h1": headers, "h2": 0, "h3": 0, "h4": 0, "h5": 0, "h6": 0},
            "list_count": {"ordered": lists, "unordered": 0}, "bold_count": {"**": bold, "__": 0}}


def arena_hard_world(n_models: int = 4, n_q: int = 120, seed: int = 0, *, baseline: str = AH_BASELINE,
                     names: Sequence[str] | None = None):
    """Labels of a judge that favours assistant A and long answers, and every answer's metadata:
    ``(models, uids, md, labels)`` with ``md[(system, uid)]`` the answer's metadata and ``labels[(model, uid)]``
    the two games' labels. ``names``: the models' names (default ``m0``, ``m1``, ...), weakest first."""
    import numpy as np

    rng = np.random.default_rng(seed)
    models = list(names) if names is not None else [f"m{k}" for k in range(n_models)]
    strength = dict(zip(models, np.linspace(-1.0, 1.0, len(models))))
    uids = [f"{k:04x}q" for k in range(n_q)]
    md = {}
    for s in [baseline] + models:
        for u in uids:
            md[(s, u)] = arena_hard_meta(int(rng.integers(50, 800)), int(rng.poisson(1)), int(rng.poisson(2)),
                                         int(rng.poisson(1.5)))
    labels = {}
    for m in models:
        for u in uids:
            adv = strength[m] + 0.8 * math.tanh((md[(m, u)]["token_len"] - md[(baseline, u)]["token_len"]) / 300)
            games = []
            for g in (1, 2):
                x = (-adv if g == 1 else adv) + 0.4 + rng.logistic(0, 0.7)
                games.append("A>>B" if x > 1.5 else "A>B" if x > 0.3 else "A=B" if x > -0.3 else
                             "B>A" if x > -1.5 else "B>>A")
            labels[(m, u)] = games
    return models, uids, md, labels


def write_arena_hard_v2(root: Path, models, uids, md, labels, nulls=(), *, baseline: str = AH_BASELINE,
                        judge: str = AH_JUDGE) -> Path:
    """``root/data/arena-hard-v2.0/``: ``model_judgment/<judge>/<model>.jsonl`` (``nulls``: the ``(model, uid,
    game)`` whose label is null), ``model_answer/<system>.jsonl`` for the baseline and every model, and
    ``question.jsonl``; the benchmark folder."""
    bench = root / "data" / "arena-hard-v2.0"
    for m in models:
        rows = []
        for u in uids:
            games = [{"score": None if (m, u, g) in nulls else lab, "judgment": {"answer": f"[[{lab}]]"},
                      "prompt": []} for g, lab in enumerate(labels[(m, u)], 1)]
            rows.append({"uid": u, "category": "hard_prompt", "judge": judge, "model": m, "baseline": baseline,
                         "games": games})
        write_jsonl(bench / "model_judgment" / judge / f"{m}.jsonl", rows)
    for s in [baseline] + list(models):
        write_jsonl(bench / "model_answer" / f"{s}.jsonl", [
            {"uid": u, "ans_id": "x", "model": s, "messages": [{"role": "user", "content": f"Q {u}"}, {
                "role": "assistant", "content": {"answer": f"answer of {s} to {u}"}}], "tstamp": 0,
             "metadata": md[(s, u)]} for u in uids])
    write_jsonl(bench / "question.jsonl", [{"uid": u, "category": "hard_prompt", "prompt": f"Q {u}"} for u in uids])
    return bench
