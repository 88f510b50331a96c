"""Disagreement reports (Markdown, HTML, CSV) written atomically; rubric-example leakage warnings."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from agreement_helpers import run_cli, write_jsonl, write_labels

HUMAN = {("q1", "d1"): 1, ("q1", "d2"): 4, ("q2", "d3"): 2, ("q2", "d4"): 5, ("q3", "d5"): 3, ("q3", "d6"): 3}
JUDGE = {("q1", "d1"): 5, ("q1", "d2"): 4, ("q2", "d3"): 4, ("q2", "d4"): 2, ("q3", "d5"): 3, ("q3", "d6"): 4}
# differences judge - human: d1 +4, d3 +2 (too generous); d4 -3 (too strict); d6 +1 (below --min-diff 2)


@pytest.fixture
def inputs(tmp_path):
    queries = write_jsonl(tmp_path / "q.jsonl", [{"query_id": q, "text": f"text of query {q} <b>"} for q in ("q1", "q2", "q3")])
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": d, "text": f"body of document {d} " + "x" * 600}
                                                for _, d in HUMAN])
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": q, "doc_id": d, "grade": g, "annotator": "ann",
                                                  "note": f"note on {d}"} for (q, d), g in HUMAN.items()])
    labels = write_labels(tmp_path / "labels.jsonl", JUDGE, {k: f"justified {k[1]}" for k in JUDGE})
    return {"queries": queries, "corpus": corpus, "gold": gold, "labels": labels}


def agree(inputs, report, *extra):
    return run_cli("agree", "--labels", inputs["labels"], "--gold", inputs["gold"], "--queries", inputs["queries"],
                   "--corpus", inputs["corpus"], "--report", report, "--bootstrap", 100, *extra)


def test_reports_list_disagreements_grouped_worst_first(tmp_path, inputs):
    report = tmp_path / "out" / "agreement"
    code, out, err = agree(inputs, report)
    assert code == 0, err
    assert sorted(p.name for p in report.iterdir()) == ["agreement.html", "agreement.md", "disagreements.csv"]
    rows = list(csv.DictReader(io.StringIO((report / "disagreements.csv").read_text())))
    assert [(r["direction"], r["doc_id"], r["difference"]) for r in rows] == [
        ("judge too generous", "d1", "4"), ("judge too generous", "d3", "2"), ("judge too strict", "d4", "-3")]
    first = rows[0]
    assert first["query"] == "text of query q1 <b>" and first["human_grade"] == "1" and first["judge_grade"] == "5"
    assert first["human_note"] == "note on d1" and first["judge_justification"] == "justified d1"
    assert first["document_excerpt"].startswith("body of document d1") and len(first["document_excerpt"]) <= 400


def test_html_reads_summary_then_heatmap_then_disagreements(tmp_path, inputs):
    report = tmp_path / "report"
    code, _, err = agree(inputs, report)
    assert code == 0, err
    html = (report / "agreement.html").read_text()
    summary, heat = html.index("<h2>Summary</h2>"), html.index('<table class="heat">')
    generous, strict = html.index("<h2>Judge too generous (2)</h2>"), html.index("<h2>Judge too strict (1)</h2>")
    assert summary < heat < generous < strict
    head = html[summary:heat]
    assert "6 pairs over 3 queries" in head and re.search(r"Cohen&#39;s kappa</td><td>-?\d\.\d{3} \(95% CI", head)
    assert "The judge is more generous than people by 0.67 grades on average" in head  # (4 + 2 - 3 + 1) / 6
    # the heatmap: human grades on rows, judge on columns; human 1 / judge 5 holds pair d1
    rows = re.findall(r"<tr><th>(\d)</th>(.*?)</tr>", html[heat:generous])
    cells = {g: re.findall(r">(\d+)</td>", cells) for g, cells in rows}
    assert cells["1"] == ["0", "0", "0", "0", "1"] and cells["5"] == ["0", "1", "0", "0", "0"]
    generous_cards = re.findall(r'data-direction="([^"]+)"><b>(\w+) / (\w+)</b>', html[generous:strict])
    strict_cards = re.findall(r'data-direction="([^"]+)"><b>(\w+) / (\w+)</b>', html[strict:])
    assert generous_cards == [("judge too generous", "q1", "d1"), ("judge too generous", "q2", "d3")]
    assert strict_cards == [("judge too strict", "q2", "d4")]
    assert "text of query q1 &lt;b&gt;" in html and "<b>\n" not in html  # data is escaped
    assert "note on d1" in html and "justified d1" in html
    markdown = (report / "agreement.md").read_text()
    assert markdown.index("## Judge too generous (2)") < markdown.index("## Judge too strict (1)")


def test_min_diff_is_configurable(tmp_path, inputs):
    code, out, err = agree(inputs, tmp_path / "r", "--min-diff", "1", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["too_generous"] == 3 and result["too_strict"] == 1 and result["min_diff"] == 1
    assert len((tmp_path / "r" / "disagreements.csv").read_text().splitlines()) == 1 + 4


def test_failed_run_leaves_existing_reports_whole_and_no_temp_files(tmp_path, inputs):
    report = tmp_path / "report"
    assert agree(inputs, report)[0] == 0
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    (tmp_path / "gold.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "grade": 9}\n')
    code, _, err = agree(inputs, report)
    assert code == 2 and "outside the scale 1-5" in err
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before


def write_rubric(path, examples: str):
    path.write_text(f'+++\nname = "leaky"\n{examples}+++\n# Grades\n5 means a perfect match.\n', encoding="utf-8")
    return path


def test_rubric_examples_in_the_gold_set_warn(tmp_path, inputs):
    rubric = write_rubric(tmp_path / "leaky.md", (
        '[[examples]]\nquery = "anything"\ndocument = "anything"\ngrade = 5\njustification = "j"\n'
        'query_id = "q2"\ndoc_id = "d4"\n'
        '[[examples]]\nquery = "Text of  query q1 <b>"\ndocument = "Supplier: ACME\\nbody of document d2 '
        + "x" * 600 + '"\ngrade = 4\njustification = "j"\n'
        '[[examples]]\nquery = "unrelated"\ndocument = "unrelated too"\ngrade = 1\njustification = "j"\n'))
    code, out, err = agree(inputs, tmp_path / "r", "--rubric", rubric, "--json")
    assert code == 0, err
    leaked = json.loads(out)["leakage"]
    assert leaked == [{"example": 1, "query_id": "q2", "doc_id": "d4", "matched_by": "ids"},
                      {"example": 2, "query_id": "q1", "doc_id": "d2", "matched_by": "text"}]
    assert "labeller: warning: rubric 'leaky' shows 2 of its worked examples" in err
    assert "leaky" in (tmp_path / "r" / "agreement.html").read_text()


def test_clean_rubric_gives_no_leakage_warning(tmp_path, inputs):
    rubric = write_rubric(tmp_path / "clean.md", '[[examples]]\nquery = "unrelated"\ndocument = "other"\n'
                                                 'grade = 1\njustification = "j"\n')
    code, out, err = agree(inputs, tmp_path / "r", "--rubric", rubric, "--json")
    assert code == 0 and json.loads(out)["leakage"] == [] and "warning" not in err
