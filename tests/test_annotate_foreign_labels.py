"""`annotate sample --labels` takes the judge labels `evaluate --labels` takes: TREC qrels, ranx JSON, another tool's
table of query_id, doc_id and grade (on its own scale, `--from-scale`, shifted as evaluate shifts it), not only
`labeller label` output. The sample's strata are then the judge grades `evaluate --gold-sample` checks."""

from __future__ import annotations

import json

from labeller.annotate import make_sample
from tests.annotate_helpers import BASELINE, label_rows
from tests.cli_helpers import cli

ROWS = [(r["query_id"], r["doc_id"], r["grade"] - 1) for r in label_rows(n_per_query=8) if r["grade"] <= 4]  # 0-3


def _qrels(path):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in ROWS), encoding="utf-8")
    return path


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_sample_from_trec_qrels_is_stratified_on_their_grades_shifted_as_evaluate_shifts_them(tmp_path, capsys):
    labels = _qrels(tmp_path / "llm.txt")
    code, out, err = cli(capsys, "annotate", "sample", "--labels", labels, "--size", "24",
                         "--out", tmp_path / "s.jsonl")
    assert code in (0, None), err
    drawn = _rows(tmp_path / "s.jsonl")
    grade = {(q, d): g for q, d, g in ROWS}
    assert len(drawn) == 24 and {r["plan"] for r in drawn} == {"stratified"}
    assert all(r["stratum"] == f"judge grade {grade[r['query_id'], r['doc_id']] + 1}" for r in drawn)  # 0-3 -> 1-4
    assert {r["stratum"] for r in drawn} == {f"judge grade {g}" for g in (1, 2, 3, 4)}
    # people grade the sample; evaluate --gold-sample finds its strata are those of the same labels
    (tmp_path / "gold.txt").write_text("".join(f"{r['query_id']} 0 {r['doc_id']} {i % 4}\n"
                                               for i, r in enumerate(drawn)), encoding="utf-8")
    code, out, err = cli(capsys, "evaluate", "--run", BASELINE, "--labels", labels, "--gold", tmp_path / "gold.txt",
                         "--gold-sample", tmp_path / "s.jsonl", "--metrics", "ndcg@5,precision@5")
    assert code in (0, None), err
    assert "Corrected for the judge's error" in out and "stratified on other labels" not in err


def test_a_zero_based_table_needs_its_scale_and_then_draws_what_the_qrels_draw(tmp_path, capsys):
    table = tmp_path / "llm.csv"
    table.write_text("query_id,doc_id,grade\n" + "".join(f"{q},{d},{g}\n" for q, d, g in ROWS), encoding="utf-8")
    code, _, err = cli(capsys, "annotate", "sample", "--labels", table, "--plan", "narrow", "--size", "20",
                       "--out", tmp_path / "a.jsonl")
    assert code == 2 and not (tmp_path / "a.jsonl").exists()
    first_zero = next(i for i, (_, _, g) in enumerate(ROWS) if g == 0) + 2  # the header is line 1
    assert f"llm.csv:{first_zero}: field 'grade'" in err and "--from-scale" in err, err
    code, _, err = cli(capsys, "annotate", "sample", "--labels", table, "--from-scale", "0-3", "--plan", "narrow",
                       "--size", "20", "--out", tmp_path / "a.jsonl")
    assert code in (0, None), err
    from_qrels = make_sample(tmp_path / "b.jsonl", labels=_qrels(tmp_path / "llm.txt"), plan="narrow", size=20)
    assert [(r["query_id"], r["doc_id"], r["stratum"]) for r in _rows(tmp_path / "a.jsonl")] == \
        [(r.query_id, r.doc_id, r.stratum) for r in from_qrels.rows]


def test_another_tools_uncertainty_column_orders_plan_uncertain(tmp_path, capsys):
    table = tmp_path / "llm.jsonl"
    table.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g + 1, "uncertainty": i / len(ROWS)})
                             + "\n" for i, (q, d, g) in enumerate(ROWS)), encoding="utf-8")
    frozen = make_sample(tmp_path / "u.jsonl", labels=table, plan="uncertain", size=5)
    assert [(r.query_id, r.doc_id) for r in frozen.rows] == [(q, d) for q, d, _ in ROWS[::-1][:5]]  # most first
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g + 1}) + "\n" for q, d, g in ROWS),
                    encoding="utf-8")
    code, _, err = cli(capsys, "annotate", "sample", "--labels", bare, "--plan", "uncertain", "--out",
                       tmp_path / "none.jsonl")
    assert code == 2 and "needs the judge's uncertainty" in err and not (tmp_path / "none.jsonl").exists()


def test_ranx_json_labels_and_a_pair_graded_twice(tmp_path, capsys):
    ranx = tmp_path / "llm.json"
    qrels: dict[str, dict[str, int]] = {}
    for q, d, g in ROWS:
        qrels.setdefault(q, {})[d] = g
    ranx.write_text(json.dumps(qrels), encoding="utf-8")
    frozen = make_sample(tmp_path / "r.jsonl", labels=ranx, plan="queries:2")
    assert len({r.query_id for r in frozen.rows}) == 2
    assert len(frozen.rows) == sum(len(qrels[q]) for q in {r.query_id for r in frozen.rows})
    twice = tmp_path / "twice.txt"
    twice.write_text(f"{ROWS[0][0]} 0 {ROWS[0][1]} 1\n{ROWS[0][0]} 0 {ROWS[0][1]} 2\n", encoding="utf-8")
    code, _, err = cli(capsys, "annotate", "sample", "--labels", twice, "--out", tmp_path / "t.jsonl")
    assert code == 2 and "twice.txt:2" in err and "graded twice" in err and not (tmp_path / "t.jsonl").exists()


def test_the_adjudication_view_shows_the_grades_of_qrels_labels(tmp_path):
    """annotate serve --labels takes the same files: the judge's grade beside people's is the qrels grade shifted
    onto 1.. (no justification: qrels carry none)."""
    from tests.annotate_helpers import session

    labels = _qrels(tmp_path / "llm.txt")
    make_sample(tmp_path / "sample.jsonl", labels=labels, size=8, rubric="transactions")
    sess = session(tmp_path, annotators=("alice",), labels=labels)
    judged = {(q, d): g + 1 for q, d, g in ROWS}
    for row in sess.sample.rows:
        sess.grade({"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id,
                    "doc_id": row.doc_id, "outcome": "graded", "grade": judged[row.query_id, row.doc_id] % 4 + 1,
                    "note": "n"})
    items = sess.adjudication()["items"]
    assert len(items) == len(sess.sample.rows)  # people differ from the judge on every pair
    assert all(i["judge_grade"] == judged[i["query_id"], i["doc_id"]] and i["judge_justification"] == ""
               for i in items)
