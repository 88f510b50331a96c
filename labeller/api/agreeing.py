"""agree: the judge's labels against human gold, as `labeller agree` computes it (the CLI calls this)."""

from __future__ import annotations

from typing import Any

from labeller.api.sources import Source, api_errors, readable


def agree(labels: Source, gold: Source, *, baseline: Source | None = None, queries: Source | None = None,
          corpus: Source | None = None, columns: dict[str, str] | str | None = None, **options: Any):
    """The judge's labels against human gold: an AgreeResult (kappa, alpha, intervals, confusion, ...; the
    figures of `labeller agree --json`; `.to_frame()` for a table). With `baseline`, the prompt-change
    gate. `options` are `labeller.agreement.AgreeOptions`' fields: from_scale, clip, relevant_from, resamples,
    seed, confidence, min_diff, min_kappa, max_drop, gate_metric, rubric, judge, report_dir."""
    from labeller.agreement import AgreeOptions
    from labeller.agreement import agree as run_agreement
    from labeller.io.columns import column_mapping

    with api_errors(), column_mapping(columns):
        inputs = {role: readable(source, role) for role, source in
                  (("labels", labels), ("gold", gold), ("baseline", baseline), ("queries", queries),
                   ("corpus", corpus)) if source is not None}
        return run_agreement(AgreeOptions(**inputs, **options))
