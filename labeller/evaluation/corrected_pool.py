"""The judged pool and the human gold sample of it, as the corrected estimators see them.

The pool is every pair the judge labelled (--labels). The gold is the pairs people graded (--gold).
Pairs are stratified by the judge's grade, as `labeller annotate sample --plan stratified` draws a
sample: within stratum j, the n_j gold pairs are taken as a simple random sample of the N_j pool
pairs, so each has inclusion probability n_j / N_j. A uniform random sample of the pool is a
special case (post-stratified on the judge's grade, which only sharpens it).

Two sampling designs (`design`):
- `pairs`: gold pairs scattered over the pool (labeller.evaluation.corrected_pairs);
- `queries`: people graded every pool pair of a random subset of the queries, as in Oosterhuis et al.
  (KDD 2024, arXiv 2407.02464); each graded query is a unit (labeller.evaluation.corrected_queries).
`auto` picks `queries` when every query with a gold pair has all of its pool pairs in the gold.

What cannot be a sample of this pool is said aloud (`warnings`): gold pairs the judge never labelled
(the rubric's worked examples, pairs no run retrieved), a judge grade with no gold pair (its pairs
keep the judge's grade: their error is outside the interval), one gold pair in a stratum (no spread).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from labeller.errors import BadInputError
from labeller.evaluation.qrels import Judgments
from labeller.records import GRADE_MAX, GRADE_MIN

GRADES = np.arange(GRADE_MIN, GRADE_MAX + 1)
DESIGNS = ("auto", "pairs", "queries")
# random gold pairs to draw beside a certain stratum: RANDOM_SHARE of the rest of the pool, at least RANDOM_MIN
# (on LLMJudge, 15% of the rest, 484 pairs, took NDCG@10's interval from 0.08 wide to 0.03: benchmarks/README.md)
RANDOM_SHARE, RANDOM_MIN = 0.15, 100


@dataclass
class GoldPool:
    """Pool pairs by index: query, judge grade, human grade (0 = not in the gold)."""

    index: dict[tuple[str, str], int]
    query: list[str]
    judge: np.ndarray  # int, GRADE_MIN..GRADE_MAX
    human: np.ndarray  # int, 0 where no person graded the pair
    by_query: dict[str, np.ndarray]  # query -> pool indices
    design: str
    gold_path: str
    outside: int = 0  # gold pairs not in the pool (left out)
    warnings: list[str] = field(default_factory=list)
    # the judge's own distribution over GRADE_MIN.. per pair (`label --grade-probs`); NaN rows where none was given
    judge_probs: np.ndarray = field(default_factory=lambda: np.zeros((0, len(GRADES))))
    # pairs drawn with certainty (`annotate sample --plan top:K`: every given run's top K) and graded: inclusion
    # probability 1, outside the random strata; empty when the sample had no such stratum
    certain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def in_gold(self) -> np.ndarray:
        return self.human > 0

    def stratum(self, j: int) -> np.ndarray:
        """The pool pairs of judge grade j's random stratum (the certain pairs are outside every stratum)."""
        mask = self.judge == j
        return mask & ~self.certain if len(self.certain) else mask

    def stratum_sizes(self) -> dict[int, tuple[int, int]]:
        """judge grade -> (pool pairs N_j, gold pairs n_j) of the random strata."""
        out = {}
        for j in np.unique(self.judge):
            mask = self.stratum(int(j))
            if mask.any():
                out[int(j)] = (int(mask.sum()), int(np.sum(self.in_gold & mask)))
        return out

    def calibration(self, learn: np.ndarray | None = None) -> np.ndarray:
        """P(human grade | judge grade) from the gold (or the gold pairs `learn` marks), rows by judge grade, columns
        by human grade (GRADE_MIN.. on both); a judge grade without gold keeps the judge's own grade."""
        table = np.zeros((len(GRADES), len(GRADES)))
        for j in GRADES:
            humans = self.human[(self.in_gold if learn is None else learn) & (self.judge == j)]
            if len(humans):
                table[j - GRADE_MIN] = np.bincount(humans - GRADE_MIN, minlength=len(GRADES)) / len(humans)
            else:
                table[j - GRADE_MIN, j - GRADE_MIN] = 1.0
        return table

    def gold_queries(self) -> list[str]:
        """Queries whose every pool pair people graded (the units of the query design)."""
        return sorted(q for q, rows in self.by_query.items() if self.in_gold[rows].all())


def gold_pool(labels: Judgments, gold: Judgments, design: str = "auto",
              certain: set[tuple[str, str]] | None = None) -> GoldPool:
    """`certain`: the pairs the sample drew with certainty (labeller.annotate.plans, plan top:K)."""
    if design not in DESIGNS:
        raise BadInputError(f"--gold-design '{design}' is unknown; expected {', '.join(DESIGNS)}",
                            field="gold_design")
    index: dict[tuple[str, str], int] = {}
    query, judge = [], []
    for qid in sorted(labels.grades):
        for did, grade in sorted(labels.grades[qid].items()):
            index[(qid, did)] = len(query)
            query.append(qid)
            judge.append(grade)
    human = np.zeros(len(query), dtype=np.int64)
    outside = 0
    for qid, docs in gold.grades.items():
        for did, grade in docs.items():
            at = index.get((qid, did))
            if at is None:
                outside += 1
            else:
                human[at] = grade
    judge_arr = np.array(judge, dtype=np.int64)
    by_query: dict[str, list[int]] = {}
    for i, qid in enumerate(query):
        by_query.setdefault(qid, []).append(i)
    pool = GoldPool(index, query, judge_arr, human, {q: np.array(v) for q, v in by_query.items()}, "pairs",
                    gold.source, outside, judge_probs=_judge_probs(labels, index))
    graded = int(pool.in_gold.sum())
    if not graded:
        raise BadInputError(f"none of the {gold.pairs} gold pairs is among the {len(query)} pairs of --labels; "
                            "the corrected estimate needs people's grades for a sample of the judged pairs "
                            "(the same query_id and doc_id)", path=gold.source, field="doc_id")
    pool.design = _design(pool, design)
    drawn = np.zeros(len(query), dtype=bool)
    for pair in certain or ():
        if pair in index and pool.design == "pairs":  # the query design weighs whole queries, not pairs
            drawn[index[pair]] = True
    pool.certain = drawn & pool.in_gold
    pool.warnings = _warnings(pool, gold.pairs)
    random_gold, rest = int((pool.in_gold & ~pool.certain).sum()), int((~pool.certain).sum())
    if pool.certain.any() and random_gold < recommended_random(rest):
        pool.warnings.append(f"only {random_gold} random gold pairs beside the {int(pool.certain.sum())} drawn with "
                             f"certainty, of the other {rest} pool pairs: NDCG and recall count every pool pair and "
                             "lean on them; NDCG's interval takes the spread the pool predicts and stays honest but "
                             "wide (on LLMJudge, NDCG@10 0.08 wide with 84 random pairs beside 1,116, 0.03 with 484), "
                             f"recall's spread is rough; draw at least {recommended_random(rest)} of the rest")
    if (drawn & ~pool.in_gold).any():
        pool.warnings.append(f"{int((drawn & ~pool.in_gold).sum())} of the {int(drawn.sum())} pairs drawn with "
                             "certainty (the runs' top positions) have no grade in --gold: they are counted with "
                             "the random pairs of their judge grade, whose inclusion probabilities they bend; "
                             "grade them")
    return pool


def recommended_random(rest: int) -> int:
    """Random pairs to draw beside a certain stratum (plan top:K) from the `rest` other pool pairs."""
    return min(rest, max(RANDOM_MIN, int(np.ceil(RANDOM_SHARE * rest))))


def _judge_probs(labels: Judgments, index: dict[tuple[str, str], int]) -> np.ndarray:
    out = np.full((len(index), len(GRADES)), np.nan)
    for pair, probs in labels.probs.items():
        at = index.get(pair)
        total = sum(probs.values())
        if at is not None and total > 0:
            out[at] = [probs.get(str(g), 0.0) / total for g in GRADES]
    return out


def _design(pool: GoldPool, asked: str) -> str:
    touched = {pool.query[i] for i in np.flatnonzero(pool.in_gold)}
    whole = set(pool.gold_queries())
    if asked == "queries" and touched - whole:
        some = sorted(touched - whole)[:3]
        raise BadInputError(f"--gold-design queries needs people's grades for every judged pair of each query they "
                            f"graded; {len(touched - whole)} queries are graded in part ({', '.join(some)})",
                            path=pool.gold_path, field="gold_design")
    if asked != "auto":
        return asked
    return "queries" if touched == whole and len(whole) >= 2 else "pairs"


def _warnings(pool: GoldPool, gold_pairs: int) -> list[str]:
    out = []
    if pool.outside:
        out.append(f"{pool.outside} of {gold_pairs} gold pairs are not in the judged pool (--labels): not a sample "
                   "of it (a rubric's worked examples, pairs no run retrieved?); they are left out of the correction")
    if pool.design == "queries":
        n, total = len(pool.gold_queries()), len(pool.by_query)
        if n < 10:
            out.append(f"only {n} of {total} queries are graded by people: the interval is wide on so few and the "
                       "judge barely narrows it (on LLMJudge, 8 graded of 25: width 0.32-0.44, about the human-only "
                       "one); grade more queries")
        if 0 < total - n < 10:
            out.append(f"only {total - n} of {total} queries are left ungraded: their error is that of a handful of "
                       "queries, one unusual one moving it most; the interval allows for one more extreme than any "
                       "graded (on LLMJudge, 5 left, it covered 92-100% per run); the wider interval is safer")
        return out
    for j, (size, graded) in pool.stratum_sizes().items():
        if graded == 0:
            out.append(f"no gold pair has judge grade {j}: its {size} pairs keep the judge's grade, and their "
                       "error is not in the interval; sample some (labeller annotate sample --plan narrow)")
        elif graded == 1 and size > 1:
            out.append(f"one gold pair has judge grade {j}: its spread is unknown, so the interval borrows the "
                       "largest spread of the other grades")
    counts = Counter(pool.query[i] for i in np.flatnonzero(pool.in_gold))
    if len(counts) < min(5, len(pool.by_query)):
        out.append(f"the gold touches {len(counts)} of {len(pool.by_query)} queries: a random sample of the pool "
                   "would spread wider; the correction assumes one")
    return out


def sample_certain(path) -> set[tuple[str, str]]:
    """The pairs a frozen sample drew with certainty (stratum "top K": labeller.annotate.plans, plan top:K)."""
    from labeller.annotate.plans import CERTAIN_STRATUM
    from labeller.annotate.sample import read_sample

    return {(r.query_id, r.doc_id) for r in read_sample(path).rows
            if r.stratum and r.stratum.startswith(CERTAIN_STRATUM)}


def sample_warnings(path, labels: Judgments, gold: Judgments | None = None) -> list[str]:
    """What the frozen sample the gold was graded from (`labeller annotate sample`) says about the design:
    a plan that is not random, strata drawn on other labels than these (other inclusion probabilities), or
    whole queries (plan queries:N) that the labels or the gold no longer hold whole."""
    from labeller.annotate.sample import read_sample

    sample = read_sample(path)
    out = []
    if sample.plan == "uncertain":
        out.append(f"the gold was drawn by plan 'uncertain' ({path}: the pairs the judge was least sure of first), "
                   "not at random: the corrected figures and their intervals do not hold for it; draw a "
                   "uniform or narrow sample")
    elif sample.plan == "stratified":
        out.append(f"the gold was drawn by plan 'stratified' ({path}), which spreads each judge grade's pairs over "
                   "the queries: a query with few pairs of a grade is sampled more than one with many, where the "
                   "correction assumes pairs drawn uniformly within a grade; for corrected figures draw a "
                   "uniform or narrow sample")
    if sample.plan == "queries":
        drawn = {(r.query_id, r.doc_id) for r in sample.rows}
        missing = [(q, d) for q in sorted({r.query_id for r in sample.rows}) for d in sorted(labels.grades.get(q, {}))
                   if (q, d) not in drawn]
        if missing:
            out.append(f"the gold was drawn by plan 'queries' ({path}) but {len(missing)} judged pairs of its queries "
                       f"are not in the sample (e.g. {missing[0]}: the rubric's worked examples, or other --labels "
                       "than it was drawn from): those queries are not whole, so the query design does not apply")
        ungraded = sorted(drawn - {(q, d) for q, docs in (gold.grades if gold else {}).items() for d in docs})
        if gold is not None and ungraded:
            out.append(f"the gold was drawn by plan 'queries' ({path}) but {len(ungraded)} of its pairs have no "
                       f"grade in --gold (e.g. {ungraded[0]}): those queries are not whole, so the corrected figures "
                       "take the pair design; grade the rest of them")
    moved = [r for r in sample.rows if r.stratum and r.stratum.startswith("judge grade ")
             and labels.grade(r.query_id, r.doc_id) not in (None, int(r.stratum.rsplit(" ", 1)[1]))]
    if moved:
        r = moved[0]
        out.append(f"{len(moved)} of the {len(sample.rows)} sampled pairs have another judge grade in --labels than "
                   f"when they were drawn (e.g. ({r.query_id}, {r.doc_id}): {r.stratum}, now "
                   f"{labels.grade(r.query_id, r.doc_id)}): the sample was stratified on other labels, so its "
                   "inclusion probabilities are not this pool's; correct with the labels it was drawn from")
    return out


def example_warnings(gold: Judgments, rubrics: list[str]) -> list[str]:
    """Gold pairs that are worked examples of the rubric the judge graded under: the judge was shown them,
    so they flatter it, and the correction would take the judge for better than it is."""
    from labeller.errors import ConfigError
    from labeller.rubric import load_rubric

    out = []
    for name in rubrics:
        try:
            examples = {(e.query_id, e.doc_id) for e in load_rubric(name).examples if e.query_id and e.doc_id}
        except ConfigError:
            continue  # the labels name a rubric file that is not here: nothing to check against
        shown = sorted(pair for pair in examples if pair in gold)
        if shown:
            out.append(f"{len(shown)} gold pairs are worked examples of rubric '{name}' (e.g. {shown[0]}), shown to "
                       "the judge: they are not a sample of what it grades unaided and flatter it; leave them out "
                       "of the gold (labeller annotate sample does)")
    return out
