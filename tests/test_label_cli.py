"""`labeller label` and `labeller cache` through the real command line: outputs, summaries, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fakeapi import FakeAPI, expected_grade
from fakejudge import write_rubric

from labeller.io import read_labels
from labeller.records import Doc, Query
from labeller.rubric import load_rubric
from cli_helpers import cli, jsonl

KEY = "sk-test-secret-0123456789"
QUERIES = [{"query_id": "q1", "text": "how to blanch spinach"}, {"query_id": "q2", "text": "bounty hunter pay"}]
CORPUS = [{"doc_id": "d1", "text": "Blanch spinach for two minutes."},
          {"doc_id": "d2", "text": "Bounty hunters are paid a share of the bail."},
          {"doc_id": "d3", "text": "Spinach is green."}]
PAIRS = [{"query_id": q, "doc_id": d} for q in ("q1", "q2") for d in ("d1", "d2", "d3")]



@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jsonl(tmp_path / "queries.jsonl", QUERIES)
    jsonl(tmp_path / "corpus.jsonl", CORPUS)
    jsonl(tmp_path / "pairs.jsonl", PAIRS)
    write_rubric(tmp_path)
    return tmp_path


BASE = ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--rubric", "rubric.md"]



def test_offline_labelling_then_a_rerun_from_the_cache(files, capsys):
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical")
    assert code == 0
    assert "labelled 6 pairs: 6 new, 0 from cache, 0 failed" in err
    first = read_labels(files / "labels.jsonl")
    assert [(lb.query_id, lb.doc_id) for lb in first] == [(p["query_id"], p["doc_id"]) for p in PAIRS]
    assert first[0].grade > first[1].grade  # the spinach passage beats the bounty hunter one for q1
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical", "--out", "again.csv")
    assert code == 0 and "0 new, 6 from cache" in err
    import pandas as pd

    again = pd.read_csv(files / "again.csv")
    assert list(again["grade"]) == [lb.grade for lb in first] and again["from_cache"].all()
    assert list(again["created_at"]) == [lb.created_at for lb in first]


def test_run_and_depth_label_the_top_of_each_query(files, capsys):
    (files / "run.txt").write_text("q1 Q0 d3 1 9 x\nq1 Q0 d1 2 8 x\nq1 Q0 d2 3 1 x\nq2 Q0 d2 1 5 x\n")
    code, _, _ = cli(capsys, *BASE, "--run", "run.txt", "--depth", "2", "--judge", "offline", "--out", "top.jsonl")
    assert code == 0
    assert [(lb.query_id, lb.doc_id) for lb in read_labels(files / "top.jsonl")] == [("q1", "d3"), ("q1", "d1"),
                                                                                    ("q2", "d2")]


def test_dry_run_counts_and_writes_nothing(files, capsys):
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical", "--dry-run")
    assert code == 0 and "6 new, 0 cached" in err
    assert not (files / ".labeller-cache").exists() and not (files / "labels.jsonl").exists()
    jsonl(files / "some.jsonl", PAIRS[:2])
    assert cli(capsys, *BASE, "--pairs", "some.jsonl", "--judge", "offline:lexical", "--out", "some-out.jsonl")[0] == 0
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical", "--dry-run")
    assert code == 0
    assert "dry run: 6 pairs, 4 new, 2 cached; nothing sent" in err and "cost $0.0000" in err
    assert not (files / "labels.jsonl").exists()
    code, out, _ = cli(capsys, "cache", "stats", "--json")
    assert json.loads(out)["entries"] == 2


def test_max_cost_stops_keeps_what_is_done_and_exits_3(files, capsys):
    jsonl(files / "some.jsonl", PAIRS[:2])
    assert cli(capsys, *BASE, "--pairs", "some.jsonl", "--judge", "offline:lexical", "--out", "some-out.jsonl")[0] == 0
    # Make the estimate of any request (about 100 tokens at $1 a token) far above the budget.
    (files / "prices.toml").write_text("[offline.lexical]\ninput = 1000000\noutput = 1000000\n")
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical", "--max-cost", "1",
                       "--prices", "prices.toml")
    assert code == 3
    assert "max-cost" in err and "4 not sent" in err
    labels = read_labels(files / "labels.jsonl")
    assert [(lb.doc_id, lb.from_cache) for lb in labels] == [("d1", True), ("d2", True)]
    failures = [json.loads(line) for line in (files / "labels.failures.jsonl").read_text().splitlines()]
    assert len(failures) == 4 and all("max-cost" in f["reason"] and f["attempts"] == 0 for f in failures)


def _openai_run(capsys, api, *extra):
    return cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "openai:gpt-4.1-mini", "--base-url",
               api.openai_url, *extra)


def test_failed_pairs_exit_1_are_reported_and_a_rerun_completes_them(files, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    rubric = load_rubric(files / "rubric.md")
    with FakeAPI(api_key=KEY) as api:
        api.script(["malformed", "malformed", "malformed"])  # the first pair's three tries
        code, _, err = _openai_run(capsys, api, "--concurrency", "1")
        assert code == 1
        assert "5 new, 0 from cache, 1 failed" in err
        assert "failed q1 / d1: gave up after 3 attempts: malformed reply" in err
        assert "labels.failures.jsonl" in err and api.total == 8
        failures = (files / "labels.failures.jsonl").read_text().splitlines()
        assert len(failures) == 1 and json.loads(failures[0])["doc_id"] == "d1"
        labels = read_labels(files / "labels.jsonl")
        assert len(labels) == 5
        for lb in labels:
            q = next(r for r in QUERIES if r["query_id"] == lb.query_id)
            d = next(r for r in CORPUS if r["doc_id"] == lb.doc_id)
            user = rubric.render(Query(query_id=lb.query_id, text=q["text"]), Doc(doc_id=lb.doc_id, text=d["text"])).user
            assert lb.grade == expected_grade(user)
        assert all(lb.cost_usd and lb.input_tokens for lb in labels)  # gpt-4.1-mini has a price

        api.reset()
        code, _, err = _openai_run(capsys, api)
        assert code == 0 and api.total == 1 and "1 new, 5 from cache, 0 failed" in err
        assert not (files / "labels.failures.jsonl").exists()
        code, _, _ = _openai_run(capsys, api)
        assert code == 0 and api.total == 1  # the third run sends nothing
    for path in files.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_rejected_key_stops_the_run_and_accounts_for_every_pair(files, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeAPI(api_key="sk-the-right-one") as api:
        code, _, err = _openai_run(capsys, api, "--concurrency", "1")
    assert code == 1 and api.total == 1
    assert "rejected the API key" in err and KEY not in err
    assert (files / "labels.jsonl").read_text() == ""  # nothing was labelled, and the file says so
    assert len((files / "labels.failures.jsonl").read_text().splitlines()) == 6


@pytest.mark.parametrize("lines, message", [
    # an entry the inputs do not hold is skipped with a warning (test_first_hour.py): refused only when none matches
    ("q1 Q0 d9 1 9 x\nq1 Q0 d8 2 8 x\n", "run.txt:1: field 'doc_id': no entry of the run matches the inputs: "
                                       "unknown document 'd9'"),
    ("q7 Q0 d3 1 9 x\nq8 Q0 d1 1 8 x\n", "run.txt:1: field 'query_id': no entry of the run matches the inputs: "
                                       "unknown query 'q7'"),
    ("q1 Q0 d3 first 9 x\n", "run.txt:1: field 'rank': rank 'first' is not a whole number"),
])
def test_a_bad_run_names_its_line_and_writes_nothing(files, capsys, lines, message):
    (files / "run.txt").write_text(lines)
    code, _, err = cli(capsys, *BASE, "--run", "run.txt", "--depth", "2", "--judge", "offline", "--out", "top.jsonl")
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (files / "top.jsonl").exists()


BAD_INPUTS = {
    "missing text": ("corpus.jsonl", [CORPUS[0], {"doc_id": "d2"}], "corpus.jsonl:2: field 'text': missing"),
    "duplicate doc_id": ("corpus.jsonl", [CORPUS[0], CORPUS[1], CORPUS[0]], "corpus.jsonl:3: field 'doc_id': duplicate"),
    "unknown document": ("pairs.jsonl", PAIRS[:1] + [{"query_id": "q1", "doc_id": "d9"}],
                         "pairs.jsonl:2: field 'doc_id': unknown document 'd9'"),
    "empty file": ("queries.jsonl", [], "queries.jsonl: file is empty"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_file_line_field_and_writes_nothing(files, capsys, case):
    name, rows, message = BAD_INPUTS[case]
    jsonl(files / name, rows)
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical")
    assert code == 2 and message in err and err.startswith("labeller: error: ")
    assert not (files / "labels.jsonl").exists() and not (files / ".labeller-cache").exists()


def test_a_line_that_is_not_utf8_exits_2(files, capsys):
    (files / "queries.jsonl").write_bytes(b'{"query_id": "q1", "text": "ok"}\n{"query_id": "q2", "text": "\xff"}\n')
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical")
    assert code == 2 and "queries.jsonl:2: not valid UTF-8" in err
    assert not (files / "labels.jsonl").exists()


@pytest.mark.parametrize("judge, message", [
    ("gpt-4.1-mini", "unknown judge 'gpt-4.1-mini'; expected openai:<model>"),
    ("openai:gpt-4.1-mini", "set the OPENAI_API_KEY environment variable"),
    ("anthropic:claude-haiku-4-5", "set the ANTHROPIC_API_KEY environment variable"),
])
def test_judge_errors_exit_2_before_anything_is_read_or_sent(files, capsys, judge, message):
    code, _, err = cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", judge)
    assert code == 2 and message in err
    assert not (files / "labels.jsonl").exists()


@pytest.mark.parametrize("args, message", [
    (["--judge", "offline"], "give exactly one of --pairs or --run"),
    (["--judge", "offline", "--pairs", "pairs.jsonl", "--run", "run.txt"], "give exactly one of --pairs or --run"),
    (["--judge", "offline", "--run", "pairs.jsonl"], "--run needs --depth"),
    (["--judge", "offline", "--pairs", "pairs.jsonl", "--out", "labels.txt"], "expected .jsonl, .csv or .parquet"),
])
def test_argument_errors_exit_2(files, capsys, args, message):
    code, _, err = cli(capsys, *BASE, *args)
    assert code == 2 and message in err


def test_cache_stats_and_export(files, capsys):
    assert cli(capsys, *BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical")[0] == 0
    code, out, _ = cli(capsys, "cache", "stats")
    assert code == 0 and "verdicts: 6" in out and "offline:lexical: 6" in out
    stats = json.loads(cli(capsys, "cache", "stats", "--json")[1])
    assert stats["entries"] == 6 and stats["by_judge"] == {"offline:lexical": 6} and stats["cost_usd"] == 0
    code, _, err = cli(capsys, "cache", "export", "--out", "verdicts.jsonl")
    assert code == 0 and "exported 6 verdicts" in err
    rows = [json.loads(line) for line in (files / "verdicts.jsonl").read_text().splitlines()]
    assert sorted((r["query_id"], r["doc_id"]) for r in rows) == sorted((p["query_id"], p["doc_id"]) for p in PAIRS)
    code, _, err = cli(capsys, "cache", "stats", "--cache", "nowhere")
    assert code == 2 and "no verdict cache here" in err


def test_the_installed_command_exits_with_the_right_codes(files):
    run = lambda *a: subprocess.run([sys.executable, "-m", "labeller", *a], capture_output=True, text=True)  # noqa: E731
    assert run("label", "--help").returncode == 0
    done = run(*BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical")
    assert done.returncode == 0 and (files / "labels.jsonl").exists()
    jsonl(files / "pairs.jsonl", [{"query_id": "q1"}])
    done = run(*BASE, "--pairs", "pairs.jsonl", "--judge", "offline:lexical", "--out", "x.jsonl")
    assert done.returncode == 2 and "pairs.jsonl:1: field 'doc_id': missing" in done.stderr
    assert not (files / "x.jsonl").exists()


def test_shipped_rubrics_work_by_name(files, capsys):
    args = ["label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs", "pairs.jsonl",
            "--judge", "offline:lexical"]
    assert cli(capsys, *args)[0] == 0  # --rubric defaults to the shipped general rubric
    assert {lb.rubric for lb in read_labels(files / "labels.jsonl")} == {"general"}
    # The transactions rubric shows ledger fields: on a corpus with only text it is refused (exit 2, before
    # any request: see test_hostile_inputs); with the fields it works by name.
    assert cli(capsys, *args, "--rubric", "transactions", "--out", "tx.jsonl")[0] == 2
    fields = {"supplier": "Tesco", "description": "groceries", "amount": 12.5, "currency": "GBP", "vat": "zero",
              "date": "2026-01-02", "category": "Food"}
    jsonl(files / "queries.jsonl", [{**q, **fields} for q in QUERIES])
    jsonl(files / "corpus.jsonl", [{**d, **fields, "amount": 10 + i} for i, d in enumerate(CORPUS)])
    assert cli(capsys, *args, "--rubric", "transactions", "--out", "tx.jsonl")[0] == 0
    tx = read_labels(files / "tx.jsonl")
    assert {lb.rubric for lb in tx} == {"transactions"}
    assert {lb.cache_key for lb in tx}.isdisjoint(lb.cache_key for lb in read_labels(files / "labels.jsonl"))
