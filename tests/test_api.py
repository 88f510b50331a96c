"""The Python API as a notebook calls it: DataFrames in, DataFrames and results out, against the offline
judge and the fake OpenAI server, with the same figures as the command line's --json."""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest
from fakeapi import FakeAPI, expected_grade

import labeller
from labeller.cli import main
from labeller.errors import BadInputError, LabellingFailedError

QUERIES = pd.DataFrame({"query_id": ["q1", "q2", "q3"],
                        "text": ["how to blanch spinach", "bounty hunter pay", "green vegetables"]})
CORPUS = pd.DataFrame({"doc_id": ["d1", "d2", "d3", "d4"],
                       "text": ["Blanch spinach for two minutes.", "Bounty hunters are paid a share of the bail.",
                                "Spinach is a green vegetable.", "Tax returns are due in April."],
                       "source": ["wiki", "wiki", "blog", None]})
PAIRS = pd.DataFrame([(q, d) for q in QUERIES.query_id for d in CORPUS.doc_id], columns=["query_id", "doc_id"])
GOLD = pd.DataFrame({"query_id": PAIRS.query_id, "doc_id": PAIRS.doc_id,
                     "grade": [3, 0, 2, 0, 0, 3, 0, 0, 1, 0, 3, 0]})  # on 0-3, as a spreadsheet gives it


def cli_json(capsys, *args) -> dict:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args] + ["--json"])
    out = capsys.readouterr()
    assert done.value.code == 0, out.err
    return json.loads(out.out)


def test_label_dataframes_with_the_offline_judge(tmp_path):
    labels = labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, cache=tmp_path / "cache")
    assert isinstance(labels, pd.DataFrame) and len(labels) == len(PAIRS)
    assert list(labels[["query_id", "doc_id"]].itertuples(index=False, name=None)) == \
        list(PAIRS.itertuples(index=False, name=None))
    assert labels.grade.between(1, 5).all() and labels.justification.str.len().gt(0).all()
    assert str(labels.created_at.dtype).startswith("datetime64") and str(labels.input_tokens.dtype) == "Int64"
    spinach = labels.set_index(["query_id", "doc_id"]).grade
    assert spinach["q1", "d1"] > spinach["q1", "d4"]
    again = labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, cache=tmp_path / "cache")
    assert again.from_cache.all() and again.attrs["stats"]["requests"] == 0
    assert list(again.grade) == list(labels.grade)


def test_label_through_the_fake_openai_server_sync_and_async(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-api-0123456789")
    with FakeAPI() as server:
        frame = labeller.label(PAIRS.head(6), queries=QUERIES, corpus=CORPUS, judge="openai:gpt-4.1-mini",
                               base_url=server.openai_url, cache=tmp_path / "cache")
        assert server.total == 6 and frame.judge.eq("openai:gpt-4.1-mini").all()
        prompts = [next(m["content"] for m in r.body["messages"] if m["role"] == "user") for r in server.requests]
        assert sorted(frame.grade) == sorted(expected_grade(p) for p in prompts)
        assert frame.input_tokens.notna().all()

        async def notebook_cell():
            return await labeller.alabel(PAIRS, queries=QUERIES, corpus=CORPUS, judge="openai:gpt-4.1-mini",
                                         base_url=server.openai_url, cache=tmp_path / "cache")

        everything = asyncio.run(notebook_cell())
        assert server.total == 12 and everything.from_cache.sum() == 6  # the first six came from the cache

        async def sync_call_inside_a_running_loop():  # what a Jupyter cell does with the sync form
            return labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, judge="openai:gpt-4.1-mini",
                                  base_url=server.openai_url, cache=tmp_path / "cache")

        assert asyncio.run(sync_call_inside_a_running_loop()).from_cache.all() and server.total == 12


def test_failed_pairs_raise_or_are_kept_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-api-0123456789")
    with FakeAPI() as server:
        server.poison["Tax returns"] = "malformed"  # d4 can never be graded
        with pytest.raises(LabellingFailedError):
            labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, judge="openai:m", base_url=server.openai_url,
                           cache=tmp_path / "cache")
        kept = labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, judge="openai:m", base_url=server.openai_url,
                              cache=tmp_path / "cache", errors="keep")
    assert len(kept) == 9 and set(kept.attrs["failures"].doc_id) == {"d4"}


def test_agree_gives_the_cli_figures_and_a_frame(tmp_path, capsys):
    labels = labeller.label(PAIRS, queries=QUERIES, corpus=CORPUS, cache=tmp_path / "cache")
    result = labeller.agree(labels, GOLD, from_scale="gold=0-3", resamples=200)
    labels.to_csv(tmp_path / "labels.csv", index=False)
    GOLD.to_csv(tmp_path / "gold.csv", index=False)
    cli = cli_json(capsys, "agree", "--labels", tmp_path / "labels.csv", "--gold", tmp_path / "gold.csv",
                   "--from-scale", "gold=0-3", "--bootstrap", "200")
    ours = result.model_dump(mode="json")
    for key in ("n", "kappa", "kappa_quadratic", "alpha_ordinal", "ci", "confusion", "per_grade"):
        assert ours[key] == cli[key], key
    frame = result.to_frame().set_index("figure")
    assert frame.loc["kappa", "value"] == result.kappa and frame.loc["kappa", "ci_low"] == result.ci.kappa.low
    assert result.labels == "labels DataFrame" and result.gold == "gold DataFrame"


def test_evaluate_and_compare_take_frames_and_dicts(tmp_path, capsys):
    good = {"q1": {"d1": 3.0, "d3": 2.0, "d2": 1.0}, "q2": {"d2": 3.0, "d1": 1.0}, "q3": {"d3": 2.0, "d1": 1.0}}
    bad = {q: {d: -s for d, s in docs.items()} for q, docs in good.items()}
    run_frame = pd.DataFrame([(q, d, s) for q, docs in good.items() for d, s in docs.items()],
                             columns=["query_id", "doc_id", "score"])
    result = labeller.evaluate(GOLD, run_frame, "ndcg@10,P_1,recip_rank", from_scale="labels=0-3")
    GOLD.to_csv(tmp_path / "gold.csv", index=False)
    run_frame.to_csv(tmp_path / "run.csv", index=False)
    cli = cli_json(capsys, "evaluate", "--run", tmp_path / "run.csv", "--labels", tmp_path / "gold.csv",
                   "--metrics", "ndcg@10,P_1,recip_rank", "--from-scale", "labels=0-3")
    assert result.metrics == cli["metrics"] and result.per_query == cli["per_query"]
    assert labeller.evaluate(GOLD, good, "ndcg@10,P_1,recip_rank", from_scale="labels=0-3").metrics == result.metrics
    per_query = result.per_query_frame()
    assert set(per_query.columns) == {"run", "metric", "query_id", "value"} and len(per_query) == 9
    versus = labeller.compare(GOLD, {"good": good, "bad": bad}, "ndcg@10", from_scale="labels=0-3",
                              permutations=200, bootstrap=200)
    table = versus.to_frame()
    assert list(table.index) == ["good", "bad"] and table.loc["good", "ndcg@10"] > table.loc["bad", "ndcg@10"]
    row = versus.comparisons_frame().iloc[0]
    assert (row.reference, row.run, row.metric) == ("good", "bad", "ndcg@10") and row.difference < 0
    gated = labeller.compare(GOLD, {"bad": bad}, "ndcg@10", baseline=good, from_scale="labels=0-3",
                             permutations=200, bootstrap=200, thresholds=["ndcg@10=0.01"], alpha=0.5)
    assert gated.gate is not None and not gated.gate.passed  # the gate can say FAIL from a notebook too


def test_bad_frames_are_named_as_the_caller_knows_them(tmp_path):
    with pytest.raises(BadInputError) as caught:
        labeller.agree(GOLD.assign(grade=GOLD.grade + 1), GOLD)
    message = str(caught.value)
    assert message.startswith("gold DataFrame:") and "labeller-api-" not in message and "field 'grade'" in message
    with pytest.raises(BadInputError, match="queries DataFrame:2: field 'text'"):
        labeller.label(PAIRS, queries=QUERIES.assign(text=["a", None, "c"]), corpus=CORPUS, cache=tmp_path / "c")
    with pytest.raises(BadInputError, match="the pairs DataFrame has no rows"):
        labeller.label(PAIRS.head(0), queries=QUERIES, corpus=CORPUS, cache=tmp_path / "c")
    with pytest.raises(BadInputError, match="expected a file path, a pandas DataFrame"):
        labeller.evaluate(GOLD, 42)


def test_errors_name_the_parameters_of_the_api_and_the_flags_of_the_cli(tmp_path, capsys):
    good = {"q1": {"d1": 3.0, "d3": 2.0}, "q2": {"d2": 3.0, "d1": 1.0}, "q3": {"d3": 2.0}}
    worse = {q: {d: -s for d, s in docs.items()} for q, docs in good.items()}
    labels = GOLD.assign(grade=GOLD.grade + 1)  # 1-4
    # Second judgments on 0-3 given as a frame: the error says which parameter gives their scale.
    with pytest.raises(BadInputError) as caught:
        labeller.compare(labels, {"good": good, "worse": worse}, "ndcg@10", labels_alt=GOLD)
    message = str(caught.value)
    assert message.startswith("labels_alt DataFrame:") and "from_scale='labels-alt=0-3'" in message
    assert "--" not in message
    versus = labeller.compare(labels, {"good": good, "worse": worse}, "ndcg@10", labels_alt=GOLD,
                              from_scale="labels-alt=0-3")
    assert versus.system_ranking is not None
    with pytest.raises(BadInputError) as caught:
        labeller.evaluate(labels, good, "ndcg@10", labels_alt=GOLD, from_scale="labels-alt=0-3")
    assert "labels_alt compares system orderings" in str(caught.value) and "--" not in str(caught.value)
    # The command line, which calls the same functions, keeps its flags.
    GOLD.to_csv(tmp_path / "gold.csv", index=False)
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["agree", "--labels", str(tmp_path / "gold.csv"), "--gold", str(tmp_path / "gold.csv")])
    assert "--from-scale" in capsys.readouterr().err
    with pytest.raises(BadInputError) as caught:
        labeller.agree(GOLD, GOLD)
    assert "from_scale=" in str(caught.value) and "--from-scale" not in str(caught.value)
