"""Canaries check the judge too: a canary's own document must get the top grade for its question.

Only single-store canaries are checked. A cross-source canary's documents each hold part of the
answer by design, so the rubric does not promise them the top grade; a no-hallucination or live
canary has no document; a self-exam canary's question asks for the planted date, which its
document's text does not hold. Grading goes through the labelling engine and its cache like any other pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from labeller.store.base import VerdictStore
from labeller.canaries.model import Canary
from labeller.judges.base import Judge
from labeller.labelling import LabelOptions, label_pairs
from labeller.records import Doc, Pair, Query
from labeller.rubric import Rubric


def judge_pairs(canaries: Sequence[Canary]) -> list[tuple[str, str]]:
    """(canary id, document id) of every document the judge check grades."""
    return [(c.canary_id, d.doc_id) for c in canaries if c.kind == "single" and not c.self_exam
            for d in c.documents()]


class JudgeCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    grades: dict[str, dict[str, int | None]]  # canary id -> {its document: grade}; None when the judge failed
    new: int  # pairs graded by a request now
    cached: int  # pairs answered from the verdict cache


async def judge_canaries(canaries: Sequence[Canary], corpus: Mapping[str, Doc], judge: Judge, rubric: Rubric,
                         cache: VerdictStore, options: LabelOptions | None = None) -> JudgeCheck:
    """Grade each single-store canary's document for its own question, through the cache."""
    checked = judge_pairs(canaries)
    by_id = {c.canary_id: c for c in canaries}
    queries = {cid: Query(query_id=cid, text=by_id[cid].question) for cid, _ in checked}
    docs = {did: corpus[did] for _, did in checked}
    pairs = [Pair(query_id=cid, doc_id=did) for cid, did in checked]
    run = await label_pairs(pairs, queries, docs, judge, rubric, cache, options or LabelOptions(progress=False))
    grades: dict[str, dict[str, int | None]] = {cid: {} for cid, _ in checked}
    for cid, did in checked:
        grades[cid][did] = None
    for label in run.labels:
        grades[label.query_id][label.doc_id] = label.grade
    return JudgeCheck(grades=grades, new=run.stats.new, cached=run.stats.cached)
