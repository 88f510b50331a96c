"""The `narrow` plan: the pairs whose people's grades narrow the corrected intervals most for a given size.

`labeller evaluate --gold` corrects a figure with gold pairs drawn at random within each judge grade j
(labeller.evaluation.corrected_pool), and the judge-error variance of its estimate is
sum_j N_j^2 (1 - n_j/N_j) S_j^2 / n_j, N_j the pairs the judge gave grade j, n_j the gold ones among
them, S_j the spread of people's grades there. For a fixed total it is smallest with n_j proportional
to N_j S_j (Neyman allocation): many pairs where the judge's grade is common and people disagree with
it most, few where it is rare or sure. Within a grade the pairs are drawn uniformly at random, so the
inclusion probabilities stay n_j / N_j, which is what the estimator assumes.

S_j is not known before people grade. It is taken from the judge's own uncertainty where the labels
carry one (mean over the grade's pairs), else from a prior: a binary relevance spread sqrt(p (1 - p))
with p = P(people find the pair relevant | judge grade j), 1/2 at the grades beside the relevance cut
(RELEVANT_FROM - 1 and RELEVANT_FROM) and closer to 0 or 1 further away. Every grade with two pairs or
more gets at least two, so its spread can be estimated.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

from labeller.annotate.sources import Candidate, require_every

RELEVANT_FROM = 3  # evaluate's default cut: the prior is widest around it
_PRIOR = {0: 0.5, 1: 0.25, 2: 0.1}  # P(relevant) distance from the cut -> how far from 1/2
MIN_PER_GRADE = 2


def prior_spread(grade: int) -> float:
    distance = min(abs(grade - RELEVANT_FROM), abs(grade - (RELEVANT_FROM - 1)))
    p = _PRIOR.get(distance, 0.05)
    return math.sqrt(p * (1 - p))


def spread(items: list[Candidate], grade: int) -> float:
    known = [c.uncertainty for c in items if c.uncertainty is not None]
    if known:
        return max(sum(known) / len(known), 0.02)  # a sure judge is still sometimes wrong
    return prior_spread(grade)


def allocate(sizes: dict[int, int], spreads: dict[int, float], total: int) -> dict[int, int]:
    """Neyman allocation n_j ~ N_j S_j, capped at N_j, at least MIN_PER_GRADE where the grade has that many."""
    total = min(total, sum(sizes.values()))
    quota = {j: min(MIN_PER_GRADE, n, total // max(len(sizes), 1)) for j, n in sizes.items()}
    left = total - sum(quota.values())
    while left > 0:
        open_grades = [j for j in sizes if quota[j] < sizes[j]]
        weight = {j: sizes[j] * spreads[j] for j in open_grades}
        whole = sum(weight.values()) or float(len(open_grades))
        shares = {j: left * (weight[j] / whole if sum(weight.values()) else 1 / len(open_grades)) for j in open_grades}
        grants = {j: min(int(shares[j]), sizes[j] - quota[j]) for j in open_grades}
        if not sum(grants.values()):  # fractions only: the largest remainders take one each
            for j in sorted(open_grades, key=lambda j: (-(shares[j] - int(shares[j])), j))[:left]:
                grants[j] = 1
        for j, g in grants.items():
            quota[j] += g
            left -= g
    return quota


def narrowing(pool: list[Candidate], size: int, rng: random.Random) -> list[Candidate]:
    require_every(pool, "judge_grade", "plan 'narrow' allocates by the judge's grade, and pair {pair} has none (of {n} "
                  "without); give --labels (the judge's labels of the pool `labeller evaluate --gold` will correct)")
    by_grade: dict[int, list[Candidate]] = defaultdict(list)
    for c in pool:
        by_grade[c.judge_grade].append(c)  # type: ignore[index]
    quota = allocate({j: len(v) for j, v in by_grade.items()}, {j: spread(v, j) for j, v in by_grade.items()}, size)
    chosen: list[Candidate] = []
    for j in sorted(by_grade):
        chosen += rng.sample(by_grade[j], quota[j])
    return chosen
