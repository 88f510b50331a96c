"""A scriptable Judge for engine tests: it counts calls, can add latency, and fails on demand.

The grade it gives a pair is known in advance (`expected_grade`), so tests check every label.
A script maps a doc_id to the outcomes of its next calls: "transient", "malformed", "fatal",
"boom" (an unexpected exception) or "ok". With `calls_file`, every call is also appended to a
file, so tests can count calls made by other processes.
"""

from __future__ import annotations

import asyncio
import hashlib
import os

from labeller.errors import JudgeError
from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, RejectedRequestError, TransientError
from labeller.records import Verdict
from labeller.rubric import JudgePrompt

INPUT_TOKENS, OUTPUT_TOKENS, CACHED_TOKENS = 1000, 50, 200


def expected_grade(query_id: str, doc_id: str) -> int:
    return int(hashlib.sha256(f"{query_id}/{doc_id}".encode()).hexdigest(), 16) % 5 + 1


class FakeJudge(Judge):
    provider = "fake"

    def __init__(self, model: str = "scripted", *, latency: float = 0.0, script: dict[str, list[str]] | None = None,
                 calls_file: str | None = None) -> None:
        self.model = model
        self.latency = latency
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.calls_file = calls_file
        self.calls: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False

    def decoding_settings(self):
        return {"temperature": 0.0}

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        qid, did = prompt.query.query_id, prompt.doc.doc_id
        self.calls.append((qid, did))
        if self.calls_file:
            with open(self.calls_file, "a", encoding="utf-8") as handle:  # O_APPEND: lines never interleave
                handle.write(f"{os.getpid()} {qid} {did}\n")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            outcomes = self.script.get(did)
            outcome = outcomes.pop(0) if outcomes else "ok"
        finally:
            self.in_flight -= 1
        if outcome == "transient":
            raise TransientError("HTTP 500 from fake", retry_after=0.0)
        if outcome == "malformed":
            raise MalformedReplyError("malformed reply: grade 9", input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS)
        if outcome == "fatal":
            raise JudgeError("fake rejected the API key (HTTP 401)")
        if outcome == "rejected":
            raise RejectedRequestError("fake rejected the request (HTTP 400): prompt too long")
        if outcome == "boom":
            raise RuntimeError("fake bug")
        grade = expected_grade(qid, did)
        return JudgeReply(verdict=Verdict(justification=f"fake grade {grade} for {qid}/{did}", grade=grade),
                          input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS, cached_input_tokens=CACHED_TOKENS)

    async def aclose(self) -> None:
        self.closed = True


RUBRIC_TEXT = """+++
name = "testing"
+++
# Grades
5: the document answers the query. 1: it has nothing to do with it.
"""


def write_rubric(directory, text: str = RUBRIC_TEXT):
    path = directory / "rubric.md"
    path.write_text(text, encoding="utf-8")
    return path


def sample(n_queries: int = 3, docs_per_query: int = 4):
    """Queries, corpus and pairs for engine tests: every query paired with its own distinct documents."""
    from labeller.records import Doc, Pair, Query

    queries = {f"q{i}": Query(query_id=f"q{i}", text=f"query number {i} about topic {i}") for i in range(n_queries)}
    corpus, pairs = {}, []
    for i in range(n_queries):
        for j in range(docs_per_query):
            did = f"d{i}-{j}"
            corpus[did] = Doc(doc_id=did, text=f"document {j} for topic {i}")
            pairs.append(Pair(query_id=f"q{i}", doc_id=did))
    return queries, corpus, pairs
