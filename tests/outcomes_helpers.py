"""Planted data for the outcomes tests: rankings whose relevant documents sit at known ranks, and outcomes
made to depend on one metric at one cutoff."""

from __future__ import annotations

import random

from labeller.evaluation.qrels import Judgments
from labeller.evaluation.runs import Ranking

DEPTH = 20


def planted(n: int = 200, seed: int = 7, relevant: int = 2) -> tuple[Ranking, Judgments, dict[str, int]]:
    """n queries of DEPTH documents; `relevant` documents graded 4 at random ranks (the first of them at a
    rank drawn from 1..12), a few graded 2 (not relevant from 3). Returns the ranking, the judgments and
    each query's first relevant rank."""
    rng = random.Random(seed)
    docs, grades, first = {}, {}, {}
    for i in range(n):
        qid = f"q{i:03d}"
        ranked = [f"{qid}-d{j}" for j in range(DEPTH)]
        top = rng.randint(1, 12)
        others = rng.sample([r for r in range(top + 1, DEPTH + 1)], relevant - 1)
        graded = {ranked[top - 1]: 4, **{ranked[r - 1]: rng.choice((4, 5)) for r in others}}
        for r in rng.sample([r for r in range(1, DEPTH + 1) if ranked[r - 1] not in graded], 3):
            graded[ranked[r - 1]] = 2
        for r in rng.sample(range(1, DEPTH + 1), 4):
            graded.setdefault(ranked[r - 1], 1)
        docs[qid], grades[qid], first[qid] = ranked, graded, top
    return Ranking(name="planted", docs=docs), Judgments(grades, "planted", "labels"), first


def outcome_frame_rows(success: dict[str, bool]) -> list[tuple[int, dict]]:
    return [(i, {"query_id": q, "outcome": "correct" if ok else "incorrect"})
            for i, (q, ok) in enumerate(sorted(success.items()), start=1)]


def with_first_relevant_at(ranking: Ranking, judgments: Judgments, moves: dict[str, int], name: str) -> Ranking:
    """A copy of `ranking` where each query in `moves` has its first relevant document (grade >= 3) moved to
    the given rank (1-based), every other document keeping its relative order."""
    docs = {}
    for qid, ranked in ranking.docs.items():
        ranked = list(ranked)
        if qid in moves:
            doc = next(d for d in ranked if judgments.grades[qid].get(d, 0) >= 3)
            ranked.remove(doc)
            ranked.insert(moves[qid] - 1, doc)
        docs[qid] = ranked
    return Ranking(name=name, docs=docs)


def write_run(path, ranking: Ranking):
    from labeller.evaluation.runs import to_trec

    path.write_text(to_trec(ranking), encoding="utf-8")
    return path


def write_labels(path, judgments: Judgments):
    import json

    path.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n"
                            for q, docs in judgments.grades.items() for d, g in docs.items()), encoding="utf-8")
    return path


def write_outcomes(path, success: dict[str, bool], key: str = "query_id"):
    import json

    path.write_text("".join(json.dumps({key: q, "outcome": "correct" if ok else "incorrect"}) + "\n"
                            for q, ok in sorted(success.items())), encoding="utf-8")
    return path
