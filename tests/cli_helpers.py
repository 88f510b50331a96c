"""What the command-line tests share: write a JSONL file, and run `labeller` in-process as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeller.cli import main


def jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cli(capsys, *args) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `labeller ARGS` (paths may be given as Path)."""
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return done.value.code, out.out, out.err
