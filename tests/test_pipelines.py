"""The shipped pipelines on the bundled sample, with the offline judge, end to end."""

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
    assert [r.pipeline for r in results] == ["label_slice", "validate_prompt", "regression", "answers"]
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


@pytest.mark.parametrize("override, field, message", [
    ("inputs=\"x\"", "inputs", "expected a table"),
    ("retriever.name=nosuch", "retriever.name", "unknown retriever 'nosuch'"),
    ("baseline.retriever=nosuch", "baseline.retriever", "unknown retriever 'nosuch'"),
    ("judge.spec=openai", "judge.spec", "unknown judge 'openai'"),
    ("evaluate.metrics=[\"ndcg@10\",\"recal@10\"]", "evaluate.metrics", "unknown metric 'recal@10'"),
    ("evaluate.thresholds.x=0.1", "evaluate.thresholds", "threshold for 'x'"),
    ("output.cache=ftp://h/labels", "output.cache", "unknown store scheme 'ftp://'"),
])
def test_a_bad_name_in_a_config_is_reported_against_the_file_and_key(override, field, message):
    with pytest.raises(ConfigError) as err:
        load_config(PIPELINES / "regression.toml", [override])
    assert (err.value.path, err.value.field) == (str(PIPELINES / "regression.toml"), field)
    assert message in str(err.value)


def test_relative_paths_resolve_against_the_config(tmp_path):
    cfg = load_config(PIPELINES / "regression.toml", out_dir=tmp_path)
    assert cfg.inputs.queries == PIPELINES / "sample" / "queries.jsonl"
    assert cfg.baseline.run == PIPELINES / "sample" / "baseline.trec"
    assert cfg.output.dir == tmp_path.resolve()


def test_a_path_given_with_set_is_relative_to_where_the_command_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load_config(PIPELINES / "regression.toml", ["inputs.queries=mine/q.jsonl", "judge.rubric=my-rubric.md",
                                                      "retriever.name=bm25-weak"])
    assert cfg.inputs.queries == tmp_path.resolve() / "mine" / "q.jsonl"
    assert cfg.judge.rubric == str(tmp_path.resolve() / "my-rubric.md")
    assert cfg.inputs.corpus == PIPELINES / "sample" / "corpus.jsonl"  # the file's own paths: its folder


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
    assert '"judge":"openai:gpt-4.1-mini"' in labels and "sk-test-pipelines" not in labels


def test_pairs_that_cannot_be_labelled_fail_the_pipeline_but_keep_every_report(tmp_path, api, monkeypatch):
    """A few stubborn pairs: the summary, labels and reports are still written, the status is failed
    (exit 1), and a rerun once the judge recovers sends only those pairs."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelines-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    api.poison["A4 copier paper 80gsm"] = "malformed"  # q01's description: its pairs never get a valid reply
    first = run("label_slice", tmp_path / "s", judge="openai:gpt-4.1-mini")
    assert first.status == "failed" and first.exit_code == 1
    failed = first.figures["failed"]
    assert 0 < failed < 410 and first.figures["labelled"] == 410 - failed
    assert any(line.startswith(f"FAILED: {failed} pair") for line in first.summary)
    assert Path(first.reports["label slice"]).is_file() and (tmp_path / "s" / "labels.failures.jsonl").is_file()
    api.poison.clear()
    api.reset()
    second = run("label_slice", tmp_path / "s", judge="openai:gpt-4.1-mini")
    assert second.status == "passed" and second.judge_requests == api.total == failed
    assert not (tmp_path / "s" / "labels.failures.jsonl").exists()


def test_a_missing_api_key_stops_a_pipeline_before_it_writes_anything(tmp_path, capsys):
    out = tmp_path / "reg"
    with pytest.raises(SystemExit) as code:  # conftest unsets every *_API_KEY
        main(["run", str(PIPELINES / "regression.toml"), "--out", str(out), "--judge", "anthropic:claude-haiku-4-5"])
    assert code.value.code == 2 and "set the ANTHROPIC_API_KEY environment variable" in capsys.readouterr().err
    assert not out.exists()


def test_label_slice_with_label_batch_true_goes_through_the_batch_api(tmp_path, api, monkeypatch):
    """`[label] batch = true` (here as --set overrides): every pair through the fake's batch API, none synchronous."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelines-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    first = run("label_slice", tmp_path / "s", "label.batch=true", "label.poll_interval=0.05",
                judge="openai:gpt-4.1-mini")
    assert first.status == "passed" and first.figures["labelled"] == 410
    assert api.counts["/v1/chat/completions"] == 0 and api.counts["/v1/batches"] == 1
    assert sum(api.batched.values()) == 410 and api.batched_twice == 0
    api.reset()
    second = run("label_slice", tmp_path / "s", "label.batch=true", judge="openai:gpt-4.1-mini")
    assert second.figures["cached"] == 410 and api.total == 0
    with pytest.raises(ConfigError, match="label"):
        load_config(PIPELINES / "label_slice.toml", ["label.batch=perhaps"])


def test_a_pipeline_labels_into_a_postgres_store_given_in_its_config_or_the_environment(tmp_path, monkeypatch,
                                                                                       postgres_url):
    monkeypatch.chdir(tmp_path)
    cfg = load_config(PIPELINES / "label_slice.toml", [f"output.cache={postgres_url}"], out_dir=tmp_path / "a")
    assert cfg.cache_dir == postgres_url  # a URL is not resolved into a path
    first = run("label_slice", tmp_path / "a", f"output.cache={postgres_url}")
    assert first.judge_requests == 410
    monkeypatch.setenv("LABELLER_CACHE", postgres_url)
    second = run("label_slice", tmp_path / "b")  # no cache in the config: the environment's store
    assert second.judge_requests == 0 and second.figures["cached"] == 410
    assert not (tmp_path / ".labeller-cache").exists() and not any(tmp_path.glob("postgres*"))


def _beir_folder(root: Path) -> Path:
    """A tiny dataset in the BEIR layout: corpus.jsonl (_id, title, text), queries.jsonl, qrels/test.tsv."""
    (root / "qrels").mkdir(parents=True)
    docs = [("b1", "Water", "Thames Water quarterly water rates"), ("b2", "Power", "Octopus electricity bill"),
            ("b3", "Paper", "A4 copier paper box")]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "bq1", "text": "water rates"}) + "\n"
                                        + json.dumps({"_id": "bq2", "text": "electricity bill"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nbq1\tb1\t1\nbq2\tb2\t1\n")
    return root


def test_a_pipeline_reads_a_beir_folder_named_in_its_inputs(tmp_path):
    beir = _beir_folder(tmp_path / "data" / "tiny")
    config = tmp_path / "slice.toml"
    config.write_text('pipeline = "label_slice"\n[inputs]\nbeir = "data/tiny"\n[retriever]\nname = "bm25"\ndepth = 2\n'
                      '[judge]\nrubric = "general"\n[output]\ndir = "out"\ncache = "cache"\n')
    cfg = load_config(config)
    assert (cfg.inputs.queries, cfg.inputs.corpus, cfg.inputs.gold) == (
        beir / "queries.jsonl", beir / "corpus.jsonl", beir / "qrels" / "test.tsv")
    result = run_pipeline(config)
    assert result.status == "passed", result
    labels = [json.loads(line) for line in (tmp_path / "out" / "labels.jsonl").read_text().splitlines()]
    # bm25 returns only the documents sharing a word with the query: one each here.
    assert sorted((row["query_id"], row["doc_id"]) for row in labels) == [("bq1", "b1"), ("bq2", "b2")]
    # An explicit file wins over the folder's; a folder that is not there is reported against its key.
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"query_id": "m1", "text": "paper"}) + "\n")
    assert load_config(config, [f"inputs.queries={mine}"]).inputs.queries == mine
    with pytest.raises(ConfigError) as err:
        load_config(config, ["inputs.beir=nowhere"])
    assert err.value.field == "inputs.beir" and "not a directory" in str(err.value)
def test_label_slice_with_label_samples_writes_the_sample_columns(tmp_path, monkeypatch):
    """`[label] samples = 3` with `[judge] temperature` (as --set overrides): 3 requests per pair, the aggregate written."""
    from fakeapi import FakeAPI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelines-0123456789")
    with FakeAPI(noise=0.3) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
        result = run("label_slice", tmp_path / "s", "label.samples=3", "judge.temperature=0.7",
                     judge="openai:gpt-4.1-mini")
        assert result.status == "passed" and api.total == 3 * 410
    rows = [json.loads(line) for line in (tmp_path / "s" / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == 410 and all(r["samples"] == 3 and len(r["sample_grades"]) == 3 for r in rows)
    assert any(r["sample_agreement"] < 1 for r in rows)
    with pytest.raises(ConfigError, match="samples"):
        load_config(PIPELINES / "label_slice.toml", ["label.samples=0"])
