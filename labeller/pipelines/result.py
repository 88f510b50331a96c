"""What a pipeline run reports back: status, reports written, requests sent, headline figures."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.reports.ci import Check


class PipelineResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pipeline: str
    config: str
    status: Literal["passed", "failed"]
    summary: list[str] = Field(default_factory=list)  # plain sentences for the terminal and the index page
    reports: dict[str, str] = Field(default_factory=dict)  # title -> path
    judge_requests: int = 0  # requests sent to the judge in this run (0 when everything came from the cache)
    figures: dict[str, float | int | str | None] = Field(default_factory=dict)
    checks: list[Check] = Field(default_factory=list)  # the gated figures, for JUnit XML and job summaries
    judge_drift: dict[str, Any] | None = None  # regression: the drift check (labeller.pipelines.drift.DriftCheck)

    def with_labelling_check(self, failed: int, requested: int) -> PipelineResult:
        """Add the check every pipeline shares: every pair got a label."""
        check = Check(suite=self.pipeline, name="every pair labelled", status="fail" if failed else "pass",
                      message=f"{failed} of {requested} pairs could not be labelled" if failed
                      else f"all {requested} pairs labelled")
        return self.model_copy(update={"checks": [*self.checks, check]})

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "passed" else 1
