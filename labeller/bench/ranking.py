"""System-ranking agreement: score every run under the gold grades and under a judge's, with
labeller.evaluation's scorer, and compare the two orderings (Kendall tau-b via scipy, as
`labeller evaluate --labels-alt` does)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labeller.bench.models import Ranking
from labeller.evaluation.metrics import parse_metrics
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking as Run
from labeller.evaluation.runs import load_run
from labeller.evaluation.scoring import score_run
from labeller.evaluation.system_ranking import agreement
from labeller.io.gold import GradeFile, settled_grades


def judgments(grades: GradeFile, kind: str) -> Judgments:
    """A grade file as evaluation judgments; several gold grades of one pair give their consensus."""
    out: dict[str, dict[str, int]] = {}
    for (query_id, doc_id), grade in settled_grades(grades).items():
        out.setdefault(query_id, {})[doc_id] = grade
    return Judgments(out, grades.path, kind)


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    runs = [load_run(path) for path in paths]
    seen: dict[str, int] = {}
    for run in runs:  # two files with one name: run, run#2
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name = f"{run.name}#{seen[run.name]}"
    return runs


class RankingScorer:
    """Gold scores once; each judge's labels scored on the same runs."""

    def __init__(self, runs: list[Run], gold: GradeFile, metric: str, relevant_from: int) -> None:
        self.runs, self.specs = runs, parse_metrics(metric)
        self.metric = self.specs[0].name
        self.settings = Settings(relevant_from=relevant_from)
        self.gold = self._means(judgments(gold, "gold"))

    def _means(self, graded: Judgments) -> dict[str, float | None]:
        return {run.name: score_run(run, graded, self.specs, self.settings).trec_eval[self.metric]
                for run in self.runs}

    def rank(self, labels: GradeFile) -> Ranking:
        mine = self._means(judgments(labels, "labels"))
        result = agreement(self.gold, mine, self.metric)
        return Ranking(metric=self.metric, kendall_tau=result.kendall_tau, spearman_rho=result.spearman_rho,
                       gold=self.gold, judge=mine)
