"""The OpenAI judge: chat completions with a structured output, via the official SDK.

Works with any OpenAI-compatible server (llama-server, llama-cpp-python, vLLM, Ollama, LiteLLM, ...)
through `base_url` or OPENAI_BASE_URL. OpenAI's own API always needs OPENAI_API_KEY; for another server
named by base_url with no key set, the registry passes a placeholder (local servers accept any key). The
key is handed to the SDK and never printed, logged, stored or put into an error message.

How the verdict is asked for is the output mode (labeller.judges.output_modes): a strict json_schema
(the default), json_object with a schema, a forced tool call, or plain text.

A server that is not OpenAI's own API (any host but api.openai.com and Azure OpenAI's) also gets:
- `max_tokens` beside `max_completion_tokens`: llama-cpp-python and Ollama read only max_tokens, and a
  small model that loops then runs to the end of its context. OpenAI's API does not get it: it
  deprecated max_tokens, and its reasoning models refuse a request that has it;
- `minLength: 1` on the justification in the schema (grammar-based servers enforce it);
- a `GET /v1/models` at the start of a run (served_identity), whose answer joins the cache key.

Token usage follows OpenAI's convention: input_tokens counts every prompt token, cached ones
included; cached_input_tokens is the cached part.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any
from urllib.parse import urlsplit

import openai

from labeller.errors import MissingKeyError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError
from labeller.judges.grade_probs import grade_distribution
from labeller.judges.openai_reply import Completion
from labeller.judges.output_modes import check_output_mode, refusal_hint, reply_payload, request_fields, system_text
from labeller.judges.registry import KEY_VARIABLES
from labeller.judges.served import served_identity
from labeller.redaction import redact_url, split_query, url_secrets
from labeller.judges.wire import http_client, parse_reply, sdk_errors
from labeller.rubric import JudgePrompt
from labeller.tasks.reply import VERDICT

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
AZURE_SUFFIX = ".openai.azure.com"  # Azure OpenAI: the same API rules as OpenAI's own (no max_tokens for o-series)
KEY_VARIABLE = KEY_VARIABLES["openai"]
# What chat.completions.create sends with its request (bearer auth), for the same request through client.post.
_CHAT_OPTIONS: Any = {"security": {"bearer_auth": True}}
# OpenAI's reasoning models refuse `logprobs` (HTTP 400): --grade-probs is not sent to them.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")


class OpenAIJudge(Judge):
    provider = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, temperature: float = 0.0, max_output_tokens: int = 400,
                 output_mode: str | None = None) -> None:
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
        self.output_mode = check_output_mode(output_mode)
        # Any host but OpenAI's own (or Azure OpenAI's): a local or self-hosted server (see the module docstring).
        host = urlsplit(url).hostname or ""
        self.local = host != OPENAI_HOST and not host.endswith(AZURE_SUFFIX)
        self.service = f"the OpenAI-compatible server at {self.base_url}" if self.local else "OpenAI"  # in errors
        caps = {"max_completion_tokens": max_output_tokens, **({"max_tokens": max_output_tokens} if self.local else {})}
        self._settings = {"temperature": self.temperature, **caps,
                          **request_fields(self.output_mode, min_length=self.local)}
        self._caps = caps
        self._task_settings: dict[str, dict[str, Any]] = {}  # other tasks' settings, by reply name
        self._served: str | None = None
        self._warned = False
        self._grade_probs = False  # ask_grade_probs: read the grade's distribution from token log-probabilities
        # max_retries=0: labeller.retry is the only retry policy; SDK retries would multiply requests.
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=url, default_query=query or None, timeout=timeout, max_retries=0,
            http_client=http_client(openai, timeout, url),
        )

    def secrets(self) -> list[str]:
        return list(self._secrets)

    def decoding_settings(self) -> dict[str, Any]:
        return dict(self._settings)

    def settings_for(self, reply: Any = None) -> dict[str, Any]:
        return dict(self._sent_for(reply))

    def _sent_for(self, reply: Any) -> dict[str, Any]:
        """The settings a request for this reply spec sends (the relevance verdict's unless a task says otherwise)."""
        if reply is None:
            return self._settings
        found = self._task_settings.get(reply.name)
        if found is None:
            found = self._task_settings[reply.name] = {
                "temperature": self.temperature, **self._caps,
                **request_fields(self.output_mode, min_length=self.local, reply=reply)}
        return found

    def ask_grade_probs(self, top_logprobs: int) -> str | None:
        """Send `logprobs: true, top_logprobs: N` with every relevance request (a decoding setting, so in the
        cache key) and read the grade's distribution from the reply (judges.grade_probs)."""
        if self.output_mode == "tool":
            return ("--output-mode tool: the verdict comes as a tool call's arguments, which carry no token "
                    "log-probabilities; use json_schema, json_object or text")
        if not self.local and _REASONING_MODEL.match(self.model):
            return f"OpenAI's reasoning models ({self.model}) give no token log-probabilities"
        self._settings = {**self._settings, "logprobs": True, "top_logprobs": top_logprobs}
        self._grade_probs = True
        return None

    async def served_identity(self) -> str | None:
        """The /v1/models entry of a local server for this judge's model, asked once (None for OpenAI's API)."""
        if self.local and self._served is None:
            self._served = await served_identity(self._client, self.model, timeout=min(self.timeout, 10.0),
                                                 warn=self._warn)
        return self._served or None

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client, shared with the batch path (labeller.batch.openai)."""
        return self._client

    def request(self, prompt: JudgePrompt) -> dict[str, Any]:
        """The chat-completions body for one pair: the same in the synchronous and the batch path.

        The stable part (system text: preamble, rubric, worked examples) comes first and the pair
        last, so OpenAI's automatic prompt caching covers the rubric prefix (from 1,024 tokens)."""
        return {"model": self.model,
                "messages": [{"role": "system",
                              "content": system_text(self.output_mode, prompt.system, prompt.reply or VERDICT)},
                             {"role": "user", "content": prompt.user}],
                **self._sent_for(prompt.reply)}

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        with refusal_hint(self.output_mode), sdk_errors(openai, self, service=self.service, key_variable=KEY_VARIABLE,
                                                        reply_kind="a chat completion"):
            body = await self._client.post("/chat/completions", body=self.request(prompt), cast_to=bytes,
                                           options=_CHAT_OPTIONS)
        try:
            completion = Completion.model_validate_json(body)
        except ValueError:
            raise MalformedReplyError("malformed reply: the response is not a chat completion") from None
        return self._read(completion, prompt)

    def _warn(self, text: str) -> None:
        """One warning per judge on stderr: which model answered is worth saying once, not per pair."""
        if not self._warned:
            self._warned = True
            print(f"labeller: warning: {text}", file=sys.stderr)

    def read_body(self, body: Any, prompt: JudgePrompt | None = None) -> JudgeReply:
        """A verdict from a chat-completion body as JSON (a batch output line, a vLLM run-batch output)."""
        try:
            completion = Completion.model_validate(body)
        except ValueError:
            raise MalformedReplyError("malformed reply: the response is not a chat completion") from None
        return self._read(completion, prompt)

    def _read(self, completion: Any, prompt: JudgePrompt | None = None) -> JudgeReply:
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
        reply = (prompt.reply if prompt is not None else None) or VERDICT  # a batch line: the relevance verdict
        verdict = parse_reply(reply_payload(self.output_mode, choice.message, spent, reply), reply,
                              prompt.context if prompt is not None else None, **spent)
        logprobs = choice.logprobs.content if self._grade_probs and reply is VERDICT and choice.logprobs else None
        served = completion.model or None
        if self.local and served and served != self.model:  # OpenAI answers with a dated snapshot name: normal
            self._warn(f"asked for model '{self.model}', the server at {self.base_url} answered as '{served}'; "
                       "labels record the served model (served_model)")
        return JudgeReply(verdict=verdict, input_tokens=tokens_in, output_tokens=tokens_out, cached_input_tokens=cached,
                          served_model=served, system_fingerprint=getattr(completion, "system_fingerprint", None),
                          grade_probs=grade_distribution(logprobs))

    async def aclose(self) -> None:
        await self._client.close()
