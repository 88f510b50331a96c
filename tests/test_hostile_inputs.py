"""Hostile inputs and faults across every command: one row per case, grown with every bug found.

Each case runs the real command line (in process, or as a subprocess where a signal is involved)
in a fresh workspace of small valid files, against a fake OpenAI/Anthropic server on loopback, and
asserts what a user must be able to rely on:
- the exit code (2 for bad input, 1 for a failed gate, 3 for a stopped budget, ...);
- stderr ends in one line `labeller: error: ...` holding the expected words, and no traceback;
- no output file the case names exists afterwards (no half-written output);
- every file that existed before is byte-identical afterwards (no input overwritten), except the
  paths a case declares mutable (a cache it is allowed to fill);
- for commands that may call a judge, how many requests the fake server saw (nothing paid twice,
  nothing paid before a bad input is refused).

Add a row for every bug: a `Case` in CASES, with a `setup` that writes the hostile file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from fakejudge import write_rubric

from labeller.cli import main

KEY = "sk-hostile-secret-0123456789"

QUERIES = [{"query_id": "q1", "text": "how to blanch spinach"}, {"query_id": "q2", "text": "bounty hunter pay"}]
CORPUS = [{"doc_id": "d1", "text": "Blanch spinach for two minutes."},
          {"doc_id": "d2", "text": "Bounty hunters are paid a share of the bail."},
          {"doc_id": "d3", "text": "Spinach is green."}]
PAIRS = [{"query_id": q, "doc_id": d} for q in ("q1", "q2") for d in ("d1", "d2", "d3")]
LABELS = [{"query_id": p["query_id"], "doc_id": p["doc_id"], "grade": g, "justification": "j",
           "judge": "offline:lexical", "provider": "offline", "model": "lexical", "rubric": "test",
           "rubric_version": "v1", "cache_key": f"k{i}", "created_at": "2026-01-01T00:00:00+00:00"}
          for i, (p, g) in enumerate(zip(PAIRS, (5, 1, 3, 1, 4, 1)))]
GOLD = [{"query_id": p["query_id"], "doc_id": p["doc_id"], "grade": g, "annotator": "a", "note": "n"}
        for p, g in zip(PAIRS, (5, 1, 2, 1, 5, 1))]
RUN = "".join(f"{q} Q0 {d} {r} {10 - r} sys\n" for q in ("q1", "q2") for r, d in enumerate(("d1", "d2", "d3"), 1))


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def workspace(root: Path) -> Path:
    """Small valid inputs every case starts from; a case's setup then spoils one of them."""
    write_jsonl(root / "queries.jsonl", QUERIES)
    write_jsonl(root / "corpus.jsonl", CORPUS)
    write_jsonl(root / "pairs.jsonl", PAIRS)
    write_jsonl(root / "labels.jsonl", LABELS)
    write_jsonl(root / "gold.jsonl", GOLD)
    (root / "run.trec").write_text(RUN, encoding="utf-8")
    (root / "baseline.trec").write_text(RUN, encoding="utf-8")
    write_rubric(root)
    return root


LABEL = ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--rubric", "rubric.md"]
GATE = ["evaluate", "--run", "run.trec", "--baseline", "baseline.trec", "--labels", "labels.jsonl"]


def _keep_queries(path: Path, *queries: str) -> None:
    path.write_text("".join(line for line in RUN.splitlines(keepends=True) if line.split()[0] in queries),
                    encoding="utf-8")


def _saved_result(root: Path, *queries: str) -> None:
    """saved.json: a `labeller evaluate --json` result of a baseline that answered only `queries`."""
    from labeller.evaluation import EvaluateOptions, evaluate

    _keep_queries(root / "saved.trec", *queries)
    result = evaluate(EvaluateOptions(runs=[root / "saved.trec"], labels=root / "labels.jsonl"))
    (root / "saved.json").write_text(result.model_dump_json(), encoding="utf-8")
OPENAI = ["--judge", "openai:gpt-4.1-mini", "--base-url", "{openai}"]


@dataclass
class Case:
    id: str
    args: list[str]  # CLI arguments; "{openai}" and "{anthropic}" become the fake server's URLs
    exit: int = 2
    stderr: str = ""  # words the one error line must hold (empty: any one line)
    setup: Callable[[Path], None] | None = None  # spoils the workspace (runs in it)
    outputs: tuple[str, ...] = ()  # must not exist afterwards
    mutable: tuple[str, ...] = ()  # files/dirs a case may change (a cache it fills)
    requests: int | None = 0  # judge requests the fake server may see (None: not checked)
    error_line: bool = True  # False for a gate's FAIL verdict (exit 1 with a report, not an error)
    subprocess: bool = False  # run as a real process (signals, stdin)
    env: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# The table. Keep rows grouped by command; one row per bug or hostile input.
# ---------------------------------------------------------------------------------------------

CASES: list[Case] = [
    # label --------------------------------------------------------------------------------
    Case("label-missing-queries-file", [*LABEL, "--pairs", "pairs.jsonl", *OPENAI, "--queries", "nope.jsonl"],
         stderr="nope.jsonl", outputs=("labels.jsonl.tmp",)),
    Case("label-pair-with-unknown-doc", [*LABEL, "--pairs", "pairs.jsonl", *OPENAI],
         setup=lambda d: write_jsonl(d / "pairs.jsonl", [{"query_id": "q1", "doc_id": "zzz"}]),
         stderr="zzz", outputs=("out.jsonl",)),
    # agree --------------------------------------------------------------------------------
    Case("agree-gold-not-json", ["agree", "--labels", "labels.jsonl", "--gold", "gold.jsonl"],
         setup=lambda d: (d / "gold.jsonl").write_text("{not json\n", encoding="utf-8"), stderr="gold.jsonl:1"),
    # evaluate -----------------------------------------------------------------------------
    Case("evaluate-run-not-trec", ["evaluate", "--run", "run.trec", "--labels", "labels.jsonl"],
         setup=lambda d: (d / "run.trec").write_text("q1 d1\n", encoding="utf-8"), stderr="run.trec:1"),
    # The gate over nothing comparable fails (exit 1) with the reason; it used to print "gate PASSED".
    Case("evaluate-gate-no-label-reaches-relevant-from", [*GATE, "--fail-on-regression"], exit=1,
         setup=lambda d: write_jsonl(d / "labels.jsonl", [{**r, "grade": min(r["grade"], 2)} for r in LABELS]),
         stderr="no-answer bucket"),
    Case("evaluate-gate-no-shared-queries", GATE, exit=1, stderr="no shared queries",
         setup=lambda d: (_keep_queries(d / "run.trec", "q1"), _keep_queries(d / "baseline.trec", "q2"))),
    Case("evaluate-gate-saved-baseline-no-shared-queries",
         ["evaluate", "--run", "run.trec", "--baseline", "saved.json", "--labels", "labels.jsonl"], exit=1,
         setup=lambda d: (_saved_result(d, "q2"), _keep_queries(d / "run.trec", "q1")), stderr="no shared queries"),
    # A query the candidate lost counts 0 for it (it used to drop out of the comparison); one
    # differing query can never be significant, so the threshold decides, and says so.
    Case("evaluate-gate-vanished-query", GATE, exit=1, stderr="decided by the threshold alone",
         setup=lambda d: _keep_queries(d / "run.trec", "q1")),
    # A clearly worse run on a sample too small for any test: it used to pass as "not significant".
    Case("evaluate-gate-small-sample-worse", GATE, exit=1, stderr="too few queries for significance",
         setup=lambda d: (d / "run.trec").write_text(RUN.replace(" 9 sys", " 0 sys").replace(" 7 sys", " 9 sys"),
                                                     encoding="utf-8")),
    # The columnar reader hands every file it cannot read exactly to the line-by-line reader, which
    # names the line: a repeated pair, a non-finite score, a field split by a tab, an out-of-scale qrels grade.
    Case("evaluate-columnar-run-duplicate-pair", ["evaluate", "--run", "run.trec", "--labels", "labels.jsonl"],
         setup=lambda d: (d / "run.trec").write_text(RUN + "q1 Q0 d2 7 0.5 sys\n", encoding="utf-8"),
         stderr="run.trec:7"),
    Case("evaluate-columnar-run-infinite-score", ["evaluate", "--run", "run.trec", "--labels", "labels.jsonl"],
         setup=lambda d: (d / "run.trec").write_text(RUN.replace("q2 Q0 d1 1 9", "q2 Q0 d1 1 1e999"),
                                                     encoding="utf-8"), stderr="run.trec:4"),
    Case("evaluate-columnar-run-tab-in-tag", ["evaluate", "--run", "run.trec", "--labels", "labels.jsonl"],
         setup=lambda d: (d / "run.trec").write_text(RUN.replace("q1 Q0 d3 3 7 sys", "q1 Q0 d3 3 7 sys\tx"),
                                                     encoding="utf-8"), stderr="run.trec:3"),
    Case("evaluate-columnar-qrels-out-of-scale", ["evaluate", "--run", "run.trec", "--labels", "qrels.txt"],
         setup=lambda d: (d / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 7\n", encoding="utf-8"),
         stderr="qrels.txt:2"),
    # qrels --------------------------------------------------------------------------------
    Case("qrels-export-missing-source", ["qrels", "export", "nope.jsonl", "--out", "out.qrels", "--to-scale", "0-3"],
         stderr="nope.jsonl", outputs=("out.qrels",)),
    # cache --------------------------------------------------------------------------------
    Case("cache-stats-on-a-file", ["cache", "stats", "--cache", "labels.jsonl"], stderr="labels.jsonl"),
    # acceptance ---------------------------------------------------------------------------
    Case("acceptance-missing-run", ["acceptance", "--queries", "queries.jsonl", "--run", "nope.trec"],
         stderr="nope.trec"),
    # canaries -----------------------------------------------------------------------------
    Case("canaries-plant-missing-canaries", ["canaries", "plant", "--corpus", "corpus.jsonl", "--canaries",
                                             "nope.toml", "--out", "corpus.test.jsonl"],
         stderr="nope.toml", outputs=("corpus.test.jsonl",)),
    # run / demo ---------------------------------------------------------------------------
    Case("run-missing-config", ["run", "nope.toml"], stderr="nope.toml"),
    Case("demo-unknown-judge", ["demo", "--out", "demo-out", "--judge", "nosuch:model"], stderr="nosuch",
         outputs=("demo-out",)),
    # serve --------------------------------------------------------------------------------
    Case("serve-missing-config", ["serve", "--config", "nope.toml"], stderr="nope.toml"),
]


# ---------------------------------------------------------------------------------------------
# The harness.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    with FakeAPI(latency=0.0) as api:
        yield api


def _snapshot(root: Path, mutable: tuple[str, ...]) -> dict[str, str]:
    skip = [root / m for m in mutable]
    digests = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not any(path == s or s in path.parents for s in skip):
            digests[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def _run(case: Case, root: Path, args: list[str], capsys) -> tuple[int, str]:
    if case.subprocess:
        env = {**os.environ, **case.env}
        done = subprocess.run([sys.executable, "-m", "labeller", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        return done.returncode, done.stderr
    with pytest.raises(SystemExit) as stopped:
        main(args)
    return int(stopped.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, server, tmp_path, monkeypatch, capsys):
    root = workspace(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if case.setup:
        case.setup(root)
    before = _snapshot(root, case.mutable)
    server.reset()
    args = [a.replace("{openai}", server.openai_url).replace("{anthropic}", server.url) for a in case.args]

    code, err = _run(case, root, args, capsys)

    assert code == case.exit, f"exit {code}, expected {case.exit}; stderr:\n{err}"
    assert "Traceback" not in err, err
    assert KEY not in err
    if case.error_line:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("labeller: error: "), err
        assert [line for line in lines if line.startswith("labeller: error: ")] == [lines[-1]], err
        assert case.stderr in lines[-1], f"expected {case.stderr!r} in {lines[-1]!r}"
    elif case.stderr:
        assert case.stderr in err, err
    for output in case.outputs:
        assert not (root / output).exists(), f"{output} was written"
    after = _snapshot(root, case.mutable)
    changed = sorted(name for name in before if before[name] != after.get(name))
    assert not changed, f"inputs changed: {changed}"
    if case.requests is not None:
        assert server.total == case.requests, f"{server.total} judge requests, expected {case.requests}"


def test_the_table_covers_every_command():
    """Every top-level command has at least one hostile row (a new command must bring its rows)."""
    from typer.main import get_command

    from labeller.cli.app import app

    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    covered = {c.args[0] for c in CASES}
    missing = commands - covered
    assert not missing, f"commands without a hostile-input row: {sorted(missing)}"
