"""Do the corrected intervals of differences between runs cover the human difference, and decide its sign?

The regression gate (`evaluate --baseline B --corrected`) and `compare --gold` decide on the corrected
difference run - reference. This measures it on the LLMJudge test set (../shared/data/llmjudge) with the runs,
judges and subset draws of corrected_coverage.py (imported, not copied). For every pair of the six runs
(reference = the earlier run in `systems()`'s order) and each random human subset:

- truth: the difference under the full human labels (per query, on the queries the plain difference pairs,
  a query a run lacks scoring 0 for it, as `compare` pairs them);
- plain: `compare`'s bootstrap interval of the difference under the judge's labels (subset-independent);
- corrected: `corrected(..., reference=REF)` (what `evaluate --gold --baseline` calls), its judge-error interval
  and its one-sided p_worse (judge error and query sample: what the gate decides on);
- human only: the same call with a judge that knows nothing (one grade for every pair), same subset.

Printed per design and metric: coverage of the true difference (pooled; per pair lowest-highest), the plain
bootstrap's, width / human-only width from the same subset (mean, max), lambda's mean, the wrong-sign rate (the
interval excludes 0 on the side opposite the truth; at most 2.5% for a 95% interval), the power (it excludes 0 on
the truth's side, over pairs whose true difference is not 0) against human only's, the gate's false-regression
rate (p_worse < 0.05 though the truth is >= 0) and its detections (p_worse < 0.05 where the truth is < 0, over
those), and per pair the truth, coverage, power and mean error / se.

    python benchmarks/corrected_differences.py [--subsets 100] [--pairs 300,1200] [--queries 15,20] [--top 10:1600]
                                               [--judges Olz-gpt4o] [--metrics M,...] [--seed 0] [--data DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corrected_coverage  # noqa: E402
import llmjudge_system_ranking  # noqa: E402
from corrected_coverage import EXPONENTIAL, draw, judgments, systems, top_pairs  # noqa: E402
from llmjudge_system_ranking import LABEL_SETS, read_qrels  # noqa: E402

from labeller.evaluation.compare import compare, paired  # noqa: E402
from labeller.evaluation.corrected import corrected  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.qrels import Judgments  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402

PAIR_METRICS = "ndcg@10,recall@100,precision@10"  # MRR and hit rate are not corrected under scattered pairs
QUERY_METRICS = "ndcg@10,recall@100,precision@10,mrr@10,hit_rate@10"
ALPHA = 0.05  # the gate's default
EPS = 1e-12  # rounding: a bound or truth this close to 0 is 0


def true_differences(rankings, human: Judgments, scores, specs, settings) -> dict:
    """(reference, run, metric) -> the difference under the full human labels, on the queries `compare` pairs."""
    human_scores = {r.name: score_run(r, human, specs, settings) for r in rankings}
    out = {}
    for i, ref in enumerate(rankings):
        for run in rankings[i + 1:]:
            for s in specs:
                queries, _, _ = paired(scores[ref.name], scores[run.name], s.name)
                averaged = {n: set(scores[n].per_query[s.name]) - set(scores[n].no_answer.query_ids)
                            for n in (ref.name, run.name)}
                value = [(human_scores[run.name].per_query[s.name][q] if q in averaged[run.name] else 0.0)
                         - (human_scores[ref.name].per_query[s.name][q] if q in averaged[ref.name] else 0.0)
                         for q in queries]
                out[ref.name, run.name, s.name] = float(np.mean(value))
    return out


def differences(rankings, scores, labels, gold, specs, settings, design, certain) -> dict:
    """(reference, run, metric) -> CorrectedDifference, through the call `evaluate --gold --baseline REF` makes."""
    out = {}
    for ref in rankings[:-1]:
        result = corrected(rankings, scores, labels, gold, specs, settings, design=design, bootstrap=1,
                           reference=ref.name, per_query_coverage=None, certain=certain)
        out.update({(d.reference, d.run, d.metric): d for d in result.differences
                    if (d.reference, d.run, d.metric) not in out and (d.run, d.reference, d.metric) not in out})
    return out


class Cells:
    """Per (metric, pair of runs) lists of what each subset gave."""

    def __init__(self):
        self.rows: dict[tuple[str, str], list[dict]] = {}

    def add(self, metric: str, pair: str, **row) -> None:
        self.rows.setdefault((metric, pair), []).append(row)

    def column(self, metric: str, key: str, pair: str | None = None) -> list:
        return [r[key] for (m, p), rows in self.rows.items() if m == metric and pair in (None, p) for r in rows
                if r.get(key) is not None]

    def pairs(self, metric: str) -> list[str]:
        return [p for m, p in self.rows if m == metric]


def snap(value: float) -> float:
    """0 for a float within EPS of it: two runs with the same top k (bm25-shuffled's recall@100 on DL19) differ by
    rounding, and an interval [1e-17, 3e-17] is 0, not a sign."""
    return 0.0 if abs(value) < EPS else value


def row(c, h, truth: float) -> dict:
    """What one subset says about one difference: the corrected value `c`, human only `h`, the truth."""
    truth = snap(truth)
    out = {"truth": truth}
    if c.corrected.estimate is None or c.corrected.ci_low is None:
        return out
    low, high = snap(c.corrected.ci_low), snap(c.corrected.ci_high)
    out.update(hit=low - EPS <= truth <= high + EPS, width=high - low, lam=c.corrected.power_lambda,
               wrong=(truth >= 0 and high < 0) or (truth <= 0 and low > 0),
               right=(truth > 0 and low > 0) or (truth < 0 and high < 0),
               false_regression=c.p_worse is not None and c.p_worse < ALPHA and truth >= 0,
               detected=c.p_worse is not None and c.p_worse < ALPHA and truth < 0,
               error=c.corrected.estimate - truth, se=c.corrected.se_judge)
    hv = h.corrected if h is not None else None
    if hv is not None and hv.ci_low is not None:
        h_low, h_high = snap(hv.ci_low), snap(hv.ci_high)
        out.update(h_hit=h_low - EPS <= truth <= h_high + EPS,
                   h_right=(truth > 0 and h_low > 0) or (truth < 0 and h_high < 0),
                   h_wrong=(truth >= 0 and h_high < 0) or (truth <= 0 and h_low > 0))
        if h_high - h_low > 1e-9:  # both nearly points (the same top k): no ratio
            out["ratio"] = (high - low) / (h_high - h_low)
    return out


def report(cells: Cells, specs, plain_hits: dict) -> None:
    pct = lambda v: f"{np.mean(v):.1%}" if len(v) else "–"  # noqa: E731
    for s in specs:
        m = s.name
        pairs = cells.pairs(m)
        per_pair = {p: np.mean(cells.column(m, "hit", p)) for p in pairs if cells.column(m, "hit", p)}
        worst = min(per_pair, key=per_pair.get) if per_pair else "–"
        nonzero = [r for (mm, _), rows in cells.rows.items() if mm == m for r in rows if r["truth"] != 0 and "hit" in r]
        wrong = {p: np.mean(cells.column(m, "wrong", p)) for p in pairs if cells.column(m, "wrong", p)}
        ratios = cells.column(m, "ratio")
        print(f"  {m:14s} coverage {pct(cells.column(m, 'hit'))} (per pair {min(per_pair.values()):.0%}-"
              f"{max(per_pair.values()):.0%}, lowest {worst}); plain bootstrap {pct(plain_hits[m])}; human only "
              f"{pct(cells.column(m, 'h_hit'))}; width / human-only "
              + (f"{np.mean(ratios):.3f} (max {np.max(ratios):.3f})" if ratios else "– (both exact)")
              + (f"; lambda {np.mean(cells.column(m, 'lam')):.2f}" if cells.column(m, 'lam') else "")
              + f"\n  {'':14s} wrong sign {pct(cells.column(m, 'wrong'))} (per pair max {max(wrong.values()):.0%}); "
              f"human only {pct(cells.column(m, 'h_wrong'))}; power {pct([r['right'] for r in nonzero])} against "
              f"human only {pct([r['h_right'] for r in nonzero if 'h_right' in r])}; gate false regressions "
              f"(p_worse < {ALPHA}, truth >= 0) {pct(cells.column(m, 'false_regression'))}; detected "
              f"{pct([r['detected'] for r in nonzero if r['truth'] < 0])} of true drops")
        for p in pairs:
            errors, ses = np.array(cells.column(m, "error", p)), np.array(cells.column(m, "se", p))
            se = ses.mean() if len(ses) else 0.0
            bias = f"{errors.mean() / se:+.2f}/{errors.std(ddof=1) / se:.2f}" if se > 0 and len(errors) > 1 else "–"
            print(f"    {p:24s} truth {cells.column(m, 'truth', p)[0]:+.4f}  coverage {pct(cells.column(m, 'hit', p))}"
                  f"  human {pct(cells.column(m, 'h_hit', p))}  wrong {pct(cells.column(m, 'wrong', p))}  power "
                  f"{pct(cells.column(m, 'right', p))} / human {pct(cells.column(m, 'h_right', p))}  width ratio "
                  f"{np.mean(cells.column(m, 'ratio', p) or [np.nan]):.3f}  error/se, spread/se {bias}")


def one_judge(judge: str, labels: Judgments, human: Judgments, rankings, subsets: int, designs, seed: int,
              only: str | None = None, exponential: bool = True) -> None:
    """Print the tables for one judge's labels over one pool (also corrected_heldout.py --differences, on DL19)."""
    blind = Judgments({q: {d: 3 for d in docs} for q, docs in labels.grades.items()}, "blind", "qrels")
    for design, pairs, queries, depth in designs:
        metric_sets = [(PAIR_METRICS if design == "pairs" else QUERY_METRICS, "linear")]
        metric_sets += [(EXPONENTIAL, "exponential")] if exponential else []
        if only:  # --metrics: these (linear gain) only
            metric_sets = [(only, "linear")]
        certain = top_pairs(rankings, human, depth) if depth else set()
        for metrics, gain in metric_sets:
            settings, specs = Settings(relevant_from=3, gain=gain), parse_metrics(metrics)
            if depth and not only and "mrr" not in metrics and gain == "linear":
                specs = parse_metrics(QUERY_METRICS)  # top K graded: MRR@10 and hit rate@10 are people's exactly
            scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
            blind_scores = {r.name: score_run(r, blind, specs, settings) for r in rankings}
            truth = true_differences(rankings, human, scores, specs, settings)
            plain_hits: dict[str, list[bool]] = {}
            for i, ref in enumerate(rankings):
                for run in rankings[i + 1:]:
                    for t in compare(scores[ref.name], scores[run.name], specs, permutations=0, bootstrap=2000,
                                     seed=seed).tests:
                        plain_hits.setdefault(t.metric, []).append(
                            t.ci_low - 1e-12 <= truth[ref.name, run.name, t.metric] <= t.ci_high + 1e-12)
            rng, cells, started = random.Random(seed), Cells(), time.perf_counter()
            for _ in range(subsets):
                gold = draw(human, rng, pairs, queries, certain)
                got = differences(rankings, scores, labels, gold, specs, settings, design, certain or None)
                alone = differences(rankings, blind_scores, blind, gold, specs, settings, design, certain or None)
                for (ref, run, metric), c in got.items():
                    cells.add(metric, f"{run}-{ref}", **row(c, alone.get((ref, run, metric)), truth[ref, run, metric]))
            size = (f"top {depth} ({len(certain)} pairs) + {pairs - len(certain)} random" if depth
                    else f"{pairs} random pairs" if pairs else f"{queries} random queries")
            print(f"\n## judge {judge}, {size}, {gain} gain, {subsets} subsets ({time.perf_counter() - started:.0f} s)")
            report(cells, specs, plain_hits)
            sys.stdout.flush()


def designs(pairs: str, queries: str, top: str) -> list[tuple]:
    """(design, pairs, queries, top depth) from the comma-separated --pairs, --queries and --top K:pairs."""
    return ([("pairs", int(n), None, 0) for n in pairs.split(",") if n]
            + [("queries", None, int(n), 0) for n in queries.split(",") if n]
            + [("pairs", int(x.split(":")[1]), None, int(x.split(":")[0])) for x in top.split(",") if x])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subsets", type=int, default=100)
    parser.add_argument("--pairs", default="300,1200", help="gold sizes in random pairs (comma-separated)")
    parser.add_argument("--queries", default="15,20", help="gold sizes in whole queries (comma-separated)")
    parser.add_argument("--top", default="10:1600", help="K:pairs, comma-separated (plan top:K)")
    parser.add_argument("--judges", default=LABEL_SETS[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metrics", default=None, help="only these metrics, linear gain (default: every cell)")
    parser.add_argument("--data", type=Path, default=None, help="the llmjudge folder (default ../shared/...)")
    args = parser.parse_args()
    if args.data is not None:
        corrected_coverage.LLMJUDGE = llmjudge_system_ranking.LLMJUDGE = args.data
    if not (corrected_coverage.LLMJUDGE / "human_qrels.txt").is_file():
        print(f"skipped: {corrected_coverage.LLMJUDGE} is absent (the shared validation data)")
        return 0
    human = judgments(read_qrels(corrected_coverage.LLMJUDGE / "human_qrels.txt"), "human", "gold")
    for judge in args.judges.split(","):
        labels = judgments(read_qrels(corrected_coverage.LLMJUDGE / f"llm_{judge}.txt"), f"llm_{judge}", "qrels")
        one_judge(judge, labels, human, systems(judge), args.subsets, designs(args.pairs, args.queries, args.top),
                  args.seed, args.metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
