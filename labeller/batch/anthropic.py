"""Anthropic's Message Batches (/v1/messages/batches) through the official SDK.

Each request's params are AnthropicJudge.request(prompt): the very parameters the synchronous
path sends (the cached system block first, the pair last), so a verdict bought either way has the
same cache key. Batches keep prompt caching: requests sharing the rubric prefix read it cached.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
from anthropic.types.messages import MessageBatchIndividualResponse

from labeller.batch.base import DAMAGED, BatchClient, BatchLimits, BatchStatus, Outcome, PromptOf, result_row
from labeller.judges.anthropic import KEY_VARIABLE
from labeller.judges.base import MalformedReplyError
from labeller.rubric import JudgePrompt

LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024)  # per batch
NOT_RUN = {"expired": "expired: Anthropic did not run the request before the batch expired",
           "canceled": "cancelled: the batch was cancelled before this request ran"}


class AnthropicBatches(BatchClient):
    provider = "anthropic"

    default_limits = LIMITS
    sdk, service, key_variable = anthropic, "Anthropic", KEY_VARIABLE

    def entry(self, custom_id: str, prompt: JudgePrompt) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.judge.request(prompt)}

    def size(self, entry: dict[str, Any]) -> int:
        """An upper bound of the entry's bytes in the request body: the SDK may escape non-ASCII text."""
        return len(json.dumps(entry, ensure_ascii=True)) + 2

    async def submit(self, entries: list[dict[str, Any]]) -> str:
        with self._errors("a message batch"):
            size = sum(self.size(e) for e in entries)  # up to 256 MB: more time than one reply's --timeout
            batch = await self.client.messages.batches.create(requests=entries,  # type: ignore[arg-type]
                                                              timeout=max(self.judge.timeout, 60 + size / 1e6))
        return batch.id

    @staticmethod
    def _status(batch: Any) -> BatchStatus:
        c = batch.request_counts
        return BatchStatus(batch_id=batch.id, status=batch.processing_status,
                           ended=batch.processing_status == "ended",
                           total=c.processing + c.succeeded + c.errored + c.canceled + c.expired,
                           succeeded=c.succeeded, failed=c.errored + c.canceled + c.expired,
                           created_at=batch.created_at.isoformat())

    async def status(self, batch_id: str) -> BatchStatus:
        with self._errors("a message batch"):
            return self._status(await self.client.messages.batches.retrieve(batch_id))

    async def results(self, batch_id: str, prompt_of: PromptOf = None) -> AsyncIterator[Outcome]:
        # Read line by line rather than through the SDK's decoder, whose json.loads would stop the whole
        # batch (every run after it, too) at the first damaged line; such a line is counted, as for OpenAI.
        with self._errors("message batch results"):
            async with self.client.messages.batches.with_streaming_response.results(batch_id) as response:
                async for line in response.iter_lines():
                    if line.strip():
                        yield self._line_outcome(line, prompt_of)

    def _line_outcome(self, line: str, prompt_of: PromptOf = None) -> Outcome:
        row = result_row(line)
        if row is None:
            return Outcome(custom_id="", reason=DAMAGED)
        item = MessageBatchIndividualResponse.construct(**row)  # as the SDK builds it: unknown fields kept
        try:
            return self._outcome(item, prompt_of(item.custom_id) if prompt_of else None)
        except (AttributeError, TypeError):  # valid JSON in another shape (no result, no error detail)
            return Outcome(custom_id=item.custom_id, reason="malformed reply: the batch result is not a message "
                                                            "batch result")

    def _outcome(self, item: Any, prompt: JudgePrompt | None = None) -> Outcome:
        result = item.result
        if result.type == "succeeded":
            try:
                return Outcome(custom_id=item.custom_id, reply=self.judge.read_message(result.message, prompt))
            except MalformedReplyError as exc:
                return Outcome(custom_id=item.custom_id, reason=exc.reason, input_tokens=exc.input_tokens,
                               output_tokens=exc.output_tokens)
        if result.type == "errored":
            error = result.error.error
            return Outcome(custom_id=item.custom_id,
                           reason=f"Anthropic batch error {error.type}: {error.message}"[:300])
        return Outcome(custom_id=item.custom_id, reason=NOT_RUN.get(result.type, f"not run: {result.type}"))

    async def cancel(self, batch_id: str) -> BatchStatus:
        with self._errors("a message batch"):
            return self._status(await self.client.messages.batches.cancel(batch_id))

    async def list(self, limit: int = 20) -> list[BatchStatus]:
        with self._errors("a list of message batches"):
            page = await self.client.messages.batches.list(limit=limit)
        return [self._status(b) for b in page.data]
