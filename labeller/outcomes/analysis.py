"""One outcomes analysis in memory: rankings, judgments and outcome tables in, one OutcomesReport out.

The command line (labeller.outcomes.job) reads files into these; the Python API (labeller.api.outcomes)
builds them from DataFrames; the regression pipeline calls the pieces it needs.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from labeller.errors import BadInputError
from labeller.evaluation.metrics import check_gain, check_relevant_from
from labeller.evaluation.qrels import Judgments
from labeller.evaluation.runs import Ranking
from labeller.outcomes.attribution import attribute, regression_attribution
from labeller.outcomes.gate import DEFAULT_MAX_DROP, downstream_gate, no_model_gate
from labeller.outcomes.predict import cutoffs as best_cutoffs
from labeller.outcomes.predict import rank_predictions, recommend
from labeller.outcomes.results import FORMAT, Joined, OutcomesReport
from labeller.outcomes.table import Key, OutcomeTable
from labeller.outcomes.values import DEFAULT_CUTOFFS, EXTRA_KINDS, QueryValues, default_metrics, query_values


class OutcomesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metrics: str | None = None  # None: ndcg, recall, hit_rate at every cutoff and mrr (values.default_metrics)
    cutoffs: list[int] = Field(default_factory=lambda: list(DEFAULT_CUTOFFS))  # also judged@k and coverage@k
    relevant_from: int = 3
    gain: str = "linear"
    ok_from: float = 0.5  # retrieval succeeded on a query when the metric is at least this
    success_from: float = 0.5  # a `score` outcome is a success from this value
    gate_metric: str | None = None  # attribution and gate on this metric (added to metrics); None: the recommended one
    max_drop: float = DEFAULT_MAX_DROP  # the downstream gate's largest tolerated drop in predicted success
    confidence: float = 0.95
    bootstrap: int = 1000
    seed: int = 42

    def check(self) -> None:
        check_relevant_from(self.relevant_from)
        check_gain(self.gain)
        if not self.cutoffs or any(k < 1 for k in self.cutoffs):
            raise BadInputError(f"cutoffs {self.cutoffs} must be whole numbers >= 1", field="cutoffs")
        if not 0 < self.confidence < 1:
            raise BadInputError(f"--confidence {self.confidence} must be between 0 and 1", field="confidence")
        if self.bootstrap < 1:
            raise BadInputError(f"--bootstrap {self.bootstrap} must be at least 1", field="bootstrap")
        if self.max_drop < 0:
            raise BadInputError(f"--max-drop {self.max_drop} is negative; expected a drop >= 0", field="max_drop")


def values_for(ranking: Ranking, judgments: Judgments, options: OutcomesOptions,
               evidence: Mapping[str, Mapping[str, set[str]]] | None = None) -> QueryValues:
    """The run's per-query figures: the metrics asked for (and the gate metric, when it is a ranking metric)."""
    metrics = [m.strip() for m in (options.metrics or default_metrics(options.cutoffs)).split(",") if m.strip()]
    gate = options.gate_metric
    if gate is not None and not gate.startswith(EXTRA_KINDS) and gate not in metrics:
        metrics.append(gate)
    return query_values(ranking, judgments, ",".join(metrics), options.cutoffs, relevant_from=options.relevant_from,
                        gain=options.gain, evidence=evidence)


def _gate_metric(options: OutcomesOptions, recommended: str | None, values: QueryValues, best: str | None) -> str | None:
    """The metric attribution and the gate use: the one asked for, else the recommended one, else the best of
    metrics that predict nothing (the gate then moves little: a drop there is not the product's loss)."""
    metric = options.gate_metric or recommended or best
    if options.gate_metric is not None and options.gate_metric not in values.values:
        raise BadInputError(f"--gate-metric '{options.gate_metric}' is not among the metrics analysed "
                            f"({', '.join(values.values)})", field="gate_metric")
    return metric


def analyse(run: QueryValues, outcomes: OutcomeTable, options: OutcomesOptions, *,
            baseline: QueryValues | None = None, baseline_outcomes: OutcomeTable | None = None,
            texts: Mapping[str, str] | None = None, key: Key | None = None) -> OutcomesReport:
    """Which metric predicts the outcome, whose fault each failure is, and (with a baseline) the regression's split.
    `key`: what the run's query ids are (trace_id for a run read from traces); None: query_id when every outcome
    row has one, else trace_id."""
    options.check()
    key, rows = (key, outcomes.keyed(key)) if key is not None else outcomes.by_default_key()
    no_judgments = sorted(q for q in rows if q not in run.judged)
    if len(no_judgments) == len(rows):
        raise BadInputError(f"none of the {len(rows)} {key}s of the outcomes (first: '{next(iter(rows))}') has a "
                            f"judgment; expected outcomes for the judged queries of run '{run.run}'",
                            path=outcomes.source, field=key)
    success = {q: r.success for q, r in rows.items()}
    scored = set(next(iter(run.values.values()), {}))  # the answerable judged queries every metric covers
    analysed = sorted(scored & set(rows))
    preds = rank_predictions(run.values, run.kinds, {q: success[q] for q in analysed}, ok_from=options.ok_from,
                             confidence=options.confidence, bootstrap=options.bootstrap, seed=options.seed)
    cuts = best_cutoffs(preds)
    recommendation = recommend(preds, cuts, ok_from=options.ok_from, confidence=options.confidence)
    metric = _gate_metric(options, recommendation.metric, run,
                          preds[0].metric if preds and preds[0].auc is not None else None)
    warnings = []
    if no_judgments:
        warnings.append(f"{len(no_judgments)} of the {len(rows)} outcome rows have no judgment and were left out "
                        f"(first: '{no_judgments[0]}')")
    report = OutcomesReport(
        format=FORMAT, run=run.run, outcomes=outcomes.source, key=key,
        joined=Joined(outcomes=len(rows), analysed=len(analysed), no_judgments=no_judgments,
                      no_answer=[q for q in run.no_answer if q in rows],
                      not_in_outcomes=len(scored - set(rows))),
        outcome_rate=sum(success[q] for q in analysed) / len(analysed) if analysed else None,
        ok_from=options.ok_from, confidence=options.confidence, bootstrap=options.bootstrap, predictions=preds,
        cutoffs=cuts, recommendation=recommendation, warnings=warnings,
        attribution=attribute(metric, run.values[metric], rows, ok_from=options.ok_from, texts=texts)
        if metric else None)
    if baseline is not None and metric is None:
        report.gate = no_model_gate(baseline.run, options.max_drop)
    elif baseline is not None:
        before = baseline_outcomes.keyed(key) if baseline_outcomes is not None else None
        if before is not None:
            report.regression = regression_attribution(metric, baseline.run, baseline.values[metric],
                                                       run.values[metric], before, rows, ok_from=options.ok_from,
                                                       texts=texts)
        fit_values, fit_rows = ((baseline.values[metric], before) if before is not None
                                else (run.values[metric], rows))
        report.gate = downstream_gate(metric, baseline.run, fit_values, fit_rows, baseline.values[metric],
                                      run.values[metric], ok_from=options.ok_from, threshold=options.max_drop,
                                      confidence=options.confidence, bootstrap=options.bootstrap, seed=options.seed)
    return report
