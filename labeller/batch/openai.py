"""OpenAI's Batch API through the official SDK: upload a JSONL file (/v1/files), create a batch
(/v1/batches) for /v1/chat/completions, poll it, read the output and error files.

Each line's body is OpenAIJudge.request(prompt): the very body the synchronous path sends, so a
verdict bought either way has the same cache key and the same meaning.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai

from labeller.batch.base import DAMAGED, BatchClient, BatchLimits, BatchStatus, Outcome, PromptOf, result_row
from labeller.batch.files import CHAT_ENDPOINT, encode_lines, input_line, output_outcome
from labeller.judges.openai import KEY_VARIABLE, OpenAIJudge
from labeller.rubric import JudgePrompt

LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)  # per batch input file
ENDED = {"completed", "expired", "cancelled", "failed"}


class OpenAIBatches(BatchClient):
    provider = "openai"

    default_limits = LIMITS
    sdk, service, key_variable = openai, "OpenAI", KEY_VARIABLE

    def entry(self, custom_id: str, prompt: JudgePrompt) -> dict[str, Any]:
        return input_line(custom_id, self.judge.request(prompt), CHAT_ENDPOINT)

    async def submit(self, entries: list[dict[str, Any]]) -> str:
        with self._errors("a file"):
            data = encode_lines(entries)  # up to 200 MB: give the upload time beyond one reply's --timeout
            uploaded = await self.client.files.create(file=("labeller-batch.jsonl", data), purpose="batch",
                                                      timeout=max(self.judge.timeout, 60 + len(data) / 1e6))
        with self._errors("a batch"):
            batch = await self.client.batches.create(input_file_id=uploaded.id, endpoint=CHAT_ENDPOINT,
                                                     completion_window="24h", metadata={"created_by": "labeller"})
        return batch.id

    @staticmethod
    def _status(batch: Any) -> BatchStatus:
        counts = batch.request_counts
        reason = None
        if batch.errors and batch.errors.data:
            reason = "; ".join(f"{e.code}: {e.message}" for e in batch.errors.data[:3])
        return BatchStatus(batch_id=batch.id, status=batch.status, ended=batch.status in ENDED,
                           total=counts.total if counts else None, succeeded=counts.completed if counts else None,
                           failed=counts.failed if counts else None, created_at=str(batch.created_at),
                           reason=reason)

    async def status(self, batch_id: str) -> BatchStatus:
        with self._errors("a batch"):
            return self._status(await self.client.batches.retrieve(batch_id))

    async def results(self, batch_id: str, prompt_of: PromptOf = None) -> AsyncIterator[Outcome]:
        with self._errors("a batch"):
            batch = await self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            with self._errors("a batch result file"):
                async with self.client.files.with_streaming_response.content(file_id) as response:
                    async for line in response.iter_lines():
                        if line.strip():
                            yield _outcome(line, self.judge, prompt_of)

    async def cancel(self, batch_id: str) -> BatchStatus:
        with self._errors("a batch"):
            return self._status(await self.client.batches.cancel(batch_id))

    async def list(self, limit: int = 20) -> list[BatchStatus]:
        with self._errors("a list of batches"):
            page = await self.client.batches.list(limit=limit)
        return [self._status(b) for b in page.data]


def _outcome(line: str, judge: OpenAIJudge, prompt_of: PromptOf) -> Outcome:
    row = result_row(line)
    if row is None:
        return Outcome(custom_id="", reason=DAMAGED)
    return output_outcome(row, judge, prompt=prompt_of(row["custom_id"]) if prompt_of else None)
