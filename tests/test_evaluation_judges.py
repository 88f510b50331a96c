"""The judge is part of a figure's identity: evaluate names who made the labels, refuses a saved baseline
whose figures are on another judge's labels, and names a mix of judges in the gate's verdict."""

from __future__ import annotations

import json

from tests.cli_helpers import cli, jsonl

RUN = "".join(f"q{q} Q0 d{d} {d} {10 - d} sys\n" for q in range(1, 4) for d in range(1, 6))
WORSE = "".join(f"q{q} Q0 d{d} {d} {d} sys\n" for q in range(1, 4) for d in range(1, 6))


def labels(judge: str = "openai:gpt-4.1-mini", version: str = "v1", split: str | None = None) -> list[dict]:
    """Native label rows; with `split`, the pairs of q3 are labelled by that judge instead."""
    rows = []
    for q in range(1, 4):
        for d in range(1, 6):
            who = split if split and q == 3 else judge
            provider, model = who.split(":")
            rows.append({"query_id": f"q{q}", "doc_id": f"d{d}", "grade": 5 - d + 1 if d < 5 else 1,
                         "justification": "j", "judge": who, "provider": provider, "model": model,
                         "rubric": "general", "rubric_version": version, "cache_key": f"k{q}{d}",
                         "created_at": "2026-01-01T00:00:00+00:00"})
    return rows


def test_evaluation_names_the_judge_and_a_saved_baseline_from_another_judge_is_refused(tmp_path, capsys):
    (tmp_path / "run.trec").write_text(RUN)
    jsonl(tmp_path / "a.jsonl", labels())
    code, out, _ = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "a.jsonl", "--json")
    assert code in (0, None)
    saved = json.loads(out)
    assert saved["judges"] == ["openai:gpt-4.1-mini · rubric general v1"]
    (tmp_path / "saved.json").write_text(out)
    jsonl(tmp_path / "b.jsonl", labels(version="v2"))  # the same model under a new rubric version
    code, _, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "b.jsonl",
                       "--baseline", tmp_path / "saved.json")
    assert code == 2, err
    assert "labels by openai:gpt-4.1-mini · rubric general v1" in err and "rubric general v2" in err
    assert "not comparable" in err
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--labels", tmp_path / "a.jsonl",
                         "--baseline", tmp_path / "saved.json")
    assert code in (0, None), err  # the same judge: compared as before
    assert "(by openai:gpt-4.1-mini · rubric general v1)" in out


def test_a_gate_over_labels_of_two_judges_names_them_in_its_verdict(tmp_path, capsys):
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "worse.trec").write_text(WORSE)
    jsonl(tmp_path / "mixed.jsonl", labels(split="anthropic:claude-haiku-4-5"))
    args = ["evaluate", "--run", tmp_path / "worse.trec", "--baseline", tmp_path / "run.trec", "--labels",
            tmp_path / "mixed.jsonl", "--metrics", "ndcg@3", "--json"]
    code, out, err = cli(capsys, *args)
    result = json.loads(out)
    assert code == 1  # a clear drop on every query: the gate fails, and its verdict says whose labels
    assert result["gate"]["judges"] == ["openai:gpt-4.1-mini · rubric general v1",
                                        "anthropic:claude-haiku-4-5 · rubric general v1"]
    assert any("come from 2 judges or rubric versions" in w for w in result["gate"]["warnings"])
    code, out, err = cli(capsys, *args[:-1])
    assert "Regression gate: FAILED** against `baseline:run` on labels by openai:gpt-4.1-mini" in out
    code, out, err = cli(capsys, "evaluate", "--run", tmp_path / "run.trec", "--baseline", tmp_path / "run.trec",
                         "--labels", tmp_path / "mixed.jsonl", "--metrics", "ndcg@3")
    assert code in (0, None)
    assert "**and the labels mix 2 judges or rubric versions**" in out
    assert "labeller: warning: the labels come from 2 judges" in err


def test_regression_pipeline_with_gold_gates_on_corrected_figures_and_names_other_judges(tmp_path):
    from labeller.pipelines import run_pipeline
    from tests.test_pipelines import PIPELINES

    gold = PIPELINES.parent / "gold" / "transactions.jsonl"
    out = tmp_path / "reg"
    first = run_pipeline(PIPELINES / "regression.toml", out_dir=out, overrides=[f"evaluate.gold={gold}",
                                                                                 "evaluate.corrected=true"])
    latest = (out / "latest.md").read_text()
    assert "### Corrected for the judge's error" in latest
    assert "decided on figures corrected for the judge's error" in latest
    assert first.status in ("passed", "failed")
    broken = run_pipeline(PIPELINES / "regression.toml", out_dir=out,
                          overrides=[f"evaluate.gold={gold}", "evaluate.corrected=true", "retriever.name=random",
                                     "judge.rubric=general"])
    assert broken.status == "failed" and broken.exit_code == 1
    latest = (out / "latest.md").read_text()
    assert "runs were recorded on labels by another judge or rubric version" in latest
    assert "decided on figures corrected" in latest


def test_corrected_pipeline_gate_needs_gold(tmp_path):
    import pytest

    from labeller.errors import ConfigError
    from labeller.pipelines import load_config
    from tests.test_pipelines import PIPELINES

    with pytest.raises(ConfigError) as err:
        load_config(PIPELINES / "regression.toml", ["evaluate.corrected=true"], out_dir=tmp_path)
    assert "set evaluate.gold" in str(err.value) and err.value.field == "evaluate.corrected"


def test_gold_pairs_that_are_the_rubrics_worked_examples_are_named(tmp_path, capsys):
    """gold/transactions-tuning.jsonl holds the transactions rubric's worked examples: as gold for labels
    graded under that rubric they are not a sample of what the judge grades unaided."""
    from tests.test_pipelines import PIPELINES

    out = tmp_path / "reg"
    from labeller.pipelines import run_pipeline

    run_pipeline(PIPELINES / "regression.toml", out_dir=out)
    tuning = PIPELINES.parent / "gold" / "transactions-tuning.jsonl"
    code, stdout, err = cli(capsys, "evaluate", "--run", PIPELINES / "sample" / "baseline.trec", "--labels",
                            out / "labels.jsonl", "--gold", tuning)
    assert "worked examples of rubric 'transactions'" in err and "flatter it" in stdout
