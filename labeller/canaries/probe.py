"""Probe a retriever (or a run) with canaries: where each canary ranked, and fact recall of the top K.

A canary passes when the fact recall of its top-K passages (and of the agent's answer, when answers
are given) reaches its threshold with no forbidden hit, in every store for a cross-source canary;
and, when a judge check ran, when its own document got the top grade. The probe passes only when
every canary passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from labeller.acceptance.latency import LatencyStats, timed_search
from labeller.canaries.factrecall import FactScore, fact_recall
from labeller.canaries.judgecheck import JudgeCheck
from labeller.canaries.model import Canary
from labeller.errors import BadInputError
from labeller.records import GRADE_MAX, Doc
from labeller.retrieval.base import Retriever


class CanaryResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    canary_id: str
    kind: str
    question: str
    ranks: dict[str, int | None]  # canary document -> 1-based rank in the retrieved list, None when absent
    retrieved: list[str]  # the top-K document ids
    passages: FactScore
    answer: FactScore | None = None
    judge_grades: dict[str, int | None] | None = None  # canary document -> grade; None when the judge failed
    passed: bool
    reasons: list[str]


class ProbeReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    k: int
    depth: int
    passed: bool
    n_canaries: int
    n_passed: int
    canaries: list[CanaryResult]
    latency: LatencyStats | None = None
    judge: str | None = None
    rubric: str | None = None
    judge_check: JudgeCheck | None = None  # the judge's grades, and how many came from the cache


def retrieve(canaries: Sequence[Canary], retriever: Retriever, depth: int,
             concurrency: int = 1) -> tuple[dict[str, list[str]], dict[str, str], LatencyStats]:
    """Ask the live retriever every canary question; returns ranked ids, hit texts and latency."""
    results, latency = timed_search(retriever, [(c.canary_id, c.question) for c in canaries], depth, concurrency)
    texts = {h.doc_id: h.text for hits in results.values() for h in hits if h.text}
    return {q: [h.doc_id for h in hits] for q, hits in results.items()}, texts, latency


def probe(canaries: Sequence[Canary], corpus: Mapping[str, Doc], ranked: Mapping[str, Sequence[str]], *,
          k: int = 10, source: str = "", hit_texts: Mapping[str, str] | None = None,
          answers: Mapping[str, str] | None = None, judge_check: JudgeCheck | None = None,
          latency: LatencyStats | None = None, judge: str | None = None, rubric: str | None = None,
          depth: int | None = None) -> ProbeReport:
    """Score every canary against what was retrieved for its question (`ranked`: canary id -> doc ids)."""
    if k < 1:
        raise BadInputError(f"k must be at least 1, got {k}")
    check_planted(canaries, corpus)
    hit_texts = hit_texts or {}
    results = []
    for canary in canaries:
        ids = list(ranked.get(canary.canary_id, []))
        top = ids[:k]
        texts = [corpus[d].text if d in corpus else hit_texts.get(d, "") for d in top]
        facts = canary.facts_by_store()
        passages = fact_recall(texts, facts, canary.forbidden, canary.pass_threshold)
        reasons = _recall_reasons("retrieved passages", passages, k)
        answer = None
        if answers is not None:
            text = answers.get(canary.canary_id)
            answer = fact_recall(text or "", facts, canary.forbidden, canary.pass_threshold)
            reasons += ["no answer given"] if text is None else _recall_reasons("answer", answer, None)
        grades = None if judge_check is None else judge_check.grades.get(canary.canary_id)
        for doc_id, grade in (grades or {}).items():
            if grade is None:
                reasons.append(f"the judge could not grade its own document {doc_id}")
            elif grade != GRADE_MAX:
                reasons.append(f"the judge gave its own document {doc_id} grade {grade}, expected {GRADE_MAX}")
        ranks = {d.doc_id: (ids.index(d.doc_id) + 1 if d.doc_id in ids else None) for d in canary.documents()}
        results.append(CanaryResult(canary_id=canary.canary_id, kind=canary.kind, question=canary.question,
                                    ranks=ranks, retrieved=top, passages=passages, answer=answer,
                                    judge_grades=grades, passed=not reasons, reasons=reasons))
    n_passed = sum(r.passed for r in results)
    return ProbeReport(source=source, k=k, depth=depth or max([k, *(len(v) for v in ranked.values())]),
                       passed=n_passed == len(results), n_canaries=len(results), n_passed=n_passed,
                       canaries=results, latency=latency, judge=judge, rubric=rubric, judge_check=judge_check)


def check_planted(canaries: Sequence[Canary], corpus: Mapping[str, Doc]) -> None:
    for canary in canaries:
        for doc in canary.documents():
            if doc.doc_id not in corpus:
                raise BadInputError(f"canary document '{doc.doc_id}' is not in the corpus; probe the test copy "
                                    "written by `labeller canaries plant`", field="corpus")


def _recall_reasons(what: str, score: FactScore, k: int | None) -> list[str]:
    if score.passed:
        return []
    where = f"top {k} {what}" if k else what
    if score.forbidden_hits:
        return [f"forbidden text in {where}: {', '.join(score.forbidden_hits)}"]
    stores = ", ".join(f"{s} {r:.2f}" for s, r in score.per_store.items())
    return [f"fact recall of {where} {score.recall:.2f} below {score.threshold:.2f} (per store: {stores}; "
            f"missing: {', '.join(score.missing)})"]
