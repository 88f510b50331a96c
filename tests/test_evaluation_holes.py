"""--fill-holes labels exactly the unjudged pairs in the top k, through the real engine and cache."""

from __future__ import annotations

import json

import pytest
from evaluation_helpers import cli, cli_json

WORDS = ["invoice", "office", "chairs", "printer", "paper", "coffee", "beans", "train", "ticket", "hotel",
         "laptop", "repair", "software", "licence", "taxi", "fuel", "lunch", "client", "rent", "parking"]


@pytest.fixture
def files(tmp_path):
    queries, corpus, gold, run = [], [], [], []
    for q in range(6):
        qid = f"q{q}"
        queries.append({"query_id": qid, "text": f"{WORDS[q]} {WORDS[q + 1]} {WORDS[q + 2]}"})
        for i in range(8):
            did = f"{qid}-d{i}"
            corpus.append({"doc_id": did, "text": " ".join(WORDS[(q + i + j) % len(WORDS)] for j in range(4))})
            run.append(f"{qid} Q0 {did} {i + 1} {10 - i} test\n")
            if i % 3 == 0:  # a third of the top documents have a human grade
                gold.append({"query_id": qid, "doc_id": did, "grade": 4 if i == 0 else 1, "annotator": "ann"})
    paths = {}
    for name, rows in (("queries", queries), ("corpus", corpus), ("gold", gold)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows))
    paths["run"] = tmp_path / "run.trec"
    paths["run"].write_text("".join(run))
    paths["cache"] = tmp_path / "cache"
    return paths


def fill_args(files, *extra):
    return ["evaluate", "--run", files["run"], "--labels", files["gold"], "--metrics", "ndcg@5,mrr@5",
            "--fill-holes", "--judge", "offline:lexical", "--queries", files["queries"], "--corpus", files["corpus"],
            "--cache", files["cache"], *extra]


def test_holes_are_labelled_once_and_then_judged_at_k_is_one(files, tmp_path, capsys):
    before = cli_json("evaluate", "--run", files["run"], "--labels", files["gold"], "--metrics", "ndcg@5,mrr@5",
                      capsys=capsys)
    # Top 5 of 6 queries = 30 pairs, 2 of each query's top 5 are graded (d0, d3): 18 holes.
    assert before["unjudged"]["judged@5"] == 18
    assert before["judged"]["judged@5"] == pytest.approx(2 / 5)

    saved = tmp_path / "filled.jsonl"
    first = cli_json(*fill_args(files, "--holes-out", saved), capsys=capsys)
    assert first["holes"]["holes"] == 18 and first["holes"]["new"] == 18 and first["holes"]["failed"] == 0
    assert first["judged"]["judged@5"] == 1.0 and first["unjudged"]["judged@5"] == 0
    rows = [json.loads(line) for line in saved.read_text().splitlines()]
    assert len(rows) == 18 and {r["judge"] for r in rows} == {"offline:lexical"}
    gold_pairs = {(q, f"{q}-d{i}") for q in (f"q{n}" for n in range(6)) for i in (0, 3)}
    assert not gold_pairs & {(r["query_id"], r["doc_id"]) for r in rows}  # human grades are never relabelled

    second = cli_json(*fill_args(files), capsys=capsys)
    assert second["holes"]["new"] == 0 and second["holes"]["from_cache"] == 18
    assert second["per_query"] == first["per_query"]


def test_fill_depth_limits_what_is_labelled(files, capsys):
    result = cli_json(*fill_args(files, "--depth", "2"), capsys=capsys)
    assert result["holes"]["holes"] == 6  # d1 of each query: d0 is graded
    assert result["judged"]["judged@5"] == pytest.approx(3 / 5)


def test_fill_holes_needs_judge_queries_and_corpus(files, capsys):
    code, _, err = cli("evaluate", "--run", files["run"], "--labels", files["gold"], "--fill-holes", capsys=capsys)
    assert code == 2 and "--fill-holes needs --judge, --queries, --corpus" in err


def test_a_hole_outside_the_corpus_is_a_clear_error(files, capsys):
    lines = files["corpus"].read_text().splitlines(keepends=True)
    files["corpus"].write_text("".join(line for line in lines if '"q2-d1"' not in line))
    code, out, err = cli(*fill_args(files), capsys=capsys)
    assert code == 2 and "document 'q2-d1' (query 'q2') is not in the corpus file" in err and out == ""
    assert not files["cache"].exists() or not any(files["cache"].iterdir())  # nothing was sent


def test_a_hole_the_judge_cannot_grade_is_counted_written_and_retried_next_time(files, tmp_path, capsys, monkeypatch):
    """Holes go through `labeller label`'s engine against a real (fake) OpenAI server: a pair whose replies stay
    malformed is retried, counted as failed, kept out of the labels and listed beside --holes-out; the evaluation
    still prints, exits 1, and the next run pays only for that pair."""
    from fakeapi import FakeAPI

    lines = files["corpus"].read_text().splitlines(keepends=True)
    files["corpus"].write_text("".join(line.replace('"text": "', '"text": "POISONED ') if '"q2-d1"' in line else line
                                       for line in lines))
    out = tmp_path / "holes.jsonl"
    with FakeAPI(api_key="sk-test-holes") as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-holes")
        api.poison = {"POISONED": "malformed"}
        args = [a if a != "offline:lexical" else "openai:gpt-4.1-mini" for a in fill_args(files)]
        code, stdout, err = cli(*args, "--holes-out", out, "--json", capsys=capsys)
        assert code == 1 and "1 of 18 holes could not be labelled" in err, err
        first = json.loads(stdout)["holes"]
        assert (first["holes"], first["labelled"], first["new"], first["failed"]) == (18, 17, 17, 1)
        assert first["judge"] == "openai:gpt-4.1-mini" and first["saved_to"] == str(out) and first["cost_usd"] > 0
        labelled = {json.loads(line)["doc_id"] for line in out.read_text().splitlines()}
        assert len(labelled) == 17 and "q2-d1" not in labelled
        failures = [json.loads(line) for line in (tmp_path / "holes.failures.jsonl").read_text().splitlines()]
        assert [(f["query_id"], f["doc_id"]) for f in failures] == [("q2", "q2-d1")]
        assert api.answers["malformed"] == 3 and api.answers["ok"] == 17  # retried, then given up
        assert "sk-test-holes" not in out.read_text() + err + stdout

        api.poison = {}
        code, stdout, err = cli(*args, "--holes-out", out, "--json", capsys=capsys)
        second = json.loads(stdout)["holes"]
        assert code == 0 and (second["new"], second["from_cache"], second["failed"]) == (1, 17, 0), err
        assert api.answers["ok"] == 18 and not (tmp_path / "holes.failures.jsonl").exists()


def test_holes_take_the_price_table_and_output_mode_as_label_does(files, tmp_path, capsys, monkeypatch):
    """--prices and --output-mode reach the hole-filling judge: every request asks for a JSON object, and the
    cost is the price table's ($1 an input token here: the cost is the input tokens the server reported)."""
    from fakeapi import FakeAPI

    prices = tmp_path / "prices.toml"
    prices.write_text('[openai."gpt-4.1-mini"]\ninput = 1000000\noutput = 0\n')
    out = tmp_path / "holes.jsonl"
    with FakeAPI(api_key="sk-test-holes") as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-holes")
        args = [a if a != "offline:lexical" else "openai:gpt-4.1-mini" for a in fill_args(files)]
        result = cli_json(*args, "--prices", prices, "--output-mode", "json_object", "--timeout", "5",
                          "--holes-out", out, capsys=capsys)
        bodies = [r.body for r in api.requests if r.path.endswith("/chat/completions")]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["holes"]["new"] == 18 == len(bodies) == len(rows)
    assert all(b["response_format"]["type"] == "json_object" for b in bodies)
    assert result["holes"]["cost_usd"] == pytest.approx(sum(r["input_tokens"] for r in rows))


@pytest.mark.parametrize("flag, value", [("--judge", "offline:lexical"), ("--depth", "3"), ("--prices", "p.toml"),
                                         ("--output-mode", "text"), ("--base-url", "http://127.0.0.1:9/v1")])
def test_a_hole_filling_flag_without_fill_holes_is_refused(files, capsys, flag, value):
    code, out, err = cli("evaluate", "--run", files["run"], "--labels", files["gold"], flag, value, capsys=capsys)
    assert code == 2 and f"{flag} is for --fill-holes, which was not given" in err and out == ""
