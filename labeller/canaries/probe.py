"""Probe a retriever (or a run, or a system's answers) with canaries: where each canary ranked, fact
recall of the top K and of the answer, each canary's score and the suite's verdict.

A canary passes when the fact recall of its top-K passages (when something was retrieved) and of
the system's answer (when answers or a workflow output are given) reaches its threshold with no
forbidden hit, in every store for a cross-source canary; a live canary's answer must also show the
check was made (live.py); and, when a judge check ran, its own document must get the top grade.
Its score (0..1) is the lowest of those fact-recall scores (0 for a missing answer or an unshown
live check). The probe passes when the suite's criteria hold (suite.py): by default, every canary
passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from labeller.acceptance.latency import LatencyStats, timed_search
from labeller.canaries.answers import Answer
from labeller.canaries.factrecall import FactScore, fact_recall
from labeller.canaries.judgecheck import JudgeCheck
from labeller.canaries.model import Canary
from labeller.canaries.suite import SuiteCriteria, SuiteVerdict, judge_suite
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
    passages: FactScore | None = None  # None when nothing was retrieved (answers only) or for a live canary
    answer: FactScore | None = None
    checked: bool | None = None  # a live canary: whether the answer showed the check was made
    judge_grades: dict[str, int | None] | None = None  # canary document -> grade; None when the judge failed
    score: float  # 0..1: the lowest of its fact-recall scores (see the module docstring)
    passed: bool
    reasons: list[str]


class ProbeReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str
    k: int
    depth: int
    passed: bool  # the suite's verdict
    n_canaries: int
    n_passed: int
    canaries: list[CanaryResult]
    suite: SuiteVerdict
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


def probe(canaries: Sequence[Canary], corpus: Mapping[str, Doc] | None, ranked: Mapping[str, Sequence[str]] | None,
          *, k: int = 10, source: str = "", hit_texts: Mapping[str, str] | None = None,
          answers: Mapping[str, Answer] | None = None, judge_check: JudgeCheck | None = None,
          latency: LatencyStats | None = None, judge: str | None = None, rubric: str | None = None,
          depth: int | None = None, criteria: SuiteCriteria | None = None) -> ProbeReport:
    """Score every canary against what was retrieved for its question (`ranked`: canary id -> doc ids;
    None when only answers are scored) and the system's answers."""
    if k < 1:
        raise BadInputError(f"k must be at least 1, got {k}")
    if ranked is None and answers is None:
        raise BadInputError("nothing to score: give a ranking (a retriever or a run) or the system's answers")
    if ranked is not None:
        check_planted(canaries, corpus or {})
    results = [_one(c, corpus or {}, ranked, k, hit_texts or {}, answers, judge_check) for c in canaries]
    n_passed = sum(r.passed for r in results)
    verdict = judge_suite({r.canary_id: r.score for r in results}, n_passed, criteria or SuiteCriteria())
    depth = depth or max([k, *(len(v) for v in (ranked or {}).values())])
    return ProbeReport(source=source, k=k, depth=depth, passed=verdict.passed, n_canaries=len(results),
                       n_passed=n_passed, canaries=results, suite=verdict, latency=latency, judge=judge,
                       rubric=rubric, judge_check=judge_check)


def _one(canary: Canary, corpus: Mapping[str, Doc], ranked: Mapping[str, Sequence[str]] | None, k: int,
         hit_texts: Mapping[str, str], answers: Mapping[str, Answer] | None,
         judge_check: JudgeCheck | None) -> CanaryResult:
    ids = list((ranked or {}).get(canary.canary_id, []))
    top = ids[:k]
    reasons: list[str] = []
    scores: list[float] = []
    passages = None
    if ranked is not None and canary.live is None:
        texts = [corpus[d].text if d in corpus else hit_texts.get(d, "") for d in top]
        passages = fact_recall(texts, canary.facts_by_store(), canary.forbidden, canary.pass_threshold)
        reasons += _recall_reasons("retrieved passages", passages, k)
        scores.append(passages.score)
    answer = checked = None
    if answers is not None:
        given = answers.get(canary.canary_id)
        answer = fact_recall(given.text if given else "", canary.answer_facts(), canary.forbidden,
                             canary.pass_threshold)
        if canary.live is not None:
            checked = given is not None and canary.live.shown_in(given.text, given.tool_calls)
            if given is not None and not checked:  # a hard gate, as a forbidden hit is
                answer = answer.model_copy(update={"score": 0.0, "passed": False})
                reasons.append(canary.live.missing_reason())
        if given is None:
            reasons.append("no answer given")
        elif checked is not False:
            reasons += _recall_reasons("answer", answer, None)
        scores.append(answer.score if given is not None else 0.0)
    elif canary.live is not None:
        reasons.append("a live canary is scored on the system's answer: give answers (--answers or --output)")
    grades = None if judge_check is None else judge_check.grades.get(canary.canary_id)
    for doc_id, grade in (grades or {}).items():
        if grade is None:
            reasons.append(f"the judge could not grade its own document {doc_id}")
        elif grade != GRADE_MAX:
            reasons.append(f"the judge gave its own document {doc_id} grade {grade}, expected {GRADE_MAX}")
    ranks = {d.doc_id: (ids.index(d.doc_id) + 1 if d.doc_id in ids else None) for d in canary.documents()}
    return CanaryResult(canary_id=canary.canary_id, kind=canary.kind, question=canary.question, ranks=ranks,
                        retrieved=top, passages=passages, answer=answer, checked=checked, judge_grades=grades,
                        score=min(scores, default=0.0), passed=not reasons, reasons=reasons)


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
