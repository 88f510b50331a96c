"""Where the files shipped with labeller (rubrics, sample gold, pipelines, sample data) live.

In a wheel they are packaged under labeller/_shipped/; in a source checkout they sit at the
repository root. Both are looked up so a plain `pip install` and an editable install behave alike.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_dir(name: str) -> Path:
    """The directory of shipped files called `name` (rubrics, gold, pipelines)."""
    for candidate in (_PACKAGE / "_shipped" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    return _PACKAGE / "_shipped" / name
