"""The OpenAI batch file format: one JSON request per input line, one JSON result per output line.

OpenAI's Batch API reads and writes it, and so does vLLM's `run-batch` (`python -m
vllm.entrypoints.openai.run_batch -i in.jsonl -o out.jsonl --model ...`), which is how a
self-hosted model labels a slice offline: `labeller batch export` writes the input,
`labeller batch import` reads the output.

    input:  {"custom_id": "<cache key>", "method": "POST", "url": "/v1/chat/completions", "body": {...}}
    output: {"id": "...", "custom_id": "<cache key>", "response": {"status_code": 200, "request_id": "...",
             "body": {<chat completion>}}, "error": null}
            or "error": {"code": "batch_expired", "message": "..."} when the request never ran.
"""

from __future__ import annotations

import json
from typing import Any

from labeller.batch.base import Outcome
from labeller.judges.base import MalformedReplyError

CHAT_ENDPOINT = "/v1/chat/completions"


def input_line(custom_id: str, body: dict[str, Any], url: str = CHAT_ENDPOINT) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def encode_lines(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for e in entries)


def output_outcome(row: dict[str, Any], judge: Any, service: str = "OpenAI", prompt: Any = None) -> Outcome:
    """The outcome of one output line; `judge` reads a chat completion body (OpenAIJudge.read_body) against
    the prompt's reply spec and context (None: the relevance verdict)."""
    custom_id = str(row.get("custom_id"))
    error = row.get("error")
    if error:
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(error)
        if code == "batch_expired":
            return Outcome(custom_id=custom_id, reason=f"expired: {service} did not run the request within the "
                                                        "batch's completion window")
        return Outcome(custom_id=custom_id, reason=f"{service} batch error {code or ''}: {message}"[:300])
    response = row.get("response")
    if not isinstance(response, dict):
        return Outcome(custom_id=custom_id, reason="malformed reply: the batch result holds no response")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
        return Outcome(custom_id=custom_id, reason=f"HTTP {status} from {service} in the batch" + (f": {detail}"[:300] if detail else ""))
    try:
        return Outcome(custom_id=custom_id, reply=judge.read_body(body, prompt))
    except MalformedReplyError as exc:
        return Outcome(custom_id=custom_id, reason=exc.reason, input_tokens=exc.input_tokens,
                       output_tokens=exc.output_tokens)
