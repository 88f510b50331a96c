"""Whose fault a failed answer is, per query: retrieval's (required evidence not in the top K), generation's (a
claim the retrieved context does not support), or both. The rules, in order:

Required evidence not retrieved (some required doc missing from the passages):
1. correct_without_evidence: the answer is right by its expected facts anyway (from memory): still a retrieval
   failure, never a pass;
2. both: the answer has a claim the passages do not support (not_supported or contradicted);
3. missing_evidence: otherwise (every claim supported by other passages, or an abstention).
Required evidence retrieved (or none required for this query):
4. ignored_context: evidence was required and retrieved, yet the answer is wrong by its facts, or it abstained on
   an answerable query;
5. unsupported_generation: a claim the passages do not support;
6. ok.
An answer whose split or one of whose claims the judge could not give is not attributed (None; counted failed).
"""

from __future__ import annotations

from labeller.answers.models import ATTRIBUTIONS, AnswerRecord


def attribute(*, evidence_retrieved: bool | None, unsupported: bool, correct: bool | None, abstained: bool,
              outcome: str | None) -> str:
    if evidence_retrieved is False:
        if correct:
            return "correct_without_evidence"
        return "both" if unsupported else "missing_evidence"
    wrongly_abstained = abstained and outcome in (None, "answerable")
    if evidence_retrieved and (correct is False or wrongly_abstained):
        return "ignored_context"
    return "unsupported_generation" if unsupported else "ok"


def attribution_table(records: list[AnswerRecord]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Class -> query ids (every class listed, perhaps empty; "unattributed" for answers with failures) and counts."""
    table: dict[str, list[str]] = {name: [] for name in (*ATTRIBUTIONS, "unattributed")}
    for record in records:
        table[record.attribution or "unattributed"].append(record.query_id)
    return table, {name: len(ids) for name, ids in table.items()}
