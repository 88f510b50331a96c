"""Per answer: its claims with their verdicts, groundedness, citation precision and recall, fact recall and
forbidden hits (the canary matching: labeller.canaries.factrecall), abstention correctness.

- groundedness = supported claims / judged claims (None with no judged claim: an abstention says nothing);
- citation precision = cited docs that support at least one claim / cited docs; citation recall = judged claims
  with a supporting passage among the citations / judged claims (both None when the table has no citations or
  the answer cites nothing, resp. has no judged claim);
- the answer is correct by its expected facts when every fact (value or alias) is in it and no forbidden string;
- it abstained when the answers table says so, else when the answer is empty or the claim split says so;
  abstaining is correct exactly for no_answer and access_denied queries.
"""

from __future__ import annotations

from typing import Any

from labeller.answers.attribution import attribute
from labeller.answers.models import Answer, AnswerInputs, AnswerRecord, ClaimResult
from labeller.canaries.factrecall import fact_recall
from labeller.records import LabelFailure
from labeller.tasks.claims import ClaimItem


def _share(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 6)


def claim_results(claims: list[ClaimItem], verdicts: dict[str, dict[str, Any]],
                  failures: dict[str, LabelFailure]) -> list[ClaimResult]:
    out = []
    for claim in claims:
        row = verdicts.get(claim.claim_id)
        if row is None:
            failure = failures.get(claim.claim_id)
            out.append(ClaimResult(claim_id=claim.claim_id, text=claim.claim, verdict=None,
                                   failure=failure.reason if failure else "not judged (the run stopped)"))
            continue
        verdict = row["verdict"]
        out.append(ClaimResult(claim_id=claim.claim_id, text=claim.claim, verdict=verdict["verdict"],
                               supporting=verdict["supporting"], contradicting=verdict["contradicting"],
                               justification=verdict["justification"], from_cache=bool(row.get("from_cache")),
                               sample_verdicts=row.get("sample_verdicts"), judge_verdicts=row.get("judge_verdicts"),
                               escalated=bool(row.get("escalated"))))
    return out


def answer_record(answer: Answer, inputs: AnswerInputs, split: dict[str, Any] | None, claims: list[ClaimResult],
                  split_failed: bool) -> AnswerRecord:
    qid = answer.query_id
    passages = inputs.passages.get(qid, [])
    judged = [c for c in claims if c.verdict is not None]
    supported = [c for c in judged if c.verdict == "supported"]
    counts = {v: sum(c.verdict == v for c in judged) for v in ("supported", "contradicted", "not_supported")}
    failed = len(claims) - len(judged) + int(split_failed)
    abstained = answer.abstained if answer.abstained is not None else \
        (not answer.answer.strip() or bool(split and split["verdict"]["abstained"]))  # an empty answer abstains
    required = (inputs.required or {}).get(qid) if inputs.required is not None else None
    shown = {p.doc_id for p in passages if p.doc_id is not None}
    missing = [d for d in required if d not in shown] if required is not None else []
    evidence = None if required is None else not missing
    facts = (inputs.facts or {}).get(qid)
    recall = correct = None
    forbidden: list[str] = []
    if facts is not None:
        score = fact_recall(answer.answer, {"answer": facts.facts}, facts.forbidden)
        recall, forbidden = round(score.recall, 6), list(score.forbidden_hits)
        correct = score.recall == 1.0 and not forbidden
    precision = recall_cited = None
    if answer.citations is not None:
        cited = list(dict.fromkeys(answer.citations))
        backing = {pid for c in supported for pid in c.supporting}
        precision = _share(sum(d in backing for d in cited), len(cited))
        recall_cited = _share(sum(any(pid in cited for pid in c.supporting) for c in supported), len(judged))
    outcome = (inputs.outcomes or {}).get(qid, "answerable") if inputs.outcomes is not None else None
    abstention_ok = None if outcome is None else abstained == (outcome != "answerable")
    record = dict(query_id=qid, groundedness=_share(len(supported), len(judged)), claims=claims,
                  supported=counts["supported"], contradicted=counts["contradicted"],
                  not_supported=counts["not_supported"], failed=failed, abstained=abstained,
                  evidence_retrieved=evidence, missing_evidence=missing, answer_correct=correct, fact_recall=recall,
                  forbidden_hits=forbidden, citation_precision=precision, citation_recall=recall_cited,
                  expected_outcome=outcome, abstention_correct=abstention_ok, answer=answer.answer,
                  question=inputs.questions.get(qid, ""),
                  passages=passages, split_justification=split["verdict"]["justification"] if split else "")
    attribution = None if failed else attribute(
        evidence_retrieved=evidence, unsupported=counts["contradicted"] + counts["not_supported"] > 0,
        correct=correct, abstained=abstained, outcome=outcome)
    return AnswerRecord(attribution=attribution, **record)
