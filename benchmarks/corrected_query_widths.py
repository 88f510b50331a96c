"""Query design, per metric: how much narrower is the corrected interval than the human-only one, and how often
does each cover? (a fast companion of corrected_coverage.py)

Each run's per-query values under the judge's labels and under the NIST grades (LLMJudge, the six systems of
corrected_coverage.py) go straight into the query-design estimator (labeller.evaluation.corrected_estimate,
the library's own function) for random subsets of graded queries; human-only is the same estimator with a judge
whose per-query value is one constant. Printed per metric and size: coverage (pooled, lowest run), mean width of
each, and their ratio. Skips cleanly without ../shared.

Also the width ratio no estimator that regresses people's values on the judge's can beat: with rho the correlation of
the two over all of a run's queries, an oracle that knew the slope would still leave the residual variance
(1 - rho^2) times people's, so its interval is sqrt(1 - rho^2) times the human-only one (before any degree of freedom
or slope error is paid). Printed per metric as the median and range over the judge-run cells ("attainable").

    python benchmarks/corrected_query_widths.py [--subsets 150] [--queries 8,15,20] [--data DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corrected_coverage  # noqa: E402
import llmjudge_system_ranking  # noqa: E402
from corrected_coverage import METRICS, judgments, systems  # noqa: E402
from llmjudge_system_ranking import LABEL_SETS, read_qrels  # noqa: E402

from labeller.evaluation.corrected_estimate import Contribution, estimate  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402


def per_query_values(folder: Path):
    """(judge, run, metric) -> (judge's per-query values, people's), on the queries the plain figure averages."""
    human = judgments(read_qrels(folder / "human_qrels.txt"), "human", "gold")
    specs, settings = parse_metrics(METRICS), Settings(relevant_from=3)
    out = {}
    for judge in LABEL_SETS:
        labels = judgments(read_qrels(folder / f"llm_{judge}.txt"), judge, "qrels")
        for run in systems(judge):
            plain, truth = score_run(run, labels, specs, settings), score_run(run, human, specs, settings)
            for spec in specs:
                queries = sorted(set(plain.per_query[spec.name]) - set(plain.no_answer.query_ids))
                out[judge, run.name, spec.name] = ({q: plain.per_query[spec.name][q] for q in queries},
                                                   {q: truth.per_query[spec.name][q] for q in queries})
    return out


def attainable(plain: dict, people: dict) -> float:
    """sqrt(1 - rho^2) for one run: rho the correlation of the judge's per-query values with people's (1 where
    either is constant: the judge then says nothing about the differences between queries)."""
    x, y = np.array([plain[q] for q in sorted(plain)]), np.array([people[q] for q in sorted(plain)])
    if x.std() <= 1e-15 or y.std() <= 1e-15:
        return 1.0
    return float(np.sqrt(max(0.0, 1.0 - np.corrcoef(x, y)[0, 1] ** 2)))  # rho^2 can round above 1


def interval(plain: dict, people: dict, graded, whole_range: bool):
    value = estimate(Contribution(plain, dict(plain), {q: people[q] for q in graded}),
                     SimpleNamespace(design="queries"), 0.95, whole_range)
    return max(value.ci_low, 0.0), min(value.ci_high, 1.0)  # cut to the metric's range, as evaluate does


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subsets", type=int, default=150)
    parser.add_argument("--queries", default="8,15,20")
    parser.add_argument("--data", type=Path, default=llmjudge_system_ranking.LLMJUDGE)
    args = parser.parse_args()
    if not (args.data / "human_qrels.txt").is_file():
        print(f"skipped: {args.data} is absent (the shared validation data)")
        return 0
    llmjudge_system_ranking.LLMJUDGE = corrected_coverage.LLMJUDGE = args.data
    values = per_query_values(args.data)
    rng = np.random.default_rng(0)
    for n in [int(x) for x in args.queries.split(",") if x]:
        for metric in [s.name for s in parse_metrics(METRICS)]:
            cover, cover_alone, widths, alone, lowest, bounds = [], [], [], [], [], []
            for (judge, run, name), (plain, people) in values.items():
                if name != metric:
                    continue
                queries, truth = sorted(plain), float(np.mean(list(people.values())))
                blind = {q: 0.5 for q in queries}
                bounds.append(attainable(plain, people))
                hits = []
                for _ in range(args.subsets):
                    graded = rng.choice(queries, n, replace=False)
                    low, high = interval(plain, people, graded, metric.startswith(("hit_rate", "mrr")))
                    low0, high0 = interval(blind, people, graded, metric.startswith(("hit_rate", "mrr")))
                    hits.append(low - 1e-12 <= truth <= high + 1e-12)
                    cover_alone.append(low0 - 1e-12 <= truth <= high0 + 1e-12)
                    widths.append(high - low)
                    alone.append(high0 - low0)
                cover += hits
                lowest.append((float(np.mean(hits)), f"{judge}/{run}"))
            worst = min(lowest)
            print(f"{n:2d} graded  {metric:13s} corrected: coverage {np.mean(cover):.1%} (lowest run {worst[0]:.0%}, "
                  f"{worst[1]}), width {np.mean(widths):.4f} | human only: coverage {np.mean(cover_alone):.1%}, "
                  f"width {np.mean(alone):.4f} | ratio {np.mean(widths) / np.mean(alone):.3f} | attainable "
                  f"{np.median(bounds):.2f} ({min(bounds):.2f}-{max(bounds):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
