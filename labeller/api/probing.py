"""probe: judge bias probes from a notebook, as `labeller probe` runs them (the CLI calls the same job)."""

from __future__ import annotations

from pathlib import Path

from labeller.api.sources import Source, api_errors, readable


def probe(labels: Source | None = None, *, queries: Source, corpus: Source, pairs: Source | None = None,
          judge: str = "offline:lexical", rubric: str | Path = "general", cache: str | Path = ".labeller-cache",
          probes: str | list[str] | None = None, pairs_per_probe: int = 50,
          threshold: float | dict[str, float] | str | None = None, seed: int = 0, resamples: int = 2000,
          confidence: float = 0.95, relevant_from: int = 3, base_url: str | None = None, concurrency: int = 16,
          max_cost: float | None = None, timeout: float = 60.0, report_dir: str | Path | None = None,
          columns: dict[str, str] | str | None = None):
    """Run the bias probes (length, stuffing, injection, near-duplicate) on labelled pairs; a ProbeReport.

    `labels` (labels, gold or qrels; DataFrame, rows or path) or `pairs` names the pairs; every verdict
    goes through the cache. `threshold`: one number for every probe, {probe: number}, or the CLI's text.
    The report's `.passed` is the gate (`labeller probe` exits 1 when it is False)."""
    from labeller.io.columns import column_mapping
    from labeller.labelling import LabelInputs, LabelOptions
    from labeller.probes import ProbeSettings, parse_probes, parse_thresholds, probe_files

    if isinstance(threshold, dict):  # checked like the CLI's text: known probes, finite, not negative
        threshold = ",".join(f"{name}={value}" for name, value in threshold.items())
    names = ",".join(probes) if isinstance(probes, list) else probes
    settings = ProbeSettings(probes=parse_probes(names), pairs_per_probe=pairs_per_probe,
                             thresholds=parse_thresholds(None if threshold is None else str(threshold)),
                             seed=seed, resamples=resamples, confidence=confidence, relevant_from=relevant_from)
    with api_errors(), column_mapping(columns):
        inputs = LabelInputs(queries=readable(queries, "queries"), corpus=readable(corpus, "corpus"),
                             pairs=readable(pairs, "pairs"), rubric=rubric, cache=cache,
                             out=None, base_url=base_url, timeout=timeout,
                             options=LabelOptions(concurrency=concurrency, max_cost=max_cost, progress=False))
        report, _ = probe_files(inputs, judge, labels=readable(labels, "labels"),
                                settings=settings, report_dir=report_dir)
        return report
