"""Gold, label and qrels inputs through the real CLI: clear errors (exit 2), clipping, one-side-only pairs."""

from __future__ import annotations

import json

import pytest

from agreement_helpers import agree_json, label_row, run_cli, write_gold, write_jsonl, write_labels, write_qrels

PAIRS = {("q1", "d1"): 5, ("q1", "d2"): 1, ("q2", "d3"): 3, ("q2", "d4"): 4, ("q3", "d5"): 2, ("q3", "d6"): 3}


@pytest.fixture
def labels(tmp_path):
    return write_labels(tmp_path / "labels.jsonl", PAIRS)


def expect_error(*args) -> str:
    code, out, err = run_cli("agree", *args)
    assert code == 2, (code, out, err)
    assert out == ""
    assert err.startswith("labeller: error: ") and err.count("\n") == 1
    return err


def test_duplicate_gold_pair_names_file_line_and_field(tmp_path, labels):
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": "q1", "doc_id": "d1", "grade": 5, "annotator": "ann", "note": ""},
        {"query_id": "q1", "doc_id": "d2", "grade": 1, "annotator": "ann", "note": ""},
        {"query_id": "q1", "doc_id": "d1", "grade": 4, "annotator": "ann", "note": ""}])
    err = expect_error("--labels", labels, "--gold", gold)
    assert f"{gold}:3: field 'doc_id'" in err and "graded twice" in err and "first on line 1" in err


def test_several_annotators_per_pair_are_allowed_when_distinct(tmp_path, labels):
    rows = [{"query_id": q, "doc_id": d, "grade": g, "annotator": a, "note": ""}
            for (q, d), g in PAIRS.items() for a in ("ann", "bob")]
    result = agree_json("--labels", labels, "--gold", write_jsonl(tmp_path / "gold.jsonl", rows))
    assert result["n"] == len(PAIRS) and result["kappa"] == pytest.approx(1.0)
    assert result["ceiling"]["pairs"] == len(PAIRS) and result["ceiling"]["annotators"] == ["ann", "bob"]


@pytest.mark.parametrize("grade", [0, 6, -1, 2.5, "high"])
def test_grade_outside_one_to_five_is_an_error(tmp_path, labels, grade):
    gold = tmp_path / "gold.csv"
    gold.write_text(f"query_id,doc_id,grade,annotator,note\nq1,d1,4,ann,ok\nq1,d2,{grade},ann,bad\n")
    err = expect_error("--labels", labels, "--gold", gold)
    assert f"{gold}:3: field 'grade'" in err
    assert ("outside the scale 1-5" in err) if isinstance(grade, int) else ("not a whole number" in err)


def test_unknown_ids_are_errors_when_queries_and_corpus_are_given(tmp_path, labels):
    queries = write_jsonl(tmp_path / "q.jsonl", [{"query_id": q, "text": f"query {q}"} for q in ("q1", "q2", "q3")])
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": d, "text": f"doc {d}"} for _, d in PAIRS])
    gold = write_gold(tmp_path / "gold.jsonl", {**PAIRS, ("q9", "d1"): 3})
    err = expect_error("--labels", labels, "--gold", gold, "--queries", queries, "--corpus", corpus)
    assert f"{gold}:7: field 'query_id'" in err and "unknown query 'q9'" in err
    gold = write_gold(tmp_path / "gold.jsonl", {**PAIRS, ("q1", "nope"): 3})
    err = expect_error("--labels", labels, "--gold", gold, "--queries", queries, "--corpus", corpus)
    assert "field 'doc_id'" in err and "unknown document 'nope'" in err


@pytest.mark.parametrize("content,name", [("", "gold.jsonl"), ("\n\n", "gold.jsonl"),
                                          ("query_id,doc_id,grade,annotator,note\n", "gold.csv"), ("", "gold.qrels")])
def test_empty_gold_file_is_an_error(tmp_path, labels, content, name):
    gold = tmp_path / name
    gold.write_text(content)
    err = expect_error("--labels", labels, "--gold", gold, "--from-scale", "0-3")
    assert str(gold) in err and ("empty" in err or "no rows" in err)


@pytest.mark.parametrize("option, message", [
    (["--seed", "-1"], "--seed -1 is negative"),
    (["--max-drop", "-1"], "--max-drop -1.0 is negative"),
])
def test_bad_options_are_one_clear_error(tmp_path, labels, option, message):
    gold = write_gold(tmp_path / "gold.jsonl", PAIRS)
    assert message in expect_error("--labels", labels, "--gold", gold, "--baseline", labels, *option)


def test_missing_field_and_unexpected_column_are_named(tmp_path, labels):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q1", "grade": 3}])
    assert "field 'doc_id': missing" in expect_error("--labels", labels, "--gold", gold)
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q1", "doc_id": "d1", "grade": 3, "score": 1}])
    assert "field 'score'" in expect_error("--labels", labels, "--gold", gold)


def test_label_file_with_a_pair_twice_is_an_error(tmp_path):
    labels = write_jsonl(tmp_path / "labels.jsonl", [label_row("q1", "d1", 3), label_row("q1", "d1", 4)])
    gold = write_gold(tmp_path / "gold.jsonl", PAIRS)
    err = expect_error("--labels", labels, "--gold", gold)
    assert f"{labels}:2" in err and "one grade per pair" in err


def test_pairs_on_one_side_only_are_counted_and_listed(tmp_path):
    labels = write_labels(tmp_path / "labels.jsonl", {**PAIRS, ("q4", "x1"): 2, ("q4", "x2"): 3})
    gold = write_gold(tmp_path / "gold.jsonl", {k: v for k, v in PAIRS.items() if k != ("q1", "d1")})
    code, out, err = run_cli("agree", "--labels", labels, "--gold", gold, "--json")
    assert code == 0
    result = json.loads(out)
    sides = result["one_side_only"]
    assert result["n"] == len(PAIRS) - 1
    assert sides["labels_only"] == 3 and sides["gold_only"] == 0
    assert sides["labels_only_pairs"] == [{"query_id": "q1", "doc_id": "d1"}, {"query_id": "q4", "doc_id": "x1"},
                                          {"query_id": "q4", "doc_id": "x2"}]
    assert "3 labelled pairs have no gold grade" in err


def test_no_shared_pair_is_an_error(tmp_path, labels):
    gold = write_gold(tmp_path / "gold.jsonl", {("zz", "zz"): 3})
    assert "no pair appears in both" in expect_error("--labels", labels, "--gold", gold)


def test_out_of_scale_qrels_grade_is_an_error_unless_clipped(tmp_path):
    human = write_qrels(tmp_path / "human.qrels", {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d3"): 2, ("q2", "d4"): 1})
    llm = write_qrels(tmp_path / "llm.txt", {("q1", "d1"): 4, ("q1", "d2"): 0, ("q2", "d3"): -1, ("q2", "d4"): 1})
    err = expect_error("--labels", llm, "--gold", human, "--from-scale", "0-3")
    assert f"{llm}:1: field 'grade'" in err and "--clip" in err
    result = agree_json("--labels", llm, "--gold", human, "--from-scale", "0-3", "--clip")
    clipping = result["clipping"]
    assert clipping["enabled"] and clipping["count"] == 2
    assert [(r["line"], r["raw"], r["clipped_to"]) for r in clipping["rows"]] == [(1, 4, 4), (3, -1, 1)]
    assert result["confusion"]["grades"] == [1, 2, 3, 4]  # 0-3 maps onto 1-4
    assert result["confusion"]["matrix"] == [[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]]


def test_qrels_default_to_trec_scale_and_say_how_to_change_it(tmp_path, labels):
    human = write_qrels(tmp_path / "human.txt", {k: min(v, 3) - 1 for k, v in PAIRS.items()})
    code, out, _ = run_cli("agree", "--labels", labels, "--gold", human, "--json")
    explicit = run_cli("agree", "--labels", labels, "--gold", human, "--from-scale", "0-3", "--json")[1]
    assert code == 0 and json.loads(out)["kappa"] == json.loads(explicit)["kappa"]
    wide = write_qrels(tmp_path / "wide.txt", {k: v for k, v in PAIRS.items()})  # grades up to 5: not 0-3
    message = expect_error("--labels", labels, "--gold", wide)
    assert "outside the scale 0-3" in message and "wide.txt" in message


def test_label_file_csv_and_gold_csv_read_like_jsonl(tmp_path, labels):
    import pandas as pd

    csv_labels = tmp_path / "labels.csv"
    pd.DataFrame([label_row(q, d, g) for (q, d), g in PAIRS.items()]).to_csv(csv_labels, index=False)
    gold = write_gold(tmp_path / "gold.jsonl", PAIRS)
    parquet_gold = tmp_path / "gold.parquet"
    pd.read_json(gold, lines=True).to_parquet(parquet_gold)
    a = agree_json("--labels", labels, "--gold", gold, "--bootstrap", 50)
    b = agree_json("--labels", csv_labels, "--gold", parquet_gold, "--bootstrap", 50)
    for key in ("n", "kappa", "kappa_quadratic", "alpha_ordinal", "kappa_binary", "ci"):
        assert a[key] == b[key]


def test_qrels_import_and_export_round_trip(tmp_path):
    qrels = write_qrels(tmp_path / "in.qrels", {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d3"): 2})
    gold = tmp_path / "gold.jsonl"
    code, out, err = run_cli("qrels", "import", qrels, "--out", gold, "--from-scale", "0-3", "--annotator", "nist")
    assert code == 0, err
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    assert rows[0] == {"query_id": "q1", "doc_id": "d1", "grade": 4, "annotator": "nist", "note": ""}
    assert [r["grade"] for r in rows] == [4, 1, 3]
    back = tmp_path / "back.qrels"
    code, _, err = run_cli("qrels", "export", gold, "--out", back, "--to-scale", "0-3")
    assert code == 0, err
    assert back.read_text() == "q1 0 d1 3\nq1 0 d2 0\nq2 0 d3 2\n"


def test_qrels_import_and_export_read_columns_named_otherwise(tmp_path):
    # A spreadsheet export with its own names: without --columns it is refused, naming the missing column.
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("topic,passage_ref,verdict\nq1,d1,5\nq1,d2,2\n")
    out = tmp_path / "out.qrels"
    code, _, err = run_cli("qrels", "export", sheet, "--out", out, "--to-scale", "0-3", "--clip")
    assert code == 2 and "query_id" in err and not out.exists()
    code, _, err = run_cli("qrels", "export", sheet, "--out", out, "--to-scale", "0-3", "--clip", "--columns",
                           "query_id=topic,doc_id=passage_ref", "--columns", "grade=verdict")
    assert code == 0, err
    assert out.read_text() == "q1 0 d1 3\nq1 0 d2 1\n"
    # A headed qrels table (BEIR-like) whose columns are named otherwise, imported as gold.
    headed = tmp_path / "qrels.tsv"
    headed.write_text("q\tdoc\trel\nq1\td1\t2\nq2\td3\t0\n")
    gold = tmp_path / "gold.jsonl"
    code, _, err = run_cli("qrels", "import", headed, "--out", gold, "--from-scale", "0-2", "--columns",
                           "query_id=q,doc_id=doc,grade=rel")
    assert code == 0, err
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    assert [(r["query_id"], r["doc_id"], r["grade"]) for r in rows] == [("q1", "d1", 3), ("q2", "d3", 1)]


def test_qrels_export_refuses_grades_the_target_scale_cannot_hold(tmp_path):
    gold = write_gold(tmp_path / "gold.jsonl", {("q1", "d1"): 5, ("q1", "d2"): 2})
    out = tmp_path / "out.qrels"
    code, _, err = run_cli("qrels", "export", gold, "--out", out, "--to-scale", "0-3")
    assert code == 2 and "does not fit the target scale 0-3" in err and not out.exists()
    code, _, err = run_cli("qrels", "export", gold, "--out", out, "--to-scale", "0-3", "--clip")
    assert code == 0 and out.read_text() == "q1 0 d1 3\nq1 0 d2 1\n"


def test_qrels_export_writes_the_consensus_of_several_annotators(tmp_path):
    rows = [{"query_id": "q1", "doc_id": "d1", "grade": g, "annotator": a} for g, a in ((2, "a"), (4, "b"), (5, "c"))]
    rows += [{"query_id": "q1", "doc_id": "d2", "grade": g, "annotator": a} for g, a in ((2, "a"), (3, "b"))]
    out = tmp_path / "out.qrels"
    code, _, err = run_cli("qrels", "export", write_jsonl(tmp_path / "g.jsonl", rows), "--out", out, "--to-scale", "1-5")
    assert code == 0, err
    assert out.read_text() == "q1 0 d1 4\nq1 0 d2 2\n"  # median; an even split takes the lower middle grade


def test_blank_annotator_and_note_take_their_defaults(tmp_path, labels):
    gold = tmp_path / "gold.csv"
    gold.write_text("query_id,doc_id,grade,annotator,note\n" + "".join(f"{q},{d},{g},,\n" for (q, d), g in PAIRS.items()))
    assert agree_json("--labels", labels, "--gold", gold, "--bootstrap", 20)["n"] == len(PAIRS)
    rows = [{"query_id": q, "doc_id": d, "grade": g, "annotator": None, "note": None} for (q, d), g in PAIRS.items()]
    assert agree_json("--labels", labels, "--gold", write_jsonl(tmp_path / "g.jsonl", rows), "--bootstrap", 20)["n"] == 6
