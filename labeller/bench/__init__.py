"""`labeller judge-bench`: several judges on one human-labelled set, side by side on agreement, system
ranking, speed and cost. Data flow: io (gold, queries, corpus, runs) -> labelling (each judge through
the cache) -> agreement / evaluation (labeller's own figures) -> report (Markdown, JSON, HTML)."""

from labeller.bench.models import BenchResult, JudgeScore
from labeller.bench.run import BenchOptions, judge_bench

__all__ = ["BenchOptions", "BenchResult", "JudgeScore", "judge_bench"]
