"""The regression pipeline's history and gate on the bundled sample, with the offline judge: stored runs
rescored on the current labels, vanished queries counted, small query sets, nothing comparable."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

from labeller.cli import main
from labeller.io.inputs import read_queries
from labeller.pipelines import load_config, run_pipeline
from labeller.pipelines.history import read_history
from labeller.retrieval import make_retriever
from labeller.retrieval import registry as retrievers

PIPELINES = Path(__file__).resolve().parent.parent / "pipelines"
SAMPLE = PIPELINES / "sample"
CONFIG = PIPELINES / "regression.toml"


def run(out: Path, *overrides: str):
    return run_pipeline(CONFIG, out_dir=out, overrides=list(overrides))


def rows_of(history, retriever: str, metric: str):
    [row] = [r for r in history if r.retriever == retriever and r.metric == metric]
    return row


def pytrec_mean(labels: Path, run_file: Path, measure: str, relevant_from: int) -> float:
    """pytrec_eval's mean over the queries with a relevant label, a query the run lacks scoring 0 (trec_eval -c)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in labels.read_text().splitlines():
        row = json.loads(line)
        qrels.setdefault(row["query_id"], {})[row["doc_id"]] = row["grade"] - 1
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, did, _, score, _ = line.split()
        run.setdefault(qid, {})[did] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=relevant_from - 1)
    per_query = evaluator.evaluate({q: d for q, d in run.items() if q in qrels})
    answerable = [q for q, docs in qrels.items() if any(g >= relevant_from - 1 for g in docs.values())]
    return sum(per_query.get(q, {}).get(measure, 0.0) for q in answerable) / len(answerable)


def test_the_stored_baseline_gets_one_rescored_value_whatever_ran_beside_it(tmp_path):
    out = tmp_path / "reg"
    results = [run(out, f"retriever.name={name}") for name in ("bm25", "random", "bm25-weak")]
    assert [r.status for r in results] == ["passed", "failed", "failed"]
    history = read_history(out / "history.parquet")
    assert len(history) == 9  # 3 runs x 3 metrics
    stored = sorted(p.name for p in (out / "history" / "runs").iterdir())
    assert len(stored) == 4 and sum(name.startswith("baseline-") for name in stored) == 1
    for metric in ("ndcg@10", "recall@10", "mrr@10"):
        rows = [r for r in history if r.metric == metric]
        assert len({r.rescored_baseline_value for r in rows}) == 1, metric  # one number, whatever ran beside it
        assert len({r.rescored_labels for r in rows}) == 1
        assert all(r.rescored_judged == 1.0 and r.rescored_baseline_judged == 1.0 for r in rows)
    # As recorded, the same baseline's recall moved with the pool of the day; rescored, it does not.
    recorded = [rows_of(history, name, "recall@10").baseline_value for name in ("bm25", "random", "bm25-weak")]
    assert len(set(recorded)) == 3 and max(recorded) - min(recorded) > 0.1
    # mrr reads only each run's own (fully labelled) top 10: the pool cannot move it.
    assert all(r.rescored_value == r.value and r.rescored_baseline_value == r.baseline_value
               for r in history if r.metric == "mrr@10")
    # The last run was scored on today's labels: recorded and rescored agree; the first run's recall fell.
    assert all(r.rescored_value == r.value for r in history if r.retriever == "bm25-weak")
    first = rows_of(history, "bm25", "recall@10")
    assert first.rescored_value < first.value - 0.1
    # The rescored baseline is what pytrec_eval gives for the stored baseline on the final labels.
    baseline_file = out / first.baseline_file
    labels = out / "labels.jsonl"
    assert first.rescored_baseline_value == pytest.approx(pytrec_mean(labels, baseline_file, "recall_10", 4), abs=1e-9)
    assert rows_of(history, "bm25", "ndcg@10").rescored_baseline_value == pytest.approx(
        pytrec_mean(labels, baseline_file, "ndcg_cut_10", 4), abs=1e-9)
    assert any("the labels changed, so every stored run was rescored" in line for line in results[2].summary)
    trend = (out / "trend.html").read_text()
    assert "rescored on today&#39;s labels" in trend and "as recorded" in trend and "judged@k" in trend
    latest = (out / "latest.md").read_text()
    assert "### History (rescored on today's labels)" in latest
    assert "Pool-dependent: ndcg@10" in latest and "Not pool-dependent: mrr@10" in latest


def test_unchanged_labels_leave_the_history_alone_and_a_lost_run_file_is_said(tmp_path):
    out = tmp_path / "reg"
    run(out)
    second = run(out)
    assert any("labels unchanged since the last rescoring" in line for line in second.summary)
    history = read_history(out / "history.parquet")
    (out / history[0].run_file).unlink()
    third = run(out, "retriever.name=random")  # new pairs: the labels grow, every stored run is rescored
    assert any("1 stored run file missing: not rescored" in line for line in third.summary)
    history = read_history(out / "history.parquet")
    lost = [r for r in history if r.run_file == history[0].run_file]
    assert lost and all(r.rescored_value is None and r.value is not None for r in lost)
    assert "have no rescored value" in (out / "trend.html").read_text()


def test_a_history_from_before_stored_runs_is_kept_and_extended(tmp_path):
    out = tmp_path / "reg"
    out.mkdir()
    legacy = [{"run_at": "2026-01-01T03:17:00+00:00", "retriever": "bm25", "metric": m, "value": 0.5,
               "baseline_value": 0.5, "judge": "offline:lexical", "rubric_version": "v1", "regression": False}
              for m in ("ndcg@10", "recall@10", "mrr@10")]
    pd.DataFrame(legacy).to_parquet(out / "history.parquet", index=False)
    result = run(out)
    assert result.status == "passed"
    history = read_history(out / "history.parquet")
    assert len(history) == 6 and [r.value for r in history[:3]] == [0.5, 0.5, 0.5]
    assert all(r.rescored_value is None for r in history[:3])
    assert all(r.rescored_value is not None for r in history[3:])


@pytest.fixture
def vanishing_retriever(monkeypatch):
    """bm25-desc (the baseline's retriever) that returns nothing for a fifth of the sample's queries."""
    queries = sorted(read_queries(SAMPLE / "queries.jsonl").values(), key=lambda q: q.query_id)
    dropped = {q.query_id for q in queries[::5]}

    class Vanishing:
        def __init__(self, corpus, *, name: str):
            self.name, self.inner = name, make_retriever("bm25-desc", corpus)
            self.dropped_texts = {self.inner.query_text(q) for q in queries if q.query_id in dropped}

        def query_text(self, query):
            return self.inner.query_text(query)

        def search(self, text, k):
            return [] if text in self.dropped_texts else self.inner.search(text, k)

    monkeypatch.setitem(retrievers._REGISTRY, "bm25-desc-vanishing", (Vanishing, {}, "test: drops queries"))
    return dropped


def test_a_candidate_that_stops_answering_queries_fails_the_gate(tmp_path, vanishing_retriever):
    unchanged = run(tmp_path / "same", "retriever.name=bm25-desc")
    vanished = run(tmp_path / "gone", "retriever.name=bm25-desc-vanishing")
    assert unchanged.status == "passed"
    assert vanished.status == "failed" and vanished.exit_code == 1
    lines = "\n".join(vanished.summary)
    assert "averaging 'all': a query the run returns nothing for scores 0" in lines
    assert "REGRESSION" in lines
    # Averaged over the same queries as the unchanged run: the vanished ones count, as zeros.
    averaged = [line for line in unchanged.summary if line.startswith("Retriever")][0].split(" on ")[1].split(" (")[0]
    assert f" on {averaged} (" in lines
    assert vanished.figures["ndcg@10"] < unchanged.figures["ndcg@10"] - 0.1


def test_evaluate_average_is_a_config_field(tmp_path):
    assert load_config(CONFIG).evaluate.average == "all"
    assert load_config(CONFIG, ["evaluate.average=trec"]).evaluate.average == "trec"


@pytest.fixture
def five_queries(tmp_path) -> Path:
    path = tmp_path / "q5.jsonl"
    path.write_text("".join((SAMPLE / "queries.jsonl").read_text().splitlines(keepends=True)[:5]))
    return path


def test_five_queries_a_clearly_worse_candidate_fails_and_an_unchanged_one_passes(tmp_path, five_queries, capsys):
    """Five queries: a two-sided exact test cannot go below p = 0.0625, so the gate must not depend on it."""
    base = ["run", str(CONFIG), "--set", f"inputs.queries={five_queries}"]
    with pytest.raises(SystemExit) as broken:
        main([*base, "--out", str(tmp_path / "r"), "--set", "retriever.name=random"])
    broken_out = capsys.readouterr().out
    with pytest.raises(SystemExit) as same:
        main([*base, "--out", str(tmp_path / "s"), "--set", "retriever.name=bm25-desc"])
    same_out = capsys.readouterr().out
    assert broken.value.code == 1, broken_out
    assert "REGRESSION" in broken_out or "GATE FAILED" in broken_out
    assert same.value.code == 0, same_out
    assert "on 5 queries" in same_out or "on 4 queries" in same_out  # the 5 queries, less any no-answer one
    assert "pairs left out: query or document not in today's inputs" in same_out  # the baseline's other 36 queries


def test_every_grade_below_relevant_from_fails_as_nothing_comparable_and_writes_every_report(tmp_path):
    queries = tmp_path / "unanswerable.jsonl"
    queries.write_text("".join(json.dumps({"query_id": f"z{i}", "text": t}) + "\n" for i, t in enumerate(
        ["zebra migration patterns copier", "volcano eruption forecast ink", "glacier retreat measurement monitor"])))
    out = tmp_path / "reg"
    result = run_pipeline(CONFIG, out_dir=out, overrides=[
        f"inputs.queries={queries}", "judge.rubric=general", "evaluate.relevant_from=3",
        f"baseline.run={tmp_path / 'baseline.trec'}", "baseline.retriever=bm25", "retriever.name=random"])
    grades = {json.loads(line)["grade"] for line in (out / "labels.jsonl").read_text().splitlines()}
    assert grades and max(grades) < 3  # the premise: no label reaches relevant_from
    assert result.status == "failed" and result.exit_code == 1
    assert any(line.startswith("GATE FAILED: ") for line in result.summary), result.summary
    for path in result.reports.values():
        assert Path(path).is_file(), path
    assert (out / "trend.html").is_file() and (out / "latest.md").is_file()
    history = read_history(out / "history.parquet")
    assert len(history) == 3 and all(r.value is None and r.regression for r in history)


def test_an_empty_history_still_draws_its_trend_page():
    """The chart used to index the first x label of an empty history (IndexError: no trend, no summary)."""
    from labeller.evaluation.metrics import parse_metrics
    from labeller.pipelines.trend import history_markdown, trend_page

    html = trend_page([], parse_metrics(["ndcg@10", "mrr@10"]), "no runs")
    # one empty panel per metric (axes only), besides the legend's samples
    import re
    assert re.findall(r'<svg[^>]*aria-label="([^"]+)"', html).count("ndcg@10") == 1 and "0 runs recorded" in html
    assert re.findall(r'<svg[^>]*aria-label="([^"]+)"', html).count("mrr@10") == 1
    assert "Pool-dependent: ndcg@10" in history_markdown([], parse_metrics(["ndcg@10"]))


def test_three_queries_fail_on_the_threshold_alone_unless_the_config_opts_out_and_then_say_so(tmp_path):
    """Three queries: no test can reach p < 0.05 (1/8 at best). The drop decides, unless
    evaluate.require_significance is set: then the run passes, with a warning naming every ungated drop."""
    queries = tmp_path / "q3.jsonl"
    queries.write_text("".join((SAMPLE / "queries.jsonl").read_text().splitlines(keepends=True)[:3]))
    base = [f"inputs.queries={queries}", "retriever.name=random"]
    strict = run(tmp_path / "strict", *base)
    opted = run(tmp_path / "opted", *base, "evaluate.require_significance=true")
    assert strict.status == "failed"
    assert "too few queries for significance; decided by the threshold alone" in "\n".join(strict.summary)
    assert opted.status == "passed"
    verdict = [line for line in opted.summary if line.startswith("No significant") or line.startswith("Passed")]
    assert verdict and "WARNING: ndcg@10 of" in verdict[0] and "was not gated" in verdict[0]
