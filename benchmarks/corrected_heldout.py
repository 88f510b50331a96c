"""Held-out check of the corrected intervals: TREC DL 2019 with simulated LLM judges of known error.

Everything in corrected_coverage.py was developed on LLMJudge (../shared/data/llmjudge). This runs the same
measurement (its `measure`: the same library calls, the same table) on data the method was not tuned on: the
NIST qrels of TREC DL 2019 (../shared/data/trec-dl19, 43 queries, 9,260 judged pairs) as the truth, and judges
made from them with a fixed seed, written in qrels format to a temp dir and read back with load_judgments:

- `sim-<Y>` for each LLMJudge label set Y: Y's confusion matrix P(Y's grade | NIST grade), measured on LLMJudge's
  4,423 pairs, applied pair by pair to the DL19 qrels (a realistic error, on a pool it never saw);
- `lenient`: each query draws a leniency p_q ~ U(0, LENIENCY = 1) once, and each of its pairs moves up
  Binomial(2, p_q) grades (at most 3): a query-correlated bias, so plain nDCG@10 comes out about +0.15-0.2 too
  high, as a real LLM judge's did on DL19 (FACTS.md: +0.18, the plain interval covering 1 run of 37).

Runs: the official BM25 run (run.bm25base_p.gz, 1,000 deep: documents outside the judged pool are not relevant
under both the truth and the judge, as trec_eval and labeller's corrected path treat them), its top 100
shuffled, and four re-rankings of each query's judged pool: chance, NIST grade + noise (strong), the judge's own
grade + noise (a system the judge likes, as an LLM re-ranker graded by the same LLM), and BM25's top 100
re-ranked by NIST grade + large noise.

    python benchmarks/corrected_heldout.py [--subsets 100] [--pairs 300,1200] [--queries 10,20] [--top 10:N]
                                           [--judges sim-Olz-gpt4o,...,lenient] [--data DIR] [--llmjudge DIR]
    python benchmarks/corrected_heldout.py --bias      # only the judges' plain nDCG@10 against the truth
    python benchmarks/corrected_heldout.py --keep-queries 25 | --max-pool 180 | --top-floor 1 ...
        # DL19 reshaped towards LLMJudge (`reshaped`; benchmarks/README.md, "Stop 41")
    python benchmarks/corrected_heldout.py --differences [--subsets 30] [--judges sim-Olz-gpt4o,lenient] ...
        # differences between every pair of the six runs instead (corrected_differences.py's table, imported)
    python benchmarks/corrected_heldout.py --qrels QRELS --runs RUN [RUN ...] ...
        # another track's NIST qrels and its official runs in place of DL19's and the built runs (benchmarks/
        # README.md, "Stop 53": TREC DL 2021's 63 runs)
Skips cleanly without ../shared.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corrected_coverage import EXPONENTIAL, METRICS, measure  # noqa: E402
from corrected_differences import designs, one_judge  # noqa: E402
from llmjudge_system_ranking import LABEL_SETS, read_qrels  # noqa: E402

from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.qrels import load_judgments  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.runs import Ranking, load_run, shuffle_top, to_trec  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LENIENCY = 1.0  # the largest per-query chance of a grade step up


def confusion(llmjudge: Path, label_set: str) -> np.ndarray:
    """P(label set's grade | human grade) on LLMJudge, rows by human grade 0-3."""
    human, llm = read_qrels(llmjudge / "human_qrels.txt"), read_qrels(llmjudge / f"llm_{label_set}.txt")
    table = np.zeros((4, 4))
    for q, docs in human.items():
        for d, g in docs.items():
            table[g, min(max(llm[q][d], 0), 3)] += 1
    return table / table.sum(axis=1, keepdims=True)


def simulated(truth: dict[str, dict[str, int]], name: str, llmjudge: Path, seed: int) -> dict[str, dict[str, int]]:
    """The judge's grades (0-3) of every judged pair, drawn pair by pair with a fixed seed."""
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    if name == "lenient":
        out = {}
        for q in sorted(truth):
            p = rng.uniform(0, LENIENCY)
            out[q] = {d: int(min(3, g + rng.binomial(2, p))) for d, g in sorted(truth[q].items())}
        return out
    table = confusion(llmjudge, name.removeprefix("sim-"))
    return {q: {d: int(rng.choice(4, p=table[g])) for d, g in sorted(docs.items())} for q, docs in sorted(truth.items())}


def reshaped(truth, keep_queries: int, max_pool: int, seed: int, top_floor: int = 0) -> dict[str, dict[str, int]]:
    """DL19 made more like LLMJudge: fewer queries, each pool cut to a random max_pool of its pairs, or queries with
    fewer than top_floor top-grade (3) pairs given grade-2 ones promoted at random up to it (DL19 has 7 of 43
    queries with none, LLMJudge 1 of 25)."""
    rng = random.Random(seed)
    queries = sorted(truth)
    if keep_queries:
        queries = sorted(rng.sample(queries, keep_queries))
    out = {}
    for q in queries:
        docs = sorted(truth[q].items())
        if max_pool and len(docs) > max_pool:
            docs = sorted(rng.sample(docs, max_pool))
        out[q] = dict(docs)
        twos = sorted(d for d, g in docs if g == 2)
        missing = top_floor - sum(g == 3 for _, g in docs)
        for d in rng.sample(twos, min(max(missing, 0), len(twos))):
            out[q][d] = 3
    return out


def write_qrels(path: Path, grades: dict[str, dict[str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in grades.items() for d, g in docs.items()))
    return path


def ranked(scores: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    return {q: [d for _, d in sorted((-s, d) for d, s in ds.items())] for q, ds in scores.items()}


RERANKER_NOISE = (0.5, 0.8, 1.2, 1.8, 2.5)  # --rerankers: BM25's top 1,000 re-ranked by NIST grade + N(0, sd)


def runs(tmp: Path, bm25_path: Path, truth, judge, seed: int, rerankers: bool = False) -> list:
    """The six runs (or, with `rerankers`, BM25 and its top 1,000 re-ranked at each RERANKER_NOISE, as most
    official DL19 runs are: a reranker over a first stage), written as TREC run files and read back as `labeller
    evaluate --run` reads them."""
    rng = random.Random(seed)
    bm25 = load_run(bm25_path, name="bm25")
    top = {q: bm25.docs.get(q, [])[:100] for q in truth}
    if rerankers:
        deep = {q: bm25.docs.get(q, [])[:1000] for q in truth}
        made = {f"rerank-{sd}": {q: {d: truth[q].get(d, 0) + rng.gauss(0, sd) for d in deep[q]} for q in truth}
                for sd in RERANKER_NOISE}
        return [bm25, *_written(tmp, made)]
    made = {
        "chance": {q: {d: rng.random() for d in docs} for q, docs in truth.items()},
        "strong": {q: {d: g + rng.gauss(0, 1.0) for d, g in docs.items()} for q, docs in truth.items()},
        "judge-ranker": {q: {d: g + rng.gauss(0, 0.7) for d, g in docs.items()} for q, docs in judge.items()},
        "bm25-reranked": {q: {d: truth[q].get(d, 0) + rng.gauss(0, 1.5) for d in top[q]} for q in truth},
    }
    return [bm25, shuffle_top(bm25, 100, seed=seed, name="bm25-shuffled"), *_written(tmp, made)]


def _written(tmp: Path, made: dict) -> list:
    out = []
    for name, scores in made.items():
        path = tmp / f"{name}.trec"
        path.write_text(to_trec(Ranking(name, docs=ranked(scores))))
        out.append(load_run(path, name=name))
    return out


def bias(rankings, labels, human) -> str:
    """Each run's plain nDCG@10 under the judge minus under the truth (the plain figure's own error)."""
    specs, settings = parse_metrics("ndcg@10"), Settings(relevant_from=3)
    cells = []
    for r in rankings:
        plain, truth = (score_run(r, j, specs, settings).metrics["ndcg@10"] for j in (labels, human))
        cells.append(f"{r.name} {truth:.3f} -> {plain:.3f} ({plain - truth:+.3f})")
    return ", ".join(cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subsets", type=int, default=100)
    parser.add_argument("--pairs", default="300,1200")
    parser.add_argument("--queries", default="10,20")
    parser.add_argument("--top", default="", help="K:pairs, comma-separated (as corrected_coverage.py --top)")
    parser.add_argument("--judges", default=",".join([*(f"sim-{n}" for n in LABEL_SETS), "lenient"]))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exponential", action="store_true", help="also nDCG@10 with exponential gains")
    parser.add_argument("--bias", action="store_true", help="only print each judge's plain nDCG@10 error per run")
    parser.add_argument("--differences", action="store_true", help="differences between runs (corrected_differences)")
    parser.add_argument("--rerankers", action="store_true", help="BM25 and its top 1,000 re-ranked by NIST grade + "
                                                                    "noise at several levels, instead of the six runs")
    parser.add_argument("--data", type=Path, default=SHARED / "trec-dl19")
    parser.add_argument("--qrels", type=Path, help="NIST qrels of another track (default: DATA/qrels-pass.txt)")
    parser.add_argument("--runs", type=Path, nargs="+", help="official run files (TREC format) in place of the built "
                                                             "runs")
    parser.add_argument("--llmjudge", type=Path, default=SHARED / "llmjudge")
    parser.add_argument("--keep-queries", type=int, default=0, help="only this many queries, drawn with --seed")
    parser.add_argument("--max-pool", type=int, default=0, help="each query's judged pool cut to this many pairs")
    parser.add_argument("--top-floor", type=int, default=0, help="queries with fewer top-grade (3) pairs get grade-2 "
                                                                   "ones promoted at random up to this many")
    args = parser.parse_args()
    if args.runs and args.rerankers:
        parser.error("--rerankers builds runs from DL19's BM25 run; with --runs there is none to build")
    qrels, bm25 = args.qrels or args.data / "qrels-pass.txt", args.data / "run.bm25base_p.gz"
    if not (qrels.is_file() and (args.runs or bm25.is_file()) and (args.llmjudge / "human_qrels.txt").is_file()):
        print(f"skipped: {qrels}, {bm25} or {args.llmjudge} is absent (the shared validation data)")
        return 0
    official = [load_run(path) for path in args.runs or []]
    truth = read_qrels(qrels)
    gains = ((METRICS, "linear"), (EXPONENTIAL, "exponential")) if args.exponential else ((METRICS, "linear"),)
    with tempfile.TemporaryDirectory() as tmp:
        if args.keep_queries or args.max_pool or args.top_floor:
            truth = reshaped(truth, args.keep_queries, args.max_pool, args.seed, args.top_floor)
            qrels = write_qrels(Path(tmp) / "truth.txt", truth)
        human = load_judgments(qrels, "0-3", role="gold")
        for name in args.judges.split(","):
            grades = simulated(truth, name, args.llmjudge, args.seed)
            labels = load_judgments(write_qrels(Path(tmp) / f"{name}.txt", grades), "0-3")
            rankings = official or runs(Path(tmp), bm25, truth, grades, args.seed, args.rerankers)
            print(f"\n# {name}: plain nDCG@10, truth -> judge (error): {bias(rankings, labels, human)}")
            if args.bias:
                continue
            if args.differences:
                one_judge(name, labels, human, rankings, args.subsets, designs(args.pairs, args.queries, args.top),
                          args.seed, exponential=args.exponential)
                continue
            measure(name, labels, human, rankings, args.subsets,
                    [int(x) for x in args.pairs.split(",") if x], [int(x) for x in args.queries.split(",") if x],
                    args.seed, [tuple(int(y) for y in x.split(":")) for x in args.top.split(",") if x], None, gains)
    return 0


if __name__ == "__main__":
    sys.exit(main())
