"""Shared set-up for the annotation tests: the bundled sample's queries and corpus, judge labels for a
few dozen of its pairs, a frozen sample and a running annotation server on a free loopback port."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from labeller.annotate import Session, make_sample
from labeller.annotate.server import AnnotationServer
from labeller.io.trec import read_run, top_k
from labeller.shipped import shipped_dir

SAMPLE_DIR = shipped_dir("pipelines") / "sample"
QUERIES, CORPUS = SAMPLE_DIR / "queries.jsonl", SAMPLE_DIR / "corpus.jsonl"
BASELINE = SAMPLE_DIR / "baseline.trec"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def label_rows(n_per_query: int = 3, version: str = "v-test", judge: str = "offline:lexical") -> list[dict]:
    """Judge labels for the top pairs of the bundled run, grades cycling 1..5 so every grade is present."""
    entries = top_k(read_run(BASELINE), n_per_query)
    provider, model = judge.split(":")
    return [{"query_id": e.query_id, "doc_id": e.doc_id, "grade": i % 5 + 1, "justification": f"judge says {i % 5 + 1}",
             "judge": judge, "provider": provider, "model": model, "rubric": "transactions",
             "rubric_version": version, "cache_key": f"k{i}", "created_at": "2026-01-01T00:00:00+00:00"}
            for i, e in enumerate(entries)]


def frozen_sample(root: Path, size: int = 40, plan: str = "stratified", labels: list[dict] | None = None):
    labels_path = write_jsonl(root / "labels.jsonl", labels or label_rows())
    return make_sample(root / "sample.jsonl", labels=labels_path, size=size, plan=plan, rubric="transactions")


def session(root: Path, annotators=("alice", "bob"), overlap: float = 1.0, **kwargs) -> Session:
    return Session(sample=root / "sample.jsonl", gold=root / "gold.jsonl", queries=QUERIES, corpus=CORPUS,
                   annotators=list(annotators), overlap=overlap, **kwargs)


@contextmanager
def running(sess: Session):
    server = AnnotationServer(sess, "127.0.0.1", 0)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def call(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
