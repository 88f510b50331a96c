"""evaluate, compare: labels and runs in (DataFrames, dicts or paths), results with frames out.

They run `labeller.evaluation.evaluate`, the function `labeller evaluate` runs, so a notebook gets
the very figures the command line prints with --json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labeller.api.sources import Source, api_errors, readable
from labeller.evaluation.results import Evaluation


class EvaluationResult(Evaluation):
    """`labeller evaluate --json`, plus frames: metrics per run, per-query values, paired comparisons."""

    def to_frame(self):
        """One row per run: its name, then one column per metric (the mean over averaged queries)."""
        import pandas as pd

        return pd.DataFrame([{"run": name, **scores.metrics} for name, scores in self.runs.items()]).set_index("run")

    def per_query_frame(self):
        """Long format: run, metric, query_id, value, for every evaluated query of every run."""
        import pandas as pd

        rows = [(name, metric, qid, value) for name, scores in self.runs.items()
                for metric, values in scores.per_query.items() for qid, value in values.items()]
        return pd.DataFrame(rows, columns=["run", "metric", "query_id", "value"])

    def comparisons_frame(self):
        """One row per (reference, run, metric): means, difference, interval, p-values, wins and losses,
        and the gate's verdict when there was a baseline."""
        import pandas as pd

        verdicts = {(c.run, c.metric): c.verdict for c in self.gate.checks} if self.gate else {}
        rows = [{"reference": c.reference, "run": c.run, **t.model_dump(), "verdict": verdicts.get((c.run, t.metric))}
                for c in self.comparisons for t in c.tests]
        return pd.DataFrame(rows)


def evaluate(labels: Source, run: Source, metrics: str | list[str] = "ndcg@10,recall@100,mrr@10", *,
             baseline: Source | None = None, columns: dict[str, str] | str | None = None,
             **options: Any) -> EvaluationResult:
    """Score one run with graded labels, as `labeller evaluate` does: `result.metrics` ({name: mean}),
    `.to_frame()`, `.per_query_frame()`. Metric names as on the command line (ndcg@10, recall@100, mrr,
    or trec_eval's ndcg_cut_10, P_10, recip_rank). A run is a DataFrame (query_id, doc_id, score), a
    {query_id: {doc_id: score}} dict or ranx Run, or a file; labels a DataFrame, dict (qrels) or file.
    `options` are EvaluateOptions' (relevant_from, from_scale, gain, average, thresholds, alpha, ...)."""
    return compare(labels, [run], metrics, baseline=baseline, columns=columns, **options)


def compare(labels: Source, runs: dict[str, Source] | list[Source], metrics: str | list[str] =
            "ndcg@10,recall@100,mrr@10", *, baseline: Source | None = None,
            columns: dict[str, str] | str | None = None, **options: Any) -> EvaluationResult:
    """Score several runs and compare each with the reference (the `baseline` if given, else the first
    run): paired t-test and randomization test, bootstrap intervals, wins and losses
    (`.comparisons_frame()`); with a baseline, the regression gate (`result.gate.passed`). A dict names
    the runs; a list takes each name from its file (run, run#2, ... for in-memory runs)."""
    from labeller.evaluation import EvaluateOptions
    from labeller.evaluation import evaluate as run_evaluation
    from labeller.evaluation.runs import run_name
    from labeller.io.columns import column_mapping

    named = list(runs.items()) if isinstance(runs, dict) else [(None, r) for r in runs]
    # a dict's keys name its runs; a list's paths are named by their files, its frames "run" (run#2, ...)
    names = [name if name is not None else run_name(source) if isinstance(source, (str, Path)) else "run"
             for name, source in named]
    with api_errors(), column_mapping(columns):
        for role in ("labels_alt", "gold", "gold_sample"):  # second judgments, people's grades, the frozen sample they
            # were graded from: a frame or dict as well as a path
            options[role] = readable(options.get(role), role)
        ev = run_evaluation(EvaluateOptions(
            runs=[readable(source, "run", name) for (_, source), name in zip(named, names)], run_names=names,
            labels=readable(labels, "labels"), metrics=metrics if isinstance(metrics, str) else ",".join(metrics),
            baseline=readable(baseline, "baseline", "baseline"),
            baseline_name=None if baseline is None else "baseline", **options))
        return EvaluationResult.model_validate(ev.model_dump())
