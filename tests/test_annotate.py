"""labeller annotate without a browser: sampling plans, the frozen sample, assignment, the gold file
(atomic, locked, never foreign), the JSON API, and what `labeller agree` makes of the result."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from annotate_helpers import QUERIES, CORPUS, call, frozen_sample, label_rows, running, session, write_jsonl

from labeller.agreement import AgreeOptions, agree
from labeller.annotate import make_sample, read_sample
from labeller.annotate.assign import assign, shared_pairs
from labeller.annotate.goldstore import GoldStore
from labeller.annotate.plans import draw
from labeller.annotate.sources import Candidate
from labeller.errors import BadInputError
from labeller.io.gold import read_grades
from labeller.records import GoldLabel


def _candidates(n_queries=10, per_query=10):
    return [Candidate(query_id=f"q{q:02d}", doc_id=f"d{q}-{d}", judge_grade=(q * per_query + d) % 5 + 1,
                      uncertainty=((q * 7 + d * 3) % 11) / 10) for q in range(n_queries) for d in range(per_query)]


def test_stratified_plan_takes_every_grade_alike_and_spreads_over_queries():
    chosen = draw(_candidates(), 50, "stratified", seed=1)
    assert len(chosen) == 50 and len({(c.query_id, c.doc_id) for c in chosen}) == 50
    assert Counter(c.judge_grade for c in chosen) == {g: 10 for g in range(1, 6)}
    assert len({c.query_id for c in chosen}) == 10  # every query, not a few queries' worth
    assert max(Counter(c.query_id for c in chosen).values()) <= 6
    grades = [c.judge_grade for c in chosen]
    assert grades != sorted(grades) and grades != sorted(grades, reverse=True)  # shown shuffled, not by grade
    assert draw(_candidates(), 50, "stratified", seed=1) == chosen  # deterministic
    assert draw(list(reversed(_candidates())), 50, "stratified", seed=1) == chosen  # file order does not matter
    assert draw(_candidates(), 50, "stratified", seed=2) != chosen


def test_a_small_grade_gives_its_share_to_the_others():
    pool = [c for c in _candidates() if c.judge_grade != 5] + [c for c in _candidates() if c.judge_grade == 5][:3]
    counts = Counter(c.judge_grade for c in draw(pool, 43, "stratified", seed=0))
    assert counts[5] == 3 and sum(counts.values()) == 43 and min(counts[g] for g in (1, 2, 3, 4)) == 10


def test_uniform_and_most_uncertain_first():
    uniform = draw(_candidates(), 30, "uniform", seed=3)
    assert len(set(uniform)) == 30 and uniform == draw(_candidates(), 30, "uniform", seed=3)
    uncertain = draw(_candidates(), 20, "uncertain", seed=0)
    values = [c.uncertainty for c in uncertain]
    assert values == sorted(values, reverse=True) and values[0] == 1.0
    assert min(values) >= max(c.uncertainty for c in _candidates() if c not in uncertain)
    no_uncertainty = [c.model_copy(update={"uncertainty": None}) for c in _candidates()]
    with pytest.raises(BadInputError, match="needs the judge's uncertainty"):
        draw(no_uncertainty, 20, "uncertain", seed=0)


def test_uncertainty_columns_of_a_label_file(tmp_path):
    rows = label_rows()[:6]
    rows[0]["uncertainty"], rows[1]["sample_agreement"], rows[2]["sample_grades"] = 0.9, 0.2, [3, 3, 4, 5]
    for row in rows[3:]:
        row["uncertainty"] = 0.1
    frozen = make_sample(tmp_path / "s.jsonl", labels=write_jsonl(tmp_path / "l.jsonl", rows), size=3,
                         plan="uncertain")
    assert [(r.doc_id, r.uncertainty) for r in frozen.rows] == [(rows[0]["doc_id"], 0.9), (rows[1]["doc_id"], 0.8),
                                                                 (rows[2]["doc_id"], 0.5)]
    rows[0]["uncertainty"] = "high"
    with pytest.raises(BadInputError, match="l.jsonl:1: field 'uncertainty'"):
        make_sample(tmp_path / "t.jsonl", labels=write_jsonl(tmp_path / "l.jsonl", rows), size=3, plan="uncertain")


def test_the_frozen_sample_is_a_pairs_file_and_refuses_edits(tmp_path):
    frozen = frozen_sample(tmp_path, size=30)
    again = read_sample(tmp_path / "sample.jsonl")
    assert again == frozen and [r.position for r in again.rows] == list(range(1, 31))
    from labeller.io.inputs import read_pairs

    assert [(p.query_id, p.doc_id) for p in read_pairs(tmp_path / "sample.jsonl")] == \
           [(r.query_id, r.doc_id) for r in frozen.rows]
    with pytest.raises(BadInputError, match="never overwritten"):
        frozen_sample(tmp_path, size=30)
    lines = (tmp_path / "sample.jsonl").read_text().splitlines()
    edited = json.loads(lines[0]) | {"doc_id": "tx-00001"}
    (tmp_path / "edited.jsonl").write_text("\n".join([json.dumps(edited), *lines[1:]]) + "\n")
    with pytest.raises(BadInputError, match="edited after it was frozen"):
        read_sample(tmp_path / "edited.jsonl")


def test_assignment_is_deterministic_with_the_asked_overlap(tmp_path):
    sample = frozen_sample(tmp_path, size=40)
    first = assign(sample, ["alice", "bob", "carol"], 0.25)
    assert first == assign(sample, ["alice", "bob", "carol"], 0.25)
    assert len(shared_pairs(first)) == 10
    assert sum(len(v) for v in first.values()) == 50
    assert max(len(v) for v in first.values()) - min(len(v) for v in first.values()) <= 1
    covered = {(r.query_id, r.doc_id) for rows in first.values() for r in rows}
    assert covered == {(r.query_id, r.doc_id) for r in sample.rows}
    assert len(shared_pairs(assign(sample, ["alice", "bob"], 0.0))) == 0
    with pytest.raises(BadInputError, match="overlap"):
        assign(sample, ["alice", "bob"], 1.5)


def _grade(url, sid, who, row, grade, note="n", outcome="graded"):
    return call(url + "api/grade", {"sample_id": sid, "annotator": who, "query_id": row.query_id,
                                    "doc_id": row.doc_id, "outcome": outcome, "grade": grade, "note": note})


def test_concurrent_saves_lose_nothing(tmp_path):
    frozen_sample(tmp_path, size=40)
    sess = session(tmp_path, overlap=1.0)
    with running(sess) as server:
        jobs = [(who, row) for who in ("alice", "bob") for row in sess.sample.rows]
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda job: _grade(server.url, sess.sample.sample_id, job[0], job[1],
                                                       job[1].position % 5 + 1), jobs))
    assert all(status == 200 for status, _ in answers), answers[:3]
    rows = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert len(rows) == 80 and Counter(r["annotator"] for r in rows) == {"alice": 40, "bob": 40}


def _save_many(path, sample_path, who, n):
    sample = read_sample(sample_path)
    store = GoldStore(path, sample)
    for row in sample.rows[:n]:
        store.save(GoldLabel(query_id=row.query_id, doc_id=row.doc_id, grade=3, annotator=who, note="x",
                             sample_id=sample.sample_id))


def test_two_processes_on_one_gold_file_lose_nothing(tmp_path):
    frozen_sample(tmp_path, size=30)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_save_many, args=(tmp_path / "gold.jsonl", tmp_path / "sample.jsonl", who, 30))
               for who in ("alice", "bob", "carol")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    rows = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert Counter(r["annotator"] for r in rows) == {"alice": 30, "bob": 30, "carol": 30}


def test_the_api_checks_what_it_saves(tmp_path):
    frozen_sample(tmp_path, size=10)
    sess = session(tmp_path, annotators=("alice",), note_required="1,2")
    row, sid = sess.sample.rows[0], sess.sample.sample_id
    with running(sess) as server:
        assert _grade(server.url, sid, "alice", row, 1, note="")[0] == 400  # grade 1 needs a note
        assert _grade(server.url, sid, "alice", row, 4, note="")[0] == 200  # grade 4 does not
        assert _grade(server.url, sid, "alice", row, 6)[0] == 400
        assert _grade(server.url, sid, "mallory", row, 3)[0] == 400
        status, answer = _grade(server.url, "0123456789ab", "alice", row, 3)
        assert status == 409 and answer["stale"] and "reload the page" in answer["error"]
        assert _grade(server.url, sid, "alice", row, 2, outcome="later")[0] == 200
        status, queue = call(server.url + "api/queue?annotator=alice")
        assert queue["items"][0]["mine"]["outcome"] == "later" and queue["items"][0]["mine"]["grade"] is None
        assert "grade" not in json.dumps(queue["items"][1]).replace('"mine": null', "")  # nothing of the judge
        (tmp_path / "gold.jsonl").write_text(json.dumps({"query_id": row.query_id, "doc_id": row.doc_id, "grade": 3})
                                             + "\n")  # someone puts a hand-made gold file in its place
        status, answer = _grade(server.url, sid, "alice", row, 3)
        assert status == 409 and "not written by labeller annotate" in answer["error"]


def test_a_foreign_gold_file_is_refused_before_serving(tmp_path):
    frozen_sample(tmp_path, size=10)
    write_jsonl(tmp_path / "gold.jsonl", [{"query_id": "q01", "doc_id": "tx-00001", "grade": 3, "annotator": "x"}])
    before = (tmp_path / "gold.jsonl").read_bytes()
    with pytest.raises(BadInputError, match="gold.jsonl:1: field 'sample_id'"):
        session(tmp_path)
    assert (tmp_path / "gold.jsonl").read_bytes() == before


def test_agreement_view_waits_for_thirty_shared_pairs_then_matches_sklearn_and_krippendorff(tmp_path):
    import krippendorff
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    frozen_sample(tmp_path, size=40)
    sess = session(tmp_path, overlap=1.0)
    rows = sess.sample.rows
    alice = [r.position % 5 + 1 for r in rows]
    bob = [g if i % 4 else min(5, g + 1) for i, g in enumerate(alice)]
    for i, row in enumerate(rows):
        for who, grades in (("alice", alice), ("bob", bob)):
            if i < 29 or who == "alice":
                sess.grade({"sample_id": sess.sample.sample_id, "annotator": who, "query_id": row.query_id,
                            "doc_id": row.doc_id, "outcome": "graded", "grade": grades[i], "note": "n"})
    view = sess.agreement()
    assert view["shared_pairs"] == 29 and not view["enough"] and view["kappa"] is None
    assert view["disagreements"] is None  # bob is not done: nobody sees pair grades yet
    for i, row in enumerate(rows[29:], start=29):
        sess.grade({"sample_id": sess.sample.sample_id, "annotator": "bob", "query_id": row.query_id,
                    "doc_id": row.doc_id, "outcome": "graded", "grade": bob[i], "note": "n"})
    view = sess.agreement()
    assert view["enough"] and view["blind_pass_done"] and view["shared_pairs"] == 40
    assert view["kappa"] == pytest.approx(cohen_kappa_score(alice, bob, labels=[1, 2, 3, 4, 5]))
    assert view["kappa_quadratic"] == pytest.approx(cohen_kappa_score(alice, bob, labels=[1, 2, 3, 4, 5],
                                                                      weights="quadratic"))
    assert view["alpha_ordinal"] == pytest.approx(krippendorff.alpha(np.array([alice, bob], dtype=float),
                                                                     level_of_measurement="ordinal",
                                                                     value_domain=[1, 2, 3, 4, 5]))
    assert len(view["disagreements"]) == sum(a != b for a, b in zip(alice, bob))
    assert view["distributions"][0]["grades"] == {str(g): alice.count(g) for g in range(1, 6)}


def test_agree_reads_the_gold_file_unchanged_and_adjudication_settles_a_pair(tmp_path):
    frozen_sample(tmp_path, size=12)
    labels = tmp_path / "labels.jsonl"
    sess = session(tmp_path, overlap=1.0, labels=labels)
    sid = sess.sample.sample_id
    judged = {(r["query_id"], r["doc_id"]): r["grade"] for r in map(json.loads, labels.read_text().splitlines())}
    for i, row in enumerate(sess.sample.rows):
        for who in ("alice", "bob"):
            outcome = "cant_judge" if (i, who) == (0, "bob") else "later" if (i, who) == (1, "bob") else "graded"
            grade = None if outcome != "graded" else (judged[row.query_id, row.doc_id] % 5) + 1
            sess.grade({"sample_id": sid, "annotator": who, "query_id": row.query_id, "doc_id": row.doc_id,
                        "outcome": outcome, "grade": grade, "note": "n"})
    graded = read_grades(tmp_path / "gold.jsonl")
    assert graded.not_grades == 2 and len(graded.rows) == 22  # "can't judge" and "later" are never grades
    result = agree(AgreeOptions(labels=labels, gold=tmp_path / "gold.jsonl", resamples=50))
    assert result.n == 12 and result.ceiling is not None and result.ceiling.pairs == 10
    assert any("can't judge" in w for w in result.warnings)
    assert sess.adjudication()["ready"] is False  # bob's "later" pair is still open
    target = sess.sample.rows[1]
    sess.grade({"sample_id": sid, "annotator": "bob", "query_id": target.query_id, "doc_id": target.doc_id,
                "outcome": "graded", "grade": 1, "note": "n"})
    items = sess.adjudication()["items"]
    assert {(i["query_id"], i["doc_id"]) for i in items} == {(r.query_id, r.doc_id) for r in sess.sample.rows}
    first = items[0]
    assert first["judge_justification"].startswith("judge says") and first["judge_grade"] is not None
    sess.adjudicate({"sample_id": sid, "adjudicator": "carol", "query_id": first["query_id"],
                     "doc_id": first["doc_id"], "grade": first["judge_grade"], "note": "judge was right",
                     "rubric_problem": True})
    after = agree(AgreeOptions(labels=labels, gold=tmp_path / "gold.jsonl", resamples=50))
    from labeller.agreement import align

    aligned = align(read_grades(labels, several_per_pair=False), read_grades(tmp_path / "gold.jsonl"))
    settled = next(p for p in aligned.pairs if (p.query_id, p.doc_id) == (first["query_id"], first["doc_id"]))
    assert settled.gold == first["judge_grade"] and any(h.adjudicated for h in settled.humans)
    assert after.exact_agreement > result.exact_agreement  # the settled pair now agrees with the judge
    assert after.ceiling.pairs == 11 and "carol" not in after.ceiling.annotators  # not part of the ceiling


def test_stale_labels_and_gold_are_marked_in_agree(tmp_path):
    frozen_sample(tmp_path, size=10)
    sess = session(tmp_path, annotators=("alice",))
    for row in sess.sample.rows:
        sess.grade({"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id,
                    "doc_id": row.doc_id, "outcome": "graded", "grade": 3, "note": "n"})
    labels = tmp_path / "labels.jsonl"
    result = agree(AgreeOptions(labels=labels, gold=tmp_path / "gold.jsonl", rubric="transactions",
                                judge="openai:gpt-4.1-mini", resamples=20))
    assert len(result.stale) == 2
    assert "rubric version v-test" in result.stale[0] and "offline:lexical, not openai:gpt-4.1-mini" in result.stale[1]
    assert all(s in result.warnings for s in result.stale)
    fresh = [r | {"rubric_version": sess.rubric.version} for r in map(json.loads, labels.read_text().splitlines())]
    write_jsonl(labels, fresh)
    assert agree(AgreeOptions(labels=labels, gold=tmp_path / "gold.jsonl", rubric="transactions",
                              judge="offline:lexical", resamples=20)).stale == []


def test_the_page_and_its_files_are_served(tmp_path):
    frozen_sample(tmp_path, size=5)
    with running(session(tmp_path, annotators=("alice",))) as server:
        import urllib.request

        for path in ("", "annotate.js", "annotate.css"):
            with urllib.request.urlopen(server.url + path) as response:
                assert response.status == 200 and len(response.read()) > 500
        status, info = call(server.url + "api/session")
        assert status == 200 and info["rubric"]["grades"]["5"]["title"] == "The precedent."
        assert info["note_required"] == [1, 2, 3, 4, 5] and info["query_fields"][0] == "supplier"
        assert call(server.url + "api/nothing")[0] == 404
    assert QUERIES.exists() and CORPUS.exists()


def test_validate_prompt_runs_on_the_frozen_sample(tmp_path):
    """The calibration loop: a rubric change is judged on the same frozen pairs every time."""
    from labeller.pipelines import run_pipeline
    from labeller.shipped import shipped_dir

    gold = shipped_dir("gold") / "transactions.jsonl"
    frozen = make_sample(tmp_path / "sample.jsonl", pairs=gold, size=40, plan="stratified")
    config = shipped_dir("pipelines") / "validate_prompt.toml"
    overrides = [f"inputs.sample={tmp_path / 'sample.jsonl'}"]
    first = run_pipeline(config, out_dir=tmp_path / "v", overrides=overrides)
    again = run_pipeline(config, out_dir=tmp_path / "v", overrides=overrides)
    assert first.figures["n"] == 40 and first.judge_requests == 80  # old and new rubric, the sample's pairs only
    labelled = {(r["query_id"], r["doc_id"]) for r in map(json.loads, (tmp_path / "v" / "labels-new.jsonl")
                                                           .read_text().splitlines())}
    assert labelled == {(r.query_id, r.doc_id) for r in frozen.rows}
    assert again.judge_requests == 0 and again.figures == first.figures


def test_a_sample_leaves_out_the_rubrics_worked_examples(tmp_path):
    rows = label_rows()
    example = ("q09", "tx-01429")  # worked example 1 of rubrics/transactions.md
    rows.append({**rows[0], "query_id": example[0], "doc_id": example[1], "cache_key": "example"})
    frozen = make_sample(tmp_path / "s.jsonl", labels=write_jsonl(tmp_path / "l.jsonl", rows), size=len(rows))
    assert frozen.left_out_examples >= 1
    assert example not in {(r.query_id, r.doc_id) for r in frozen.rows}


def test_grade_definitions_and_notes_come_from_the_rubric(tmp_path):
    from labeller.annotate.session import grade_definitions, parse_note_required
    from labeller.rubric import load_rubric

    general = grade_definitions(load_rubric("general"))
    assert list(general) == [5, 4, 3, 2, 1] and general[2]["title"] == "Related, no answer."
    assert "does not answer it" in general[2]["text"] and "**" not in general[2]["text"]
    rubric = tmp_path / "r.md"
    rubric.write_text('+++\nname = "r"\nnote_required = [1, 5]\n+++\n# Grades\n- **5 — Top.** best\n')
    loaded = load_rubric(rubric)
    assert parse_note_required(None, loaded) == [1, 5] and parse_note_required("none", loaded) == []
    assert parse_note_required(None, load_rubric("general")) == [1, 2, 3, 4, 5]
    assert parse_note_required("2, 3", loaded) == [2, 3]
    with pytest.raises(BadInputError):
        parse_note_required("1,x", loaded)


def test_the_command_line_freezes_a_sample_and_reports_status(tmp_path, capsys):
    from labeller.cli import main

    labels = write_jsonl(tmp_path / "labels.jsonl", label_rows())
    with pytest.raises(SystemExit) as done:
        main(["annotate", "sample", "--labels", str(labels), "--out", str(tmp_path / "sample.jsonl"), "--size", "20",
              "--queries", str(QUERIES), "--corpus", str(CORPUS)])
    assert done.value.code == 0 and "froze sample" in capsys.readouterr().out
    sess = session(tmp_path, overlap=0.5)
    for row in sess.assignment["alice"][:3]:
        sess.grade({"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id,
                    "doc_id": row.doc_id, "outcome": "graded", "grade": 4, "note": "n"})
    with pytest.raises(SystemExit) as done:
        main(["annotate", "status", "--sample", str(tmp_path / "sample.jsonl"), "--gold", str(tmp_path / "gold.jsonl"),
              "--queries", str(QUERIES), "--corpus", str(CORPUS), "--annotators", "alice,bob", "--overlap", "0.5"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "alice: 3/15 done" in out and "not enough overlap yet: 0 shared pairs" in out


def test_a_sample_file_replaced_while_serving_stops_the_saves(tmp_path):
    from labeller.annotate.session import StaleError

    frozen_sample(tmp_path, size=10)
    sess = session(tmp_path, annotators=("alice",))
    row = sess.sample.rows[0]
    answer = {"sample_id": sess.sample.sample_id, "annotator": "alice", "query_id": row.query_id,
              "doc_id": row.doc_id, "outcome": "graded", "grade": 3, "note": "n"}
    sess.grade(answer)
    (tmp_path / "sample.jsonl").unlink()
    frozen_sample(tmp_path, size=8)  # another sample under the same name
    with pytest.raises(StaleError, match="was replaced by sample"):
        sess.grade(answer)
    assert len((tmp_path / "gold.jsonl").read_text().splitlines()) == 1
