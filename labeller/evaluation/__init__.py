"""Retriever evaluation with graded labels: metrics by columnar numpy kernels with trec_eval parity, judged@k, hole
filling, the no-answer bucket, paired comparisons, the regression gate, and human-vs-LLM system
ranking agreement. `evaluate(EvaluateOptions(...))` runs it all; the pieces are usable alone.
"""

from labeller.evaluation.compare import compare
from labeller.evaluation.gate import gate, parse_thresholds
from labeller.evaluation.job import EvaluateOptions, evaluate
from labeller.evaluation.metrics import MetricSpec, parse_metrics
from labeller.evaluation.outcome import outcome_error, outcome_warnings
from labeller.evaluation.qrels import Judgments, load_judgments, ranx_qrels_dict
from labeller.evaluation.report import html, markdown, write_report
from labeller.evaluation.results import Evaluation, RunScores, Settings
from labeller.evaluation.runs import Ranking, load_run, ranx_run_dict, shuffle_top
from labeller.evaluation.scoring import score_run

__all__ = [
    "EvaluateOptions", "Evaluation", "Judgments", "MetricSpec", "Ranking", "RunScores", "Settings", "compare",
    "evaluate", "gate", "html", "load_judgments", "load_run", "markdown", "outcome_error", "outcome_warnings",
    "parse_metrics",
    "parse_thresholds", "ranx_qrels_dict", "ranx_run_dict", "score_run", "shuffle_top", "write_report",
]
