"""The triage file: one entry per failed case per candidate, kept across reruns (JSON, hand-editable).

Each entry has a primary cause, set automatically where labeller can tell (a leak is permissions,
missing evidence retrieval coverage, stale evidence source or revision setup, an HTTP/MCP error
integration, a slow call operations) and kept once a person edits it (`cause_set_by` is then their
name), an owner and a retest date (edited by hand), and a status a rerun moves between `failing`,
`still_failing` and `fixed`. The file also remembers each held-out case's digest and reviewed_at, and
the thresholds' digest each candidate was last run under: a held-out case whose content changed
without a new `reviewed_at` is a silent change, and the run refuses to pass while one is there.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from labeller.acceptance.result import Cause, CaseResult, Failure, GateResult
from labeller.acceptance.suite import Suite
from labeller.errors import BadInputError
from labeller.io.writing import write_text
from labeller.systems.registry import pydantic_error


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    candidate: str
    case_id: str
    status: str  # failing | still_failing | fixed
    cause: Cause | None
    cause_set_by: str = "labeller"  # a person's name once edited: labeller then keeps their cause
    reasons: list[str]
    owner: str | None = None
    retest_date: str | None = None
    first_failed: str
    last_run: str


class HeldOutCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    digest: str
    reviewed_at: str | None


class TriageFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = "labeller-acceptance-triage/1"
    suite: str = ""  # the suite's name
    held_out: dict[str, HeldOutCase] = {}
    thresholds: dict[str, str] = {}  # candidate -> thresholds digest of its last run
    entries: list[Entry] = []


def read_triage(path: Path) -> TriageFile:
    if not path.exists():
        return TriageFile()
    try:
        return TriageFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise BadInputError(f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno) from None
    except ValidationError as exc:
        raise pydantic_error(exc, path) from None


def primary_cause(case: CaseResult, gates: list[GateResult]) -> Cause:
    if case.error:
        return "integration"
    if case.leaked:
        return "permissions"
    if case.stale:
        return "source_or_revision"
    if case.missing:
        return "retrieval_coverage"
    named = [f.cause for g in gates if not g.holds for f in g.failures if f.case_id == case.case_id and f.cause]
    return named[0] if named else "retrieval_ranking"


def _reasons(case: CaseResult, gates: list[GateResult]) -> list[str]:
    return [f"{g.gate}: {f.reason}" for g in gates for f in g.failures if f.case_id == case.case_id]


def changed_held_out(suite: Suite, triage: TriageFile) -> list[str]:
    """Held-out cases whose content changed since the last run without a new reviewed_at."""
    return [c.id for c in suite.held_out() if c.id in triage.held_out
            and triage.held_out[c.id].digest != c.digest() and triage.held_out[c.id].reviewed_at == c.reviewed_at]


def update_triage(path: Path, suite: Suite, candidate: str, cases: list[CaseResult], gates: list[GateResult],
                  when: str) -> tuple[list[GateResult], list[str]]:
    """Fold one run into the triage file; returns (the held-out integrity gate, notes for the report)."""
    triage = read_triage(path)
    notes: list[str] = []
    silent = changed_held_out(suite, triage)
    previous = triage.thresholds.get(candidate)
    if previous is not None and previous != suite.thresholds.digest():
        notes.append(f"thresholds changed since this candidate's last results (digest {previous} -> "
                     f"{suite.thresholds.digest()})")
    for c in suite.held_out():
        old = triage.held_out.get(c.id)
        if old is not None and old.digest != c.digest() and c.id not in silent:
            notes.append(f"held-out case '{c.id}' changed and was re-reviewed by {c.reviewer} on {c.reviewed_at}")
        elif old is None and triage.held_out:
            notes.append(f"new held-out case '{c.id}' reviewed by {c.reviewer} on {c.reviewed_at}")
    failed = {c.case_id: c for c in cases if c.failed or any(f.case_id == c.case_id for g in gates if not g.holds
                                                               for f in g.failures)}
    entries = {(e.candidate, e.case_id): e for e in triage.entries}
    for (cand, case_id), entry in entries.items():
        if cand == candidate and case_id not in failed and entry.status != "fixed":
            entries[(cand, case_id)] = entry.model_copy(update={"status": "fixed", "last_run": when})
            notes.append(f"case '{case_id}' fixed (was {entry.cause})")
    for case_id, case in failed.items():
        entry = entries.get((candidate, case_id))
        cause = primary_cause(case, gates)
        if entry is None or entry.status == "fixed":
            entries[(candidate, case_id)] = Entry(candidate=candidate, case_id=case_id, status="failing",
                                                  cause=cause, reasons=_reasons(case, gates), first_failed=when,
                                                  last_run=when, owner=entry.owner if entry else None)
        else:
            keep = entry.cause_set_by != "labeller"
            notes.append(f"case '{case_id}' still failing since {entry.first_failed} (cause "
                         f"{entry.cause if keep else cause}, owner {entry.owner or 'none'}, retest "
                         f"{entry.retest_date or 'not set'})")
            entries[(candidate, case_id)] = entry.model_copy(update={
                "status": "still_failing", "last_run": when, "reasons": _reasons(case, gates),
                "cause": entry.cause if keep else cause})
    triage.suite = suite.suite.name
    triage.held_out = {**triage.held_out, **{c.id: HeldOutCase(digest=c.digest(), reviewed_at=c.reviewed_at)
                                             for c in suite.held_out() if c.id not in silent}}
    triage.thresholds[candidate] = suite.thresholds.digest()
    triage.entries = sorted(entries.values(), key=lambda e: (e.candidate, e.case_id))
    write_text(path, triage.model_dump_json(indent=2) + "\n")
    gate = GateResult(gate="held_out_integrity", status="fail" if silent else "pass", measured=len(silent),
                      threshold=0, n=len(suite.held_out()),
                      failures=[Failure(case_id=c, reason="held-out case changed since the last run without a new "
                                        "reviewed_at; re-review it (set reviewed_at) or restore it",
                                        cause="source_or_revision") for c in silent],
                      detail="held-out cases silently changed since the triage file's last run")
    return [gate], notes
