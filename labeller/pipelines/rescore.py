"""Every stored run scored again on the current labels, so a trend compares like with like.

The regression job labels one pool: the top k of today's run, of the baseline and of every run in
the history (through the cache, so only pairs never seen before cost anything). Every run is then
scored on the same labels, and whenever those labels differ from the ones the history was last
rescored on (new pairs joined the pool, or a new judge or rubric graded it), every history row
gets its `rescored_*` columns anew. The as-recorded columns never change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from labeller.evaluation.judged import judged_at
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking, load_run
from labeller.evaluation.scoring import evaluated_queries, score_run
from labeller.pipelines.history import HistoryRow
from labeller.records import Doc, Pair, Query

# Metrics whose value for a fixed top k changes when the pool grows, and why. Precision, MRR and
# hit rate read only the run's own top k, which the pool always holds.
POOL_DEPENDENT = {"recall": "its denominator counts the relevant documents any labelled run found",
                  "ndcg": "its ideal DCG ranks the relevant documents any labelled run found",
                  "map": "its denominator counts the relevant documents any labelled run found"}


@dataclass(frozen=True)
class Figure:
    value: float | None  # the metric's mean, as the gate averages it
    judged: float | None  # judged@k at the metric's cutoff (the pool depth for metrics without one)


def figures(ranking: Ranking, judgments: Judgments, specs: list[MetricSpec], settings: Settings,
            depth: int) -> dict[str, Figure]:
    scores = score_run(ranking, judgments, specs, settings)
    queries = evaluated_queries(ranking, judgments, settings.average)
    return {s.name: Figure(scores.metrics[s.name], judged_at(ranking, judgments, s.k or depth, queries)[0])
            for s in specs}


def labels_digest(judgments: Judgments) -> str:
    """Names the label set: equal digests, equal rescored values."""
    lines = sorted(f"{q}\t{d}\t{g}" for q, docs in judgments.grades.items() for d, g in docs.items())
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def stored_rankings(out: Path, rows: list[HistoryRow]) -> tuple[dict[str, Ranking], int]:
    """The history's runs that are still on disk, by relative path, and how many are missing."""
    paths = {p for r in rows for p in (r.run_file, r.baseline_file) if p}
    present = {p: load_run(out / p) for p in sorted(paths) if (out / p).is_file()}
    return present, len(paths) - len(present)


def pool(rankings: list[Ranking], depth: int, queries: dict[str, Query],
         corpus: dict[str, Doc]) -> tuple[list[Pair], int]:
    """The top `depth` of every ranking, once per pair, in first-seen order; and how many pairs were left
    out because their query or document is not in today's inputs (a baseline over more queries, or a
    document since removed from the corpus: unjudged, so not relevant)."""
    seen: dict[tuple[str, str], Pair] = {}
    left_out: set[tuple[str, str]] = set()
    for ranking in rankings:
        for qid in ranking.docs:
            for did in ranking.top(qid, depth):
                if qid in queries and did in corpus:
                    seen.setdefault((qid, did), Pair(query_id=qid, doc_id=did))
                else:
                    left_out.add((qid, did))
    return list(seen.values()), len(left_out)


def rescore(rows: list[HistoryRow], rankings: dict[str, Ranking], judgments: Judgments, specs: list[MetricSpec],
            settings: Settings, depth: int) -> tuple[list[HistoryRow], int]:
    """Rows with their rescored columns on `judgments`, and how many rows were (re)scored. Only rows
    not yet scored on exactly these labels are touched: when the labels grew (or changed), that is
    every row; when they did not, only today's. A run file that is gone leaves its rows' rescored
    columns empty rather than stale."""
    digest = labels_digest(judgments)
    stale = [r for r in rows if r.rescored_labels != digest]
    if not stale:
        return rows, 0
    wanted = {p for r in stale for p in (r.run_file, r.baseline_file) if p}
    scored = {path: figures(r, judgments, specs, settings, depth) for path, r in rankings.items() if path in wanted}

    def figure(path: str | None, metric: str) -> Figure:
        return scored.get(path or "", {}).get(metric, Figure(None, None))

    fresh = []
    for row in rows:
        if row.rescored_labels == digest:  # already on these labels (the labels did not change since)
            fresh.append(row)
            continue
        run, base = figure(row.run_file, row.metric), figure(row.baseline_file, row.metric)
        fresh.append(row.model_copy(update={
            "rescored_value": run.value, "rescored_judged": run.judged, "rescored_baseline_value": base.value,
            "rescored_baseline_judged": base.judged, "rescored_labels": digest}))
    return fresh, len(stale)
