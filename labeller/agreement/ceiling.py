"""Human-human agreement: how far people agree with each other, the ceiling for any judge.

Computed on the pairs that two or more people graded. Kappa is taken for every two annotators over the
pairs both graded and averaged, weighted by those pairs; the judge's kappa against each annotator on
the same pairs is averaged the same way, so judge and people are compared like for like. Ordinal alpha
uses every annotator at once (it allows missing grades).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from labeller.agreement.align import AlignedPair
from labeller.agreement.alpha import ordinal_alpha
from labeller.agreement.kappa import cohen_kappa
from labeller.agreement.summary import Ceiling


def _weighted_mean(values: list[tuple[float | None, int]]) -> float | None:
    kept = [(v, w) for v, w in values if v is not None]
    total = sum(w for _, w in kept)
    return sum(v * w for v, w in kept) / total if total else None


def human_ceiling(pairs: list[AlignedPair], grades: list[int]) -> Ceiling | None:
    """None when no pair has grades from two or more people."""
    pairs = [p.model_copy(update={"humans": [h for h in p.humans if not h.adjudicated]}) for p in pairs]
    shared = [p for p in pairs if len({h.annotator for h in p.humans}) >= 2]
    if not shared:
        return None
    annotators = sorted({h.annotator for p in shared for h in p.humans})
    column = {a: i for i, a in enumerate(annotators)}
    data = np.full((len(shared), len(annotators)), np.nan)
    for row, pair in enumerate(shared):
        for h in pair.humans:
            data[row, column[h.annotator]] = h.grade
    judge: dict[str | None, list[tuple[float | None, int]]] = {None: [], "quadratic": []}
    judged = np.array([p.judge for p in shared])
    for a in range(len(annotators)):
        has = ~np.isnan(data[:, a])
        for weights in judge:
            judge[weights].append((cohen_kappa(data[has, a].astype(int), judged[has], grades, weights),
                                   int(has.sum())))
    return Ceiling(pairs=len(shared), annotators=annotators, **people_agreement(data, grades),
                   judge_kappa=_weighted_mean(judge[None]), judge_kappa_quadratic=_weighted_mean(judge["quadratic"]))


def people_agreement(data: np.ndarray, grades: list[int]) -> dict[str, float | None]:
    """Kappa and quadratic kappa (every two annotators over the pairs both graded, averaged weighted by
    those pairs), ordinal alpha and exact agreement of units x annotators data (NaN = not graded)."""
    human: dict[str | None, list[tuple[float | None, int]]] = {None: [], "quadratic": []}
    agree = total = 0
    for a, b in combinations(range(data.shape[1]), 2):
        both = ~np.isnan(data[:, a]) & ~np.isnan(data[:, b])
        if not both.any():
            continue
        x, y = data[both, a].astype(int), data[both, b].astype(int)
        agree, total = agree + int((x == y).sum()), total + int(both.sum())
        for weights in human:
            human[weights].append((cohen_kappa(x, y, grades, weights), int(both.sum())))
    return {"kappa": _weighted_mean(human[None]), "kappa_quadratic": _weighted_mean(human["quadratic"]),
            "alpha_ordinal": ordinal_alpha(data, grades), "exact_agreement": agree / total if total else None}
