"""Score one run against judgments with ranx: per-query values, means, judged@k, no-answer bucket.

Averaging (which queries a mean is over), as trec_eval:
- `trec` (default, trec_eval without -c): queries that are in the run AND have judgments. Run
  queries without judgments are skipped; judged queries the run lacks are skipped too.
- `all` (trec_eval -c): every judged query; one the run lacks scores 0 on every metric.
Then the no-answer bucket (labeller.evaluation.noanswer) is kept out of `metrics` but not out of
`trec_eval`.

The values come from labeller's numpy kernels over the columnar ranking (labeller.evaluation.kernels:
every query at once, no compilation). LABELLER_JIT=on|off instead scores with ranx's metric
functions, compiled or interpreted (the kernels are tested against both, and against trec_eval).
In that mode the values come from ranx's metric functions (ranx.metrics.ndcg, recall, ...: what ranx.evaluate
calls), handed their low-level input directly: per query, a [doc index, gain] array sorted by gain
and a [doc index, pseudo-score] array already in trec_eval's order with strictly decreasing
scores. ranx then neither hashes ids (no collisions) nor re-sorts (no tie-breaking of its own).
"""

from __future__ import annotations

import warnings
from statistics import fmean

import numpy as np

from labeller.evaluation import judged as judged_mod
from labeller.evaluation import noanswer
from labeller.evaluation.kernels import JoinedRanking
from labeller.evaluation.metrics import MetricSpec, cutoffs
from labeller.evaluation.numba_cache import import_ranx_metrics, ranx_is_compiled, ranx_requested
from labeller.evaluation.qrels import Judgments, gain
from labeller.evaluation.results import NoAnswer, QueryCounts, RunScores, Settings
from labeller.evaluation.runs import Ranking


def evaluated_queries(ranking: Ranking, judgments: Judgments, average: str) -> list[str]:
    judged = judgments.grades.keys()
    chosen = judged if average == "all" else judged & ranking.query_ids
    return sorted(chosen)


def workload(rankings: list[Ranking], judgments: Judgments, specs: list[MetricSpec], average: str) -> int:
    """Ranked positions ranx will look at: decides compiled or interpreted kernels."""
    total = 0
    for ranking in rankings:
        for qid in evaluated_queries(ranking, judgments, average):
            n = len(ranking.docs.get(qid, ()))
            total += sum(min(s.k or n, n) for s in specs)
    return total


def per_query_values(ranking: Ranking, judgments: Judgments, specs: list[MetricSpec], settings: Settings,
                     query_ids: list[str]) -> dict[str, dict[str, float]]:
    """metric name -> query id -> value, for the given queries (0 where the run has no ranking)."""
    metrics = import_ranx_metrics()
    present = [q for q in query_ids if ranking.docs.get(q)]
    values: dict[str, dict[str, float]] = {s.name: {q: 0.0 for q in query_ids} for s in specs}
    if not present:
        return values
    qrels, run = _arrays(ranking, judgments, present)
    computed: dict[tuple[str, int, int], list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64->int64 cast warning on k: harmless here
        for spec in specs:
            call = spec.ranx_call(settings.relevant_from, settings.gain)
            if call not in computed:  # p@5 and precision@5 are one computation
                function, k, level = call
                computed[call] = getattr(metrics, function)(qrels, run, k, level).tolist()
            values[spec.name].update(zip(present, computed[call], strict=True))
    return values


def _arrays(ranking: Ranking, judgments: Judgments, query_ids: list[str]):
    """ranx's low-level input: per query [doc index, gain] sorted by gain, and [doc index, score]
    in trec_eval's order with strictly decreasing pseudo-scores (n, n-1, ..., 1)."""
    index: dict[str, int] = {}
    qrels, run = [], []
    for qid in query_ids:
        graded = sorted(((index.setdefault(d, len(index)), gain(g)) for d, g in judgments.grades[qid].items()),
                        key=lambda row: -row[1])
        qrels.append(np.array(graded, dtype=np.float64).reshape(-1, 2))
        docs = ranking.docs[qid]
        ids = np.fromiter((index.setdefault(d, len(index)) for d in docs), dtype=np.float64, count=len(docs))
        run.append(np.column_stack((ids, np.arange(len(docs), 0, -1, dtype=np.float64))))
    if ranx_is_compiled():  # compiled kernels take numba typed lists; interpreted ones plain lists
        from numba.typed import List as TypedList

        return TypedList(qrels), TypedList(run)
    return qrels, run


def _mean(values: dict[str, float], query_ids: list[str]) -> float | None:
    return fmean(values[q] for q in query_ids) if query_ids else None


def columnar_values(ranking: Ranking, judgments: Judgments, specs: list[MetricSpec], settings: Settings,
                    query_ids: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, float | None], dict[str, int]]:
    """(per-query values as per_query_values gives them, judged@k means, unjudged pairs) from the kernels."""
    joined = JoinedRanking(ranking.columns, judgments)
    index = {q: i for i, q in enumerate(joined.query_ids)}
    where = np.array([index.get(q, -1) for q in query_ids], dtype=np.int64)
    present = where >= 0
    where[~present] = 0
    values: dict[str, dict[str, float]] = {}
    for spec in specs:
        per_query = np.where(present, joined.values(spec, settings.relevant_from, settings.gain)[where], 0.0)
        values[spec.name] = dict(zip(query_ids, per_query.tolist(), strict=True))
    judged, unjudged = {}, {}
    answered = where[present & (joined.lengths[where] > 0)]
    for k in cutoffs(specs):
        share, holes = joined.judged(k)
        judged[f"judged@{k}"] = float(share[answered].mean()) if len(answered) else None
        unjudged[f"judged@{k}"] = int(holes[answered].sum())
    return values, judged, unjudged


def score_run(ranking: Ranking, judgments: Judgments, specs: list[MetricSpec], settings: Settings) -> RunScores:
    evaluated = evaluated_queries(ranking, judgments, settings.average)
    answerable, no_answer = noanswer.split(evaluated, judgments, settings.relevant_from)
    if ranx_requested():
        per_query = per_query_values(ranking, judgments, specs, settings, evaluated)
        judged, unjudged = {}, {}
        for k in cutoffs(specs):
            judged[f"judged@{k}"], unjudged[f"judged@{k}"] = judged_mod.judged_at(ranking, judgments, k, evaluated)
    else:
        per_query, judged, unjudged = columnar_values(ranking, judgments, specs, settings, evaluated)
    run_q, judged_q = ranking.query_ids, judgments.grades.keys()
    counts = QueryCounts(in_run=len(run_q), judged=len(judged_q), evaluated=len(evaluated),
                         averaged=len(answerable), no_answer=len(no_answer), run_only=len(run_q - judged_q),
                         missing_from_run=len(judged_q - run_q))
    return RunScores(
        name=ranking.name, source=ranking.source,
        metrics={s.name: _mean(per_query[s.name], answerable) for s in specs},
        trec_eval={s.name: _mean(per_query[s.name], evaluated) for s in specs},
        per_query=per_query, judged=judged, unjudged=unjudged, queries=counts,
        no_answer=NoAnswer(query_ids=no_answer, relevant_from=settings.relevant_from),
    )
