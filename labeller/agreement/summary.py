"""The result of comparing a judge to human gold: what `labeller agree --json` prints.

Every figure that can be undefined (kappa when both sides use one grade, say) is None rather than NaN,
so the JSON stays valid. Confusion matrices have human grades on rows and judge grades on columns.
"""

from __future__ import annotations

from labeller.agreement.bootstrap import Interval
from labeller.io.gold import Clipped
from labeller.records import Pair, Record


class Intervals(Record):
    kappa: Interval
    kappa_linear: Interval
    kappa_quadratic: Interval
    alpha_ordinal: Interval
    kappa_binary: dict[str, Interval]
    spearman: Interval
    kendall: Interval
    exact_agreement: Interval
    within_one: Interval
    mean_signed_difference: Interval


class Confusion(Record):
    grades: list[int]
    rows: str = "human (gold)"
    columns: str = "judge"
    matrix: list[list[int]]


class GradeScore(Record):
    """How the judge does on one grade: precision (of the judge's use of it) and recall (of human uses)."""

    grade: int
    precision: float | None
    recall: float | None
    judge_count: int
    gold_count: int


class BaseRates(Record):
    """Share of pairs given each grade, by each side."""

    judge: dict[str, float]
    gold: dict[str, float]


class OneSideOnly(Record):
    """Pairs graded by one side only: counted and listed, never silently dropped."""

    labels_only: int
    gold_only: int
    labels_only_pairs: list[Pair]
    gold_only_pairs: list[Pair]


class Clipping(Record):
    enabled: bool
    count: int
    rows: list[Clipped]


class Ceiling(Record):
    """Human-human agreement on the pairs several people graded: the ceiling the judge is measured against.

    `judge_kappa` is the judge's kappa against each person on those same pairs (averaged like the
    human pairs), so the two are like for like.
    """

    pairs: int
    annotators: list[str]
    kappa: float | None
    kappa_quadratic: float | None
    alpha_ordinal: float | None
    exact_agreement: float | None
    judge_kappa: float | None
    judge_kappa_quadratic: float | None


class PredictionPowered(Record):
    """Share of relevant pairs in the whole labelled set, corrected for the judge's bias with gold."""

    relevant_from: int
    n_gold: int
    n_unlabelled: int
    judge_only_share: float
    classic: Interval
    classic_estimate: float
    stratified: Interval
    stratified_estimate: float
    confidence: float


class BootstrapInfo(Record):
    resamples: int
    seed: int
    unit: str = "query"
    queries: int
    confidence: float


class Agreement(Record):
    n: int
    queries: int
    relevant_from: int
    kappa: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    alpha_ordinal: float | None
    kappa_binary: dict[str, float | None]
    kappa_relevant: float | None  # kappa_binary at relevant_from: the one used for decisions
    spearman: float | None
    kendall: float | None
    exact_agreement: float
    within_one: float
    mean_signed_difference: float
    ci: Intervals
    confusion: Confusion
    per_grade: list[GradeScore]
    base_rates: BaseRates
    one_side_only: OneSideOnly
    clipping: Clipping
    too_generous: int  # pairs where the judge is >= min_diff grades above the human
    too_strict: int
    min_diff: int
    ceiling: Ceiling | None = None
    prediction_powered: PredictionPowered | None = None
    bootstrap: BootstrapInfo
