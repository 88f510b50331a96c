"""What the jury and escalation tests share (test_jury.py, test_samples_juries.py): a slice whose documents carry
their planted grade as a marker the fake API reads (also the gold grade), the CLI run in-process, and counts
of the requests the fake saw per model."""

from __future__ import annotations

import json
from pathlib import Path

from fakeapi import FakeAPI, _text
from fakejudge import write_rubric

from cli_helpers import cli, jsonl  # noqa: F401 (cli: re-exported to the jury tests)

N = 40
BASE = ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs", "pairs.jsonl",
        "--rubric", "rubric.md"]


def planted(i: int) -> int:
    return (i * 3) % 5 + 1



def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_slice(folder: Path, monkeypatch, api: FakeAPI, key: str) -> Path:
    """N pairs over 8 queries, their gold and a rubric in `folder` (the working directory), keys pointing at `api`."""
    monkeypatch.chdir(folder)
    for name, value in api.environment(key).items():
        monkeypatch.setenv(name, value)
    jsonl(folder / "queries.jsonl", [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(8)])
    jsonl(folder / "corpus.jsonl", [{"doc_id": f"d{i}", "text": f"passage {i} [[grade:{planted(i)}]]"}
                                    for i in range(N)])
    jsonl(folder / "pairs.jsonl", [{"query_id": f"q{i % 8}", "doc_id": f"d{i}"} for i in range(N)])
    jsonl(folder / "gold.jsonl", [{"query_id": f"q{i % 8}", "doc_id": f"d{i}", "grade": planted(i),
                                   "annotator": "a"} for i in range(N)])
    write_rubric(folder)
    return folder



def by_model(api: FakeAPI) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in api.requests:
        counts[r.body["model"]] = counts.get(r.body["model"], 0) + 1
    return counts


def doc_of(recorded) -> str:
    """The doc_id of the pair a recorded request asked about."""
    user = "".join(_text(m.get("content")) for m in recorded.body["messages"] if m.get("role") == "user")
    return "d" + user.split("passage ")[1].split(" ")[0]
