"""Absolute floors: `--min ndcg@10=0.6` fails a run whose metric is below 0.6, whatever the baseline.

The regression gate asks "did it get worse?"; a floor asks "is it good enough?", and needs no
baseline. A floor is checked on each run under test (not the baseline) against its mean over the
averaged queries (`metrics`, the figure every report shows). A metric that is undefined for a run
(no query could be averaged) fails its floor: an unmeasurable run is not good enough.
"""

from __future__ import annotations

from labeller.errors import BadInputError
from labeller.evaluation.metrics import MetricSpec
from labeller.evaluation.results import FloorCheck, RunScores


def parse_floors(items: list[str] | None, specs: list[MetricSpec]) -> dict[str, float]:
    """['ndcg@10=0.6', 'recall@100=0.8,mrr@10=0.5'] -> floor per metric; each must be among the metrics."""
    names = [s.name for s in specs]
    floors: dict[str, float] = {}
    for item in (p.strip() for text in items or [] for p in text.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not name:
            raise BadInputError(f"floor '{item}' is not METRIC=VALUE, e.g. ndcg@10=0.6", field="min")
        if name not in names:
            raise BadInputError(f"floor for '{name}', which is not among the metrics ({', '.join(names)}); add it "
                                "to --metrics", field="min")
        try:
            floors[name] = float(value)
        except ValueError:
            raise BadInputError(f"floor '{item}': '{value}' is not a number", field="min") from None
        if not 0 <= floors[name] <= 1:
            raise BadInputError(f"floor '{item}' is outside 0-1, the range of every metric", field="min")
    return floors


def check_floors(runs: list[RunScores], floors: dict[str, float]) -> list[FloorCheck]:
    return [FloorCheck(run=run.name, metric=metric, floor=floor, value=run.metrics.get(metric),
                       passed=run.metrics.get(metric) is not None and run.metrics[metric] >= floor)
            for run in runs for metric, floor in floors.items()]
