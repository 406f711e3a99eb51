"""Write the tiny examples that ship in the package (``src/evalsift/examples/``; ``evalsift data example NAME
--out DIR`` copies one out). Synthetic, written by evalsift in the published layouts, with fictional model names:

- ``mt_bench/``: FastChat llm_judge's ``data/mt_bench/`` -- ``question.jsonl`` (24 questions, 3 per MT-Bench
  category, two turns; a reference answer for math, reasoning and coding), ``model_judgment/gpt-4_single.jsonl``
  (a 1-10 grade per model, question and turn, as ``gen_judgment.py --mode single`` writes it; a few -1 grades for
  judgments FastChat could not parse) and ``model_judgment/gpt-4_pair.jsonl`` (every pair of the 4 models on
  every question and both turns, two games each with the answers swapped, as ``--mode pairwise-all`` writes it);
- ``arena/battles.jsonl``: Chatbot Arena's battle records (``model_a``, ``model_b``, ``winner``, ``judge``,
  ``conversation_a`` / ``conversation_b``, ``turn``, ``anony``, ``language``, ``tstamp``), 300 battles among 5
  models whose answers differ in length and markdown (headers, bold, lists drawn independently per answer, so
  ``--style-control length,markdown`` has four features that are not collinear), voted by people who like
  longer, bolder answers a little.

Run ``python scripts/make_examples.py`` to write them again (deterministic: the same bytes every time).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "evalsift" / "examples"
CATEGORIES = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]
WITH_REFERENCE = ("math", "reasoning", "coding")
#: fictional models and their true MT-Bench-like quality
MT_MODELS = {"atlas-70b": 8.4, "birch-13b": 6.9, "cedar-7b": 5.8, "dune-7b": 3.9}
T0 = 1687221890.0


def jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def mt_bench(root: Path, rng: random.Random) -> None:
    questions = []
    for q in range(24):
        cat = CATEGORIES[q % 8]
        row = {"question_id": 81 + q, "category": cat,
               "turns": [f"A {cat} question (example {q // 8 + 1}): the first turn.",
                         f"A follow-up to the {cat} question: the second turn."]}
        if cat in WITH_REFERENCE:
            row["reference"] = [f"The reference answer to the first turn of question {81 + q}.",
                                f"The reference answer to its second turn."]
        questions.append(row)
    jsonl(root / "question.jsonl", questions)
    single = []
    for q in questions:
        math_like = q["category"] in WITH_REFERENCE
        for turn in (1, 2):
            for model, mu in MT_MODELS.items():
                score = max(1, min(10, round(rng.gauss(mu - 0.4 * (turn - 1) - 0.6 * math_like, 1.4))))
                if rng.random() < 0.02:
                    score = -1  # FastChat writes -1 when it cannot read a grade from the judgment
                prompt = ("single-math-v1" if math_like else "single-v1") + ("-multi-turn" if turn == 2 else "")
                text = f"The answer is ... Rating: [[{score}]]" if score > 0 else "The answer is ... (no rating)"
                single.append({"question_id": q["question_id"], "model": model, "judge": ["gpt-4", prompt],
                               "user_prompt": "[Instruction] Please act as an impartial judge ...", "judgment": text,
                               "score": score, "turn": turn, "tstamp": T0 + len(single)})
    jsonl(root / "model_judgment" / "gpt-4_single.jsonl", single)
    pairs = []
    names = list(MT_MODELS)
    for q in questions:
        math_like = q["category"] in WITH_REFERENCE
        for turn in (1, 2):
            for i in range(len(names)):
                for k in range(i + 1, len(names)):
                    m1, m2 = names[i], names[k]
                    p = 1 / (1 + math.exp(-(MT_MODELS[m1] - MT_MODELS[m2]) / 1.5))
                    games = []
                    for first in (True, False):  # g2 shows the answers swapped; FastChat maps its winner back
                        u = rng.random()
                        bias = 0.1 if first else -0.1  # the judge likes the answer shown first a little
                        games.append("error" if u < 0.02 else "tie" if u < 0.15 else
                                     "model_1" if rng.random() < min(max(p + bias, 0), 1) else "model_2")
                    prompt = ("pair-math-v1" if math_like else "pair-v2") + ("-multi-turn" if turn == 2 else "")
                    pairs.append({"question_id": q["question_id"], "model_1": m1, "model_2": m2,
                                  "g1_winner": games[0], "g2_winner": games[1], "judge": ["gpt-4", prompt],
                                  "g1_user_prompt": "[User Question] ...", "g1_judgment": "... [[A]]",
                                  "g2_user_prompt": "[User Question] ...", "g2_judgment": "... [[B]]",
                                  "turn": turn, "tstamp": T0 + len(pairs)})
    jsonl(root / "model_judgment" / "gpt-4_pair.jsonl", pairs)


#: fictional arena models: strength, words per answer, and how often each markdown element appears
ARENA_MODELS = {
    "atlas-70b": (0.6, 35, 0.5, 1.5, 0.5),
    "birch-13b": (0.3, 55, 0.2, 0.5, 0.6),
    "cedar-7b": (0.0, 25, 0.1, 0.3, 0.2),
    "dune-7b": (-0.3, 65, 0.6, 2.0, 0.7),
    "elm-3b": (-0.6, 20, 0.05, 0.2, 0.1),
}
WORDS = ("the a model answer question data step result method value example first next because which can "
         "should this that each more most simple clear short long list table code test case time cost "
         "rate user text input output way part point idea reason").split()
TOPICS = ["how a hash table works", "a packing list for a weekend hike", "the causes of inflation",
          "a short poem about rain", "how to reverse a linked list", "the difference between TCP and UDP",
          "a plan for learning Spanish", "why the sky is blue", "a recipe with lentils", "how vaccines work",
          "a cover letter opening", "sorting algorithms compared", "the rules of chess castling",
          "a birthday message for a colleague", "how to read a p-value"]


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def _answer(rng: random.Random, words: int, p_header: float, bold: float, p_list: float) -> str:
    """An answer of about ``words`` words; a header, bold spans and a list each drawn on their own."""
    n = max(8, int(rng.gauss(words, words / 3)))
    parts = []
    if rng.random() < p_header:
        parts.append(f"## {_sentence(rng, 3)[:-1]}")
    body = []
    left = n
    while left > 0:
        k = min(left, rng.randint(6, 14))
        body.append(_sentence(rng, k))
        left -= k
    for _ in range(min(len(body), _poisson(rng, bold))):
        i = rng.randrange(len(body))
        w = body[i].split(" ")
        j = rng.randrange(len(w))
        w[j] = f"**{w[j].rstrip('.')}**" + ("." if w[j].endswith(".") else "")
        body[i] = " ".join(w)
    if rng.random() < p_list and len(body) >= 3:
        k = rng.randint(2, min(5, len(body)))
        parts.append(" ".join(body[:-k]))
        parts.append("\n".join(f"- {s}" for s in body[-k:]))
    else:
        parts.append(" ".join(body))
    return "\n\n".join(p for p in parts if p)


def _poisson(rng: random.Random, mean: float) -> int:
    k, t = 0, rng.expovariate(1.0)
    while t < mean:
        k += 1
        t += rng.expovariate(1.0)
    return k


def _style(text: str) -> tuple[int, int, int, int]:
    lines = text.splitlines()
    return (len(text.split()), sum(ln.startswith("#") for ln in lines), text.count("**") // 2,
            sum(ln.startswith("- ") for ln in lines))


def arena(root: Path, rng: random.Random, n: int = 300) -> None:
    rows = []
    names = list(ARENA_MODELS)
    for k in range(1, n + 1):
        a, b = rng.sample(names, 2)
        topic = rng.choice(TOPICS)
        ta, tb = (_answer(rng, *ARENA_MODELS[m][1:]) for m in (a, b))
        (la, ha, ba, lia), (lb, hb, bb, lib) = _style(ta), _style(tb)
        style = (0.8 * (la - lb) / (la + lb + 1) + 0.3 * (ba - bb) / (ba + bb + 1)
                 + 0.2 * (lia - lib) / (lia + lib + 1))
        x = ARENA_MODELS[a][0] - ARENA_MODELS[b][0] + style
        u = rng.random()
        winner = "tie (bothbad)" if u < 0.04 else "tie" if u < 0.12 else (
            "model_a" if rng.random() < 1 / (1 + math.exp(-x)) else "model_b")
        prompt = {"role": "user", "content": f"Tell me about {topic}."}
        rows.append({"question_id": f"ex{k:04d}", "model_a": a, "model_b": b, "winner": winner,
                     "judge": f"arena_user_{k % 60}", "turn": 1, "anony": True,
                     "language": "English", "tstamp": 1.7e9 + 60 * k,
                     "conversation_a": [prompt, {"role": "assistant", "content": ta}],
                     "conversation_b": [prompt, {"role": "assistant", "content": tb}]})
    jsonl(root / "battles.jsonl", rows)


def main() -> None:
    mt_bench(OUT / "mt_bench", random.Random(42))
    arena(OUT / "arena", random.Random(7))
    for p in sorted(OUT.rglob("*.jsonl")):
        print(f"{p.relative_to(OUT)}: {sum(1 for _ in p.open())} rows, {p.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
