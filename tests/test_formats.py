"""The formats teams arrive with, through the real command line: another tool's label file, a 0-3 gold
CSV, columns named otherwise, the BEIR layout, trec_eval's measure names and -q output, ranx JSON runs,
and Parquet outputs with real dtypes. Figures are cross-checked with pytrec_eval and scikit-learn."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
from sklearn.metrics import cohen_kappa_score

from cli_helpers import cli, jsonl

QUERIES = [f"q{i}" for i in range(1, 9)]
DOCS = [f"d{i}" for i in range(1, 16)]




def cli_json(capsys, *args) -> dict:
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def data(tmp_path):
    """Human grades on TREC's 0-3 scale, judge grades on 1-5, and a run without score ties."""
    rng = random.Random(7)
    human = {(q, d): rng.randint(0, 3) for q in QUERIES for d in rng.sample(DOCS, 8)}
    judge = {pair: min(5, max(1, g + 1 + rng.choice((-1, 0, 0, 1)))) for pair, g in human.items()}
    run = {q: {d: round(rng.random() * 10 + i * 1e-3, 6) for i, d in enumerate(DOCS)} for q in QUERIES}
    (tmp_path / "run.trec").write_text("".join(
        f"{q} Q0 {d} {r} {s} sys\n" for q, docs in run.items()
        for r, (d, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), start=1)))
    return {"root": tmp_path, "human": human, "judge": judge, "run": run}


def write_gold_csv(path: Path, grades: dict, *, shift: int = 0) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query_id", "doc_id", "grade", "annotator", "note"])
        for (q, d), g in grades.items():
            writer.writerow([q, d, g + shift, "ann", ""])
    return path


# -- labels from another tool; gold on another scale ---------------------------------------------

def test_another_tools_label_file_is_read_as_labels_by_its_flag(data, capsys):
    root = data["root"]
    foreign = jsonl(root / "foreign.jsonl", [{"query_id": q, "doc_id": d, "grade": g, "justification": "because"}
                                             for (q, d), g in data["judge"].items()])
    gold = write_gold_csv(root / "gold.csv", data["human"], shift=1)
    result = cli_json(capsys, "agree", "--labels", foreign, "--gold", gold, "--bootstrap", "20")
    pairs = sorted(data["human"])
    expected = cohen_kappa_score([data["human"][p] + 1 for p in pairs], [data["judge"][p] for p in pairs])
    assert result["n"] == len(pairs) and result["kappa"] == pytest.approx(expected, abs=1e-12)
    # extra columns another tool writes (its own score, model, timestamps) are not a reason to refuse the file
    jsonl(foreign, [{"query_id": q, "doc_id": d, "label": g, "explanation": "x", "model": "gpt", "score": 0.3}
                    for (q, d), g in data["judge"].items()])
    code, _, err = cli(capsys, "agree", "--labels", foreign, "--gold", gold, "--bootstrap", "20",
                       "--columns", "grade=label")
    assert code == 0, err


def test_a_zero_to_three_gold_csv_is_shifted_not_clipped(data, capsys):
    root = data["root"]
    labels = jsonl(root / "labels.jsonl", [{"query_id": q, "doc_id": d, "grade": g} for (q, d), g in
                                           data["judge"].items()])
    gold03 = write_gold_csv(root / "gold03.csv", data["human"])
    gold15 = write_gold_csv(root / "gold15.csv", data["human"], shift=1)
    code, _, err = cli(capsys, "agree", "--labels", labels, "--gold", gold03)
    assert code == 2 and "--from-scale gold=0-3" in err and "merge 0 with 1" in err
    code, _, err = cli(capsys, "agree", "--labels", labels, "--gold", gold03, "--clip")  # clipping is no shift
    assert code == 2 and "--from-scale gold=0-3" in err
    shifted = cli_json(capsys, "agree", "--labels", labels, "--gold", gold03, "--from-scale", "gold=0-3",
                       "--bootstrap", "20")
    native = cli_json(capsys, "agree", "--labels", labels, "--gold", gold15, "--bootstrap", "20")
    for figure in ("n", "kappa", "kappa_quadratic", "alpha_ordinal", "exact_agreement", "confusion"):
        assert shifted[figure] == native[figure], figure
    assert shifted["clipping"]["count"] == 0


def test_evaluate_shifts_a_gold_table_like_qrels_and_never_suggests_clip(data, capsys):
    root = data["root"]
    gold03 = write_gold_csv(root / "gold03.csv", data["human"])
    qrels = root / "human.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in data["human"].items()))
    code, _, err = cli(capsys, "evaluate", "--run", root / "run.trec", "--labels", gold03)
    assert code == 2 and "--from-scale labels=0-3" in err and "--clip" not in err.replace("(--clip would", "")
    table = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", gold03, "--from-scale", "labels=0-3")
    trec = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", qrels, "--from-scale", "0-3")
    assert table["metrics"] == trec["metrics"] and table["per_query"] == trec["per_query"]


# -- columns named otherwise ----------------------------------------------------------------------

def test_columns_named_otherwise_by_alias_and_by_mapping(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jsonl(tmp_path / "queries.jsonl", [{"qid": "q1", "query": "blanch spinach"}, {"qid": "q2", "query": "bail"}])
    jsonl(tmp_path / "corpus.jsonl", [{"docid": "d1", "passage": "Blanch spinach for two minutes."},
                                      {"docid": "d2", "passage": "Bail bonds and bounty hunters."}])
    jsonl(tmp_path / "pairs.jsonl", [{"qid": "q1", "docid": "d1"}, {"qid": "q2", "docid": "d2"}])
    code, _, err = cli(capsys, "label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs",
                       "pairs.jsonl", "--judge", "offline:lexical", "--out", "a.jsonl")
    assert code == 0, err
    jsonl(tmp_path / "pairs.jsonl", [{"topic": "q1", "passage_key": "d1"}, {"topic": "q2", "passage_key": "d2"}])
    code, _, err = cli(capsys, "label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs",
                       "pairs.jsonl", "--judge", "offline:lexical", "--out", "b.jsonl")
    assert code == 2 and "--columns query_id=COLUMN" in err and "topic" in err
    code, _, err = cli(capsys, "label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs",
                       "pairs.jsonl", "--judge", "offline:lexical", "--out", "b.jsonl",
                       "--columns", "query_id=topic,doc_id=passage_key")
    assert code == 0, err
    first = [json.loads(line)["grade"] for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    second = [json.loads(line)["grade"] for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert first == second and first[0] >= 4  # the spinach passage answers the spinach query


def test_two_candidate_aliases_are_never_guessed_between(tmp_path, capsys):
    jsonl(tmp_path / "queries.jsonl", [{"qid": "q1", "_id": "x1", "text": "spinach"}])
    jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "d1", "text": "spinach"}])
    jsonl(tmp_path / "pairs.jsonl", [{"query_id": "q1", "doc_id": "d1"}])
    code, _, err = cli(capsys, "label", "--queries", tmp_path / "queries.jsonl", "--corpus",
                       tmp_path / "corpus.jsonl", "--pairs", tmp_path / "pairs.jsonl", "--judge", "offline:lexical",
                       "--out", tmp_path / "out.jsonl")
    assert code == 2 and "field 'query_id'" in err and "--columns query_id=COLUMN" in err
    assert not (tmp_path / "out.jsonl").exists()


# -- BEIR ------------------------------------------------------------------------------------------

@pytest.fixture
def beir(data):
    root = data["root"] / "scifact"
    (root / "qrels").mkdir(parents=True)
    jsonl(root / "corpus.jsonl", [{"_id": d, "title": f"title {d}", "text": f"text of {d}"} for d in DOCS])
    jsonl(root / "queries.jsonl", [{"_id": q, "text": f"question {q}", "metadata": {}} for q in QUERIES])
    grades = {pair: min(g, 2) for pair, g in data["human"].items()}  # BEIR graded qrels: 0-2
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for (q, d), g in grades.items()))
    return root, grades


def test_beir_layout_is_read_as_it_lies_and_scores_like_trec_eval(data, beir, capsys):
    root, grades = beir
    result = cli_json(capsys, "evaluate", "--beir", root, "--run", data["root"] / "run.trec",
                      "--metrics", "ndcg@10,recall@10,P_5,recip_rank,map", "--relevant-from", "2")
    qrels = {}
    for (q, d), g in grades.items():
        qrels.setdefault(q, {})[d] = g
    measures = {"ndcg_cut.10", "recall.10", "P.5", "recip_rank", "map"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(data["run"])
    for ours, theirs in (("ndcg@10", "ndcg_cut_10"), ("recall@10", "recall_10"), ("P_5", "P_5"),
                         ("recip_rank", "recip_rank"), ("map", "map")):
        for q in qrels:
            assert result["per_query"][ours][q] == pytest.approx(trec[q][theirs], abs=1e-9), (ours, q)


def test_beir_pairs_are_labelled_when_no_pairs_are_given(beir, capsys, monkeypatch):
    root, grades = beir
    monkeypatch.chdir(root.parent)
    code, _, err = cli(capsys, "label", "--beir", root, "--judge", "offline:lexical", "--out", "beir.jsonl")
    assert code == 0, err
    labelled = {(r["query_id"], r["doc_id"]) for r in map(json.loads, (root.parent / "beir.jsonl").open())}
    assert labelled == set(grades)


# -- trec_eval names and output; ranx runs --------------------------------------------------------

def test_trec_eval_measure_names_give_the_same_figures(data, capsys):
    root = data["root"]
    qrels = root / "human.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in data["human"].items()))
    ours = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", qrels,
                    "--metrics", "ndcg@10,precision@5,recall@100,mrr,map")
    theirs = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", qrels,
                      "--metrics", "ndcg_cut_10,P_5,recall_100,recip_rank,map")
    assert list(theirs["metrics"]) == ["ndcg_cut_10", "P_5", "recall_100", "recip_rank", "map"]
    assert list(theirs["metrics"].values()) == list(ours["metrics"].values())


def test_per_query_output_is_trec_eval_q_style(data, capsys):
    root = data["root"]
    qrels = root / "human.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in data["human"].items()))
    code, out, err = cli(capsys, "evaluate", "--run", root / "run.trec", "--labels", qrels, "-q",
                         "--metrics", "ndcg_cut_10,map", "--relevant-from", "2")
    assert code == 0, err
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert all(len(r) == 3 for r in rows)
    qrels_dict: dict = {}
    for (q, d), g in data["human"].items():
        qrels_dict.setdefault(q, {})[d] = g
    trec = pytrec_eval.RelevanceEvaluator(qrels_dict, {"ndcg_cut.10", "map"}).evaluate(data["run"])
    for measure, query, value in rows:
        measure = measure.strip()
        if query == "all":
            expected = sum(trec[q][measure] for q in trec) / len(trec)
        else:
            expected = trec[query][measure]
        assert float(value) == pytest.approx(expected, abs=5e-5), (measure, query)
    assert [r[1] for r in rows].count("all") == 2


def test_a_ranx_json_run_scores_like_its_trec_file(data, capsys):
    root = data["root"]
    qrels = root / "human.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in data["human"].items()))
    (root / "run.json").write_text(json.dumps(data["run"]))  # ranx's Run.save("run.json") shape
    trec = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", qrels)
    ranx = cli_json(capsys, "evaluate", "--run", root / "run.json", "--labels", qrels)
    assert ranx["metrics"] == trec["metrics"] and ranx["per_query"] == trec["per_query"]


# -- Parquet dtypes --------------------------------------------------------------------------------

def test_parquet_labels_have_real_dtypes_and_read_back(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jsonl(tmp_path / "queries.jsonl", [{"query_id": "q1", "text": "spinach"}])
    jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "d1", "text": "spinach"}, {"doc_id": "d2", "text": "bail"}])
    jsonl(tmp_path / "pairs.jsonl", [{"query_id": "q1", "doc_id": "d1"}, {"query_id": "q1", "doc_id": "d2"}])
    code, _, err = cli(capsys, "label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl", "--pairs",
                       "pairs.jsonl", "--judge", "offline:lexical", "--out", "labels.parquet")
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "labels.parquet")
    for column in ("input_tokens", "output_tokens", "cached_input_tokens"):
        assert str(frame[column].dtype) == "Int64", column
    assert str(frame["created_at"].dtype).startswith("datetime64") and str(frame["created_at"].dt.tz) == "UTC"
    assert frame["grade"].dtype.kind == "i" and frame["from_cache"].dtype == bool
    code, _, err = cli(capsys, "cache", "export", "--out", "verdicts.parquet")
    assert code == 0 and str(pd.read_parquet(tmp_path / "verdicts.parquet")["created_at"].dtype).startswith("datetime")
    jsonl(tmp_path / "gold.jsonl", [{"query_id": "q1", "doc_id": "d1", "grade": 5},
                                    {"query_id": "q1", "doc_id": "d2", "grade": 1}])
    result = cli_json(capsys, "agree", "--labels", "labels.parquet", "--gold", "gold.jsonl", "--bootstrap", "10")
    assert result["n"] == 2


def test_a_bare_scale_means_the_tables_when_a_command_reads_no_qrels(data, capsys):
    """`labeller label` output (always 1-5) against a 0-3 gold CSV: a bare --from-scale 0-3 is the gold's."""
    root = data["root"]
    native = jsonl(root / "labels.jsonl", [
        {"query_id": q, "doc_id": d, "grade": g, "justification": "j", "judge": "openai:m", "provider": "openai",
         "model": "m", "rubric": "general", "rubric_version": "v", "cache_key": f"k{i}",
         "created_at": "2026-01-01T00:00:00+00:00"} for i, ((q, d), g) in enumerate(data["judge"].items())])
    gold03 = write_gold_csv(root / "gold03.csv", data["human"])
    bare = cli_json(capsys, "agree", "--labels", native, "--gold", gold03, "--from-scale", "0-3", "--bootstrap", "20")
    named = cli_json(capsys, "agree", "--labels", native, "--gold", gold03, "--from-scale", "gold=0-3",
                     "--bootstrap", "20")
    assert bare["kappa"] == named["kappa"] and bare["confusion"] == named["confusion"]
    foreign = jsonl(root / "foreign.jsonl", [{"query_id": q, "doc_id": d, "grade": g} for (q, d), g in
                                             data["judge"].items()])
    code, _, err = cli(capsys, "agree", "--labels", foreign, "--gold", gold03, "--from-scale", "0-3")
    assert code == 2 and "foreign.jsonl" in err  # another tool's 1-5 table is a table too: name each file's scale
    bare_eval = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", gold03, "--from-scale", "0-3")
    named_eval = cli_json(capsys, "evaluate", "--run", root / "run.trec", "--labels", gold03,
                          "--from-scale", "labels=0-3")
    assert bare_eval["metrics"] == named_eval["metrics"]
