"""What a corrected evaluation produces (`--gold`): records beside the plain figures, never instead of them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CorrectedValue(_Result):
    """A prediction-powered estimate of what the figure would be under people's grades."""

    estimate: float | None
    # the judge's error only: the value these queries would have if people graded every judged pair
    ci_low: float | None
    ci_high: float | None
    # the judge's error and the query sample: the value on new queries like these
    ci_low_queries: float | None = None
    ci_high_queries: float | None = None
    se_judge: float | None = None
    se_queries: float | None = None
    note: str | None = None  # why there is no estimate or interval
    # NDCG under the pair design, where the judge-error spread came from: "sample" (the random gold pairs' own) or
    # "anticipated" (the spread the pool predicts, larger: the random pairs are too few to show it;
    # labeller.evaluation.corrected_spread); beside a certain stratum also "human only" (the same gold without the
    # judge gave the narrower interval, which is then the one reported), or "both" (the two estimates disagreed by
    # more than 1 human-only se, and the interval is the hull of both intervals); hit rate and MRR under the query
    # design: "unseen queries" where the half-width is k/Q, more than the t interval's (k ungraded queries could
    # all differ from every graded one: labeller.evaluation.corrected_estimate); None elsewhere
    spread: Literal["sample", "anticipated", "human only", "both", "unseen queries"] | None = None
    # power tuning (PPI++): the weight of the judge in the estimate, 1 the judge's model alone, 0 human only (the
    # same gold with a judge that knows nothing); pair design: labeller.evaluation.corrected_power; query design:
    # the fitted slope on the judge's per-query value (0 when the human-only interval is the narrower); None where
    # no correction was made or the gold decides the figure exactly
    power_lambda: float | None = None
    # recall and NDCG under the pair design (no certain stratum): the estimated second-order remainder of the ratio's
    # linearisation (the mean over queries; positive: the truth likely above the estimate) that the intervals were
    # stretched by on its side (labeller.evaluation.corrected_stretch); None elsewhere
    remainder: float | None = None
    # ... and how far its own interval reaches either side of it (the t quantile times its standard error over the
    # queries): the ends were stretched to the remainder's interval (corrected_stretch); None elsewhere
    remainder_reach: float | None = None


class CorrectedMetric(_Result):
    metric: str
    queries: int  # the queries averaged (the plain figure's)
    plain: float | None  # the figure under the judge's labels, as `metrics` shows it
    plain_ci_low: float | None  # bootstrap over queries, as if the labels were the truth
    plain_ci_high: float | None
    corrected: CorrectedValue


class CorrectedDifference(_Result):
    reference: str
    run: str
    metric: str
    plain: float | None  # run - reference under the judge's labels
    corrected: CorrectedValue  # run - reference, corrected
    p_worse: float | None  # one-sided normal p of "the run is worse", judge error and query sample included


class Stratum(_Result):
    judge_grade: int
    pool: int  # judged pairs with this grade
    gold: int  # of them graded by people


class PerQueryIntervals(_Result):
    """One run's per-query intervals on one metric, by conformal risk control (labeller.evaluation.corrected_conformal):
    each ungraded query's value under people's grades is inside its interval for at least `target_coverage` of
    such queries (marginally, over queries exchangeable with the graded ones)."""

    run: str
    metric: str
    target_coverage: float
    calibration_queries: int  # queries people graded whole, on which the width is calibrated
    level: float | None  # the tail mass s left out at each end (0: past the drawn range too; None: the whole range)
    graded: dict[str, float]  # query -> its value under people's grades (known exactly)
    intervals: dict[str, tuple[float, float]]  # every other query -> (low, high)
    note: str | None = None


class Corrected(_Result):
    gold: str  # the gold file
    judge: list[str] = Field(default_factory=list)  # who labelled the pool (judge names in --labels)
    design: Literal["pairs", "queries"]
    pool_pairs: int
    gold_pairs: int  # gold pairs in the pool
    gold_outside: int  # gold pairs not in the pool (left out)
    gold_queries: int  # queries with a gold pair (all of whose pairs are gold, under the query design)
    strata: list[Stratum]  # the random strata (pairs drawn with certainty are outside them)
    certain_pairs: int = 0  # gold pairs drawn with certainty (plan top:K: each given run's top K), inclusion 1
    confidence: float
    runs: dict[str, list[CorrectedMetric]]
    differences: list[CorrectedDifference] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    per_query: list[PerQueryIntervals] = Field(default_factory=list)  # per run and metric
