"""What a system answered: an answers file (one row per canary) or a whole workflow's output.

An answers file holds rows `{canary_id (or query_id), answer[, tool_calls]}`; `tool_calls` is a list
of tool names, or of objects with a `name` (live.py). Any other column is refused: a misspelt
`tool_call` must not silently make a live canary fail.

A workflow's output (`--output`) is one text: the concatenated log or answer blob of a run over all
the canary questions. Each canary is scored against the whole of it, with no run and no retrieved
passages; the tool calls of its JSON-object lines count for live canaries.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.canaries.live import tool_calls_in_log
from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require

ANSWER_COLUMNS = {"canary_id", "query_id", "answer", "tool_calls"}


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    tool_calls: list[str] = Field(default_factory=list)


def read_answers(path: str | Path, known: set[str]) -> dict[str, Answer]:
    """Rows {canary_id (or query_id), answer[, tool_calls]}: the system's answer to each canary question."""
    path = Path(path)
    out: dict[str, Answer] = {}
    for line, row in read_rows(path):
        unknown = sorted(set(row) - ANSWER_COLUMNS)
        if unknown:
            raise BadInputError(f"unknown column; expected {', '.join(sorted(ANSWER_COLUMNS))}", path=str(path),
                                line=line, field=unknown[0])
        key = "canary_id" if "canary_id" in row else "query_id"
        cid = require(row, key, path, line)
        if cid not in known:
            raise BadInputError(f"unknown canary '{cid}'; expected an id from the canary file",
                                path=str(path), line=line, field=key)
        if cid in out:
            raise BadInputError(f"a second answer to canary '{cid}'; expected one row per canary",
                                path=str(path), line=line, field=key)
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise BadInputError("missing; expected the answer text", path=str(path), line=line, field="answer")
        out[cid] = Answer(text=answer, tool_calls=_tool_names(row.get("tool_calls"), path, line))
    return out


def _tool_names(value: object, path: Path, line: int) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else None
    names = [i if isinstance(i, str) else i.get("name") if isinstance(i, dict) else None for i in items or []]
    if items is None or not all(isinstance(n, str) and n for n in names):
        raise BadInputError("expected a list of tool names or of objects with a `name`", path=str(path), line=line,
                            field="tool_calls")
    return names  # type: ignore[return-value]


def read_output(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInputError("no such file; expected the workflow's output (a text file)", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise BadInputError(f"not UTF-8 text (byte {exc.start}); expected the workflow's output as text",
                            path=str(path)) from None
    except IsADirectoryError:
        raise BadInputError("is a directory; expected the workflow's output (a text file)", path=str(path)) from None


def output_answers(output: str, canary_ids: Iterable[str]) -> dict[str, Answer]:
    """Every canary answered by the whole workflow output."""
    answer = Answer(text=output, tool_calls=tool_calls_in_log(output))
    return {cid: answer for cid in canary_ids}
