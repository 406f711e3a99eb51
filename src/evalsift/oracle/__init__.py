"""Oracles: who judges. MetricOracle simulates from a score column; LLM and human judges plug in
through the same protocol (see :mod:`evalsift.oracle.base`)."""

from .base import Judgment, Oracle, make_oracle, oracle, oracles, verdicts_from_scores
from .metric import MetricOracle
from .judgments import JudgmentsOracle
from .votes import VOTE_RULE, ItemVotes, combine
from .llm import DictCache, LLMCache, LLMJudge

__all__ = ["Judgment", "Oracle", "MetricOracle", "JudgmentsOracle", "LLMJudge", "LLMCache", "DictCache", "make_oracle", "oracle", "oracles", "verdicts_from_scores",
           "VOTE_RULE", "ItemVotes", "combine"]
