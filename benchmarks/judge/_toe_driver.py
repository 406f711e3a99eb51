"""Run Trust or Escalate's own calibration code on given confidences and splits (for benchmarks/judge/selective_arena.py).

    TOE_PYTHON benchmarks/judge/_toe_driver.py TOE_SRC JOB.json OUT.json

Runs in the peer's own environment (a venv with numpy, scipy, torch: /tmp/toe-venv), never in evalsift's, and
imports the peer's code from ``TOE_SRC`` (jaehunjung1/cascaded-selective-evaluation) unmodified: their
``CascadedClassifier`` (cascaded_evaluation/cascaded_classifier.py), whose ``calibrate`` runs their
``SelectiveClassificationUtil.lambda_hat`` (cascaded_evaluation/util.py), and their ``apply_decision_rule`` on the
test items. Their module also imports the model clients (``model.openai_model``, ``model.vllm_model``) and
``ipdb`` at the top; calibration never touches them, so empty stand-in modules are put in their place (vLLM needs a
GPU and cannot be installed here).

JOB: ``{"levels": [0.8, ...], "risk": 0.1, "splits": [[calibration positions], ...], "sets": {name: {"probs":
[[p_a, p_b], ...], "labels": [0 (a) or 1 (b), ...]}}}``. Items are handed over in their format: ``instruction`` the
position, ``outputs`` a pair of placeholders, ``preferences`` one annotator's label (1 = A, 2 = B), ``probs``.
OUT: per set and level, per split ``{"answered_test": [bool per test item, in position order], "lambda": ...,
"fallback": bool}`` -- ``fallback`` when no threshold passed their test (their code then returns its highest
threshold, or 0 for an empty grid, and answers at it anyway).
"""

import json
import sys
import types


def stand_ins():
    for name in ("ipdb", "model", "model.openai_model", "model.vllm_model"):
        mod = types.ModuleType(name)
        mod.__path__ = []  # a package, so "model.x" resolves
        sys.modules.setdefault(name, mod)
    sys.modules["model.openai_model"].OpenAIModel = None
    sys.modules["model.vllm_model"].VLLMModel = None


def main(src: str, job_path: str, out_path: str) -> None:
    sys.path.insert(0, src)
    stand_ins()
    import torch
    from cascaded_evaluation.cascaded_classifier import CascadedClassifier
    from cascaded_evaluation.util import SelectiveClassificationUtil, merge_data, prepare_data

    job = json.load(open(job_path))
    out = {}
    for name, s in job["sets"].items():
        probs, labels = s["probs"], s["labels"]
        samples = [{"instruction": str(k), "outputs": ["A", "B"], "preferences": {"human": labels[k] + 1},
                    "probs": probs[k]} for k in range(len(probs))]
        out[name] = {}
        for level in job["levels"]:
            alpha, delta = 1 - level, job["risk"]
            rows = []
            for cal in job["splits"]:
                cal_set = set(cal)
                cal_samples = [samples[k] for k in sorted(cal_set)]
                test_samples = [samples[k] for k in range(len(samples)) if k not in cal_set]
                clf = CascadedClassifier([name], {name: cal_samples}, alpha=alpha, delta=delta)
                lam = float(clf.lambda_hats[0])
                _, _, _, evaluators = clf.apply_decision_rule({name: test_samples}, [name])
                # did any threshold pass their own test? (their lambda_hat's first check, redone)
                phats, yhats, y = prepare_data(merge_data({name: cal_samples}, [name]), [name])
                util = SelectiveClassificationUtil(phats[name], yhats[name], y, delta)
                fallback = len(util.lambdas) == 0 or bool(util.selective_risk_upper_bound(util.lambdas[-1]) > alpha)
                rows.append({"answered_test": (evaluators >= 0).tolist(), "lambda": lam, "fallback": fallback})
            out[name][str(level)] = rows
            print(f"{name} {level}: {len(rows)} splits", file=sys.stderr, flush=True)
    json.dump(out, open(out_path, "w"))
    del torch


if __name__ == "__main__":
    main(*sys.argv[1:4])
