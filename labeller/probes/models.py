"""The settings of a probe run and the record of what it measured."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.agreement.bootstrap import Interval

PROBE_NAMES = ("length", "stuffing", "injection", "near-duplicate")
DEFAULT_THRESHOLD = 0.5  # grades: the largest mean shift tolerated before a probe fails


class ProbeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    probes: tuple[str, ...] = PROBE_NAMES
    pairs_per_probe: int = Field(default=50, ge=1)
    # probe -> largest |shift| tolerated; "*": every probe not named; neither: DEFAULT_THRESHOLD
    thresholds: dict[str, float] = Field(default_factory=dict)
    seed: int = 0  # picks the pairs, the padding and the wording; and seeds the bootstrap
    resamples: int = Field(default=2000, ge=1)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    relevant_from: int = Field(default=3, ge=2, le=5)  # grades below this are "irrelevant" for stuffing/injection

    def threshold(self, probe: str) -> float:
        return self.thresholds.get(probe, self.thresholds.get("*", DEFAULT_THRESHOLD))


class PairShift(BaseModel):
    """One probed pair: the original and perturbed grade by the judge now (None: the judge failed)."""

    model_config = ConfigDict(extra="forbid")
    query_id: str
    doc_id: str
    probe_doc_id: str
    reference: int  # the grade that selected the pair (the labels file's, or the judge's own)
    original: int | None
    perturbed: int | None

    @property
    def shift(self) -> int | None:
        return None if self.original is None or self.perturbed is None else self.perturbed - self.original


class ProbeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    probe: str
    what: str
    gated: Literal["mean_shift", "mean_abs_shift"]
    threshold: float
    pairs: int  # pairs probed
    graded: int  # pairs with both grades
    failed: int  # pairs where the judge failed on the original or the perturbed document (never a grade)
    queries: int  # distinct queries among the graded pairs: what the interval resamples
    mean_shift: float | None
    mean_shift_interval: Interval
    mean_abs_shift: float | None
    mean_abs_shift_interval: Interval
    share_changed: float | None
    verdict: Literal["pass", "fail"]
    reasons: list[str] = Field(default_factory=list)
    shifts: list[PairShift] = Field(default_factory=list)


class ProbeCost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    requests: int = 0
    new: int = 0  # verdicts bought by this run
    cached: int = 0  # verdicts read from the cache
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0


class ProbeEstimate(BaseModel):
    """A --dry-run: what the probes would send, nothing sent."""

    model_config = ConfigDict(extra="forbid")
    pairs: int  # originals and copies to grade
    new: int  # of them, not in the cache
    cached: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    notes: list[str] = Field(default_factory=list)


class ProbeReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    judge: str
    rubric: str
    reference: str  # where the reference grades came from
    seed: int
    resamples: int
    confidence: float
    relevant_from: int
    probes: list[ProbeResult]
    cost: ProbeCost
    passed: bool
    estimate: ProbeEstimate | None = None  # --dry-run only: then `probes` is empty and nothing was sent
