"""What the Ray tests share: the inputs (planted grades), `labeller label` as a user runs it with the key and the
fake API in its environment only, and the comparisons with a single-process run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cli, jsonl
from fakeapi import FakeAPI

KEY = "sk-ray-SECRET-7d3c9a1f0b2e"
MODEL = "openai:gpt-4.1-mini"
# When, how fast and at what cached-token discount a verdict came (the fake caches a rubric prefix it has seen)
PROVENANCE = ("created_at", "latency_s", "from_cache", "cached_input_tokens", "cost_usd")


def inputs(folder: Path, n: int) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return dict(
        queries=jsonl(folder / "queries.jsonl", [{"query_id": f"q{i}", "text": f"travel question {i}"} for i in range(4)]),
        corpus=jsonl(folder / "corpus.jsonl", [{"doc_id": f"d{i}", "text": f"hotel receipt {i} [[grade:{i % 5 + 1}]]"}
                                               for i in range(n)]),
        pairs=jsonl(folder / "pairs.jsonl", [{"query_id": f"q{i % 4}", "doc_id": f"d{i}"} for i in range(n)]))


def planted(n: int) -> list[tuple[str, str, int]]:
    """(query_id, doc_id, grade) of inputs(n), in input order."""
    return [(f"q{i % 4}", f"d{i}", i % 5 + 1) for i in range(n)]


def label_args(files: dict[str, Path], cache, out: Path, *extra) -> list[str]:
    return ["label", "--judge", MODEL, "--queries", str(files["queries"]), "--corpus", str(files["corpus"]),
            "--pairs", str(files["pairs"]), "--cache", str(cache), "--out", str(out), *map(str, extra)]


def run_cli(ray, api: FakeAPI, args: list[str], **popen) -> subprocess.CompletedProcess | subprocess.Popen:
    """`labeller ARGS` as a user runs it, with the key and the fake API in its environment (not the Ray nodes'):
    `ray.environment` is the nodes' environment (tests/raycluster.py)."""
    env = {**ray.environment, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": api.openai_url}
    command = [sys.executable, "-m", "labeller", *args]
    if popen:
        return subprocess.Popen(command, env=env, text=True, **popen)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def single_process(capsys, api: FakeAPI, args: list[str]) -> tuple[int, str, str]:
    """`labeller ARGS` in this process, without Ray: the reference a Ray run is held to."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.setenv("OPENAI_BASE_URL", api.openai_url)
        return cli(capsys, *args)


def user_prompts(api: FakeAPI) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in api.requests if r.path == "/v1/chat/completions"]


def rows(path: Path) -> list[tuple[str, str, int]]:
    return [(r["query_id"], r["doc_id"], r["grade"]) for r in map(json.loads, path.open())]


def without_provenance(path: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in PROVENANCE} for line in path.open()]
