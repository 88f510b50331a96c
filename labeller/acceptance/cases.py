"""Score one case's response: evidence covered or stale, documents leaked, the outcome right or wrong."""

from __future__ import annotations

from labeller.acceptance.access import Permissions, leaks
from labeller.acceptance.execute import CaseCall
from labeller.acceptance.result import CaseResult
from labeller.acceptance.suite import EvidenceItem
from labeller.systems.base import ResultItem


def _matches(result: ResultItem, item: EvidenceItem) -> bool:
    return result.doc_id == item.doc_id or (result.source_uri is not None and result.source_uri == item.source_uri)


def _current(result: ResultItem, item: EvidenceItem) -> bool:
    """A result that names its revision must carry the pinned one (revision or immutable id)."""
    return result.revision is None or result.revision in (item.revision, item.immutable_id)


def evidence_state(results: list[ResultItem], evidence: tuple[EvidenceItem, ...]) -> tuple[int, list[str], list[str]]:
    """(items required, items missing, items returned only at another revision)."""
    items: dict[str, list[EvidenceItem]] = {}
    for e in evidence:
        items.setdefault(e.item, []).append(e)
    missing, stale = [], []
    for name, carriers in sorted(items.items()):
        hits = [(r, e) for r in results for e in carriers if _matches(r, e)]
        if any(_current(r, e) for r, e in hits):
            continue
        (stale if hits else missing).append(name)
    return len(items), missing, stale


def score_case(call: CaseCall, permissions: Permissions | None, redact: bool) -> CaseResult:
    case, response = call.case, call.response
    results = [] if response.error else response.results
    returned = [r.doc_id for r in results]
    abstained = not returned and not response.answer and response.error is None
    required, missing, stale = evidence_state(results, case.evidence)
    leaked, unverified = leaks(permissions, returned, case.identity) if permissions is not None else ([], returned)
    correct = response.error is None and (not abstained if case.expected == "answerable" else abstained)
    return CaseResult(
        case_id=case.id, split=case.split, expected=case.expected, user=case.identity.user,
        groups=list(case.identity.groups), query=None if redact else case.query, case_digest=case.digest(),
        returned=returned, abstained=abstained, error=response.error,
        latency_ms=call.seconds * 1000 if call.seconds else None, required=required,
        covered=required - len(missing) - len(stale), missing=missing, stale=stale, leaked=leaked,
        unverified=unverified, outcome_correct=correct, cost=response.cost)
