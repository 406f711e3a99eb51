"""Judging representative inputs: r(z) needs a score in [0, 1] from some judge for each shown input --
1 for yes, 0 for no, or a grade in between (the paper's annotators graded from 0 to 1).

Judges, by the spec ``omni curve --judgments`` takes:

- ``rule:NAME`` -- a function of the input that *is* the ground truth (``rule:toy``: the digits sum to a
  multiple of 30). Registry ``labelers``, decorator ``@labeler``.
- ``proxy:NAME`` -- a function standing in for a person, clearly labelled as such (``proxy:digits``:
  see :class:`DigitsProxy` for what it checks and why it is only a proxy).
- ``llm:MODEL`` -- an LLM judge on any OpenAI-compatible server, asked the question about each input's
  text with the shipped ``omni_label.txt`` template (yes [[1]] / no [[0]]) or, with ``--graded``,
  ``omni_grade.txt`` (a grade such as [[0.75]]); answers cached in the store.
- ``db:PATH`` (or a ``.db`` path) -- the answers people gave in the annotation app to the project
  ``evalsift omni annotate`` created (``--project`` chooses among several).
- a ``.jsonl`` file -- judgments written earlier (``omni curve`` writes ``judgments.jsonl``;
  ``annotate export`` writes the same records), or lines ``{"item_id": ..., "label": x}`` with x in [0, 1]
  (0/1, false/true, or a grade).

Every judge yields ordinary score :class:`~evalsift.oracle.base.Judgment` records (``a`` = the model,
``b`` = "", ``detail["score"]`` = 1 for yes, 0 for no, a grade in between), so they are stored, exported
and replayed like every other judgment; stores and files written when only yes/no existed read the same.
An item judged by several annotators counts with the mean of its scores.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DataError, ParameterError
from ..oracle.base import Judgment
from ..pool import Pool
from ..registry import Registry
from .samples import OmniSamples, Representatives, sample_id

labelers: Registry[Callable[..., "Labeler"]] = Registry("labeler")
DEFAULT_QUESTIONS = {
    "tokens": "Is this a meaningful, well-formed piece of text a person could have written?",
    "image": "Does this image show the designated class?",
}


class Labeler:
    """A function of inputs: ``__call__(x (B, D) int) -> (B,)`` bools (yes/no) or grades in [0, 1], with ``name`` and ``kind``
    ('rule': the ground truth; 'proxy': a stand-in for a person) and a ``note`` saying what it checks.
    Factories take ``info=`` (the judged model's description, e.g. the toy's ``modulus``, the digits'
    ``levels``) and read from it what they need. ``needs``: the keys a model's description must have
    for the labeler to judge its inputs, and ``judges``: which inputs those are (for the error that
    :func:`make_labeler` gives on other samples)."""

    name = ""
    kind = "rule"
    note = ""
    needs: tuple[str, ...] = ()
    judges = ""

    def __call__(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def labeler(name: str, help: str = "") -> Callable:
    """Register a :class:`Labeler` factory under ``name`` (used as ``rule:NAME`` or ``proxy:NAME``)."""
    return labelers.register(name, help)


@labeler("toy", help="the toy's ground truth: the digits sum to a multiple of the modulus (30)")
class ToyRule(Labeler):
    """The toy's rule (the exact judge): True where the digits sum to a multiple of ``modulus``."""

    kind = "rule"
    needs = ("modulus",)
    judges = "the toy model's digit sequences (evalsift omni sample --model toy)"

    def __init__(self, modulus: int = 30, info: dict[str, Any] | None = None) -> None:
        self.modulus = int((info or {}).get("modulus", modulus))
        self.name = "toy"
        self.note = f"exact: sum of digits % {self.modulus} == 0"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        from .zoo import toy_rule

        return toy_rule(x, self.modulus)


@labeler("digits", help="a PROXY for a person judging 8x8 images: 'looks like a real 1' (near real digits, mostly 1s)")
class DigitsProxy(Labeler):
    """A stand-in for a person asked "is this a 1?" about an 8x8 grey image -- only a proxy.

    It says yes when the image is (a) as close to some real digit of scikit-learn's digits as
    ``quantile`` of held-out real digits are to the reference set (Euclidean distance on the 0-16 pixel
    scale: the image lies on the data's manifold, not in noise) and (b) at least ``votes`` of its ``k``
    nearest real digits (all ten classes) are 1s. The reference set is 80% of the 1,797 digits (seeded),
    the distance threshold is calibrated on the other 20%.

    Why only a proxy: a person would accept an unusual but recognisable 1 (shifted, thicker, with a
    serif the data lacks) that lies far from every real digit, and could reject a smudge that happens
    to lie near a 1; the threshold is a choice (``quantile``), not a perception. It is a k-NN model, a
    different family from the classifiers judged, so it does not share their blind spots, but its
    answers are not human judgments and every report that uses them says so.
    """

    kind = "proxy"
    needs = ("levels", "designated_class")
    judges = "8x8 digit images of the digit classifiers (evalsift omni sample --model digits-lr or digits-mlp)"

    def __init__(self, levels: int = 17, k: int = 5, votes: int = 3, quantile: float = 0.99, seed: int = 0,
                 info: dict[str, Any] | None = None) -> None:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
        from sklearn.neighbors import NearestNeighbors

        levels = (info or {}).get("levels", levels)
        if not 2 <= int(levels) <= 17:
            raise ParameterError(f"proxy:digits: levels must be 2..17, got {levels}", field="levels")
        self.levels, self.k, self.votes, self.quantile = int(levels), int(k), int(votes), float(quantile)
        d = load_digits()
        ref, cal, yref, _ = train_test_split(d.data, d.target, test_size=0.2, random_state=seed, stratify=d.target)
        self.nn = NearestNeighbors(n_neighbors=self.k).fit(ref)
        self.y = yref
        dist, _ = self.nn.kneighbors(cal, n_neighbors=1)
        self.threshold = float(np.quantile(dist[:, 0], self.quantile))
        self.name = "digits"
        self.note = (f"PROXY, not a person: yes when the image is within {self.threshold:.1f} (the {self.quantile:.0%} "
                     f"quantile of held-out real digits' distance to the reference set) of a real digit and at least "
                     f"{self.votes} of its {self.k} nearest real digits are 1s")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        X = np.asarray(x, dtype=np.float64) * (16.0 / (self.levels - 1))
        dist, idx = self.nn.kneighbors(X)
        ones = (self.y[idx] == 1).sum(axis=1)
        return (dist[:, 0] <= self.threshold) & (ones >= self.votes)


def make_labeler(spec: str, *, model: str | None = None, **options: Any) -> Labeler:
    """``rule:NAME`` or ``proxy:NAME`` -> the registered labeler (its kind must match the prefix);
    ``options`` go to its factory (``info``: the judged model's description). With ``info``, a
    labeler whose ``needs`` it lacks is refused before it judges anything: its answers about other
    inputs would mean nothing (``model``: the samples' model name, for the message).

    >>> make_labeler("rule:toy", info={"modulus": 30}).note
    'exact: sum of digits % 30 == 0'
    >>> try:
    ...     make_labeler("rule:toy", model="digits-lr", info={"levels": 17, "designated_class": "1"})
    ... except ParameterError as e:
    ...     print(str(e).split("; ")[1])  # doctest: +ELLIPSIS
    these samples come from digits-lr, whose description has no modulus. Judge them with proxy:digits, llm:MODEL, ...
    """
    kind, _, name = spec.partition(":")
    if kind not in ("rule", "proxy") or not name:
        raise ParameterError(f"a labeler spec is rule:NAME or proxy:NAME, got {spec!r}", field="judgments")
    factory = labelers.get(name)
    _check_kind(name, kind, getattr(factory, "kind", kind))  # a class says its kind before it is built
    info = options.get("info")
    missing = [k for k in getattr(factory, "needs", ()) if info is not None and k not in info]
    if missing:
        fits = [f"{getattr(f, 'kind', 'rule')}:{n}" for n, f in labelers.items()
                if getattr(f, "needs", ()) and all(k in info for k in f.needs)]
        raise ParameterError(f"--judgments {spec} judges {factory.judges}; these samples come from "
                             f"{model or 'another model'}, whose description has no {', '.join(missing)}. Judge them "
                             f"with {', '.join(fits + ['llm:MODEL'])}, people in the app (evalsift omni annotate) or a "
                             "judgments file", field="judgments")
    lab = factory(**options)
    _check_kind(name, kind, lab.kind)
    return lab


def _check_kind(name: str, asked: str, kind: str) -> None:
    if kind != asked:
        raise ParameterError(f"{name!r} is a {kind}, not a {asked}: write {kind}:{name}", field="judgments")


# ---------------------------------------------------------------------------------------------- as a pool
def to_pool(samples: OmniSamples, reps: Representatives) -> Pool:
    """The representatives as a Pool: one item per input (id :func:`sample_id`), the model as the one
    system whose "output" is the input shown as text; metadata ``bin``, ``z`` and, for image spaces,
    ``image`` (a PNG data URI). This is what the annotation app and the LLM judge are given."""
    sp = samples.space
    shape = "x".join(map(str, sp.shape or (sp.n_positions,)))
    text = [sp.render_text(x) if sp.kind == "tokens" else f"{shape} image {i}" for i, x in zip(reps.ids, reps.x)]
    meta: dict[str, list[Any]] = {"bin": [int(b) for b in reps.bin], "z": [float(v) for v in reps.z],
                                  "x": [json.dumps([int(v) for v in row]) for row in reps.x]}
    if sp.kind == "image":
        meta["image"] = [sp.render_data_uri(x) for x in reps.x]
    name = str(samples.model.get("name") or "model")
    return Pool(item_ids=reps.ids, inputs=text, systems=[name], outputs={name: text}, metadata=meta,
                name=f"omni:{name}")


def judge_with_labeler(samples: OmniSamples, reps: Representatives, lab: Labeler) -> list[Judgment]:
    """One score Judgment per representative from a rule or proxy (a bool is 1 or 0, a grade stays a grade)."""
    y = np.asarray(lab(reps.x), dtype=np.float64)
    if y.shape != (len(reps),) or not np.isfinite(y).all() or (y.size and (y.min() < 0 or y.max() > 1)):
        raise DataError(f"{lab.kind}:{lab.name} must give one score in [0, 1] (or a bool) per input; got "
                        f"{y.shape} values in [{np.nanmin(y, initial=0):g}, {np.nanmax(y, initial=0):g}]",
                        field="judgments")
    who = f"{lab.kind}:{lab.name}"
    system = str(samples.model.get("name") or "model")
    return [Judgment(item_id=i, a=system, b="", verdict=None, annotator=who, kind=lab.kind,
                     detail={"score": float(v), "z": float(z), "bin": int(b), "note": lab.note})
            for i, v, z, b in zip(reps.ids, y, reps.z, reps.bin)]


def omni_template_path(graded: bool = False) -> str:
    """The shipped prompt of the omni label question (fills {criterion} with the question and {output}
    with the input's text; the answer is [[1]] for yes, [[0]] for no). ``graded``: the prompt asking for a
    grade in [0, 1] instead (``[[0.75]]``), the paper's graded annotation score."""
    name = "omni_grade.txt" if graded else "omni_label.txt"
    return str(resources.files("evalsift.oracle").joinpath("prompts", name))


def judge_with_llm(samples: OmniSamples, reps: Representatives, judge: Any, question: str) -> list[Judgment]:
    """Ask an :class:`~evalsift.oracle.llm.LLMJudge` the question about each representative's text."""
    if samples.space.kind != "tokens":
        raise ParameterError("the LLM judge reads text; this input space holds images. Judge them in the app "
                             "('evalsift omni annotate') or with a proxy", field="judgments")
    pool = to_pool(samples, reps)
    judge.criterion = question
    out = judge.judge_score_judgments(pool, list(range(pool.n_items)), pool.systems[0])
    return [Judgment(**{**j.to_dict(), "detail": {**j.detail, "z": float(z), "bin": int(b)}})
            for j, z, b in zip(out, reps.z, reps.bin)]


def read_judgments_file(path: str | Path) -> list[Judgment]:
    """Judgments from a JSONL file: Judgment records (``item_id``, ``detail.score``, ``status``, ...) or
    simple lines ``{"item_id", "label"}`` (label 0/1 or false/true)."""
    from ..io._common import iter_jsonl

    out = []
    for lineno, rec in iter_jsonl(Path(path), what="judgments", expected="one judgment per line"):
        if not isinstance(rec, dict) or "item_id" not in rec:
            raise DataError(f"{path}: line {lineno} has no item_id; expected Judgment records or "
                            '{"item_id": ..., "label": 0 or 1}', field="item_id")
        if "label" in rec:
            v = rec["label"]
            if isinstance(v, bool):
                v = float(v)
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise DataError(f"{path}: line {lineno}: label must be a score in [0, 1] (0 or 1 for no / yes, or a "
                                f"grade between), got {v!r}",
                                field="label", item_id=rec["item_id"])
            out.append(Judgment(item_id=str(rec["item_id"]), a=str(rec.get("a", "model")), b="", verdict=None,
                                annotator=str(rec.get("annotator", "file")), kind=str(rec.get("kind", "file")),
                                detail={"score": float(v)}))
            continue
        try:
            fields = {k: rec[k] for k in ("item_id", "a", "b", "verdict", "annotator", "kind") if k in rec}
            out.append(Judgment(**{"a": "model", "b": "", "verdict": None, "annotator": "file", "kind": "file",
                                   **fields, "shown_order": rec.get("shown_order", "ab"),
                                   "status": rec.get("status", "done"), "detail": rec.get("detail") or {}}))
        except (TypeError, ValueError) as e:
            raise DataError(f"{path}: line {lineno}: not a judgment ({e})", field="judgments",
                            item_id=rec.get("item_id")) from None
    return out


def omni_projects(store: Any) -> list[Any]:
    """The store's projects made by ``evalsift omni annotate``."""
    return [p for p in store.projects() if "omni" in (p.data or {})]


def judgments_from_store(store: Any, samples: OmniSamples, project: int | str | None = None) -> tuple[list[Judgment], Any]:
    """The finished judgments of the omni project for ``samples`` (or ``project``) and the project."""
    if project is not None:
        p = store.project(project)
        if "omni" not in p.data:
            raise DataError(f"project {p.id} ({p.name}) was not made by 'evalsift omni annotate'", field="project")
    else:
        fp = samples.fingerprint()
        mine = [p for p in omni_projects(store) if p.data["omni"].get("fingerprint") == fp]
        if not mine:
            have = ", ".join(f"{p.id} ({p.name})" for p in omni_projects(store)) or "none"
            raise DataError(f"{store.path} holds no omni project for these samples (omni projects: {have}); make one "
                            "with 'evalsift omni annotate', or name one with --project", field="judgments")
        p = mine[-1]
    return [j for j in store.judgments(p.id) if j.status == "done" and j.is_score], p


def labels_for(samples: OmniSamples, judgments: Sequence[Judgment],
               z_by_id: dict[str, float] | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(item ids, z, label)``: one row per judged item, its label the mean over annotators of each
    one's latest answer (a correction is a new judgment); z from ``z_by_id``, the judgment's detail or,
    failing those, the item id's input among the samples' candidates."""
    latest: dict[tuple[str, str], float] = {}
    zs: dict[str, float] = dict(z_by_id or {})
    for j in judgments:
        if not j.is_score:
            continue
        key = (j.item_id, j.annotator)
        if j.status != "done":
            if j.status == "skipped":  # the person withdrew an earlier answer
                latest.pop(key, None)
            continue
        s = float(j.detail["score"])
        if not 0 <= s <= 1:
            raise DataError(f"judgment of item {j.item_id!r}: score {s:g} is outside 0-1; omni judgments are 1 (yes), "
                            "0 (no) or a grade between", item_id=j.item_id, field="score")
        latest[key] = s
        if "z" in j.detail and j.item_id not in zs:
            zs[j.item_id] = float(j.detail["z"])
    by_item: dict[str, list[float]] = {}
    for (item, _), s in latest.items():
        by_item.setdefault(item, []).append(s)
    missing = [i for i in by_item if i not in zs]
    if missing:
        c = samples.candidates
        index = {sample_id(b, x): z for b, x, z in zip(c.bin, c.x, c.z)}
        unknown = [i for i in missing if i not in index]
        if unknown:
            raise DataError(f"{len(unknown)} judged item(s) are not among these samples' inputs (first: "
                            f"{unknown[0]!r}); were the judgments made for other samples?", item_id=unknown[0],
                            field="judgments")
        zs.update({i: float(index[i]) for i in missing})
    ids = sorted(by_item)
    return ids, np.array([zs[i] for i in ids]), np.array([float(np.mean(by_item[i])) for i in ids])


__all__ = ["DEFAULT_QUESTIONS", "DigitsProxy", "Labeler", "ToyRule", "judge_with_labeler", "judge_with_llm",
           "judgments_from_store", "labeler", "labelers", "labels_for", "make_labeler", "omni_projects",
           "omni_template_path", "read_judgments_file", "to_pool"]
