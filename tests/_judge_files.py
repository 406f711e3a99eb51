"""The LLM-judging world's files, written in their published layouts, for tests and the docs' examples:
FastChat llm_judge's ``data/mt_bench/model_judgment/gpt-4_single.jsonl`` and ``gpt-4_pair.jsonl`` with
``question.jsonl``, and Chatbot Arena battles with ``conversation_a`` / ``conversation_b``. Synthetic verdicts
with known structure; nothing fetched."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

CATEGORIES = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]
MODELS = {"gpt-4": 8.9, "claude-v1": 7.9, "vicuna-13b-v1.3": 6.4, "llama-13b": 2.6}


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def mt_bench(tmp_path: Path, seed: int = 0, n_questions: int = 24):
    """FastChat's layout: data/mt_bench/question.jsonl and data/mt_bench/model_judgment/gpt-4_single.jsonl
    (rows as FastChat's gen_judgment writes them), with a few -1 grades and one rerun row appended. Returns
    (path, questions, every row of the file: what show_result.py averages, the rerun included)."""
    rng = random.Random(seed)
    questions = [{"question_id": 81 + q, "category": CATEGORIES[q % 8],
                  "turns": [f"question {81 + q}, first turn", f"question {81 + q}, second turn"]}
                 for q in range(n_questions)]
    root = tmp_path / "data" / "mt_bench"
    write_jsonl(root / "question.jsonl", questions)
    rows = []
    for q in questions:
        for turn in (1, 2):
            for model, mu in MODELS.items():
                score = max(1, min(10, round(rng.gauss(mu - 0.3 * (turn - 1), 1.5))))
                if rng.random() < 0.03:
                    score = -1
                prompt = ("single-math-v1" if q["category"] in ("math", "reasoning", "coding") else "single-v1") + (
                    "-multi-turn" if turn == 2 else "")
                rows.append({"question_id": q["question_id"], "model": model, "judge": ["gpt-4", prompt],
                             "user_prompt": "[Instruction] ...", "judgment": f"Rating: [[{score}]]", "score": score,
                             "turn": turn, "tstamp": 1687221890.0 + len(rows)})
    rerun = dict(rows[5], score=1, tstamp=1687229999.0)  # FastChat appends a rerun; show_result counts both rows
    path = write_jsonl(root / "model_judgment" / "gpt-4_single.jsonl", rows + [rerun])
    return path, questions, rows + [rerun]


def fastchat_pairs(tmp_path: Path, seed: int = 0, n_questions: int = 40) -> tuple[Path, list[dict]]:
    """gpt-4_pair.jsonl in FastChat's layout: every pair of 3 models on every question's turn 1, each row's
    two games (g2 with the answers swapped, winners mapped back) from a judge with a position bias."""
    rng = random.Random(seed)
    strength = {"gpt-4": 1.2, "gpt-3.5-turbo": 0.4, "vicuna-13b-v1.3": -0.3}
    names = list(strength)
    rows = []
    for q in range(81, 81 + n_questions):
        for i in range(3):
            for k in range(i + 1, 3):
                m1, m2 = names[i], names[k]
                p = 1 / (1 + math.exp(-(strength[m1] - strength[m2])))
                games = []
                for first in (True, False):
                    u = rng.random()
                    bias = 0.15 if first else -0.15  # the judge likes the first answer
                    games.append("error" if u < 0.02 else "tie" if u < 0.15 else
                                 "model_1" if rng.random() < min(max(p + bias, 0), 1) else "model_2")
                rows.append({"question_id": q, "model_1": m1, "model_2": m2, "g1_winner": games[0],
                             "g2_winner": games[1], "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...",
                             "g1_judgment": "[[A]]", "g2_user_prompt": "...", "g2_judgment": "[[B]]", "turn": 1,
                             "tstamp": 1687221890.0 + len(rows)})
    return write_jsonl(tmp_path / "model_judgment" / "gpt-4_pair.jsonl", rows), rows




def mt_bench_pairs(folder: Path, seed: int = 0, n_questions: int = 16, reruns: int = 3) -> tuple[Path, list[dict]]:
    """gpt-4_pair.jsonl as FastChat's gen_judgment writes it for MT-Bench: 3 models, every pair, both turns, each
    judged with the prompt FastChat picks -- pair-v2 for turn 1 and pair-v2-multi-turn for turn 2, the
    pair-math-v1 prompts for math, reasoning and coding questions (categories as :data:`CATEGORIES` by question,
    as in :func:`mt_bench`) -- some games 'error', and ``reruns`` rows of an earlier question judged again and
    appended at the end (FastChat appends when a judgment is rerun). Returns (path, every row)."""
    rng = random.Random(seed)
    strength = {"gpt-4": 1.2, "gpt-3.5-turbo": 0.4, "vicuna-13b-v1.3": -0.3}
    names = list(strength)
    rows = []
    for turn in (1, 2):
        for q in range(81, 81 + n_questions):
            math_q = CATEGORIES[(q - 81) % 8] in ("math", "reasoning", "coding")
            prompt = ("pair-math-v1" if math_q else "pair-v2") + ("-multi-turn" if turn == 2 else "")
            for i in range(3):
                for k in range(i + 1, 3):
                    m1, m2 = names[i], names[k]
                    p = 1 / (1 + math.exp(-(strength[m1] - strength[m2])))
                    games = []
                    for first in (True, False):
                        u = rng.random()
                        bias = 0.15 if first else -0.15
                        games.append("error" if u < 0.03 else "tie" if u < 0.15 else
                                     "model_1" if rng.random() < min(max(p + bias, 0), 1) else "model_2")
                    rows.append({"question_id": q, "model_1": m1, "model_2": m2, "g1_winner": games[0],
                                 "g2_winner": games[1], "judge": ["gpt-4", prompt], "g1_user_prompt": "...",
                                 "g1_judgment": "[[A]]", "g2_user_prompt": "...", "g2_judgment": "[[B]]",
                                 "turn": turn, "tstamp": 1687221890.0 + len(rows)})
    for r in range(reruns):  # rows against gpt-3.5-turbo: 3q (gpt-4 vs it) and 3q + 2 (it vs vicuna), judged again
        again = dict(rows[3 * r + 2 * (r % 2)], g1_winner="model_2", g2_winner="model_2", tstamp=1687229999.0 + r)
        rows.append(again)
    return write_jsonl(folder / "model_judgment" / "gpt-4_pair.jsonl", rows), rows


def arena_battles(path: Path, seed: int = 0, n: int = 600) -> Path:
    """A Chatbot Arena battle file with LMSYS's conversations: 4 models, the stronger ones no longer, and
    voters who like longer answers (so style control has something to remove)."""
    rng = random.Random(seed)
    strength = {"gpt-4": 0.8, "claude-v1": 0.4, "vicuna-13b": 0.0, "alpaca-13b": -0.4}
    words = {"gpt-4": 60, "claude-v1": 140, "vicuna-13b": 60, "alpaca-13b": 140}
    rows = []
    for k in range(1, n + 1):
        a, b = rng.sample(list(strength), 2)
        la, lb = (max(5, int(rng.gauss(words[m], 25))) for m in (a, b))
        x = strength[a] - strength[b] + 0.6 * (la - lb) / (la + lb + 1) * 3
        u = rng.random()
        winner = "tie (bothbad)" if u < 0.04 else "tie" if u < 0.1 else (
            "model_a" if rng.random() < 1 / (1 + math.exp(-x)) else "model_b")
        conv = [{"role": "user", "content": f"prompt {k}"}]
        rows.append({"question_id": f"q{k}", "model_a": a, "model_b": b, "winner": winner, "judge": f"arena_user_{k % 50}",
                     "conversation_a": conv + [{"role": "assistant", "content": " ".join(["word"] * la)}],
                     "conversation_b": conv + [{"role": "assistant", "content": " ".join(["word"] * lb)}],
                     "turn": 1, "anony": True, "language": rng.choice(["English", "English", "Chinese"]),
                     "tstamp": 1.68e9 + k})
    return write_jsonl(path, rows)
