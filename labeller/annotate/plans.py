"""Sampling plans: which candidate pairs people grade, and in what order.

- `stratified` (the default): the same number of pairs from every judge grade (when the source has
  grades), and within a grade spread over as many queries as possible, so every grade is seen and
  intervals over queries have many queries to resample. Shown in a shuffled order, never sorted by grade.
- `uniform`: a simple random sample, which describes the population (the judge's grade mix).
- `uncertain`: the pairs where the judge is least sure first (needs an uncertainty, see sources.py).
- `narrow`: the pairs whose people's grades narrow the corrected intervals of `labeller evaluate --gold`
  most for the size (labeller.annotate.narrow): more pairs where the judge's grades are many and unsure.
- `top:K`: every pool pair in the top K of the given runs (`--top-run`) with certainty (inclusion probability
  1, stratum "top K"), and the rest of the size as `narrow` draws it from the rest of the pool. People's grades
  then decide each given run's MRR@k and hit rate@k (k <= K) exactly, which scattered pairs cannot correct
  (labeller.evaluation.corrected), and the random rest corrects NDCG, recall and P@k as before.
- `queries:N` (or `queries`: N from the size and the mean pairs per query): N whole queries drawn at random, every
  candidate pair of each (stratum "whole query"). `evaluate --gold` then uses the query design, whose corrected
  intervals held on data the method was not tuned on (docs/evaluate.md, "Held out"); the pair design's
  recall did not. N is fixed before the draw, so every query has the same chance N/Q: taking queries until
  the size is spent would favour small ones.

Every plan is deterministic: the same candidates, size and seed give the same sample.
"""

from __future__ import annotations

import random
from collections import defaultdict

from labeller.annotate.sources import UNCERTAINTY_COLUMNS, Candidate, require_every
from labeller.errors import BadInputError

PLANS = ("stratified", "uniform", "uncertain", "narrow", "top:K", "queries:N")
WHOLE_QUERY = "whole query"  # a sample row's stratum under plan queries:N
CERTAIN_STRATUM = "top "  # a sample row's stratum for pairs drawn with certainty: "top 10"


def parse_plan(plan: str) -> tuple[str, int | None]:
    """(name, K): ("top", K) for top:K, ("queries", N) for queries:N (None for plain `queries`), (plan, None) for
    the others."""
    if plan.startswith("queries:") or plan == "queries":
        count = plan[8:]
        if plan == "queries":
            return "queries", None
        if not count.isdigit() or int(count) < 2:
            raise BadInputError(f"plan '{plan}': expected queries:N with N a whole number of at least 2 (e.g. "
                                "queries:20), how many whole queries people grade", field="plan")
        return "queries", int(count)
    if plan.startswith("top:") or plan == "top":
        depth = plan[4:]
        if not depth.isdigit() or int(depth) < 1:
            raise BadInputError(f"plan '{plan}': expected top:K with K a whole number of at least 1 (e.g. top:10), "
                                "the depth of each run people grade whole", field="plan")
        return "top", int(depth)
    if plan not in PLANS:
        raise BadInputError(f"unknown plan '{plan}'; expected one of: {', '.join(PLANS)}", field="plan")
    return plan, None


def draw(candidates: list[Candidate], size: int, plan: str, seed: int,
         top: set[tuple[str, str]] | None = None) -> list[Candidate]:
    """`size` candidates (all of them when there are fewer), in the order people will grade them; `top`: the pairs
    plan top:K draws with certainty (the given runs' top K)."""
    name, depth = parse_plan(plan)
    if size < 1:
        raise BadInputError(f"--size {size} must be at least 1", field="size")
    pool = sorted(candidates, key=lambda c: (c.query_id, c.doc_id))  # the file's order must not matter
    rng = random.Random(seed)
    if name == "queries":
        return _whole_queries(pool, size, depth, rng)
    if name == "uncertain":
        return _most_uncertain(pool, size, rng)
    if name in ("narrow", "top"):
        from labeller.annotate.narrow import narrowing

        certain = [c for c in pool if (c.query_id, c.doc_id) in (top or set())] if name == "top" else []
        if name == "top" and not certain:
            raise BadInputError(f"plan '{plan}': no pair in the top {depth} of the --top-run runs is in --labels; give "
                                "the runs whose pairs the judge labelled (the pool `evaluate --gold` corrects)",
                                field="top_run")
        if len(certain) > size:
            raise BadInputError(f"plan '{plan}' grades every judged pair in the top {depth} of the --top-run runs, "
                                f"{len(certain)} pairs, more than --size {size}; give --size at least {len(certain)} "
                                "(the rest is drawn at random) or a smaller K", field="size")
        rest = [c for c in pool if (c.query_id, c.doc_id) not in (top or set())] if name == "top" else pool
        chosen = certain + narrowing(rest, size - len(certain), rng)
        rng.shuffle(chosen)
        return chosen
    if name == "uniform":
        chosen = rng.sample(pool, min(size, len(pool)))
    else:
        chosen = _stratified(pool, size, rng)
    rng.shuffle(chosen)
    return chosen


def _whole_queries(pool: list[Candidate], size: int, count: int | None, rng: random.Random) -> list[Candidate]:
    by_query: dict[str, list[Candidate]] = defaultdict(list)
    for c in pool:
        by_query[c.query_id].append(c)
    if count is None:  # as many queries as the size buys at the mean query's pairs
        count = max(2, round(size / (len(pool) / len(by_query))))
    if len(by_query) < 2:
        raise BadInputError(f"plan 'queries' draws whole queries and the candidates hold {len(by_query)}; the query "
                            "design needs at least 2 (give the pairs of more queries)", field="plan")
    chosen = [c for qid in rng.sample(sorted(by_query), min(count, len(by_query))) for c in by_query[qid]]
    rng.shuffle(chosen)
    return chosen


def _most_uncertain(pool: list[Candidate], size: int, rng: random.Random) -> list[Candidate]:
    require_every(pool, "uncertainty", "plan 'uncertain' needs the judge's uncertainty for every pair, and pair {pair} "
                  "has none (of {n} without); give --labels a label file with one of the columns "
                  f"{', '.join(UNCERTAINTY_COLUMNS)}, or use --plan stratified")
    ties = {(c.query_id, c.doc_id): rng.random() for c in pool}
    return sorted(pool, key=lambda c: (-c.uncertainty, ties[c.query_id, c.doc_id]))[:size]


def _stratified(pool: list[Candidate], size: int, rng: random.Random) -> list[Candidate]:
    strata: dict[int | None, list[Candidate]] = defaultdict(list)
    for c in pool:
        strata[c.judge_grade].append(c)
    quota = _allocate({k: len(v) for k, v in strata.items()}, size)
    chosen: list[Candidate] = []
    for key in sorted(strata, key=lambda k: (k is None, k or 0)):
        chosen += _spread_over_queries(strata[key], quota[key], rng)
    return chosen


def _allocate(sizes: dict, total: int) -> dict:
    """Equal shares per stratum; what a small stratum cannot fill goes to the others."""
    quota = {k: 0 for k in sizes}
    left = min(total, sum(sizes.values()))
    while left:
        open_strata = sorted((k for k in sizes if quota[k] < sizes[k]), key=lambda k: (quota[k], k is None, k or 0))
        share = max(1, left // len(open_strata))
        for k in open_strata:
            take = min(share, sizes[k] - quota[k], left)
            quota[k] += take
            left -= take
            if not left:
                break
    return quota


def _spread_over_queries(items: list[Candidate], count: int, rng: random.Random) -> list[Candidate]:
    """`count` items taking one pair from each query in turn (queries and pairs in a seeded order)."""
    by_query: dict[str, list[Candidate]] = defaultdict(list)
    for c in items:
        by_query[c.query_id].append(c)
    queues = list(by_query.values())
    rng.shuffle(queues)
    for queue in queues:
        rng.shuffle(queue)
    out: list[Candidate] = []
    while len(out) < count:
        for queue in queues:
            if queue and len(out) < count:
                out.append(queue.pop())
    return out
