"""The Anthropic judge: a forced, strict `record_verdict` tool call via the official SDK.

The rubric (the system prompt, identical for every pair) is sent as one system block marked
`cache_control: ephemeral`, so the provider caches it and later pairs pay the cached-input price.
The installed SDK's messages.create takes no temperature; nothing is sent that is not recorded
in decoding_settings().

A key is always required (ANTHROPIC_API_KEY or api_key=); it is passed explicitly so the SDK never
falls back to profiles on disk, and it is never printed, logged, stored or put into an error.

Token usage is normalised to OpenAI's convention so one price formula fits both: input_tokens
counts every prompt token (Anthropic's input_tokens + cache reads + cache writes);
cached_input_tokens is the cache-read part.
"""

from __future__ import annotations

import os
from typing import Any

import anthropic

from labeller.errors import MissingKeyError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError
from labeller.judges.registry import KEY_VARIABLES
from labeller.redaction import redact_url, split_query, url_secrets
from labeller.judges.wire import TOOL_NAME, http_client, parse_reply, sdk_errors, verdict_schema
from labeller.rubric import JudgePrompt
from labeller.tasks.reply import VERDICT

DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_VARIABLE = KEY_VARIABLES["anthropic"]


class AnthropicJudge(Judge):
    provider = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_output_tokens: int = 400) -> None:
        key = api_key or os.environ.get(KEY_VARIABLE)
        if not key:
            raise MissingKeyError(KEY_VARIABLE, self.provider)
        self.model = model
        url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        # Credentials in the URL (user:password@, ?api-key=) reach the server, but what labeller shows,
        # stores and hashes into cache keys is the masked form.
        self.base_url = redact_url(url)
        self._secrets = [key, *url_secrets(url)]
        url, query = split_query(url)
        self.timeout, self.max_output_tokens = timeout, max_output_tokens
        self._secret = key
        self._tool = {"name": TOOL_NAME, "description": "Record the relevance verdict for the pair.",
                      "input_schema": verdict_schema(), "strict": True}
        self._tool_choice = {"type": "tool", "name": TOOL_NAME}
        self._task_tools: dict[str, dict[str, Any]] = {}  # other tasks' tools, by reply name
        # max_retries=0: labeller.retry is the only retry policy; SDK retries would multiply requests.
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=url, default_query=query or None, timeout=timeout, max_retries=0,
            http_client=http_client(anthropic, timeout, url),
        )

    def secrets(self) -> list[str]:
        return list(self._secrets)

    def decoding_settings(self) -> dict[str, Any]:
        return {"max_tokens": self.max_output_tokens, "tools": [self._tool], "tool_choice": self._tool_choice}

    def settings_for(self, reply: Any = None) -> dict[str, Any]:
        tool = self._tool_for(reply)
        return {"max_tokens": self.max_output_tokens, "tools": [tool],
                "tool_choice": {"type": "tool", "name": tool["name"]}}

    def _tool_for(self, reply: Any) -> dict[str, Any]:
        if reply is None:
            return self._tool
        found = self._task_tools.get(reply.name)
        if found is None:
            found = self._task_tools[reply.name] = {"name": reply.tool, "description": reply.description,
                                                    "input_schema": reply.schema(), "strict": True}
        return found

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, shared with the batch path (labeller.batch.anthropic)."""
        return self._client

    def request(self, prompt: JudgePrompt) -> dict[str, Any]:
        """The messages.create parameters for one pair: the same in the synchronous and the batch path.

        The tools and the system text (preamble, rubric, worked examples) form a prefix identical for
        every pair, ending in the cache breakpoint; the pair comes last, in the user message."""
        tool = self._tool_for(prompt.reply)
        return {"model": self.model, "max_tokens": self.max_output_tokens,
                "system": [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": prompt.user}],
                "tools": [tool], "tool_choice": {"type": "tool", "name": tool["name"]}}

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        with sdk_errors(anthropic, self, service="Anthropic", key_variable=KEY_VARIABLE, reply_kind="a message"):
            message = await self._client.messages.create(**self.request(prompt))
        if not isinstance(message, anthropic.types.Message):  # a 200 that is not JSON (a proxy's page): the SDK's text
            raise MalformedReplyError("malformed reply: the response is not a message")
        return self.read_message(message, prompt)

    def read_message(self, message: Any, prompt: JudgePrompt | None = None) -> JudgeReply:
        """A verdict from a Message (a synchronous reply or a succeeded batch result)."""
        usage = message.usage
        cache_read = getattr(usage, "cache_read_input_tokens", None) if usage else None
        cache_write = getattr(usage, "cache_creation_input_tokens", None) if usage else None
        tokens_in = usage.input_tokens + (cache_read or 0) + (cache_write or 0) if usage else None
        tokens_out = usage.output_tokens if usage else None
        spent = {"input_tokens": tokens_in or 0, "output_tokens": tokens_out or 0}
        if message.stop_reason == "refusal":
            raise MalformedReplyError("refusal: the model declined to grade the pair", **spent)
        if message.stop_reason == "max_tokens":
            raise MalformedReplyError(f"reply cut off at {self.max_output_tokens} output tokens", **spent)
        reply = (prompt.reply if prompt is not None else None) or VERDICT  # a batch result: the relevance verdict
        tool_name = reply.tool
        call = next((block for block in message.content
                     if getattr(block, "type", None) == "tool_use" and block.name == tool_name), None)
        if call is None:
            raise MalformedReplyError(f"malformed reply: no {tool_name} tool call", **spent)
        if not isinstance(call.input, dict):
            raise MalformedReplyError("malformed reply: tool input is not an object", **spent)
        verdict = parse_reply(call.input, reply, prompt.context if prompt is not None else None, **spent)
        return JudgeReply(verdict=verdict, input_tokens=tokens_in, output_tokens=tokens_out,
                          cached_input_tokens=cache_read)

    async def aclose(self) -> None:
        await self._client.close()
