"""tests/leanapi.py, the benchmarks' fast fake OpenAI server: the real CLI and the real openai SDK over real HTTP
get the same verdicts from it as from tests/fakeapi.py, over kept-alive connections, in both output modes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from leanapi import LeanAPI

N_PAIRS = 120
KEY = "sk-lean-test-unused"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    # a third of the documents plant their grade; the others are graded by a hash of the prompt
    rows = {"queries": [{"query_id": f"q{i}", "text": f"expense question {i}"} for i in range(12)],
            "corpus": [{"doc_id": f"d{i}", "text": f"receipt {i} for office supplies"
                        + (f" [[grade:{i % 5 + 1}]]" if i % 3 == 0 else "")} for i in range(N_PAIRS)],
            "pairs": [{"query_id": f"q{i % 12}", "doc_id": f"d{i}"} for i in range(N_PAIRS)]}
    for name, items in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return folder


def label(folder: Path, url: str, name: str, *extra: str) -> list[dict]:
    out = folder / f"{name}.jsonl"
    cmd = [sys.executable, "-m", "labeller", "label", "--queries", str(folder / "queries.jsonl"),
           "--corpus", str(folder / "corpus.jsonl"), "--pairs", str(folder / "pairs.jsonl"),
           "--judge", "openai:gpt-4.1-mini", "--cache", str(folder / f"store-{name}"), "--out", str(out),
           "--concurrency", "8", *extra]
    done = subprocess.run(cmd, env={**os.environ, "OPENAI_BASE_URL": url + "/v1",
                                    "OPENAI_API_KEY": KEY}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def verdicts(rows: list[dict]) -> list[tuple]:
    return [(r["query_id"], r["doc_id"], r["grade"], r["justification"], r["input_tokens"]) for r in rows]


@pytest.mark.parametrize("mode", ["json_schema", "tool"])
def test_same_verdicts_as_fakeapi_over_kept_alive_connections(inputs: Path, mode: str) -> None:
    with LeanAPI() as lean:
        lean_rows = label(inputs, lean.url, "lean", "--output-mode", mode)
        counts = lean.stop()
    with FakeAPI() as fake:
        fake_rows = label(inputs, fake.url, "fake", "--output-mode", mode)
    assert len(lean_rows) == N_PAIRS and all("grade" in r for r in lean_rows)
    assert verdicts(lean_rows) == verdicts(fake_rows)
    planted = [r["grade"] for r in lean_rows if int(r["doc_id"][1:]) % 3 == 0]
    assert planted == [i % 5 + 1 for i in range(0, N_PAIRS, 3)]
    assert len({r["grade"] for r in lean_rows}) == 5  # the hashed grades are not one constant
    assert counts["total"] == N_PAIRS
    assert counts["connections"] <= 8 + 1  # the SDK's pool kept its connections open (+1: GET /v1/models)


def raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
        return reply


def test_errors_are_http_errors_and_nothing_is_counted() -> None:
    with LeanAPI() as lean:
        models = raw(lean.url, b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        broken = raw(lean.url, b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 5\r\nconnection: close"
                               b"\r\n\r\n{oops")
        chunked = raw(lean.url, b"POST /v1/chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n")
        ok = raw(lean.url, b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        counts = lean.stop()
    assert models.startswith(b"HTTP/1.1 404 ")
    assert broken.startswith(b"HTTP/1.1 400 ")
    assert chunked.startswith(b"HTTP/1.1 411 ")
    assert ok.startswith(b"HTTP/1.1 200 ") and b'grade' in ok
    assert counts == {"total": 1, "connections": 4}
