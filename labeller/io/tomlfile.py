"""Read a TOML file (pipeline configs, server configs, canary files, rubric headers) with one clear error."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError

_AT = re.compile(r"\s*\(at (?:line (\d+), column \d+|end of document)\)$")


def read_toml(path: str | Path, error: type[BadInputError] = BadInputError, what: str = "file") -> dict[str, Any]:
    """The parsed TOML table; a missing file or bad TOML raises `error` naming the file (and line)."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} not found", path=str(path))
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not TOML
    except UnicodeDecodeError:
        raise error("not valid UTF-8; expected a UTF-8 TOML file", path=str(path)) from None
    return parse_toml(text, path, error)


def parse_toml(text: str, path: str | Path, error: type[BadInputError] = BadInputError,
               what: str = "not valid TOML") -> dict[str, Any]:
    """Parse TOML text from `path`; an error names the line tomllib reports (lines of `text`)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _AT.search(message)
        line = None
        if found:  # "at end of document": the last line, where the unfinished value is
            line = int(found.group(1)) if found.group(1) else text.rstrip("\n").count("\n") + 1
        raise error(f"{what} ({_AT.sub('', message)})", path=str(path), line=line) from None
