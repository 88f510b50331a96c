"""What a pipeline run reports back: status, reports written, requests sent, headline figures."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PipelineResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pipeline: str
    config: str
    status: Literal["passed", "failed"]
    summary: list[str] = Field(default_factory=list)  # plain sentences for the terminal and the index page
    reports: dict[str, str] = Field(default_factory=dict)  # title -> path
    judge_requests: int = 0  # requests sent to the judge in this run (0 when everything came from the cache)
    figures: dict[str, float | int | str | None] = Field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "passed" else 1
