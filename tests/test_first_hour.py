"""A new user's first hour with public-data-shaped inputs: a BEIR folder, TREC qrels on 0-3, an official
TREC run over more queries than the inputs hold (issue 25, "Own data, first hour")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import cli

from labeller.errors import ConfigError
from labeller.pipelines import load_config, run_pipeline

DOCS = [("d1", "Water", "Thames Water quarterly water rates"), ("d2", "Power", "Octopus electricity bill"),
        ("d3", "Paper", "A4 copier paper box"), ("d4", "Water", "water bill paid late"),
        ("d5", "Power", "electricity meter reading")]
QUERIES = [("q1", "water rates"), ("q2", "electricity bill"), ("q3", "paper box")]
QRELS = [("q1", "d1", 3), ("q1", "d4", 1), ("q1", "d3", 0), ("q2", "d2", 2), ("q2", "d5", 1), ("q2", "d3", 0),
         ("q3", "d3", 3), ("q3", "d1", 0)]  # TREC's 0-3 grades


def beir_folder(root: Path, qrels=QRELS) -> Path:
    """The BEIR layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), qrels/test.tsv (0-3)."""
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                                               for i, t, x in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in QUERIES))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                             + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels))
    return root


def trec_qrels(path: Path, qrels=QRELS) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    return path


def config(path: Path, pipeline: str, body: str) -> Path:
    path.write_text(f'pipeline = "{pipeline}"\n{body}\n[output]\ndir = "out"\ncache = "cache"\n')
    return path


VALIDATE = 'old_rubric = "general"\nnew_rubric = "general"\n[inputs]\nbeir = "beir"\n'


def test_validate_prompt_reads_beir_qrels_as_gold(tmp_path):
    beir_folder(tmp_path / "beir")
    result = run_pipeline(config(tmp_path / "v.toml", "validate_prompt", VALIDATE))
    assert result.figures["n"] == len(QRELS)
    gold = (tmp_path / "out" / "gold-pairs.jsonl").read_text().splitlines()
    assert [tuple(json.loads(r).values()) for r in gold] == [(q, d) for q, d, _ in QRELS]


def test_validate_prompt_reads_trec_qrels_as_gold_on_their_0_3_scale(tmp_path):
    beir_folder(tmp_path / "beir", qrels=QRELS[:1])
    qrels = trec_qrels(tmp_path / "2019qrels-pass.txt")
    result = run_pipeline(config(tmp_path / "v.toml", "validate_prompt", VALIDATE), overrides=[f"inputs.gold={qrels}"])
    assert result.figures["n"] == len(QRELS)
    report = (tmp_path / "out" / "agreement" / "agreement.md").read_text()
    assert "0-3" in report  # the shift onto 1-4 is said


def test_validate_prompt_takes_the_gold_scale_like_agree(tmp_path):
    """A 0-3 gold table needs its scale, as `agree --from-scale` says it; `inputs.from_scale` gives it."""
    beir_folder(tmp_path / "beir")
    gold = tmp_path / "gold.csv"
    gold.write_text("query_id,doc_id,grade,annotator\n" + "".join(f"{q},{d},{g},ann\n" for q, d, g in QRELS))
    cfg = config(tmp_path / "v.toml", "validate_prompt", VALIDATE)
    with pytest.raises(Exception, match="from-scale"):
        run_pipeline(cfg, overrides=[f"inputs.gold={gold}"])
    for scale in ("0-3", "gold=0-3"):
        result = run_pipeline(cfg, overrides=[f"inputs.gold={gold}", f"inputs.from_scale={scale}"])
        assert result.figures["n"] == len(QRELS)
    with pytest.raises(ConfigError) as bad:
        load_config(cfg, ["inputs.from_scale=3-0"])
    assert bad.value.field == "inputs.from_scale"


def test_label_gold_takes_trec_qrels_and_a_table_on_its_own_scale(tmp_path, monkeypatch, capsys):
    """`label --gold` (juries, escalation) reads every gold format `agree` does, with `--from-scale`."""
    from fakeapi import FakeAPI
    from jury_helpers import BASE, N, planted, write_slice

    with FakeAPI() as api:
        write_slice(tmp_path, monkeypatch, api, "sk-first-hour-0123456789")
        jury = [*BASE, "--judge", "openai:gpt-4.1", "--judge", "openai:gpt-4.1-mini", "--json"]
        zero_based = [(f"q{i % 8}", f"d{i}", planted(i) - 1) for i in range(N)]  # a 0-4 scale
        (tmp_path / "gold.csv").write_text("query_id,doc_id,grade\n" + "".join(f"{q},{d},{g}\n" for q, d, g in
                                                                              zero_based))
        trec_qrels(tmp_path / "qrels.txt", zero_based)
        code, _, err = cli(capsys, *jury, "--gold", "gold.csv")
        assert code == 2 and "--from-scale gold=0-3" in err and api.total == 0  # refused before anything is paid
        for gold in ("gold.csv", "qrels.txt"):
            code, out, err = cli(capsys, *jury, "--gold", gold, "--from-scale", "gold=0-4", "--out", f"{gold}.jsonl")
            assert code == 0, err
            rows = {r["name"]: r for r in json.loads(out.splitlines()[-1])["against_gold"]}
            assert rows["openai:gpt-4.1"]["kappa"] == pytest.approx(1.0)  # the exact model grades as the gold
        code, _, err = cli(capsys, *BASE, "--judge", "openai:gpt-4.1", "--from-scale", "0-3")
        assert code == 2 and "--gold" in err


REGRESSION = '[inputs]\nbeir = "beir"\n[retriever]\nname = "bm25"\ndepth = 3\n[evaluate]\nmetrics = ["ndcg@3"]\n'


def test_regression_uses_the_human_qrels_it_was_given_and_never_pays_for_them(tmp_path):
    beir_folder(tmp_path / "beir")
    cfg = config(tmp_path / "r.toml", "regression", REGRESSION)
    first = run_pipeline(cfg)
    human = {(q, d): g + 1 for q, d, g in QRELS}  # 0-3 shifted onto 1-4
    sent = [tuple(json.loads(r).values()) for r in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert sent and not set(sent) & human.keys()  # the judge is asked only about pairs nobody graded
    assert first.judge_requests == len(sent) == first.figures["judge_grades"]
    rows = {(r["query_id"], r["doc_id"]): r for r in map(json.loads, (tmp_path / "out" / "judgments.jsonl")
                                                         .read_text().splitlines())}
    assert {k for k, r in rows.items() if r["judge"] != "human"} == set(sent)
    assert 0 < first.figures["human_grades"] < len(human)  # the pool's pairs people graded (of all 8 human grades)
    assert {k: r["grade"] for k, r in rows.items() if r["judge"] == "human"} == human  # every human grade, as given
    assert any(f"{first.figures['human_grades']} human grades" in line for line in first.summary), first.summary
    assert any("graded by people (never sent to the judge)" in line for line in first.summary)
    again = run_pipeline(cfg)
    assert again.judge_requests == 0 and again.figures["ndcg@3"] == first.figures["ndcg@3"]


def test_human_grades_win_over_the_judges_in_the_regression_figures(tmp_path):
    """A qrels that calls every document irrelevant gives ndcg 0 (nothing to average), whatever the judge thinks."""
    beir_folder(tmp_path / "beir", qrels=[(q, d, 0) for q, _ in QUERIES for d, *_ in DOCS])
    result = run_pipeline(config(tmp_path / "r.toml", "regression", REGRESSION))
    assert result.judge_requests == 0 and result.figures["judge_grades"] == 0
    assert result.figures["ndcg@3"] is None and result.status == "failed"  # nothing comparable: the gate fails


def official_run(path: Path, extra_queries=("1037798", "104861"), tag="bm25base_p") -> Path:
    """An official TREC run: tab-separated, over the inputs' queries and topics the inputs do not hold, with a
    document the corpus does not hold."""
    ranked = {"q1": ["d1", "d4", "d9"], "q2": ["d2", "d5", "d3"], "q3": ["d3", "d1"]}
    ranked.update({q: ["d1", "d2"] for q in extra_queries})
    path.write_text("".join(f"{q}\tQ0\t{d}\t{r}\t{20 - r:.4f}\t{tag}\n" for q, docs in ranked.items()
                            for r, d in enumerate(docs, 1)))
    return path


def test_label_run_skips_queries_and_documents_the_inputs_do_not_hold_with_a_counted_warning(tmp_path, monkeypatch,
                                                                                            capsys):
    monkeypatch.chdir(tmp_path)
    beir_folder(tmp_path / "beir")
    official_run(tmp_path / "run.txt")
    code, _, err = cli(capsys, "label", "--beir", "beir", "--run", "run.txt", "--depth", "3", "--judge",
                       "offline:lexical", "--cache", "cache", "--out", "labels.jsonl")
    assert code == 0, err
    assert ("labeller: warning: run.txt: skipped 2 queries not in the queries file (first '1037798', line 9) and 1 "
            "document not in the corpus (first 'd9', line 3); 7 entries of the top 3 kept") in err
    labelled = [(r["query_id"], r["doc_id"]) for r in map(json.loads, (tmp_path / "labels.jsonl").read_text()
                                                          .splitlines())]
    assert labelled == [("q1", "d1"), ("q1", "d4"), ("q2", "d2"), ("q2", "d5"), ("q2", "d3"), ("q3", "d3"),
                        ("q3", "d1")]
    said = err.splitlines()  # each summary line once
    assert [line[:45] for line in said if line.startswith(("labelled ", "requests "))] == [
        "labelled 7 pairs: 7 new, 0 from cache, 0 fail", "requests 7, tokens 0 in / 0 out, cost $0.0000"]
    (tmp_path / "other.txt").write_text("".join(line for line in (tmp_path / "run.txt").read_text().splitlines(True)
                                                if line.startswith("10")))
    code, _, err = cli(capsys, "label", "--beir", "beir", "--run", "other.txt", "--depth", "3", "--judge",
                       "offline:lexical", "--cache", "cache", "--out", "other.jsonl")
    assert code == 2 and "other.txt:1: field 'query_id': no entry of the run matches the inputs" in err
    assert not (tmp_path / "other.jsonl").exists()


def test_regression_evaluates_an_official_run_over_more_topics_and_names_it(tmp_path):
    beir_folder(tmp_path / "beir")
    official_run(tmp_path / "today.txt")
    official_run(tmp_path / "base.txt", tag="baseline")
    cfg = config(tmp_path / "r.toml", "regression", REGRESSION + '[baseline]\nrun = "base.txt"\n')
    result = run_pipeline(cfg, overrides=[f"retriever.run={tmp_path / 'today.txt'}"])
    assert result.status == "passed", result.summary
    warnings = [line for line in result.summary if line.startswith("WARNING: ")]
    assert len(warnings) == 2 and all("skipped 2 queries not in the queries file" in w for w in warnings)
    assert result.summary[2].startswith("Run file today.txt against baseline base.txt on 3 queries"), result.summary
    assert "bm25" not in result.summary[2]
    trend = (tmp_path / "out" / "trend.html").read_text()
    assert "run file today.txt" in trend


def test_junit_names_of_a_plugin_retriever_are_the_same_every_run(tmp_path, monkeypatch, capsys):
    """CI history follows a test by its name: no timestamp of the dated run file in it."""
    import xml.etree.ElementTree as ET

    (tmp_path / "mysearch.py").write_text(
        "def search(query, k):\n    return [('d1', 2.0), ('d2', 1.0), ('d3', 0.5)][:k]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    beir_folder(tmp_path / "beir")
    cfg = config(tmp_path / "r.toml", "regression", REGRESSION + '[evaluate.floors]\n"ndcg@3" = 0.1\n')
    names = []
    for n in (1, 2):
        code, _, err = cli(capsys, "run", cfg, "--set", "retriever.name=mysearch:search", "--junit",
                           tmp_path / f"{n}.xml")
        assert code in (0, 1), err
        names.append([c.get("name") for c in ET.parse(tmp_path / f"{n}.xml").getroot().iter("testcase")])
    assert names[0] == names[1] and "ndcg@3 of mysearch:search: regression gate" in names[0], names
    assert "ndcg@3 of mysearch:search: floor 0.1" in names[0]


def test_a_stored_run_file_is_not_named_trec_trec(tmp_path):
    beir_folder(tmp_path / "beir")
    official_run(tmp_path / "today.trec", extra_queries=())
    run_pipeline(config(tmp_path / "r.toml", "regression", REGRESSION), overrides=[f"retriever.run={tmp_path / 'today.trec'}"])
    stored = [p.name for p in (tmp_path / "out" / "history" / "runs").iterdir() if not p.name.startswith("baseline")]
    assert len(stored) == 1 and stored[0].endswith("-run_file_today.trec"), stored


@pytest.mark.parametrize("typed, meant", [("P10", "precision@10"), ("ndcg10", "ndcg@10"), ("recall100", "recall@100"),
                                          ("R100", "recall@100"), ("mrr10", "mrr@10")])
def test_a_metric_without_its_at_is_answered_with_labellers_own_name(typed, meant, tmp_path, capsys):
    trec_qrels(tmp_path / "qrels.txt")
    official_run(tmp_path / "run.txt")
    code, _, err = cli(capsys, "evaluate", "--run", tmp_path / "run.txt", "--labels", tmp_path / "qrels.txt",
                       "--metrics", typed)
    assert code == 2 and f"unknown metric '{typed}' (did you mean {meant}?)" in err


def test_a_missing_grade_column_lists_the_columns_and_the_columns_hint(tmp_path, capsys):
    beir_folder(tmp_path / "beir")
    gold = tmp_path / "gold.csv"
    gold.write_text("query_id,doc_id,judgement\nq1,d1,3\n")
    labels = tmp_path / "labels.csv"
    labels.write_text("query_id,doc_id,grade\nq1,d1,3\n")
    code, _, err = cli(capsys, "agree", "--labels", labels, "--gold", gold)
    assert code == 2 and (f"{gold}:2: field 'grade': missing (the file has columns query_id, doc_id, judgement; "
                          "name the one to use with --columns grade=COLUMN)") in err
    code, _, err = cli(capsys, "agree", "--labels", labels, "--gold", gold, "--columns", "grade=judgement",
                       "--from-scale", "gold=0-3")
    assert code == 0, err


def test_agree_on_one_pair_says_kappa_cannot_be_computed_and_its_gate_fails(tmp_path, capsys):
    labels, gold = tmp_path / "labels.csv", tmp_path / "gold.csv"
    labels.write_text("query_id,doc_id,grade\nq1,d1,5\n")
    gold.write_text("query_id,doc_id,grade\nq1,d1,3\n")
    code, out, err = cli(capsys, "agree", "--labels", labels, "--gold", gold)
    assert code == 0 and "cannot be computed from one pair" in out and "0.000" not in out, out
    assert "warning: only 1 pair compared" in err
    code, out, _ = cli(capsys, "agree", "--labels", labels, "--gold", gold, "--json")
    result = json.loads(out)
    assert result["kappa"] is None and result["ci"]["kappa"] == {"low": None, "high": None}
    code, out, _ = cli(capsys, "agree", "--labels", labels, "--gold", gold, "--baseline", labels)
    assert code == 1 and "gate: FAIL (not computable)" in out  # a gate that cannot compute its figure fails
    two = tmp_path / "two.csv"
    two.write_text("query_id,doc_id,grade\nq1,d1,5\nq1,d2,1\n")
    (tmp_path / "gold2.csv").write_text("query_id,doc_id,grade\nq1,d1,5\nq1,d2,1\n")
    code, out, _ = cli(capsys, "agree", "--labels", two, "--gold", tmp_path / "gold2.csv")
    assert code == 0 and "Cohen's kappa: 1.000" in out  # two pairs: computed as before


def test_the_gate_headline_prints_a_tiny_p_like_the_tables(tmp_path, capsys):
    """20 queries that all lose: the exact randomization p is 2^-20; the error line says <0.0001 as the tables do."""
    topics = [f"{1037798 + i}" for i in range(20)]
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 a 3\n{q} 0 b 0\n" for q in topics))
    for name, first, second in (("good", "a", "b"), ("bad", "b", "a")):
        (tmp_path / f"{name}.trec").write_text("".join(f"{q}\tQ0\t{first}\t1\t2.0\t{name}\n{q}\tQ0\t{second}\t2\t1.0\t"
                                                       f"{name}\n" for q in topics))
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "bad.trec", "--baseline", tmp_path / "good.trec",
                         "--labels", tmp_path / "qrels.txt", "--metrics", "ndcg@10", "--junit", tmp_path / "j.xml")
    assert code == 1
    headline = err.strip().splitlines()[-1]
    assert "p <0.0001 < alpha" in headline and "e-0" not in headline, headline
    assert "e-0" not in out and "e-0" not in (tmp_path / "j.xml").read_text()


def test_help_in_a_pipe_is_plain_text_not_an_80_column_box(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TYPER_USE_RICH", "COLUMNS")}
    done = subprocess.run([sys.executable, "-m", "labeller", "agree", "--help"], capture_output=True, text=True,
                          env=env, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("Usage: labeller agree [OPTIONS]")
    assert not set("╭╮╰╯│─") & set(done.stdout), done.stdout[:400]
    assert not any(line.endswith(" ") for line in done.stdout.splitlines())  # no padding to a box's width
    assert "--from-scale" in done.stdout and "--gold" in done.stdout


def test_empty_broken_and_fixed_sections_say_none(tmp_path):
    import re

    beir_folder(tmp_path / "beir")
    run_pipeline(config(tmp_path / "v.toml", "validate_prompt", VALIDATE))  # the same rubric twice: nothing flips
    page = (tmp_path / "out" / "report.html").read_text()
    for name in ("Broken", "Fixed"):
        section = re.search(rf"{name}: the new grade is [^<]*\(0\)</h2>(.*?)<h2", page, re.S)
        assert section and "None." in section[1] and "<table" not in section[1], name
    agreement = (tmp_path / "out" / "agreement" / "agreement.html").read_text()
    assert "None: the change flipped no pair." in agreement
