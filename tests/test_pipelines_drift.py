"""Judge drift in the regression pipeline, against the fake server with the real openai SDK: the same judge
is not checked, a judge that grades alike passes, one that grades differently (a model the fake maps to
reversed grades) is JUDGE DRIFT, reported apart from the retrieval gate, and fails the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeller.errors import BadInputError
from labeller.pipelines import run_pipeline
from labeller.pipelines.history import read_history

CONFIG = Path(__file__).resolve().parent.parent / "pipelines" / "regression.toml"
KEY = "sk-test-drift-0123456789"
OLD, ALIKE, REVERSED = "openai:gpt-4.1-mini", "openai:gpt-4o-mini", "openai:gpt-4.1-nano"


@pytest.fixture
def fake(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    api.model_grades = {"gpt-4.1-nano": lambda grade: 6 - grade}
    return api


def run(out: Path, judge: str, *overrides: str):
    return run_pipeline(CONFIG, out_dir=out, judge=judge, overrides=list(overrides))


def drift_line(result) -> str:
    return next(line for line in result.summary if "drift" in line.lower())


def test_first_run_stores_the_sample_and_the_same_judge_is_not_rechecked(tmp_path, fake):
    out = tmp_path / "reg"
    first = run(out, OLD)
    sample = json.loads((out / "drift.json").read_text())
    assert first.status == "passed" and first.judge_drift["status"] == "created"
    assert len(sample["verdicts"]) == 50 and sample["judge"]["model"] == "gpt-4.1-mini"
    assert len(sample["judge"]["rubric_hash"]) == 64 and "temperature" in sample["judge"]["settings"]
    fake.reset()
    again = run(out, OLD)
    assert again.status == "passed" and again.judge_drift["status"] == "unchanged" and fake.total == 0
    assert drift_line(again).startswith("No drift check")
    assert all(row.judge_drift is None for row in read_history(out / "history.parquet"))
    assert json.loads((out / "drift.json").read_text()) == sample  # the reference is untouched


def test_a_judge_that_grades_alike_passes_and_becomes_the_reference(tmp_path, fake):
    out = tmp_path / "reg"
    run(out, OLD)
    alike = run(out, ALIKE)
    assert alike.status == "passed" and alike.judge_drift["status"] == "checked"
    assert alike.judge_drift["kappa_quadratic"] == 1.0 and not alike.judge_drift["drifted"]
    assert alike.judge_drift["changed"] == ["model"]
    assert json.loads((out / "drift.json").read_text())["judge"]["model"] == "gpt-4o-mini"
    assert [c.status for c in alike.checks if c.name == "judge drift"] == ["pass"]


def test_a_judge_that_changed_a_lot_is_judge_drift_and_fails_apart_from_the_retrieval_gate(tmp_path, fake):
    out = tmp_path / "reg"
    run(out, OLD)
    drifted = run(out, REVERSED)
    assert drifted.status == "failed" and drifted.exit_code == 1
    d = drifted.judge_drift
    assert d["drifted"] and d["kappa_quadratic"] < 0 and d["n"] == 50 and not d["accepted"]
    assert drift_line(drifted).startswith("JUDGE DRIFT") and "gpt-4.1-mini -> gpt-4.1-nano" in drift_line(drifted)
    assert all(c.status == "pass" for c in drifted.checks if c.name != "judge drift")  # same retriever: gates pass
    assert "REGRESSION" not in " ".join(drifted.summary)
    assert [c.status for c in drifted.checks if c.name == "judge drift"] == ["fail"]
    assert drifted.figures["drift_kappa_quadratic"] == d["kappa_quadratic"]
    today = [r for r in read_history(out / "history.parquet") if r.judge == REVERSED]
    assert today and all(r.judge_drift and not r.regression for r in today)
    assert "## Judge drift" in (out / "latest.md").read_text()
    # the old reference is kept: the same drifted judge fails again until accepted
    assert run(out, REVERSED).status == "failed"
    accepted = run(out, REVERSED, "drift.accept=true")
    assert accepted.status == "passed" and accepted.judge_drift["accepted"]
    assert run(out, REVERSED).judge_drift["status"] == "unchanged"


def test_drift_on_a_small_sample_fails_and_fail_false_only_reports_it(tmp_path, fake):
    out = tmp_path / "reg"
    run(out, OLD, "drift.sample=4")
    small = run(out, REVERSED, "drift.sample=4")
    assert small.status == "failed" and small.judge_drift["n"] == 4 and small.judge_drift["drifted"]
    reported = run(out, REVERSED, "drift.sample=4", "drift.fail=false")
    assert reported.status == "passed" and reported.judge_drift["drifted"]
    assert "Not failing the run" in drift_line(reported)


def test_a_rubric_change_is_a_judge_change(tmp_path, fake):
    out = tmp_path / "reg"
    run(out, OLD)
    edited = tmp_path / "transactions-edited.md"
    from labeller.rubric import resolve_rubric_path

    edited.write_text(Path(resolve_rubric_path("transactions")).read_text() + "\nBe strict.\n")
    changed = run(out, OLD, f"judge.rubric={edited}")
    assert changed.judge_drift["status"] == "checked" and "rubric_hash" in changed.judge_drift["changed"]


def test_a_damaged_drift_sample_stops_the_run_before_anything_is_paid(tmp_path, fake):
    out = tmp_path / "reg"
    out.mkdir()
    (out / "drift.json").write_text("{not json")
    fake.reset()
    with pytest.raises(BadInputError, match="drift sample"):
        run(out, OLD)
    assert fake.total == 0 and (out / "drift.json").read_text() == "{not json"


def test_a_temperature_change_is_a_judge_change_and_a_samples_change_is_not(tmp_path, fake):
    out = tmp_path / "reg"
    run(out, OLD)
    warmer = run(out, OLD, "judge.temperature=0.7", "label.samples=3")
    # sampled labels are aggregates, not one verdict: how a label is made is named too (labelling.grading)
    assert warmer.judge_drift["status"] == "checked" and warmer.judge_drift["changed"] == ["settings", "grading"]
    assert '"temperature": 0.7' in json.loads((out / "drift.json").read_text())["judge"]["settings"]
    more = run(out, OLD, "judge.temperature=0.7", "label.samples=5", "label.aggregate=majority")
    assert more.judge_drift["status"] == "unchanged"


def test_another_model_behind_the_same_url_and_name_is_a_judge_change(tmp_path, fake):
    """llama-server answers to any name: a swapped GGUF behind the same URL and model name is another judge.
    Its /v1/models entry is part of the judge identity, as it is part of the cache key."""
    out = tmp_path / "reg"
    fake.served_model = "smollm2-135m-q8.gguf"
    assert run(out, OLD).judge_drift["status"] == "created"
    fake.served_model = "gemma-3-270m-q8.gguf"
    fake.model_grades = {"gpt-4.1-mini": lambda grade: 6 - grade}  # the new GGUF grades the other way round
    swapped = run(out, OLD)
    d = swapped.judge_drift
    assert d["status"] == "checked" and d["changed"] == ["served"] and d["drifted"] and swapped.exit_code == 1
    assert "gemma-3-270m" in (d["new"]["served"] or "") and "smollm2" in (d["old"]["served"] or "")
