"""The LLM judge end to end on real judge text: SummEval's recorded GPT-3.5 pairwise answers, replayed.

For each of the 11 system pairs x 4 dimensions in ``summeval/llm-pairwise/``, a stub OpenAI-compatible
server on 127.0.0.1 serves the *recorded* answer for whatever prompt ``LLMJudge`` sends (both
presentation orders; tests/llm_stub.py ``Replay``). Then:

- the full run: the judge on all 100 documents (the reference a decision is compared with);
- ``Session`` with DiffUse and with random selection (risk 0.2, paper rule, n = 5, N = 100): the
  judgments used, the outcome, and whether a named winner agrees with the full run and with the
  experts' mean scores (summeval.json);
- the judge's position-bias rate: how often the two orders of one document disagree.

Usage: EVALSIFT_DATA=../shared/data python benchmarks/judge/summeval_llm_replay.py [--encoder minilm]
Writes bench-out/summeval_llm_replay.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("EVALSIFT_DATA", str(ROOT.parent / "shared" / "data"))
os.environ.setdefault("EVALSIFT_QUIET", "1")

from llm_stub import Replay, StubServer  # noqa: E402

from evalsift.io import load  # noqa: E402
from evalsift.oracle import DictCache, LLMJudge  # noqa: E402
from evalsift.select import make_selector  # noqa: E402
from evalsift.session import Session  # noqa: E402
from evalsift.stats import count_verdicts, majority  # noqa: E402

DIMS = ("coherence", "consistency", "fluency", "relevance")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="minilm")
    args = ap.parse_args()
    data = Path(os.environ["EVALSIFT_DATA"]) / "summeval"
    pool = load("summeval")
    pairs = sorted({tuple(re.match(r"(M\d+)-(M\d+)_", f.name).groups()) for f in (data / "llm-pairwise").glob("*.result")})
    rows = []
    for mi, mj in pairs:
        pp = pool.pair(mi, mj)
        for dim in DIMS:
            replay = Replay(data / "llm-pairwise", pp, (mi, mj), dim)
            with StubServer(replay) as stub:
                judge = LLMJudge("gpt-3.5-turbo-recorded", base_url=stub.base_url, criterion=dim, cache=DictCache(),
                                 concurrency=4)
                full = judge.judge_pairs(pp, list(range(pp.n_items)), mi, mj)
                fv = [j.verdict for j in full if j.status == "done"]
                wa, wb, t = count_verdicts(fv)
                full_winner = {"a": mi, "b": mj, "tie": None}[majority(wa, wb)]
                disagree = sum(bool(j.detail.get("position_disagreement")) for j in full)
                errors = sum(j.status == "error" for j in full)
                expert = pp.score(dim).mean(axis=0)
                expert_winner = mi if expert[0] > expert[1] else mj if expert[1] > expert[0] else None
                row = {"pair": f"{mi}-{mj}", "dimension": dim, "full": f"{wa}-{wb}-{t}", "full_winner": full_winner,
                       "expert_winner": expert_winner, "position_disagreement": disagree / pp.n_items,
                       "errors": errors}
                for method in ("diffuse", "random"):
                    sel = make_selector(method, encoder=args.encoder) if method == "diffuse" else make_selector("random")
                    d = Session(pp, sel, a=mi, b=mj, risk=0.2, min_labels=5, max_labels=100).run(judge)
                    row[method] = {"outcome": d.outcome, "winner": d.winner, "labels": d.labels_used,
                                   "agrees_full": None if d.winner is None else d.winner == full_winner,
                                   "agrees_experts": None if d.winner is None else d.winner == expert_winner,
                                   "errors": d.errors}
                rows.append(row)
            print(f"{mi}-{mj} {dim}: full {row['full']} -> {row['full_winner']}, experts {row['expert_winner']}, "
                  f"diffuse {row['diffuse']['winner']} after {row['diffuse']['labels']}, random "
                  f"{row['random']['winner']} after {row['random']['labels']}", file=sys.stderr)
    summary = {}
    for method in ("diffuse", "random"):
        decided = [r for r in rows if r[method]["winner"] is not None]
        summary[method] = {
            "decided": len(decided), "of": len(rows),
            "mean_labels": float(np.mean([r[method]["labels"] for r in rows])),
            "mean_labels_when_decided": float(np.mean([r[method]["labels"] for r in decided])) if decided else None,
            "agree_full": sum(bool(r[method]["agrees_full"]) for r in decided),
            "agree_experts": sum(bool(r[method]["agrees_experts"]) for r in decided),
        }
    summary["full_run_agrees_experts"] = sum(r["full_winner"] == r["expert_winner"] for r in rows)
    summary["position_disagreement_mean"] = float(np.mean([r["position_disagreement"] for r in rows]))
    out = ROOT / "bench-out"
    out.mkdir(exist_ok=True)
    (out / "summeval_llm_replay.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    print("| pair | dimension | full run (a-b-tie) | full winner | experts | position disagreement | diffuse: labels, winner | random: labels, winner |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cell = lambda m: f"{r[m]['labels']}, {r[m]['winner'] or 'inconclusive'}"  # noqa: E731
        print(f"| {r['pair']} | {r['dimension']} | {r['full']} | {r['full_winner']} | {r['expert_winner']} | "
              f"{r['position_disagreement']:.2f} | {cell('diffuse')} | {cell('random')} |")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
