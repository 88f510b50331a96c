"""How labels were made is part of a figure's identity (labelling.grading): a figure from a log-probability run is
not silently compared with one from a sampling run, in evaluate (saved baseline refused, a mix named in the gate's
verdict) and in the regression pipeline's judge drift (the change named, the sample checked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_evaluation_judges import RUN, WORSE, labels

from labeller.pipelines import run_pipeline
from labeller.pipelines.history import read_history
from labeller.pipelines.trend import judges_note
from tests.cli_helpers import cli, jsonl

LOGPROBS = "grade-probs logprobs top 10"
SAMPLES = "grade-probs from samples; samples"
CONFIG = Path(__file__).resolve().parent.parent / "pipelines" / "regression.toml"
KEY = "sk-test-grading-identity"


def graded(grading: str | None, split: str | None = None) -> list[dict]:
    """Native label rows made with `grading` (None: one plain request a pair); with `split`, q3's are made that way."""
    rows = labels()
    for row in rows:
        how = split if split and row["query_id"] == "q3" else grading
        if how:
            row["grading"] = how
    return rows


def test_a_saved_baseline_on_sampled_distributions_is_refused_for_logprob_labels(tmp_path, capsys):
    (tmp_path / "run.trec").write_text(RUN)
    jsonl(tmp_path / "sampled.jsonl", graded(SAMPLES))
    code, out, _ = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "sampled.jsonl",
                       "--json")
    assert code in (0, None)
    assert json.loads(out)["judges"] == [f"openai:gpt-4.1-mini · rubric general v1 · {SAMPLES}"]
    (tmp_path / "saved.json").write_text(out)
    jsonl(tmp_path / "logprobs.jsonl", graded(LOGPROBS))  # the same judge and rubric, the other grade source
    code, _, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "logprobs.jsonl",
                       "--baseline", tmp_path / "saved.json")
    assert code == 2 and "not comparable" in err
    assert f"labels by openai:gpt-4.1-mini · rubric general v1 · {SAMPLES}" in err and LOGPROBS in err
    jsonl(tmp_path / "plain.jsonl", graded(None))
    code, _, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "plain.jsonl",
                       "--baseline", tmp_path / "saved.json")
    assert code == 2 and "not comparable" in err  # one plain request a pair is another identity too
    code, _, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "sampled.jsonl",
                       "--baseline", tmp_path / "saved.json")
    assert code in (0, None), err


def test_a_gate_over_logprob_and_sampled_labels_names_the_mix_and_can_still_fail(tmp_path, capsys):
    (tmp_path / "worse.trec").write_text(WORSE)
    (tmp_path / "run.trec").write_text(RUN)
    jsonl(tmp_path / "mixed.jsonl", graded(LOGPROBS, split=SAMPLES))
    code, out, _ = cli(capsys, "evaluate", "--run", tmp_path / "worse.trec", "--baseline", tmp_path / "run.trec",
                       "--labels", tmp_path / "mixed.jsonl", "--metrics", "ndcg@3", "--json")
    gate = json.loads(out)["gate"]
    assert code == 1 and not gate["passed"]
    assert gate["judges"] == [f"openai:gpt-4.1-mini · rubric general v1 · {LOGPROBS}",
                              f"openai:gpt-4.1-mini · rubric general v1 · {SAMPLES}"]
    assert any("come from 2 judges or rubric versions" in w for w in gate["warnings"])


@pytest.fixture
def fake(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    api.logprobs = True
    return api


def test_judge_drift_names_a_change_from_sampled_to_logprob_distributions(tmp_path, fake):
    out = tmp_path / "reg"
    warm = ("judge.temperature=0.7", "label.grade_probs=true")
    first = run_pipeline(CONFIG, out_dir=out, judge="openai:gpt-4.1-mini",
                         overrides=[*warm, "judge.output_mode=tool"])  # a tool call carries no log-probabilities
    assert first.judge_drift["status"] == "created"
    assert json.loads((out / "drift.json").read_text())["judge"]["grading"] == SAMPLES
    logprobs = run_pipeline(CONFIG, out_dir=out, judge="openai:gpt-4.1-mini", overrides=list(warm))
    drift = logprobs.judge_drift
    assert drift["status"] == "checked" and "grading" in drift["changed"]
    assert drift["old"]["grading"] == SAMPLES and drift["new"]["grading"] == LOGPROBS
    line = next(line for line in logprobs.summary if "drift" in line.lower() or "Judge changed" in line)
    assert f"grading '{SAMPLES}' -> '{LOGPROBS}'" in line
    again = run_pipeline(CONFIG, out_dir=out, judge="openai:gpt-4.1-mini", overrides=list(warm))
    assert again.judge_drift["status"] == "unchanged"
    history = read_history(out / "history.parquet")  # each recorded value says how its labels were made
    assert {row.judge for row in history} == {f"openai:gpt-4.1-mini · {SAMPLES}", f"openai:gpt-4.1-mini · {LOGPROBS}"}
    note = judges_note(history)
    assert note is not None and f"openai:gpt-4.1-mini · {SAMPLES}" in note and "do not compare" in note
