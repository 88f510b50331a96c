"""evaluate, compare: labels and runs in (DataFrames, dicts or paths), results with frames out.

They run `labeller.evaluation.evaluate`, the function `labeller evaluate` runs, so a notebook gets
the very figures the command line prints with --json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labeller.api.sources import Source, sources
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
    from labeller.io.columns import column_mapping

    named = runs.items() if isinstance(runs, dict) else [(None, r) for r in runs]
    with sources() as held, column_mapping(columns):
        paths = [held.add(source, "run", name if name is not None or isinstance(source, (str, Path)) else "run")
                 for name, source in named]
        for role in ("labels_alt", "gold", "gold_sample"):  # second judgments, people's grades, the frozen sample they
            # were graded from: a frame or dict as well as a path
            if options.get(role) is not None:
                options[role] = held.add(options[role], role)
        ev = run_evaluation(EvaluateOptions(
            runs=paths, labels=held.add(labels, "labels"), metrics=metrics if isinstance(metrics, str)
            else ",".join(metrics), baseline=None if baseline is None else held.add(baseline, "baseline",
                                                                                    "baseline"), **options))
        return EvaluationResult.model_validate_json(held.shown(ev.model_dump_json()))
