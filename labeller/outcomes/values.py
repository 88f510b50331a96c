"""Each query's retrieval figures, from labeller's own evaluation: the metrics' per-query values as
`labeller evaluate` computes them (labeller.evaluation.scoring), judged@k from the same kernels, and
required-evidence coverage@k from labeller.acceptance.coverage. Nothing here computes a metric itself.

Queries are scored as trec_eval -c does (every judged query; one the run does not answer scores 0),
because a production query the retriever returned nothing for is a retrieval failure. Queries with
nothing relevant to find (the no-answer bucket) are set apart: every metric is 0 there whatever the
retriever does, so they say nothing about which metric predicts the task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from labeller.acceptance.coverage import evidence_coverage
from labeller.errors import BadInputError
from labeller.evaluation import noanswer
from labeller.evaluation.kernels import JoinedRanking
from labeller.evaluation.metrics import MetricSpec, parse_metrics
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.results import Settings
from labeller.evaluation.runs import Ranking
from labeller.evaluation.scoring import score_run

DEFAULT_CUTOFFS = (1, 3, 5, 10)
EXTRA_KINDS = ("judged@", "coverage@")  # figures beside the metrics, at every cutoff of OutcomesOptions.cutoffs


def check_metric_name(name: str) -> str:
    """A metric `labeller evaluate` knows, or judged@k / coverage@k."""
    if name.startswith(EXTRA_KINDS):
        _, _, k = name.partition("@")
        if not k.isdigit() or int(k) < 1:
            raise BadInputError(f"'{name}': expected a cutoff >= 1 after the @, e.g. judged@10", field="metric")
        return name
    return parse_metrics(name)[0].name


@dataclass
class QueryValues:
    run: str
    values: dict[str, dict[str, float]]  # metric -> query id -> value (answerable judged queries only)
    kinds: dict[str, tuple[str, int]]  # metric -> (kind, cutoff)
    no_answer: list[str] = field(default_factory=list)
    judged: set[str] = field(default_factory=set)  # every query with a judgment


def default_metrics(cutoffs: tuple[int, ...] | list[int]) -> str:
    """The grid a report compares: ndcg, recall and hit rate at every cutoff, and MRR to the deepest."""
    ks = sorted(set(cutoffs))
    return ",".join([*(f"{kind}@{k}" for kind in ("ndcg", "recall", "hit_rate") for k in ks), f"mrr@{ks[-1]}"])


def query_values(ranking: Ranking, judgments: Judgments, metrics: str | list[MetricSpec], cutoffs: list[int], *,
                 relevant_from: int = 3, gain: str = "linear",
                 evidence: Mapping[str, Mapping[str, set[str]]] | None = None) -> QueryValues:
    specs = parse_metrics(metrics) if isinstance(metrics, str) else metrics
    settings = Settings(relevant_from=relevant_from, gain=gain, average="all")
    scores = score_run(ranking, judgments, specs, settings)
    evaluated = sorted(next(iter(scores.per_query.values()), {}))
    answerable, no_answer = noanswer.split(evaluated, judgments, relevant_from)
    keep = set(answerable)
    values = {name: {q: v for q, v in per_query.items() if q in keep} for name, per_query in scores.per_query.items()}
    kinds = {s.name: (s.kind, s.k) for s in specs}
    joined = JoinedRanking(ranking.columns, judgments)
    index = {q: i for i, q in enumerate(joined.query_ids)}
    for k in cutoffs:
        share, _ = joined.judged(k)
        values[f"judged@{k}"] = {q: float(share[index[q]]) if q in index else 0.0 for q in answerable}
        kinds[f"judged@{k}"] = ("judged", k)
    if evidence:
        docs = ranking.docs
        for k in cutoffs:
            report = evidence_coverage({q: e for q, e in evidence.items() if q in keep}, docs, k)
            values[f"coverage@{k}"] = {row.query_id: row.coverage for row in report.queries}
            kinds[f"coverage@{k}"] = ("coverage", k)
    return QueryValues(run=ranking.name, values=values, kinds=kinds, no_answer=no_answer,
                       judged=set(judgments.grades))
