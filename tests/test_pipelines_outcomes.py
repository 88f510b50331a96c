"""The regression pipeline's downstream-weighted view ([outcomes], here the bundled sample's outcomes as
`labeller demo` gives them): the outcome rate kept in the history beside the metrics, and a gate that fails
when the task success today's retrieval predicts drops, and only then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeller.cli import main
from labeller.pipelines import run_pipeline
from labeller.pipelines.history import read_history

PIPELINES = Path(__file__).resolve().parent.parent / "pipelines"


OUTCOMES = f"outcomes.file={PIPELINES / 'sample' / 'outcomes.jsonl'}"


def run(out: Path, *overrides: str):
    return run_pipeline(PIPELINES / "regression.toml", out_dir=out, overrides=[OUTCOMES, *overrides])


def test_the_history_keeps_the_outcome_rate_and_a_broken_retriever_fails_the_downstream_gate(tmp_path):
    out = tmp_path / "reg"
    today = run(out)
    assert today.status == "passed"
    assert any(line.startswith("Outcomes (37 queries") for line in today.summary)
    assert any(line.startswith("DOWNSTREAM GATE passed") for line in today.summary)
    assert today.figures["outcome_rate"] == pytest.approx(35 / 37)
    check = next(c for c in today.checks if c.name.startswith("downstream gate"))
    assert check.status == "pass"
    report = json.loads((Path(today.reports["outcomes"]).parent / "result.json").read_text())
    assert report["format"] == "labeller-outcomes/1" and report["recommendation"]["predictive"]

    broken = run(out, "retriever.name=random")
    assert broken.status == "failed"
    assert any(line.startswith("DOWNSTREAM GATE FAILED") for line in broken.summary)
    assert next(c for c in broken.checks if c.name.startswith("downstream gate")).status == "fail"
    assert broken.figures["predicted_outcome_rate"] < today.figures["predicted_outcome_rate"] - 0.02
    history = read_history(out / "history.parquet")
    rates = {r.retriever: (r.outcome_rate, r.predicted_outcome_rate) for r in history}
    assert rates["bm25"] == (today.figures["outcome_rate"], today.figures["predicted_outcome_rate"])
    assert rates["random"][1] == broken.figures["predicted_outcome_rate"]
    latest = (out / "latest.md").read_text()
    assert "task success predicted (outcomes file)" in latest
    assert f"{broken.figures['predicted_outcome_rate']:.3f} ({today.figures['outcome_rate']:.3f})" in latest


def test_reported_only_when_fail_is_off(tmp_path):
    result = run(tmp_path / "reg", "retriever.name=random", "outcomes.fail=false", "evaluate.thresholds.ndcg@10=1",
                 "evaluate.thresholds.recall@10=1", "evaluate.thresholds.mrr@10=1")
    assert result.status == "passed"
    assert any(line.startswith("DOWNSTREAM GATE failed (reported only)") for line in result.summary)


def test_the_baseline_against_itself_moves_nothing(tmp_path):
    result = run(tmp_path / "reg", "retriever.name=bm25-desc")
    assert result.status == "passed" and result.figures["predicted_outcome_rate"] == pytest.approx(35 / 37, abs=0.05)
    assert any("drop +0.000" in line for line in result.summary)


def test_outcomes_all_alike_skip_the_downstream_gate_and_say_so(tmp_path):
    five = tmp_path / "five.jsonl"
    five.write_text("".join(line + "\n" for line in (PIPELINES / "sample" / "queries.jsonl").read_text().splitlines()
                            if json.loads(line)["query_id"] in ("q01", "q02", "q03", "q05", "q06")))
    result = run(tmp_path / "reg", f"inputs.queries={five}", "retriever.name=bm25-desc")
    assert result.status == "passed"
    assert any(line.startswith("DOWNSTREAM GATE not applied: every outcome is the same") for line in result.summary)
    assert next(c for c in result.checks if c.name.startswith("downstream gate")).status == "skip"


@pytest.mark.parametrize("setup, override, expected", [
    (lambda d: (d / "o.jsonl").write_text('{"query_id": "q01", "outcome": "perhaps"}\n'), "outcomes.file=o.jsonl",
     "o.jsonl:1: field 'outcome'"),
    (lambda d: (d / "o.jsonl").write_text('{"query_id": "x1", "outcome": "correct"}\n'), "outcomes.file=o.jsonl",
     "field 'outcomes.file': "),
    (lambda d: None, "outcomes.metric=ndcg@ten", "field 'outcomes.metric'"),
])
def test_a_bad_outcomes_section_stops_the_run_before_anything_is_labelled(tmp_path, monkeypatch, capsys, setup,
                                                                          override, expected):
    monkeypatch.chdir(tmp_path)
    setup(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["run", str(PIPELINES / "regression.toml"), "--out", str(tmp_path / "out"), "--set", override])
    assert done.value.code == 2 and expected in capsys.readouterr().err
    assert not (tmp_path / "out" / "labels.jsonl").exists()


def test_the_demo_shows_the_link_between_retrieval_and_the_categorisation_offline(tmp_path):
    from labeller.pipelines.demo import run_demo

    results, index = run_demo(tmp_path / "demo")
    regression = next(r for r in results if r.pipeline == "regression")
    page = Path(regression.reports["outcomes"])
    html = index.read_text()
    assert "Outcomes (37 queries, task success rate 0.946 with the baseline)" in html
    assert "DOWNSTREAM GATE passed" in html
    assert f'href="regression/reports/{page.parent.parent.name}/outcomes/index.html"' in html
    assert "What to gate on" in page.read_text()
