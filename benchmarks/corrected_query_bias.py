"""Where one run's corrected nDCG@10 error comes from on TREC DL19, query by query (pair design, random pairs).

For one run and one simulated judge (corrected_heldout.py's), over random gold subsets: the judge-calibrated
estimate before power tuning split into its per-query parts (each query's value at the model point plus its gold
pairs' weighted first-order terms), their mean error grouped by how many top-grade (3) pairs the query has in the
truth; the judge-free estimate (the same estimator with a judge that knows nothing: each pair predicted from its
query's own gold); and the library's reported figure (power-tuned) with its coverage and mean lambda.

    python benchmarks/corrected_query_bias.py [--run strong] [--pairs 1200] [--subsets 40] [--gain exponential]
                                              [--judge sim-Olz-gpt4o] [--top-floor 0]
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

from corrected_coverage import draw  # noqa: E402
from corrected_heldout import SHARED, read_qrels, reshaped, runs, simulated, write_qrels  # noqa: E402

from labeller.evaluation.corrected import _Model, contribution, corrected  # noqa: E402
from labeller.evaluation.corrected_pool import gold_pool  # noqa: E402
from labeller.evaluation.metrics import parse_metrics  # noqa: E402
from labeller.evaluation.qrels import Judgments, load_judgments  # noqa: E402
from labeller.evaluation.results import Settings  # noqa: E402
from labeller.evaluation.scoring import score_run  # noqa: E402


def bucket(top: int) -> str:
    return "0" if top == 0 else "1-2" if top <= 2 else "3-10" if top <= 10 else ">10"


def per_query(ranking, queries, spec, labels, gold, settings) -> dict[str, float]:
    """Each query's part of the untuned judge-calibrated estimate (their mean is that estimate)."""
    pool = gold_pool(labels, gold, "pairs")
    model = _Model(pool, settings)
    part = contribution(ranking, queries, spec, model, settings)
    out = dict(part.model)
    for i, z in part.influence.items():
        out[pool.query[i]] += z * model.weight[i]
    return out


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        return measure(Path(tmp))


def measure(tmp: Path) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="strong")
    parser.add_argument("--judge", default="sim-Olz-gpt4o")
    parser.add_argument("--pairs", type=int, default=1200)
    parser.add_argument("--subsets", type=int, default=40)
    parser.add_argument("--gain", default="exponential")
    parser.add_argument("--top-floor", type=int, default=0, help="as corrected_heldout.py --top-floor")
    parser.add_argument("--data", type=Path, default=SHARED / "trec-dl19")
    parser.add_argument("--llmjudge", type=Path, default=SHARED / "llmjudge")
    args = parser.parse_args()
    qrels = args.data / "qrels-pass.txt"
    if not (qrels.is_file() and (args.llmjudge / "human_qrels.txt").is_file()):
        print(f"skipped: {args.data} or {args.llmjudge} is absent (the shared validation data)")
        return 0
    truth = read_qrels(qrels)
    if args.top_floor:
        truth = reshaped(truth, 0, 0, 0, args.top_floor)
    human = load_judgments(write_qrels(tmp / "truth.txt", truth), "0-3", role="gold")
    grades = simulated(truth, args.judge, args.llmjudge, 0)
    labels = load_judgments(write_qrels(tmp / "judge.txt", grades), "0-3")
    blind = Judgments({q: {d: 3 for d in docs} for q, docs in labels.grades.items()}, "blind", "qrels")
    ranking = {r.name: r for r in runs(tmp, args.data / "run.bm25base_p.gz", truth, grades, 0)}[args.run]
    settings, spec = Settings(relevant_from=3, gain=args.gain), parse_metrics("ndcg@10")[0]
    true_q = score_run(ranking, human, [spec], settings).per_query[spec.name]
    queries = sorted(true_q)
    target = float(np.mean([true_q[q] for q in queries]))
    scores = {ranking.name: score_run(ranking, labels, [spec], settings)}
    rng = random.Random(0)
    errors = np.zeros((args.subsets, len(queries)))
    free, reported = [], []
    for s in range(args.subsets):
        gold = draw(human, rng, args.pairs, None)
        parts = per_query(ranking, queries, spec, labels, gold, settings)
        errors[s] = [(parts[q] - true_q[q]) / len(queries) for q in queries]
        free.append(float(np.mean(list(per_query(ranking, queries, spec, blind, gold, settings).values()))) - target)
        value = corrected([ranking], scores, labels, gold, [spec], settings, design="pairs",
                          per_query_coverage=None).runs[ranking.name][0].corrected
        reported.append((value.estimate - target, value.se_judge, value.ci_low <= target <= value.ci_high,
                         value.power_lambda if value.power_lambda is not None else np.nan))
    total = errors.sum(axis=1)
    print(f"{args.run}, {args.judge}, nDCG@10 ({args.gain} gain), {args.pairs} random pairs x {args.subsets} subsets, "
          f"truth {target:.3f}")
    print(f"  judge-calibrated, untuned: mean error {total.mean():+.4f}, sd {total.std():.4f}")
    groups: dict[str, list[int]] = {}
    for k, q in enumerate(queries):
        groups.setdefault(bucket(sum(g == 3 for g in truth[q].values())), []).append(k)
    print("  its mean error by the query's number of top-grade pairs: " + ", ".join(
        f"{b}: {len(ks)} queries {errors[:, ks].sum(axis=1).mean():+.4f}"
        for b, ks in sorted(groups.items(), key=lambda x: ["0", "1-2", "3-10", ">10"].index(x[0]))))
    print(f"  judge-free, untuned: mean error {np.mean(free):+.4f}, sd {np.std(free):.4f}, "
          f"correlation with the judge-calibrated {np.corrcoef(total, free)[0, 1]:+.2f}")
    r = np.array(reported, dtype=float)
    print(f"  reported (power-tuned): mean error {r[:, 0].mean():+.4f}, sd {r[:, 0].std():.4f}, "
          f"rms se {np.sqrt(np.mean(r[:, 1] ** 2)):.4f}, coverage {r[:, 2].mean():.0%}, mean lambda {np.nanmean(r[:, 3]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
