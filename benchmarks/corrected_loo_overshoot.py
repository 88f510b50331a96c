"""Why the pair design's shrunk per-query prediction with leave-one-out residuals overshoots (issue 26).

labeller's NDCG and P@k model point predicts an ungraded pair from its (query, judge grade) group's gold, shrunk
towards the all-query calibration p0 by S = 4 pseudo-pairs, and each gold pair's residual is taken against its
prediction without itself (leave one out). For a sum over one group of K pairs with c random gold pairs, the
ungraded pairs' prediction uses c gold grades but the residuals' predictions only c - 1, and the expected estimate
is the group's true sum plus

    (K - c) S (mu - p0) / ((c - 1 + S) (c + S))

(mu the group's mean grade feature): it moves past the truth, away from p0, by a fifth of (K - 1)(mu - p0) at
c = 1. With in-sample residuals (against the prediction that uses the pair) the same estimator is unbiased (it is
then the group's post-stratified mean). This script checks the formula by simulation (no data needed):

    python benchmarks/corrected_loo_overshoot.py --draws 20000
"""

from __future__ import annotations

import argparse

import numpy as np


def simulate(size: int, relevant: int, prior: float, shrink: float, gold: int, draws: int,
             rng: np.random.Generator) -> tuple[float, float]:
    """Mean error of the group-sum estimate over `draws` random golds: (leave-one-out residuals, in-sample)."""
    truth = np.zeros(size)
    truth[:relevant] = 1.0
    weight = size / gold - 1.0
    loo, in_sample = [], []
    for _ in range(draws):
        grades = truth[rng.choice(size, gold, replace=False)]
        everything = (grades.sum() + shrink * prior) / (gold + shrink)
        without = (grades.sum() - grades + shrink * prior) / (gold - 1 + shrink)
        rest = (size - gold) * everything + grades.sum()
        loo.append(rest + weight * float(np.sum(grades - without)) - truth.sum())
        in_sample.append(rest + weight * float(np.sum(grades - everything)) - truth.sum())
    return float(np.mean(loo)), float(np.mean(in_sample))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=20000)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--shrink", type=float, default=4.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| group mean | p0 | gold c | simulated error, leave one out | formula | simulated error, in-sample |")
    print("| --- | --- | --- | --- | --- | --- |")
    for relevant, prior in ((25, 0.2), (5, 0.3)):
        mu = relevant / args.size
        for gold in (1, 2, 3, 7):
            loo, in_sample = simulate(args.size, relevant, prior, args.shrink, gold, args.draws, rng)
            formula = (args.size - gold) * args.shrink * (mu - prior) / ((gold - 1 + args.shrink) * (gold + args.shrink))
            print(f"| {mu:.2f} | {prior:.2f} | {gold} | {loo:+.3f} | {formula:+.3f} | {in_sample:+.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
