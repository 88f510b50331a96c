"""The one interface every provider batch API implements, and how requests are split to fit its limits.

A batch client turns many prepared requests into one provider batch and reads its results back.
It does not plan, cache or count: the batch path of the labelling engine (labeller.labelling.batched)
does that. Each request is named by a custom_id, which is its cache key (a sha256 in hex: 64
characters of [0-9a-f], within both providers' custom_id rules), so a result finds its pair with no
mapping to persist, and an export made today matches an import made next week.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.judges.base import JudgeReply
from labeller.rubric import JudgePrompt


PromptOf = Callable[[str], "JudgePrompt | None"] | None  # custom_id -> the prompt it was sent with


class BatchLimits(BaseModel):
    """What one batch may hold. Parameters, so tests can use small ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_requests: int
    max_bytes: int


class BatchStatus(BaseModel):
    """Where a provider batch stands. `ended`: its results can be read (completed, expired, cancelled)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    batch_id: str
    status: str  # the provider's own word: in_progress, completed, ended, cancelled, ...
    ended: bool
    total: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    created_at: str | None = None
    reason: str | None = None  # why the whole batch failed, when it did (OpenAI validation errors)


# A results line that is not a JSON object naming its request (a damaged download or file): its request is
# not known, so it is counted and its pair ends as the batch's missing result (labelling.batched.collect).
DAMAGED = "malformed reply: a batch result line is not a JSON object with custom_id"


def result_row(line: str) -> dict[str, Any] | None:
    """A results line as a JSON object naming its request (custom_id), or None for a damaged line."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("custom_id"), str) else None


class Outcome(BaseModel):
    """One request's result: a reply, or the reason it has none (tokens a malformed reply cost are kept)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    custom_id: str
    reply: JudgeReply | None = None
    reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class BatchClient(ABC):
    """A provider's batch API, bound to one judge (its SDK client, model and request body)."""

    provider: str
    default_limits: BatchLimits  # the provider's own limits
    sdk: Any  # the official SDK module (openai, anthropic): its exceptions are classified the same way
    service: str
    key_variable: str

    def __init__(self, judge: Any, limits: BatchLimits | None = None) -> None:
        self.judge, self.limits = judge, limits or self.default_limits
        self.client = judge.client  # the judge's SDK client: one connection pool, one key

    def _errors(self, what: str) -> Any:
        """Classify what the SDK raises during one call, as for a synchronous request (labeller.judges.wire)."""
        from labeller.judges.wire import sdk_errors

        return sdk_errors(self.sdk, self.judge, service=self.service, key_variable=self.key_variable, reply_kind=what)

    @abstractmethod
    def entry(self, custom_id: str, prompt: JudgePrompt) -> dict[str, Any]:
        """One request as the provider's batch input takes it (a JSONL line, or a `requests` item)."""

    def size(self, entry: dict[str, Any]) -> int:
        """Bytes the entry takes in the upload (its JSON and a separator)."""
        return len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1

    @abstractmethod
    async def submit(self, entries: list[dict[str, Any]]) -> str:
        """Create one batch from entries that fit the limits; return its id."""

    @abstractmethod
    async def status(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    def results(self, batch_id: str, prompt_of: PromptOf = None) -> AsyncIterator[Outcome]:
        """Every result of an ended batch, as it is read (requests never run come as outcomes with a reason).
        prompt_of(custom_id) is the prompt sent, whose reply spec and context check the reply (None, or a
        prompt_of giving None: the relevance verdict)."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def list(self, limit: int = 20) -> list[BatchStatus]:
        """The provider's most recent batches, newest first."""


Entry = tuple[str, dict[str, Any]]  # (custom_id, the request as the batch input takes it)


def split(entries: Iterable[Entry], limits: BatchLimits, size: Callable[[dict[str, Any]], int]
          ) -> tuple[list[list[Entry]], list[tuple[str, str]]]:
    """Group entries into as few batches as limits.max_requests and limits.max_bytes allow, in order.

    Returns (batches, too_large): an entry over the byte limit on its own fits no batch, so it comes
    back as (custom_id, reason) for the caller to fail that pair, not the run.
    """
    batches: list[list[Entry]] = []
    too_large: list[tuple[str, str]] = []
    group: list[Entry] = []
    group_bytes = 0
    for custom_id, entry in entries:
        nbytes = size(entry)
        if nbytes > limits.max_bytes:
            too_large.append((custom_id, f"the request is {nbytes:,} bytes, over the batch limit of "
                                         f"{limits.max_bytes:,} bytes"))
            continue
        if group and (len(group) >= limits.max_requests or group_bytes + nbytes > limits.max_bytes):
            batches.append(group)
            group, group_bytes = [], 0
        group.append((custom_id, entry))
        group_bytes += nbytes
    if group:
        batches.append(group)
    return batches, too_large
