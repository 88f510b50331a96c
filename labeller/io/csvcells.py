"""CSV cells a spreadsheet cannot run as formulas ("CSV injection").

A text cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is a live formula in Excel,
LibreOffice and Google Sheets: a document or a judge's justification holding `=HYPERLINK(...)` would
become a clickable link (or worse) in `disagreements.csv`. Such cells are written with a leading `'`,
which spreadsheets show as text. Numbers are never touched, nor is text that reads as a plain number
(`-0.5`): a spreadsheet computes nothing from it.

labeller's own CSV reader takes the `'` off again, so a file labeller wrote reads back exactly: a
cell is prefixed when it would otherwise be read back changed, i.e. it starts with a trigger, or with
`'` followed by something that would be un-prefixed.
"""

from __future__ import annotations

from typing import Any

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text[-1:].isdigit()  # "-0.5", "-1e-3"; not "-inf", "+nan" or "-1 "


def _needs_quote(text: str) -> bool:
    if text.startswith(TRIGGERS):
        return not _is_number(text)
    return text.startswith("'") and _needs_quote(text[1:])


def escape_cell(value: Any) -> Any:
    """The value to write: text that a spreadsheet would run gets a leading `'`; anything else is unchanged."""
    if isinstance(value, str) and _needs_quote(value):
        return "'" + value
    return value


def unescape_cell(value: str) -> str:
    """The inverse of `escape_cell` on text read back from a CSV file."""
    if value.startswith("'") and _needs_quote(value[1:]):
        return value[1:]
    return value


def escape_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: escape_cell(v) for k, v in row.items()}
