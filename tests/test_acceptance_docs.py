"""docs/acceptance.md's five-minute start, run exactly as written: it fails on the planted leak, then passes."""

import re
from pathlib import Path

import pytest

from labeller.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "acceptance.md"


def test_the_five_minute_start_does_what_the_docs_say(tmp_path, monkeypatch, capsys):
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Five-minute start"):text.index("## The suite file")]
    files = re.findall(r"`([\w.]+)`[^\n]*\n\n```(?:toml)?\n(.*?)```", section, re.S)
    assert [name for name, _ in files] == ["acl.jsonl", "suite.toml", "run.trec", "candidate.toml"]
    for name, body in files:
        (tmp_path / name).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = ["acceptance", "run", "--suite", "suite.toml", "--candidate", "candidate.toml", "--out", "results.json"]
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr().out
    assert done.value.code == 1 and "| search-v2 | access | c2 | bob | hr-1 | permissions |" in out
    run = tmp_path / "run.trec"
    run.write_text("".join(line for line in run.read_text().splitlines(True) if not line.startswith("c2")))
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 0
