"""What an evaluation produces, as serializable records (the `--json` output and result.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.evaluation.corrected_results import Corrected

FORMAT = "labeller-evaluate/1"


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Settings(Result):
    relevant_from: int = 3  # binary metrics: relevant means grade >= this (1-5 scale)
    gain: Literal["linear", "exponential"] = "linear"  # NDCG gain: grade - 1, or 2^(grade - 1) - 1
    average: Literal["trec", "all"] = "trec"  # trec: queries in the run that have judgments; all: trec_eval -c
    exact_scores: bool = False  # rank by the full double score; default: as trec_eval, scores as 32-bit floats


class QueryCounts(Result):
    in_run: int  # queries the run answers
    judged: int  # queries with at least one judgment
    evaluated: int  # queries scored under the averaging rule
    averaged: int  # evaluated queries that count in `metrics` (evaluated minus the no-answer bucket)
    no_answer: int
    run_only: int  # run queries without any judgment: trec_eval skips them, so do we
    missing_from_run: int  # judged queries the run does not answer (score 0 under --average all)


class NoAnswer(Result):
    """Queries with no document graded >= relevant_from. Their values are in per_query but not in
    `metrics`; `trec_eval` averages them in (as trec_eval does, mostly as zeros)."""

    query_ids: list[str] = Field(default_factory=list)
    relevant_from: int = 3


class RunScores(Result):
    name: str
    source: str
    metrics: dict[str, float | None]  # mean over the averaged queries, keyed by the name as requested
    trec_eval: dict[str, float | None]  # trec_eval-comparable mean: no-answer queries included
    per_query: dict[str, dict[str, float]]  # metric -> query_id -> value, every evaluated query
    judged: dict[str, float | None]  # "judged@k" -> mean share of the top k that has a judgment
    unjudged: dict[str, int]  # "judged@k" -> unjudged pairs in the top k (counted as not relevant)
    queries: QueryCounts
    no_answer: NoAnswer


class PairedTest(Result):
    metric: str
    n: int  # queries compared: either side averaged them (a side lacking one scores 0 there)
    reference_mean: float | None
    run_mean: float | None
    difference: float | None  # run - reference
    ci_low: float | None  # bootstrap confidence interval of the mean difference
    ci_high: float | None
    p_t_test: float | None  # paired two-sided Student's t-test (ranx / scipy)
    p_randomization: float | None  # paired two-sided randomization (Fisher) test
    # One-sided "is the run worse?" p-values (the regression gate's question), and the smallest
    # one-sided p each test can reach on these queries (2^-differing for the exact sign-flip test).
    p_worse_t_test: float | None = None
    p_worse_randomization: float | None = None
    smallest_p_t_test: float | None = None
    smallest_p_randomization: float | None = None
    differing: int | None = None  # queries whose values differ (the others are ties and cannot be flipped)
    wins: int  # queries where the run beats the reference
    losses: int
    ties: int


class Comparison(Result):
    reference: str
    run: str
    tests: list[PairedTest]
    confidence: float
    permutations: int
    bootstrap: int
    # union: queries either side averaged, a side lacking one scores 0 there; reference: the
    # reference's queries (a saved baseline); shared: both sides only (results saved before pairing existed)
    pairing: Literal["union", "reference", "shared"] = "shared"
    only_in_reference: int = 0  # averaged queries the run lacks (it scores 0 on them, unless pairing is shared)
    only_in_run: int = 0  # averaged queries the reference lacks (0 for it under union; left out otherwise)
    not_comparable: str | None = None  # why nothing can be compared (the gate then fails)


class GateCheck(Result):
    run: str
    metric: str
    threshold: float
    baseline: float | None
    run_value: float | None
    drop: float | None  # baseline - run; positive is worse
    p_value: float | None  # one-sided: is the run worse?
    smallest_p: float | None = None  # the smallest p the test can reach on these queries
    # threshold: no drop beyond it; threshold and significance: beyond it, then the test; threshold
    # alone: beyond it, and too few queries differ for the test to reach alpha; nothing: not gated
    decided_by: Literal["threshold", "threshold and significance", "threshold alone", "nothing",
                        "corrected threshold", "corrected threshold and significance",
                        "corrected threshold alone"] = "threshold"
    note: str | None = None  # e.g. "too few queries for significance; decided by the threshold alone"
    verdict: Literal["regression", "drop-not-significant", "drop-untestable", "drop-within-threshold", "no-drop",
                     "not-comparable"]


class GateResult(Result):
    baseline: str
    test: Literal["randomization", "t-test"]
    alpha: float
    require_significance: bool = False  # --require-significance: a drop the test cannot test passes, loudly
    passed: bool
    checks: list[GateCheck]
    reasons: list[str] = Field(default_factory=list)  # why it failed, one line per cause
    warnings: list[str] = Field(default_factory=list)  # what a pass did not test
    corrected: str | None = None  # --corrected: the gold file whose correction decided every check
    judges: list[str] = Field(default_factory=list)  # who made the labels every figure is on (named in the verdict)


class RankingAgreement(Result):
    metric: str
    kendall_tau: float | None
    kendall_p: float | None
    spearman_rho: float | None
    spearman_p: float | None
    primary: dict[str, float | None]  # run -> mean under --labels
    alternative: dict[str, float | None]  # run -> mean under --labels-alt


class SystemRanking(Result):
    primary_labels: str
    alternative_labels: str
    runs: list[str]
    metrics: list[RankingAgreement]
    alternative_scores: dict[str, RunScores]


class FloorCheck(Result):
    """An absolute floor (`--min ndcg@10=0.6`) on one run: passed when the metric is at least the floor."""

    run: str
    metric: str
    floor: float
    value: float | None
    passed: bool


class HoleFilling(Result):
    judge: str
    rubric: str
    depth: int
    holes: int  # unjudged pairs found in the top `depth`
    labelled: int
    from_cache: int
    new: int
    failed: int
    cost_usd: float | None = None
    stopped: str | None = None  # why labelling stopped early: "budget" (--max-cost) or the judge's fatal error
    saved_to: str | None = None


class Evaluation(Result):
    format: str = FORMAT
    run: str  # the run under test: the first --run
    metrics: dict[str, float | None]
    trec_eval: dict[str, float | None]
    per_query: dict[str, dict[str, float]]
    judged: dict[str, float | None]
    unjudged: dict[str, int]
    queries: QueryCounts
    no_answer: NoAnswer
    settings: Settings
    labels: str
    runs: dict[str, RunScores]
    baseline: str | None = None
    comparisons: list[Comparison] = Field(default_factory=list)
    gate: GateResult | None = None
    floors: list[FloorCheck] = Field(default_factory=list)  # --min: absolute floors, checked on each run under test
    holes: HoleFilling | None = None
    system_ranking: SystemRanking | None = None
    # numpy: labeller's columnar kernels (the default); compiled/interpreted: ranx's, with LABELLER_JIT=on/off
    ranx_kernels: Literal["numpy", "compiled", "interpreted"] = "numpy"
    corrected: Corrected | None = None  # --gold: prediction-powered figures beside the plain ones
    # who made the labels (judge · rubric version; empty for people's qrels and gold): part of every figure's
    # identity, so a saved baseline from other judges is refused and a mix is named in the verdict
    judges: list[str] = Field(default_factory=list)
