"""Suite criteria: a canary run as a gate on continuous scores, not only a count of passes.

Each canary has a score in 0..1 (probe.py): the lowest of the fact-recall scores it was given (its
top-K passages, the system's answer), 0 when a forbidden string showed up, a live canary did not
show its check, or an answer was missing. The suite's criteria, from a `[suite]` table in the
canary file or the command line (which wins):

    [suite]
    mean_score = 0.9          # the mean of the canaries' scores must reach this
    score_floor = 0.5         # every canary's score must reach this
    floors = { kite-consignment = 1.0 }   # this canary's score must reach its own floor
    all_pass = true           # every canary must also pass (the default); false: the scores alone gate

A criterion of 0 could never fail, so each must be above 0. The verdict lists every criterion with
what was required and what was measured; the probe exits 1 when any fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labeller.errors import BadInputError
from labeller.io.tomlfile import read_toml
from labeller.io.validation import validation_error

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteCriteria(_Strict):
    mean_score: float | None = Field(default=None, gt=0.0, le=1.0)
    score_floor: float | None = Field(default=None, gt=0.0, le=1.0)
    floors: dict[str, float] = Field(default_factory=dict)
    all_pass: bool = True

    @model_validator(mode="after")
    def _can_fail(self) -> SuiteCriteria:
        if not self.all_pass and self.mean_score is None and self.score_floor is None and not self.floors:
            raise ValueError("all_pass = false needs a score criterion (mean_score, score_floor or floors): "
                             "else the gate could never fail")
        return self

    def merged(self, override: SuiteCriteria | None) -> SuiteCriteria:
        """These criteria (the file's) with the ones set in `override` (the command line's) taking precedence."""
        if override is None:
            return self
        given = {k: getattr(override, k) for k in override.model_fields_set if getattr(override, k) is not None}
        floors = {**self.floors, **given.pop("floors", {})}
        return SuiteCriteria.model_validate({**self.model_dump(), **given, "floors": floors})


class Criterion(_Strict):
    name: str  # "mean_score", "score_floor", "floor <canary id>", "all_pass"
    required: float
    actual: float
    passed: bool


class SuiteVerdict(_Strict):
    scores: dict[str, float]  # canary id -> score
    mean_score: float
    lowest_score: float
    criteria: list[Criterion]
    passed: bool


def load_criteria(path: str | Path) -> SuiteCriteria:
    """The `[suite]` table of a TOML canary file; no criteria for a JSONL file or a file without one."""
    path = Path(path)
    if path.suffix.lower() != ".toml":
        return SuiteCriteria()
    table = read_toml(path).get("suite", {})
    if not isinstance(table, dict):
        raise BadInputError("`suite` must be a table ([suite])", path=str(path), field="suite")
    try:
        return SuiteCriteria.model_validate(table)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), prefix=("suite",)) from None


def check_floors(criteria: SuiteCriteria, canary_ids: Sequence[str], where: str | None = None) -> None:
    for cid, floor in criteria.floors.items():
        if cid not in canary_ids:
            raise BadInputError(f"a floor for unknown canary '{cid}'; expected an id from the canary file",
                                path=where, field="suite.floors")
        if not 0.0 < floor <= 1.0:
            raise BadInputError(f"floor {floor} for canary '{cid}' is not in (0, 1]", path=where, field="suite.floors")


def judge_suite(scores: Mapping[str, float], n_passed: int, criteria: SuiteCriteria) -> SuiteVerdict:
    values = list(scores.values())
    mean = sum(values) / len(values) if values else 0.0
    lowest = min(values, default=0.0)
    checks: list[Criterion] = []
    if criteria.all_pass:
        checks.append(Criterion(name="all_pass", required=len(values), actual=n_passed, passed=n_passed == len(values)))
    if criteria.mean_score is not None:
        checks.append(Criterion(name="mean_score", required=criteria.mean_score, actual=mean,
                                passed=mean >= criteria.mean_score))
    if criteria.score_floor is not None:
        checks.append(Criterion(name="score_floor", required=criteria.score_floor, actual=lowest,
                                passed=lowest >= criteria.score_floor))
    for cid, floor in criteria.floors.items():
        checks.append(Criterion(name=f"floor {cid}", required=floor, actual=scores[cid], passed=scores[cid] >= floor))
    return SuiteVerdict(scores=dict(scores), mean_score=mean, lowest_score=lowest, criteria=checks,
                        passed=all(c.passed for c in checks))
