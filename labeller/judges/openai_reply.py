"""The part of a chat-completion reply the OpenAI judge reads: a synchronous reply, parsed straight from
the body's bytes, and a batch output line's body (OpenAIJudge.read_body), both by this one model.

Why not the SDK's own ChatCompletion: `chat.completions.create` runs the request body through the
SDK's typed transform and builds the whole reply model in Python, which together cost about a
quarter of a labelling run's CPU at 128 in flight (cProfile, benchmarks/README.md). The request is
still the SDK's (`client.post`: its auth, base URL, query, timeout and error classes); only the
body's typing is skipped, and the reply is validated by pydantic-core from the bytes.

Lenient on purpose, as the SDK is with replies: every field is optional and unknown fields are
ignored (servers add their own); what the judge needs and finds missing is a malformed reply there.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ToolFunction(_Read):
    name: str | None = None
    arguments: str | None = None


class ToolCall(_Read):
    function: ToolFunction | None = None


class Message(_Read):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = None


class TopLogprob(_Read):
    token: str | None = None
    logprob: float | None = None


class TokenLogprob(_Read):
    token: str | None = None
    logprob: float | None = None
    top_logprobs: list[TopLogprob] | None = None


class ChoiceLogprobs(_Read):
    content: list[TokenLogprob] | None = None  # the reply's tokens (None: the server sent none)


class Choice(_Read):
    finish_reason: str | None = None
    message: Message = Message()
    logprobs: ChoiceLogprobs | None = None  # only when asked (--grade-probs) and the server gives them


class PromptDetails(_Read):
    cached_tokens: int | None = None


class Usage(_Read):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptDetails | None = None


class Completion(_Read):
    model: str | None = None
    system_fingerprint: str | None = None
    usage: Usage | None = None
    choices: list[Choice] | None = None
