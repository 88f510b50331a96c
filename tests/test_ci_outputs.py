"""CI conventions: absolute floors that fail, JUnit XML with one case per gated metric, a Markdown step
summary, and a regression pipeline that evaluates the user's own system (import path or run file)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from labeller.cli import main

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "pipelines" / "regression.toml"


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


@pytest.fixture
def small(tmp_path):
    """Two queries: a run that finds the relevant documents first, and one that ranks them last."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 0\nq2 0 d4 2\nq2 0 d5 0\nq2 0 d6 0\n")
    order = {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5", "d6"]}
    for name, flip in (("good", False), ("bad", True)):
        (tmp_path / f"{name}.trec").write_text("".join(
            f"{q} Q0 {d} {r} {10 - r} {name}\n" for q, docs in order.items()
            for r, d in enumerate(docs[::-1] if flip else docs, start=1)))
    return tmp_path


def cases(junit: Path) -> list[tuple[str, str]]:
    root = ET.parse(junit).getroot()
    return [(case.get("name"), "fail" if case.find("failure") is not None else
             "skip" if case.find("skipped") is not None else "pass") for case in root.iter("testcase")]


def test_a_floor_passes_a_good_run_and_fails_a_bad_one_even_on_two_queries(small, capsys):
    args = ["evaluate", "--labels", small / "qrels.txt", "--metrics", "ndcg@10,mrr@10", "--min", "ndcg@10=0.9",
            "--min", "mrr@10=0.9"]
    code, _, err = cli(capsys, *args, "--run", small / "good.trec", "--junit", small / "good.xml")
    assert code == 0, err
    assert cases(small / "good.xml") == [("ndcg@10 of good: floor 0.9", "pass"), ("mrr@10 of good: floor 0.9", "pass")]
    code, _, err = cli(capsys, *args, "--run", small / "bad.trec", "--junit", small / "bad.xml")
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("labeller: error: floor failed: ndcg@10 of bad is 0.")
    assert cases(small / "bad.xml") == [("ndcg@10 of bad: floor 0.9", "fail"), ("mrr@10 of bad: floor 0.9", "fail")]
    result = json.loads(cli(capsys, *args, "--run", small / "bad.trec", "--json")[1])
    assert [(f["metric"], f["passed"]) for f in result["floors"]] == [("ndcg@10", False), ("mrr@10", False)]


def test_a_floor_fails_even_when_the_regression_gate_is_switched_off(small, capsys):
    code, _, _ = cli(capsys, "evaluate", "--labels", small / "qrels.txt", "--run", small / "bad.trec",
                     "--baseline", small / "bad.trec", "--no-fail-on-regression", "--min", "ndcg@10=0.9")
    assert code == 1


def test_junit_has_one_case_per_gated_metric_and_the_summary_appends(small, capsys):
    summary = small / "step-summary.md"
    summary.write_text("## an earlier step\n")
    code, _, _ = cli(capsys, "evaluate", "--labels", small / "qrels.txt", "--run", small / "bad.trec",
                     "--baseline", small / "good.trec", "--metrics", "ndcg@10,mrr@10", "--threshold", "ndcg@10=0.01",
                     "--threshold", "mrr@10=0.01", "--alpha", "0.6", "--permutations", "200", "--bootstrap", "200",
                     "--min", "ndcg@10=0.2", "--junit", small / "junit.xml", "--summary", summary)
    assert code == 1
    found = cases(small / "junit.xml")
    assert found == [("ndcg@10 of bad: regression gate", "fail"), ("mrr@10 of bad: regression gate", "fail"),
                     ("ndcg@10 of bad: floor 0.2", "pass")]
    root = ET.parse(small / "junit.xml").getroot()
    assert root.get("tests") == "3" and root.get("failures") == "2"
    text = summary.read_text()
    assert text.startswith("## an earlier step\n")  # GitHub's step summary is appended to, never replaced
    assert "## Gated checks: FAIL" in text and "| ndcg@10 of bad: regression gate | FAIL |" in text
    assert "| ndcg@10 of bad: floor 0.2 | PASS |" in text


@pytest.mark.parametrize("spec, words", [("ndcg@10", "not METRIC=VALUE"), ("recall@5=0.5", "not among the metrics"),
                                         ("ndcg@10=high", "is not a number"), ("ndcg@10=1.5", "outside 0-1")])
def test_bad_floor_specs_are_one_clear_error(small, capsys, spec, words):
    code, _, err = cli(capsys, "evaluate", "--labels", small / "qrels.txt", "--run", small / "good.trec",
                       "--metrics", "ndcg@10", "--min", spec, "--junit", small / "junit.xml")
    assert code == 2 and words in err and "field 'min'" in err
    assert not (small / "junit.xml").exists()


SYSTEM = '''
import json
from pathlib import Path

DOCS = [json.loads(line) for line in Path({corpus!r}).read_text().splitlines()]


def search(query, k):
    """A stand-in for a team's own search client: word overlap, best first."""
    words = set(query.lower().split())
    scored = sorted(((len(words & set(d["text"].lower().split())), d["doc_id"]) for d in DOCS), reverse=True)
    return [(doc_id, float(score)) for score, doc_id in scored[:k]]


def broken(query, k):
    return [(doc_id, 1.0) for doc_id in sorted(d["doc_id"] for d in DOCS)[-k:]]
'''


@pytest.fixture
def own_system(tmp_path, monkeypatch):
    package = tmp_path / "teamsearch"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "client.py").write_text(SYSTEM.format(corpus=str(REPO / "pipelines" / "sample" / "corpus.jsonl")))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_regression_runs_the_users_retriever_by_import_path_and_gates_it(own_system, capsys):
    out = own_system / "out"
    code, _, err = cli(capsys, "run", CONFIG, "--out", out / "good", "--set", "retriever.name=teamsearch.client:search",
                       "--junit", out / "good.xml")
    assert code == 0, err
    assert any(p.name.endswith("teamsearch.client_search.trec") for p in (out / "good" / "history" / "runs").iterdir())
    assert ("every pair labelled", "pass") in cases(out / "good.xml")
    code, _, err = cli(capsys, "run", CONFIG, "--out", out / "broken", "--set",
                       "retriever.name=teamsearch.client:broken", "--junit", out / "broken.xml")
    assert code == 1
    assert any(status == "fail" and "regression gate" in name for name, status in cases(out / "broken.xml"))


def test_regression_evaluates_todays_run_file_and_names_it_for_a_stray_document(own_system, capsys):
    baseline = (REPO / "pipelines" / "sample" / "baseline.trec").read_text()
    today = own_system / "today.trec"
    today.write_text(baseline)
    code, _, err = cli(capsys, "run", CONFIG, "--out", own_system / "out", "--set", f"retriever.run={today}",
                       "--set", 'evaluate.floors={"ndcg@10": 0.5}')
    assert code == 0, err
    lines = baseline.splitlines()
    lines[2] = lines[2].replace(lines[2].split()[2], "no-such-doc")
    today.write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, "run", CONFIG, "--out", own_system / "out2", "--set", f"retriever.run={today}")
    # skipped with a counted warning naming the file and line, as `evaluate` skips it (refused only if none matches)
    assert code == 0 and f"WARNING: {today}: skipped 1 document not in the corpus (first 'no-such-doc', line 3)" in out


def test_a_pipeline_floor_fails_the_run(own_system, capsys):
    code, out, err = cli(capsys, "run", CONFIG, "--out", own_system / "out", "--set",
                         'evaluate.floors={"ndcg@10": 0.999}', "--summary", own_system / "summary.md")
    assert code == 1 and "BELOW FLOOR: ndcg@10" in out
    assert "| ndcg@10 of " in (own_system / "summary.md").read_text()


def test_a_pipeline_reads_columns_named_otherwise_from_its_config(tmp_path, capsys):
    import tomllib

    sample = REPO / "pipelines" / "sample"
    for name in ("queries", "corpus"):
        rows = [json.loads(line) for line in (sample / f"{name}.jsonl").read_text().splitlines()]
        key = "query_id" if name == "queries" else "doc_id"
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({("topic" if key == "query_id" else "passage_key") if k == key else k: v
                        for k, v in row.items()}) + "\n" for row in rows))
    config = tomllib.loads(CONFIG.read_text())
    assert config["inputs"]["queries"]
    text = CONFIG.read_text().replace('queries = "sample/queries.jsonl"', f'queries = "{tmp_path / "queries.jsonl"}"')
    text = text.replace('corpus = "sample/corpus.jsonl"', f'corpus = "{tmp_path / "corpus.jsonl"}"\n'
                        'columns = {query_id = "topic", doc_id = "passage_key"}')
    text = text.replace('run = "sample/baseline.trec"', f'run = "{sample / "baseline.trec"}"')
    (tmp_path / "regression.toml").write_text(text)
    code, _, err = cli(capsys, "run", tmp_path / "regression.toml", "--out", tmp_path / "out")
    assert code == 0, err
    (tmp_path / "regression.toml").write_text(text.replace('query_id = "topic"', 'topic_key = "topic"'))
    code, _, err = cli(capsys, "run", tmp_path / "regression.toml", "--out", tmp_path / "out2")
    assert code == 2 and "field 'inputs.columns'" in err and "'topic_key' is not a column labeller reads" in err
