"""The three pipelines on the bundled sample, with the offline judge, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeller.cli import main
from labeller.errors import ConfigError
from labeller.pipelines import load_config, run_pipeline
from labeller.pipelines.demo import run_demo
from labeller.pipelines.history import read_history

PIPELINES = Path(__file__).resolve().parent.parent / "pipelines"


def run(name: str, out: Path, *overrides: str, **kwargs):
    return run_pipeline(PIPELINES / f"{name}.toml", out_dir=out, overrides=list(overrides), **kwargs)


def lines_without_provenance(path: str) -> list[dict]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "from_cache"} for r in rows]


def test_label_slice_twice_sends_nothing_the_second_time(tmp_path):
    first = run("label_slice", tmp_path / "slice")
    second = run("label_slice", tmp_path / "slice")
    assert first.status == second.status == "passed"
    assert first.judge_requests == first.figures["labelled"] == 410  # 41 queries x top 10
    assert second.judge_requests == 0 and second.figures["cached"] == 410
    labels = tmp_path / "slice" / "labels.jsonl"
    assert all(json.loads(line)["from_cache"] for line in labels.read_text().splitlines())
    assert "Grade distribution" in (tmp_path / "slice" / "report.html").read_text()


def test_validate_prompt_prefers_the_rubric_that_shows_the_category(tmp_path):
    first = run("validate_prompt", tmp_path / "v")
    second = run("validate_prompt", tmp_path / "v")
    assert first.status == "passed" and first.figures["kappa_new"] > first.figures["kappa_old"]
    assert first.figures["n"] == 190 and first.figures["fixed"] > first.figures["broken"]
    assert second.judge_requests == 0 and second.figures == first.figures
    assert "<table class=\"heat\"" in (tmp_path / "v" / "agreement" / "agreement.html").read_text()


def test_validate_prompt_fails_when_the_new_rubric_is_worse(tmp_path):
    swapped = run("validate_prompt", tmp_path / "v", "old_rubric=transactions",
                  f"new_rubric={PIPELINES / 'sample' / 'transactions-v0.md'}")
    assert swapped.status == "failed" and swapped.exit_code == 1
    assert swapped.figures["kappa_new"] < swapped.figures["kappa_old"]


def test_regression_passes_unchanged_fails_broken_and_keeps_history(tmp_path):
    out = tmp_path / "reg"
    today = run("regression", out)
    again = run("regression", out)
    broken = run("regression", out, "retriever.name=random")
    assert today.status == again.status == "passed"
    assert again.judge_requests == 0 and again.figures == today.figures
    assert broken.status == "failed" and broken.exit_code == 1
    assert broken.figures["ndcg@10"] < today.figures["ndcg@10"] - 0.2
    history = read_history(out / "history.parquet")
    assert len({r.run_at for r in history}) == 3 and {r.retriever for r in history} == {"bm25", "random"}
    assert len(list((out / "reports").iterdir())) == 3  # one dated report per run, none overwritten
    assert any(r.regression for r in history if r.retriever == "random")
    assert not any(r.regression for r in history if r.retriever == "bm25")
    assert "Metrics over time" in (out / "trend.html").read_text()
    assert "Regression gate" in (out / "latest.md").read_text()


def test_regression_against_itself_is_quiet(tmp_path):
    """The stored baseline is bm25-desc's run: the same retriever today is an unchanged run."""
    result = run("regression", tmp_path / "reg", "retriever.name=bm25-desc")
    assert result.status == "passed"
    history = read_history(tmp_path / "reg" / "history.parquet")
    assert history and all(r.value == r.baseline_value and not r.regression for r in history)


def test_demo_writes_an_index_linking_every_report(tmp_path):
    results, index = run_demo(tmp_path / "demo")
    assert [r.pipeline for r in results] == ["label_slice", "validate_prompt", "regression"]
    html = index.read_text()
    assert "not an LLM" in html
    for r in results:
        for path in r.reports.values():
            assert Path(path).is_file(), path


def test_run_command_exit_codes(tmp_path, capsys):
    with pytest.raises(SystemExit) as ok:
        main(["run", str(PIPELINES / "regression.toml"), "--out", str(tmp_path / "r")])
    with pytest.raises(SystemExit) as broken:
        main(["run", str(PIPELINES / "regression.toml"), "--out", str(tmp_path / "r"), "--set", "retriever.name=random"])
    assert (ok.value.code, broken.value.code) == (0, 1)
    assert "REGRESSION" in capsys.readouterr().out


def test_bad_configs_name_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('pipeline = "regression"\n[inputs]\nqueries = "q.jsonl"\ncorpus = "c.jsonl"\n[retriever]\ndepht = 3\n')
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    assert "bad.toml" in str(err.value) and "retriever.depht" in str(err.value)
    bad.write_text("pipeline = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="not KEY=VALUE"):
        load_config(PIPELINES / "regression.toml", ["retriever.name"])
    with pytest.raises(SystemExit) as code:
        main(["run", str(tmp_path / "missing.toml")])
    assert code.value.code == 2


def test_relative_paths_resolve_against_the_config(tmp_path):
    cfg = load_config(PIPELINES / "regression.toml", out_dir=tmp_path)
    assert cfg.inputs.queries == PIPELINES / "sample" / "queries.jsonl"
    assert cfg.baseline.run == PIPELINES / "sample" / "baseline.trec"
    assert cfg.output.dir == tmp_path.resolve()


def test_demo_pipelines_run_with_a_real_llm_client(tmp_path, api, monkeypatch):
    """`--judge openai:...` drives the real openai SDK (here against the fake API); a rerun sends nothing."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelines-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    first = run("validate_prompt", tmp_path / "v", judge="openai:gpt-4.1-mini")
    sent = api.total
    second = run("validate_prompt", tmp_path / "v", judge="openai:gpt-4.1-mini")
    assert sent == first.judge_requests == 2 * 190 and api.total == sent and second.judge_requests == 0
    assert second.figures == first.figures
    labels = (tmp_path / "v" / "labels-new.jsonl").read_text()
    assert '"judge": "openai:gpt-4.1-mini"' in labels and "sk-test-pipelines" not in labels
