"""Do the corrected intervals cover the value under the full human labels? (`evaluate --gold`)

The LLMJudge test set (../shared/data/llmjudge): NIST grades and three real LLM label sets for the same
4,423 pairs of 25 TREC DL 2023 queries. Systems re-rank every query's judged pool (as in
llmjudge_system_ranking.py): BM25 (two variants), longest passage first, chance, and two strong ones
(another LLM label set's grades plus noise). For each LLM label set Y as the judge:

- truth: each run's metric under the human labels (on the queries the plain figure averages);
- plain: the metric under Y, with its 95% bootstrap interval over queries (the labels taken as the truth);
- corrected: for each of many random human subsets (pairs drawn uniformly from the pool, or whole
  queries, or every run's top K with certainty plus pairs drawn uniformly from the rest, as
  `annotate sample --plan top:K` draws them), `labeller evaluate --gold SUBSET`'s estimate and 95% intervals
  (judge error; judge error plus the query sample);
- human only: the same estimator from the same subset with a judge that knows nothing (one grade for
  every pair), i.e. what the subset alone says. Under the query design that judge's per-query figures are not
  constant (all-relevant grades still score each query by how many judged pairs a run ranks high, which tracks
  relevance for the rerankers), so there it is a regression on the pool's shape, not people's mean alone;
- human mean, plain t (query design): the textbook human-only interval, the graded queries' mean of people's
  values with a t interval on n - 1 degrees and the finite-population factor, no judge and no pseudo-query.

Printed: coverage of the truth by each interval (over runs x metrics x subsets), mean width, and the
mean absolute error of the point estimates. Skips cleanly without ../shared.

    python benchmarks/corrected_coverage.py [--subsets 200] [--pairs 300,600,1200] [--queries 8,12]
                                            [--top 10:1200,5:800] [--data DIR]
    python benchmarks/corrected_coverage.py --cost   # what the per-query intervals cost (with against without)

One subset, from the command line (the figures the library computes here):
    labeller evaluate --run bm25.trec --labels ../shared/data/llmjudge/llm_Olz-gpt4o.txt \
                      --gold subset.txt --metrics ndcg@10,recall@100,precision@10,mrr@10,hit_rate@10
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import llmjudge_system_ranking  # noqa: E402
from llmjudge_system_ranking import LABEL_SETS, LLMJUDGE, bm25_scores, pools, read_qrels  # noqa: E402

from labeller.evaluation.corrected import corrected  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.qrels import Judgments  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.runs import Ranking  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402

METRICS = "ndcg@10,recall@100,precision@10,mrr@10,hit_rate@10"
EXPONENTIAL = "ndcg@10"  # also scored with exponential gains
PER_QUERY = 0.9  # target coverage of the per-query intervals (evaluate --per-query-coverage)


THIN = 0  # --thin: queries whose top-grade pairs are cut to THIN_TO (`human_grades`)
THIN_TO = 2  # --thin-to
ZEROS = 0.0  # --zeros: the share of grade-0 pairs after grade-1 pairs are demoted at random (`human_grades`)


def human_grades() -> dict[str, dict[str, int]]:
    """NIST's grades (0-3), made more like TREC DL19's pools on request (for --simulate, whose judge is drawn from
    these grades; real LLM labels were given against the unchanged ones). ZEROS = s: grade-1 pairs become 0 at
    random until a share s of all pairs is 0 (DL19: 55.7%, LLMJudge 45.3%). THIN = n: the n queries with the fewest
    top-grade (3) pairs among those with more than THIN_TO keep THIN_TO of them (a fixed draw) and the rest become 2
    (DL19: 16 of 43 queries with at most two, 7 with none; LLMJudge 6 of 25 with at most two, 1 with none)."""
    grades = read_qrels(llmjudge_system_ranking.LLMJUDGE / "human_qrels.txt")
    rng = random.Random(7)
    if ZEROS:
        ones = [(q, d) for q in sorted(grades) for d in sorted(grades[q]) if grades[q][d] == 1]
        total = sum(len(docs) for docs in grades.values())
        zeros = sum(g == 0 for docs in grades.values() for g in docs.values())
        for q, d in rng.sample(ones, max(0, min(len(ones), round(ZEROS * total) - zeros))):
            grades[q][d] = 0
    if not THIN:
        return grades
    tops = {q: sorted(d for d, g in docs.items() if g == 3) for q, docs in grades.items()}
    for q in sorted((q for q in tops if len(tops[q]) > THIN_TO), key=lambda q: (len(tops[q]), q))[:THIN]:
        for d in rng.sample(tops[q], len(tops[q]) - THIN_TO):
            grades[q][d] = 2
    return grades


def systems(judge: str, seed: int = 0, oracle: bool = False) -> list[Ranking]:
    """The six systems; `oracle`: a seventh, NIST grade + N(0, 1) (as corrected_heldout.py's `strong` on DL19: a run
    that selects on people's grades, which the judge cannot see), drawn from its own generator so the six stay as
    they are."""
    rng, noise = random.Random(seed), random.Random(seed + 1000)
    truth = human_grades() if oracle else {}
    others = [read_qrels(LLMJUDGE / f"llm_{name}.txt") for name in LABEL_SETS if name != judge]
    docs: dict[str, dict[str, list[str]]] = {name: {} for name in ("bm25", "bm25-lucene", "longest", "chance",
                                                                  "strong-a", "strong-b", *(("oracle",) if oracle else ()))}
    for qid, (query, pool) in pools().items():
        ids = [d for d, _ in pool]
        texts = [t for _, t in pool]
        scored = {"bm25": bm25_scores(query, texts, "robertson", 1.2, 0.75),
                  "bm25-lucene": bm25_scores(query, texts, "lucene", 0.9, 0.4),
                  "longest": [len(t) for t in texts], "chance": [rng.random() for _ in texts],
                  "strong-a": [others[0][qid].get(d, 0) + rng.gauss(0, 0.7) for d in ids],
                  "strong-b": [others[1][qid].get(d, 0) + rng.gauss(0, 1.4) for d in ids]}
        if oracle:
            scored["oracle"] = [truth[qid].get(d, 0) + noise.gauss(0, 1.0) for d in ids]
        for name, scores in scored.items():
            docs[name][qid] = [d for _, d in sorted(zip(scores, ids), key=lambda x: (-x[0], x[1]))]
    return [Ranking(name, docs=ranked) for name, ranked in docs.items()]


def judgments(qrels: dict[str, dict[str, int]], source: str, kind: str) -> Judgments:
    return Judgments({q: {d: g + 1 for d, g in docs.items()} for q, docs in qrels.items()}, source, kind)


def top_pairs(rankings: list[Ranking], human: Judgments, depth: int) -> set[tuple[str, str]]:
    """Every judged pair in some run's top `depth` (the certain stratum of plan top:K)."""
    return {(q, d) for r in rankings for q, docs in r.docs.items() for d in docs[:depth] if d in human.grades.get(q, {})}


def draw(human: Judgments, rng: random.Random, pairs: int | None, queries: int | None,
         certain: set[tuple[str, str]] = frozenset()) -> Judgments:
    """Whole queries, or `pairs` pairs: the `certain` ones and the rest uniformly from the other pool pairs."""
    if queries:
        chosen = rng.sample(sorted(human.grades), queries)
        return Judgments({q: dict(human.grades[q]) for q in chosen}, "subset", "gold")
    everything = [(q, d) for q in sorted(human.grades) for d in sorted(human.grades[q]) if (q, d) not in certain]
    out: dict[str, dict[str, int]] = {}
    for q, d in sorted(certain) + rng.sample(everything, pairs - len(certain)):
        out.setdefault(q, {})[d] = human.grades[q][d]
    return Judgments(out, "subset", "gold")


class Tally:
    def __init__(self):
        self.hits: dict[str, list[bool]] = {}
        self.widths: dict[str, list[float]] = {}
        self.errors: dict[str, list[float]] = {}
        self.signed: dict[str, list[tuple[float, float]]] = {}  # (estimate - truth, se of the judge error)

    def add(self, name: str, low, high, estimate, truth: float, se: float | None = None) -> None:
        if low is None or high is None:
            return
        self.hits.setdefault(name, []).append(low - 1e-12 <= truth <= high + 1e-12)
        self.widths.setdefault(name, []).append(high - low)
        if estimate is not None:
            self.errors.setdefault(name, []).append(abs(estimate - truth))
            if se is not None:
                self.signed.setdefault(name, []).append((estimate - truth, se))

    def bias(self, metrics: list[str], runs: list[str]) -> str:
        """Per run: the mean error over the mean se, and the spread of the estimate over the mean se (a short
        interval from a bias shows the first, from a short se the second below 1)."""
        out = []
        for metric in metrics:
            cells = []
            for run in runs:
                pairs = np.array(self.signed.get(f"{metric}|{run}", []))
                if len(pairs) > 1 and pairs[:, 1].mean() > 0:
                    se = pairs[:, 1].mean()
                    cells.append(f"{run} {pairs[:, 0].mean() / se:+.2f}/{pairs[:, 0].std(ddof=1) / se:.2f}")
            if cells:
                out.append(f"\n      {metric:14s} " + ", ".join(cells))
        return "".join(out)

    def per_run(self, metrics: list[str], runs: list[str]) -> str:
        """Coverage of every run on every metric (the issue's check is per run, not pooled)."""
        out = []
        for metric in metrics:
            cells = [f"{run} {np.mean(self.hits[f'{metric}|{run}']):.0%}" for run in runs
                     if self.hits.get(f"{metric}|{run}")]
            if cells:
                out.append(f"\n      {metric:14s} " + ", ".join(cells))
        return "".join(out)

    def line(self, name: str) -> str:
        h, w, e = self.hits.get(name, []), self.widths.get(name, []), self.errors.get(name, [])
        if not h:
            return f"{name:34s} –"
        error = f"  |error| {np.mean(e):.4f}" if e else ""  # per-query intervals have no point estimate
        return f"{name:34s} coverage {np.mean(h):6.1%}  width {np.mean(w):.4f}{error}  (n={len(h)})"


def evaluate_all(rankings, labels, gold, metrics, settings, design, per_query: float | None = None, certain=None):
    specs = parse_metrics(metrics)
    scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
    return corrected(rankings, scores, labels, gold, specs, settings, design=design, bootstrap=1,
                     per_query_coverage=per_query, certain=certain), scores


def human_mean_t(values: dict, gold: Judgments, scores, metric: str, confidence: float = 0.95):
    """The textbook human-only interval of the query design: the graded queries' mean of people's values, t on
    n - 1 degrees, finite-population factor, cut to [0, 1] (no pseudo-query, no judge)."""
    from scipy.stats import t as student

    queries = sorted(set(scores.per_query[metric]) - set(scores.no_answer.query_ids))
    graded = np.array([values[q] for q in queries if q in gold.grades])
    n = len(graded)
    if n < 2:
        return None, None
    half = student.ppf(0.5 + confidence / 2, n - 1) * math.sqrt((1 - n / len(queries)) * graded.var(ddof=1) / n)
    return max(graded.mean() - half, 0.0), min(graded.mean() + half, 1.0)


def truth_of(rankings, human, scores, metrics, settings, per_query: dict | None = None):
    """Each run's mean under the human labels; `per_query` gets (run, metric) -> query -> value."""
    specs = parse_metrics(metrics)
    out = {}
    for r in rankings:
        values = score_run(r, human, specs, settings)
        for s in specs:
            queries = set(scores[r.name].per_query[s.name]) - set(scores[r.name].no_answer.query_ids)
            out[r.name, s.name] = float(np.mean([values.per_query[s.name][q] for q in queries]))
            if per_query is not None:
                per_query[r.name, s.name] = values.per_query[s.name]
    return out


def one_judge(judge: str, human: Judgments, subsets: int, pair_sizes, query_sizes, seed: int, top_sizes=(),
              per_query: float | None = PER_QUERY, oracle: bool = False, simulate: bool = False) -> None:
    """`simulate`: the judge's labels replaced by its confusion P(its grade | NIST grade) applied pair by pair
    (corrected_heldout.simulated: the DL19 sim judges' kind of error, on LLMJudge's pools)."""
    qrels = read_qrels(LLMJUDGE / f"llm_{judge}.txt")
    if simulate:
        from corrected_heldout import simulated

        qrels = simulated(human_grades(), f"sim-{judge}", LLMJUDGE, seed)
    labels = judgments(qrels, f"llm_{judge}", "qrels")
    measure(judge, labels, human, systems(judge, oracle=oracle), subsets, pair_sizes, query_sizes, seed, top_sizes,
            per_query)


def measure(judge: str, labels: Judgments, human: Judgments, rankings: list[Ranking], subsets: int, pair_sizes,
            query_sizes, seed: int, top_sizes=(), per_query: float | None = PER_QUERY,
            gains=((METRICS, "linear"), (EXPONENTIAL, "exponential"))) -> None:
    """Print the tables for one judge's labels over one pool (also corrected_heldout.py's, on TREC DL19)."""
    # a judge that knows nothing: one grade (relevant, so no query falls in the no-answer bucket) for every pair
    blind = Judgments({q: {d: 3 for d in docs} for q, docs in labels.grades.items()}, "blind", "qrels")
    for metrics, gain in gains:
        settings = Settings(relevant_from=3, gain=gain)
        specs = parse_metrics(metrics)
        plain_scores = {r.name: score_run(r, labels, specs, settings) for r in rankings}
        per_query_truth: dict = {}
        truth = truth_of(rankings, human, plain_scores, metrics, settings, per_query_truth)
        plain, _ = evaluate_all(rankings, labels, human, metrics, settings, "queries")  # full gold: the truth
        plain_tally = Tally()
        from labeller.evaluation.significance import bootstrap_interval

        for r in rankings:
            for s in specs:
                queries = sorted(set(plain_scores[r.name].per_query[s.name]) - set(plain_scores[r.name].no_answer.query_ids))
                values = np.array([plain_scores[r.name].per_query[s.name][q] for q in queries])
                low, high = bootstrap_interval(values, 0.95, 2000, seed)
                plain_tally.add("plain bootstrap (judge's labels)", low, high, plain_scores[r.name].metrics[s.name],
                                truth[r.name, s.name])
                check = next(m for m in plain.runs[r.name] if m.metric == s.name).corrected.estimate
                assert abs(check - truth[r.name, s.name]) < 1e-9, (r.name, s.name, check, truth[r.name, s.name])
        print(f"\n## judge {judge}, {metrics} ({gain} gain): {len(rankings)} runs")
        print(plain_tally.line("plain bootstrap (judge's labels)"))
        designs = ([("pairs", n, None, 0) for n in pair_sizes] + [("queries", None, n, 0) for n in query_sizes]
                   + [("pairs", n, None, k) for k, n in top_sizes])
        for design, pairs, queries, depth in designs:
            rng = random.Random(seed)
            tally, conformal = Tally(), Tally()
            uncorrected: dict[str, int] = {}
            ratios: dict[str, list[float]] = {}  # metric -> corrected width / human-only width, subset by subset
            powers: dict[str, list[float]] = {}  # metric -> lambda (power tuning: the judge's weight)
            plain_t: dict[str, list[float]] = {}  # metric -> corrected width / the human mean's plain t width
            certain = top_pairs(rankings, human, depth) if depth else set()
            if len(certain) > (pairs or 0) and depth:
                print(f"- top {depth} + random rest, {pairs} pairs: skipped, the top {depth} alone is {len(certain)}")
                continue
            started = time.perf_counter()
            for _ in range(subsets):
                gold = draw(human, rng, pairs, queries, certain)
                result, _ = evaluate_all(rankings, labels, gold, metrics, settings, design, per_query, certain)
                alone, _ = evaluate_all(rankings, blind, gold, metrics, settings, design, certain=certain)
                for r in rankings:
                    for m, h in zip(result.runs[r.name], alone.runs[r.name]):
                        t = truth[r.name, m.metric]
                        c = m.corrected
                        if c.estimate is None:
                            uncorrected[f"{m.metric}|{r.name}"] = uncorrected.get(f"{m.metric}|{r.name}", 0) + 1
                        tally.add("corrected (judge error)", c.ci_low, c.ci_high, c.estimate, t)
                        tally.add(f"  {m.metric}", c.ci_low, c.ci_high, c.estimate, t)
                        tally.add(f"{m.metric}|{r.name}", c.ci_low, c.ci_high, c.estimate, t, c.se_judge)
                        tally.add("corrected (+ query sample)", c.ci_low_queries, c.ci_high_queries, c.estimate, t)
                        tally.add("human only, same subset", h.corrected.ci_low, h.corrected.ci_high,
                                  h.corrected.estimate, t)
                        tally.add(f"  human only {m.metric}", h.corrected.ci_low, h.corrected.ci_high,
                                  h.corrected.estimate, t)
                        if None not in (c.ci_low, h.corrected.ci_low) and h.corrected.ci_high > h.corrected.ci_low:
                            ratios.setdefault(m.metric, []).append((c.ci_high - c.ci_low)
                                                                   / (h.corrected.ci_high - h.corrected.ci_low))
                        if design == "queries":
                            low, high = human_mean_t(per_query_truth[r.name, m.metric], gold, plain_scores[r.name],
                                                     m.metric)
                            tally.add("human mean, plain t", low, high, None, t)
                            tally.add(f"  human mean, plain t {m.metric}", low, high, None, t)
                            tally.add(f"t {m.metric}|{r.name}", low, high, None, t)
                            if None not in (c.ci_low, low) and high > low:
                                plain_t.setdefault(m.metric, []).append((c.ci_high - c.ci_low) / (high - low))
                        if getattr(c, "power_lambda", None) is not None:
                            powers.setdefault(m.metric, []).append(c.power_lambda)
                for p in result.per_query:  # per-query intervals (conformal risk control) of the ungraded queries
                    for q, (low, high) in p.intervals.items():
                        value = per_query_truth[p.run, p.metric][q]
                        conformal.add(f"  {p.metric}", low, high, None, value)
                        conformal.add(f"{p.metric}|{p.run}", low, high, None, value)
            size = f"{pairs} random pairs" if pairs else f"{queries} random queries"
            if depth:
                size = f"top {depth} of every run ({len(certain)} pairs) + {pairs - len(certain)} random, {pairs} pairs"
            print(f"- {size} x {subsets} subsets ({time.perf_counter() - started:.0f} s):")
            if uncorrected:
                print("    not corrected (subsets): " + ", ".join(f"{k} {v}" for k, v in sorted(uncorrected.items())))
            for name in ("corrected (judge error)", *[f"  {s.name}" for s in specs], "corrected (+ query sample)",
                         "human only, same subset", *[f"  human only {s.name}" for s in specs]):
                print("    " + tally.line(name))
            print("    per run, judge-error interval: " + tally.per_run([s.name for s in specs],
                                                                      [r.name for r in rankings]))
            print("    width / human-only, same subset (mean, max; lambda mean): " + ", ".join(
                f"{k} {np.mean(v):.3f}, {np.max(v):.3f}" + (f"; {np.mean(powers[k]):.2f}" if powers.get(k) else "")
                for k, v in ratios.items()))
            if plain_t:
                print("    " + tally.line("human mean, plain t") + "\n" + "\n".join(
                    "    " + tally.line(f"  human mean, plain t {s.name}") for s in specs))
                print("    per run, the human mean's plain t interval: " + tally.per_run(
                    [f"t {s.name}" for s in specs], [r.name for r in rankings]))
                print("    width / the human mean's plain t interval (mean, max): " + ", ".join(
                    f"{k} {np.mean(v):.3f}, {np.max(v):.3f}" for k, v in plain_t.items()))
            print("    per run, mean error / se and spread of the estimate / se: "
                  + tally.bias([s.name for s in specs], [r.name for r in rankings]))
            if conformal.hits:
                print(f"    per-query intervals (conformal risk control, target {PER_QUERY:.0%}), ungraded queries:")
                for s in specs:
                    print("    " + conformal.line(f"  {s.name}"))
                print("    per run: " + conformal.per_run([s.name for s in specs], [r.name for r in rankings]))


def per_query_cost(judge: str, human: Judgments, graded: int = 15, subsets: int = 5) -> None:
    """The per-query intervals' cost: `corrected` with them against without, same golds, one process, best of 2."""
    labels = judgments(read_qrels(LLMJUDGE / f"llm_{judge}.txt"), f"llm_{judge}", "qrels")
    rankings, settings = systems(judge), Settings(relevant_from=3)
    golds = [draw(human, random.Random(seed), None, graded) for seed in range(subsets)]

    def timed(per_query: float | None) -> float:
        started = time.perf_counter()
        for gold in golds:
            evaluate_all(rankings, labels, gold, METRICS, settings, "queries", per_query)
        return time.perf_counter() - started

    timed(None), timed(PER_QUERY)  # warm
    without, with_ = min(timed(None) for _ in range(2)), min(timed(PER_QUERY) for _ in range(2))
    print(f"per-query intervals cost ({judge}, {subsets} subsets of {graded} graded queries, {len(rankings)} runs, "
          f"{METRICS}): {with_:.2f} s against {without:.2f} s without, {with_ / without:.2f} times")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subsets", type=int, default=200)
    parser.add_argument("--pairs", default="300,600,1200", help="gold sizes in pairs (comma-separated)")
    parser.add_argument("--queries", default="8,12", help="gold sizes in whole queries (comma-separated)")
    parser.add_argument("--top", default="", help="K:pairs, comma-separated: every run's top K with certainty plus "
                                                   "random pairs of the rest up to `pairs` (plan top:K)")
    parser.add_argument("--judges", default=",".join(LABEL_SETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-query", type=float, default=PER_QUERY,
                        help="target coverage of the per-query intervals; 0 skips them (the slow part)")
    parser.add_argument("--data", type=Path, default=None, help="the llmjudge folder (default ../shared/...)")
    parser.add_argument("--cost", action="store_true", help="only time the per-query intervals (with against without)")
    parser.add_argument("--thin", type=int, default=0, help="queries whose top-grade pairs are cut to --thin-to "
                                                             "(`human_grades`; with --simulate)")
    parser.add_argument("--thin-to", type=int, default=2, help="with --thin: how many top-grade pairs they keep")
    parser.add_argument("--zeros", type=float, default=0.0, help="grade-1 pairs demoted to 0 at random until this "
                                                                  "share of the pairs is 0 (`human_grades`; with "
                                                                  "--simulate)")
    parser.add_argument("--oracle", action="store_true", help="a seventh run: NIST grade + N(0, 1) (`systems`)")
    parser.add_argument("--simulate", action="store_true",
                        help="each judge's confusion applied pair by pair instead of its labels (`one_judge`)")
    args = parser.parse_args()
    global LLMJUDGE, THIN, THIN_TO, ZEROS
    THIN, THIN_TO, ZEROS = args.thin, args.thin_to, args.zeros
    if args.data is not None:
        LLMJUDGE = llmjudge_system_ranking.LLMJUDGE = args.data
    if not (LLMJUDGE / "human_qrels.txt").is_file():
        print(f"skipped: {LLMJUDGE} is absent (the shared validation data)")
        return 0
    human = judgments(human_grades(), "human", "gold")
    if args.cost:
        per_query_cost(args.judges.split(",")[0], human)
        return 0
    sizes = [int(x) for x in args.pairs.split(",") if x]
    query_sizes = [int(x) for x in args.queries.split(",") if x]
    top_sizes = [tuple(int(y) for y in x.split(":")) for x in args.top.split(",") if x]
    for judge in args.judges.split(","):
        one_judge(judge, human, args.subsets, sizes, query_sizes, args.seed, top_sizes, args.per_query or None,
                  args.oracle, args.simulate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
