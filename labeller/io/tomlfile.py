"""Read a TOML file (pipeline configs, server configs, canary files) with one clear error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from labeller.errors import BadInputError


def read_toml(path: str | Path, error: type[BadInputError] = BadInputError, what: str = "file") -> dict[str, Any]:
    """The parsed TOML table; a missing file or bad TOML raises `error` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} not found", path=str(path))
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"not valid TOML ({exc})", path=str(path)) from None
