"""What `labeller outcomes` produces, as typed records: the `--json` output, and what an exporter pushes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT = "labeller-outcomes/1"
Cell = Literal["both_ok", "retrieval_fault", "agent_fault", "over_penalised"]
CELLS: tuple[Cell, ...] = ("retrieval_fault", "agent_fault", "over_penalised", "both_ok")


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricPrediction(Result):
    """How well one metric's per-query value predicts the task's success."""

    metric: str  # ndcg@10, recall@5, hit_rate@3, mrr@10, coverage@10, judged@10
    kind: str  # ndcg | recall | hit_rate | mrr | precision | map | coverage | judged
    k: int  # the cutoff (0: the whole ranking)
    n: int  # queries with both a value and an outcome
    successes: int
    auc: float | None  # None when every task succeeded (or every one failed)
    auc_low: float | None = None
    auc_high: float | None = None
    intercept: float | None = None  # logistic fit: P(success) = 1 / (1 + exp(-(intercept + slope * value)))
    slope: float | None = None
    slope_low: float | None = None
    slope_high: float | None = None
    p_at_0: float | None = None  # fitted chance of success when the metric is 0 ...
    p_at_1: float | None = None  # ... and when it is 1
    separated: bool = False  # the metric splits the outcomes perfectly: the slope is the penalty's, not the data's
    ok_n: int = 0  # queries where retrieval succeeded (value >= ok_from)
    ok_rate: float | None = None  # task success rate among them
    failed_n: int = 0
    failed_rate: float | None = None
    as_good_as_best: bool = False  # the bootstrap cannot tell its AUC from the best one's


class Cutoff(Result):
    kind: str
    best_k: int
    auc: dict[str, float | None]  # metric name -> AUC, for every cutoff of this kind


class Recommendation(Result):
    metric: str | None  # what to gate on; None when no metric predicts the outcome
    sentence: str
    predictive: bool  # the best AUC's interval lies above 0.5


class QueryCase(Result):
    query_id: str
    text: str | None = None
    trace_id: str | None = None
    value: float  # the gating metric's value
    task_ok: bool


class Attribution(Result):
    """Each query in one of four cells, by whether retrieval (the gating metric >= ok_from) and the task succeeded."""

    metric: str
    ok_from: float
    counts: dict[str, int]  # cell -> queries
    queries: dict[str, list[QueryCase]]  # cell -> the queries, with their texts


class RegressionCase(Result):
    query_id: str
    text: str | None = None
    baseline_value: float | None
    run_value: float | None


class RegressionAttribution(Result):
    """Tasks that succeeded with the baseline and fail with the run, split by what retrieval did."""

    metric: str
    baseline: str
    newly_failing: int
    lost_evidence: int  # retrieval succeeded on the baseline and failed on the run: retrieval's fault
    kept_evidence: int  # retrieval succeeded on both: the agent's fault
    never_had: int  # retrieval failed on both: the run did not change it
    newly_fixed: int  # failed with the baseline, succeed with the run
    retrieval_dropped: int  # queries whose retrieval went from ok to failed, whatever their task did
    sentence: str
    queries: dict[str, list[RegressionCase]]  # lost_evidence | kept_evidence | never_had -> queries


class DownstreamGate(Result):
    """The downstream-weighted view: the task success rate the outcome model predicts for the baseline's
    retrieval and for the run's, from the gating metric. A drop only counts through queries whose outcome
    the metric predicts; a metric that predicts nothing moves nothing."""

    metric: str
    baseline: str
    baseline_rate: float | None
    run_rate: float | None
    drop: float | None  # baseline - run; positive is worse
    drop_low: float | None = None
    drop_high: float | None = None
    threshold: float
    at_risk: list[str] = Field(default_factory=list)  # queries whose task succeeded and whose retrieval was lost
    passed: bool
    reason: str


class Joined(Result):
    outcomes: int  # rows in the outcomes table
    analysed: int  # with an outcome and metric values
    no_judgments: list[str] = Field(default_factory=list)  # outcome queries without any judgment
    no_answer: list[str] = Field(default_factory=list)  # judged, but nothing relevant to find: left out
    not_in_outcomes: int = 0  # judged queries of the run with no outcome


class OutcomesReport(Result):
    format: str = FORMAT
    run: str
    outcomes: str
    key: Literal["query_id", "trace_id"]
    joined: Joined
    outcome_rate: float | None  # share of analysed queries whose task succeeded
    ok_from: float
    confidence: float
    bootstrap: int
    predictions: list[MetricPrediction]
    cutoffs: list[Cutoff]
    recommendation: Recommendation
    attribution: Attribution | None = None
    regression: RegressionAttribution | None = None
    gate: DownstreamGate | None = None
    warnings: list[str] = Field(default_factory=list)

    def figures(self) -> dict[str, float | int | None]:
        """The headline numbers as flat names, for an exporter to push with the run's labels: the outcome rate,
        each metric's AUC, the attribution counts, the gate's predicted rates and drop."""
        out: dict[str, float | int | None] = {"outcome_rate": self.outcome_rate, "outcome_queries": self.joined.analysed}
        out.update({f"outcome_auc:{p.metric}": p.auc for p in self.predictions})
        if self.attribution is not None:
            out.update({f"attribution:{cell}": n for cell, n in self.attribution.counts.items()})
        if self.regression is not None:
            out.update(newly_failing=self.regression.newly_failing, lost_evidence=self.regression.lost_evidence)
        if self.gate is not None:
            out.update(predicted_outcome_rate_baseline=self.gate.baseline_rate,
                       predicted_outcome_rate=self.gate.run_rate, predicted_outcome_drop=self.gate.drop,
                       downstream_gate_passed=int(self.gate.passed))
        return out
