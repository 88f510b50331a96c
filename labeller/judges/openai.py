"""The OpenAI judge: chat completions with a strict JSON-schema structured output, via the official SDK.

Works with any OpenAI-compatible server (vLLM, Ollama, LM Studio, ...) through `base_url` or
OPENAI_BASE_URL. A key is always required, even for a local server, so a forgotten key is never
silently replaced: local servers accept any value (`OPENAI_API_KEY=unused`). The key is handed to
the SDK and never printed, logged, stored or put into an error message.

Token usage follows OpenAI's convention: input_tokens counts every prompt token, cached ones
included; cached_input_tokens is the cached part.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2
import openai

from labeller.errors import MissingKeyError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError
from labeller.judges.registry import KEY_VARIABLES
from labeller.redaction import redact_url, split_query, url_secrets
from labeller.judges.wire import (VERDICT_NAME, parse_verdict, sdk_errors,
                                  verdict_schema)
from labeller.rubric import JudgePrompt

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLE = KEY_VARIABLES["openai"]
POOL_SIZE = 256  # connections kept open; more than any sensible --concurrency


class OpenAIJudge(Judge):
    provider = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, temperature: float = 0.0, max_output_tokens: int = 400) -> None:
        key = api_key or os.environ.get(KEY_VARIABLE)
        if not key:
            raise MissingKeyError(KEY_VARIABLE, self.provider)
        self.model = model
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        # Credentials in the URL (user:password@, ?api-key=) reach the server, but what labeller shows,
        # stores and hashes into cache keys is the masked form.
        self.base_url = redact_url(url)
        self._secrets = [key, *url_secrets(url)]
        url, query = split_query(url)
        self.timeout, self.temperature, self.max_output_tokens = timeout, float(temperature), max_output_tokens
        self._secret = key
        self._response_format = {"type": "json_schema",
                                 "json_schema": {"name": VERDICT_NAME, "strict": True, "schema": verdict_schema()}}
        pool = httpx2.Limits(max_connections=POOL_SIZE, max_keepalive_connections=POOL_SIZE)
        # max_retries=0: labeller.retry is the only retry policy; SDK retries would multiply requests.
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=url, default_query=query or None, timeout=timeout, max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(limits=pool, timeout=timeout),
        )

    def secrets(self) -> list[str]:
        return list(self._secrets)

    def decoding_settings(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_completion_tokens": self.max_output_tokens,
                "response_format": self._response_format}

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        with sdk_errors(openai, self, service="OpenAI", key_variable=KEY_VARIABLE, reply_kind="a chat completion"):
            completion = await self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
                temperature=self.temperature,
                max_completion_tokens=self.max_output_tokens,
                response_format=self._response_format,  # type: ignore[arg-type]
            )
        return self._read(completion)

    def _read(self, completion: Any) -> JudgeReply:
        usage = completion.usage
        tokens_in = usage.prompt_tokens if usage else None
        tokens_out = usage.completion_tokens if usage else None
        details = getattr(usage, "prompt_tokens_details", None)
        cached = details.cached_tokens if details is not None else None
        spent = {"input_tokens": tokens_in or 0, "output_tokens": tokens_out or 0}
        if not completion.choices:
            raise MalformedReplyError("malformed reply: no choices", **spent)
        choice = completion.choices[0]
        if choice.message.refusal:
            raise MalformedReplyError(f"refusal: {choice.message.refusal[:200]}", **spent)
        if choice.finish_reason == "length":
            raise MalformedReplyError(f"reply cut off at {self.max_output_tokens} output tokens", **spent)
        if choice.finish_reason == "content_filter":
            raise MalformedReplyError("reply withheld by the content filter", **spent)
        if not choice.message.content:
            raise MalformedReplyError("malformed reply: empty content", **spent)
        verdict = parse_verdict(choice.message.content, **spent)
        return JudgeReply(verdict=verdict, input_tokens=tokens_in, output_tokens=tokens_out, cached_input_tokens=cached)

    async def aclose(self) -> None:
        await self._client.close()
