"""How the OpenAI-compatible judge asks for a verdict and where it reads it back, per output mode.

Servers that speak the chat-completions API differ in the structured output they take:

- json_schema: `response_format: {"type": "json_schema", ...strict schema}` (OpenAI, llama-server, vLLM);
- json_object: `response_format: {"type": "json_object", "schema": ...}` (llama-cpp-python's server turns
  the schema into a grammar; OpenAI and Ollama take json_object as "any JSON" and the prompt says which);
- tool: a forced function call whose arguments are the verdict (`tools` + `tool_choice`);
- text: nothing but the prompt asks for the JSON object; the reply is read from the text (a ```json
  fence or prose around the object tolerated).

Whatever the mode, the reply is validated by the same pydantic Verdict (labeller.judges.wire.parse_verdict),
and the fields a mode sends are decoding settings, so the mode is part of every cache key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from labeller.errors import ConfigError
from labeller.judges.base import MalformedReplyError, RejectedRequestError, TransientError
from labeller.tasks.reply import VERDICT, ReplySpec

OUTPUT_MODES = ("json_schema", "json_object", "tool", "text")
DEFAULT_OUTPUT_MODE = "json_schema"
# Added to the system text in the modes whose request does not carry the schema to the model itself
# (OpenAI's json_object mode also refuses a request whose messages never say "JSON").
FORMAT_INSTRUCTION = VERDICT.instruction  # the relevance task's; each task has its own (labeller.tasks.reply)
# What a server says when it does not take the structured output asked for (llama-cpp-python: "Input should
# be 'text' or 'json_object'"; others name response_format, json_schema, tools or tool_choice).
_FORMAT_COMPLAINT = re.compile(r"response_format|json_schema|json_object|'text'|tool_choice|\btools?\b|grammar",
                               re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def check_output_mode(mode: str | None) -> str:
    """The mode, or ConfigError naming the choices (an unknown --output-mode fails before anything is sent)."""
    mode = (mode or DEFAULT_OUTPUT_MODE).strip()
    if mode not in OUTPUT_MODES:
        raise ConfigError(f"unknown output mode '{mode}'; expected one of {', '.join(OUTPUT_MODES)}",
                          field="output_mode")
    return mode


def request_fields(mode: str, *, min_length: bool, reply: ReplySpec = VERDICT) -> dict[str, Any]:
    """The request fields that ask for the task's reply in this mode (besides model, messages and the decoding caps)."""
    schema = reply.schema(min_length=min_length)
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": reply.name, "strict": True, "schema": schema}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "tool":
        function = {"name": reply.tool, "description": reply.description, "parameters": schema, "strict": True}
        return {"tools": [{"type": "function", "function": function}],
                "tool_choice": {"type": "function", "function": {"name": reply.tool}}}
    return {}


def system_text(mode: str, system: str, reply: ReplySpec = VERDICT) -> str:
    """The system message sent: the rubric's, plus the format instruction where no schema reaches the model."""
    return f"{system}\n\n{reply.instruction}" if mode in ("json_object", "text") else system


def reply_payload(mode: str, message: Any, spent: dict[str, int], reply: ReplySpec = VERDICT) -> str:
    """The reply's JSON text of a chat-completion message, read where this mode puts it."""
    if mode == "tool":
        calls = getattr(message, "tool_calls", None) or []
        call = next((c for c in calls if getattr(getattr(c, "function", None), "name", None) == reply.tool), None)
        if call is None:
            raise MalformedReplyError(f"malformed reply: no {reply.tool} tool call", **spent)
        return call.function.arguments or ""
    content = message.content
    if not content:
        raise MalformedReplyError("malformed reply: empty content", **spent)
    return _json_in_text(content) if mode == "text" else content


def _json_in_text(text: str) -> str:
    """The JSON object in a free-text reply: a fenced block, or from the first { to the last }."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text.startswith("{"):
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            text = text[start:end + 1]
    return text


def next_mode(mode: str) -> str | None:
    """The mode to try when a server refuses this one (the order `auto` would take)."""
    i = OUTPUT_MODES.index(mode)
    return OUTPUT_MODES[i + 1] if i + 1 < len(OUTPUT_MODES) else None


@contextmanager
def refusal_hint(mode: str) -> Iterator[None]:
    """Add what to try next to an HTTP error that complains about the structured output of this mode."""
    try:
        yield
    except (TransientError, RejectedRequestError) as exc:
        after = next_mode(mode)
        if after and (isinstance(exc, RejectedRequestError) or exc.kind == "status") \
                and _FORMAT_COMPLAINT.search(exc.reason.partition(": ")[2]):
            exc.reason = f"{exc.reason} (the server may not take --output-mode {mode}: try --output-mode {after})"
            exc.args = (exc.reason,)
        raise
