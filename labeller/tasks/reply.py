"""What a judge is asked to return for one task: the reply schema sent to the model and the check of its reply.

A ReplySpec names the pydantic model a reply must validate against (extra="forbid", a short justification
first), the JSON schema sent as the structured output (OpenAI json_schema or tool, Anthropic's forced tool),
the instruction for modes that send no schema, and the schema version hashed into every cache key. Judges
(labeller.judges) read a prompt's spec and send and parse by it; they know no task. VERDICT is the relevance
grade's spec: its schema, names and instruction are exactly what they were before tasks existed, so every
relevance cache key is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from labeller.records import GRADE_MAX, GRADE_MIN, Verdict


class MalformedReply(Exception):
    """A reply that is not the task's schema (invalid JSON, a missing field, a value out of range or context)."""


@dataclass(frozen=True, eq=False)
class ReplySpec:
    name: str  # the OpenAI json_schema name
    tool: str  # the forced tool's name (OpenAI tool mode, Anthropic)
    description: str  # the tool's description
    model: type[BaseModel]
    schema_of: Callable[[bool], dict[str, Any]]  # min_length -> the strict JSON schema
    instruction: str  # added to the system text where no schema reaches the model
    schema_version: str  # hashed into every cache key of the task

    def schema(self, *, min_length: bool = False) -> dict[str, Any]:
        return self.schema_of(min_length)

    def parse(self, payload: str | dict[str, Any], context: dict[str, Any] | None = None) -> BaseModel:
        """Validate a reply strictly; `context` is what the prompt showed (e.g. the passage ids a reply may
        name). Raises MalformedReply naming the field and what was wrong."""
        try:
            if isinstance(payload, str):
                return self.model.model_validate_json(payload, strict=True, context=context)
            return self.model.model_validate(payload, strict=True, context=context)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"]) or "reply"
            kind = "invalid JSON" if err["type"] == "json_invalid" else f"{where}: {err['msg']}"
            raise MalformedReply(f"malformed reply: {kind}") from None


def justification_schema(model: type[BaseModel], min_length: bool) -> dict[str, Any]:
    field: dict[str, Any] = {"type": "string", "description": model.model_fields["justification"].description}
    if min_length:  # grammar-based servers enforce it; OpenAI's and Anthropic's strict modes do not take it
        field["minLength"] = 1
    return field


def _verdict_schema(min_length: bool) -> dict[str, Any]:
    fields = Verdict.model_fields
    return {
        "type": "object",
        "properties": {
            "justification": justification_schema(Verdict, min_length),
            "grade": {"type": "integer", "enum": list(range(GRADE_MIN, GRADE_MAX + 1)),
                      "description": fields["grade"].description},
        },
        "required": ["justification", "grade"],
        "additionalProperties": False,
    }


VERDICT = ReplySpec(
    name="verdict", tool="record_verdict", description="Record the relevance verdict for the pair.", model=Verdict,
    schema_of=_verdict_schema,
    instruction=('Reply with only a JSON object and nothing else: {"justification": "<one to three sentences>", '
                 '"grade": <an integer from 1 to 5>}. The justification must not be empty.'),
    schema_version="verdict-v1")
