"""Live-infra canaries: a question the system can answer only by querying an external service.

For a category backed by a live service (a calendar, a ticket system, a stock API) the right answer
is often "nothing there", and an agent that never looked says the same. So a live canary passes on
an empty answer only when the answer *shows the check was made*: it holds one of the declared
`markers` (a line the agent writes after each call, such as "[checked: calendar]"), or its
tool-call record names one of the declared `tools`. "Empty but checked" passes; "didn't check"
fails, however plausible the answer. Facts, when listed, are values seeded in the live service and
must be recalled as well; `forbidden` works as for any canary.

Where the record comes from:
- an answers file row: `{"canary_id": ..., "answer": ..., "tool_calls": ["calendar.search"]}`
  (names, or objects with a `name`);
- a whole workflow's output (`--output`): a marker anywhere in it, or a JSON-object line whose
  `tool`, `name` or `tool_name` is a declared tool (`{"tool": "calendar.search", "args": {...}}`).

A marker is matched as whole tokens (factrecall.py), case folded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labeller.canaries.factrecall import contains, token_text

TOOL_KEYS = ("tool", "name", "tool_name")


class LiveCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    service: str = Field(min_length=1)  # the external service the question needs (names the store of its facts)
    markers: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_evidence(self) -> LiveCheck:
        if not self.markers and not self.tools:
            raise ValueError("a live canary declares how a check shows: `markers` (text the answer holds after "
                             "the call) and/or `tools` (tool-call names)")
        if any(token_text(m) == "  " for m in self.markers):
            raise ValueError("a marker needs letters or digits to be matched")
        return self

    def shown_in(self, answer: str, tool_calls: Iterable[str]) -> bool:
        text = token_text(answer)
        return any(contains(text, m) for m in self.markers) or bool(set(self.tools) & set(tool_calls))

    def missing_reason(self) -> str:
        wanted = [*(f"marker '{m}'" for m in self.markers), *(f"tool call '{t}'" for t in self.tools)]
        return f"the answer does not show that {self.service} was checked: expected {' or '.join(wanted)}"


def tool_calls_in_log(log: str) -> list[str]:
    """Tool names from the JSON-object lines of a workflow's output (other lines are text)."""
    names = []
    for line in log.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            names += [record[k] for k in TOOL_KEYS if isinstance(record.get(k), str)]
    return names
