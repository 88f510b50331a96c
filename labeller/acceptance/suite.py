"""The acceptance suite: versioned cases (query, identity, expected outcome, required evidence, reviewer,
split), thresholds approved before results, and the conditions every candidate is compared under.

A TOML file (docs/acceptance.md); its cases may instead sit in a JSONL file it names (`cases_file`),
one case per line. Every field is used or refused: an unknown or malformed one is an error naming the
file, line and field. The suite's digest (sha256 of its parsed content, cases included) goes into
every result, so a result says exactly which suite it answered.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labeller.acceptance.outcomes import Outcome
from labeller.errors import BadInputError
from labeller.io.tables import read_rows
from labeller.io.tomlfile import read_toml
from labeller.systems.base import Identity
from labeller.systems.registry import pydantic_error

Unit = Literal["document", "chunk"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EvidenceItem(Strict):
    """A document (or chunk) a correct answer needs, pinned to its source and revision (or immutable id)."""

    id: str | None = None  # items sharing an id are interchangeable carriers of the same evidence
    doc_id: str
    source_uri: str
    revision: str | None = None
    immutable_id: str | None = None
    unit: Unit | None = None  # must equal the suite's retrieval_unit when given

    @model_validator(mode="after")
    def _pinned(self) -> EvidenceItem:
        if self.revision is None and self.immutable_id is None:
            raise ValueError("evidence needs a revision or an immutable_id, so a stale copy can be told apart")
        return self

    @property
    def item(self) -> str:
        return self.id or self.doc_id


class Case(Strict):
    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    identity: Identity
    expected: Outcome
    split: Literal["tuning", "held_out"]
    reviewer: str = Field(min_length=1)
    reviewed_at: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}")
    evidence: tuple[EvidenceItem, ...] = ()
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if self.split == "held_out" and self.reviewed_at is None:
            raise ValueError("a held_out case needs reviewed_at (the date its reviewer signed it off)")
        if self.evidence and self.expected != "answerable":
            raise ValueError(f"a case expected to be {self.expected} cannot require evidence")
        return self

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


class Thresholds(Strict):
    """Set and approved before any result is seen. A threshold left out is a gate not run."""

    approved_by: str = Field(min_length=1)
    approved_at: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}")
    metrics: dict[str, float] = {}  # e.g. {"ndcg@10" = 0.6, "recall@10" = 0.8}: minimum means
    evidence_coverage: float | None = Field(default=None, ge=0, le=1)  # minimum mean coverage@k
    answerable: float | None = Field(default=None, ge=0, le=1)  # minimum share answered
    no_answer: float | None = Field(default=None, ge=0, le=1)  # minimum share correctly abstained
    access_denied: float | None = Field(default=None, ge=0, le=1)
    max_unverified_access: int = Field(default=0, ge=0)  # cases whose access could not be checked
    max_errors: int = Field(default=0, ge=0)  # integration errors tolerated
    p50_ms: float | None = Field(default=None, gt=0)
    p95_ms: float | None = Field(default=None, gt=0)
    p99_ms: float | None = Field(default=None, gt=0)
    min_latency_samples: int = Field(default=20, ge=1)
    max_query_cost: float | None = Field(default=None, ge=0)  # mean cost per query
    max_ingestion_cost: float | None = Field(default=None, ge=0)
    max_revocation_lag_s: float | None = Field(default=None, ge=0)
    groundedness: float | None = Field(default=None, ge=0, le=1)  # minimum mean groundedness of answers
    max_unsupported_generation_rate: float | None = Field(default=None, ge=0, le=1)  # answers unsupported or both
    max_missing_evidence_rate: float | None = Field(default=None, ge=0, le=1)  # missing, both, correct w/o evidence
    min_held_out: int = Field(default=1, ge=1)  # fewer held-out cases than this cannot decide anything

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


class Workload(Strict):
    warmup: int = Field(default=2, ge=0)  # untimed calls first
    calls: int | None = Field(default=None, ge=1)  # timed calls (cycling the cases); default one per case
    concurrency: int = Field(default=1, ge=1)


class Conditions(Strict):
    """What every candidate is compared under; two results with different conditions are not comparable."""

    corpus_snapshot: str = Field(min_length=1)
    evaluation_budget: str | None = None
    workload: Workload = Workload()


class Revocation(Strict):
    """After the change hook revokes (or deletes) doc_id, the case's query must stop returning it."""

    id: str
    case: str
    doc_id: str
    action: Literal["revoke", "delete"]
    timeout_s: float = Field(default=30.0, gt=0)
    interval_s: float = Field(default=0.5, gt=0)


class Access(Strict):
    acl: str | None = None  # rows {doc_id, users, groups}
    corpus: str | None = None  # a corpus whose rows carry the permission fields below
    users_field: str = "allowed_users"
    groups_field: str = "allowed_groups"


class Grounding(Strict):
    """The answer judge of the grounding gates (labeller.answers): claims of each held-out answer judged against
    the texts (from `corpus`) of the documents the system returned for it."""

    corpus: str = Field(min_length=1)  # doc_id and text of every document the system may return
    judge: str = "offline:lexical"
    claim_rubric: str | None = None  # a claim rubric file; None: the shipped rubrics/claims/claims.md
    depth: int | None = Field(default=None, ge=1)  # top returned documents shown to the judge (None: the suite's k)
    base_url: str | None = None
    max_cost: float | None = Field(default=None, ge=0)  # USD the judge may spend in one run


class SuiteHeader(Strict):
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    retrieval_unit: Unit
    k: int = Field(default=10, ge=1)
    judgments: str | None = None  # optional graded labels/qrels for retrieval metrics (else the evidence)
    cases_file: str | None = None  # a JSONL file of cases instead of [[cases]]


class Suite(Strict):
    suite: SuiteHeader
    thresholds: Thresholds
    conditions: Conditions
    access: Access | None = None
    grounding: Grounding | None = None
    cases: tuple[Case, ...] = ()
    revocations: tuple[Revocation, ...] = ()
    path: str = ""
    digest: str = ""

    def held_out(self) -> list[Case]:
        return [c for c in self.cases if c.split == "held_out"]

    def resolve(self, name: str | None) -> Path | None:
        return None if name is None else Path(self.path).parent / name


def _line_finder(text: str):
    """loc -> line of a TOML suite: the n-th [[cases]] (or [[revocations]]) header, then the field in it."""
    lines = text.splitlines()

    def find(loc: tuple) -> int | None:
        start, end = 0, len(lines)
        if len(loc) >= 2 and loc[0] in ("cases", "revocations") and isinstance(loc[1], int):
            heads = [i for i, line in enumerate(lines) if re.match(rf"\s*\[\[{loc[0]}\]\]", line)]
            if loc[1] >= len(heads):
                return None
            start = heads[loc[1]]
            later = [i for i, line in enumerate(lines) if i > start and re.match(r"\s*\[\[?[\w.]+\]\]?\s*$", line)
                     and not line.strip().startswith(f"[[{loc[0]}.")]
            end = later[0] if later else len(lines)
            loc = loc[2:]
        elif loc:
            heads = [i for i, line in enumerate(lines) if re.match(rf"\s*\[{loc[0]}\]", line)]
            start = heads[0] if heads else 0
        names = [str(p) for p in loc if not isinstance(p, int)]
        for name in reversed(names):
            for i in range(start, end):
                key = re.escape(name)
                if re.match(rf"\s*\"?{key}\"?\s*=", lines[i]) or re.search(rf"[{{,]\s*{key}\s*=", lines[i]):
                    return i + 1
        return start + 1 if start or names else None

    return find


def _digest(raw: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()


def read_suite(path: str | Path) -> Suite:
    """Read and check a suite; every error names the file, line and field."""
    path = Path(path)
    raw = read_toml(path, what="suite file")
    text = path.read_text(encoding="utf-8-sig")
    header = raw.get("suite", {})
    cases_file = header.get("cases_file") if isinstance(header, dict) else None
    if cases_file is not None and "cases" in raw:
        raise BadInputError("give cases either as [[cases]] or in cases_file, not both", path=str(path),
                            field="suite.cases_file")
    if isinstance(cases_file, str):
        raw = {**raw, "cases": _read_cases_file(path.parent / cases_file)}
    return suite_from_dict(raw, path, line_of=_line_finder(text))


def suite_from_dict(raw: dict[str, Any], path: str | Path = "<memory>", line_of: Any = None) -> Suite:
    """A suite from its parsed content (what the TOML file holds), checked as read_suite checks a file.
    Relative file names in it (acl, judgments) are relative to `path`'s directory."""
    try:
        suite = Suite.model_validate({**raw, "path": str(path), "digest": _digest(raw)})
    except ValidationError as exc:
        raise pydantic_error(exc, path, line_of=line_of) from None
    _check(suite)
    return suite


def _read_cases_file(path: Path) -> list[dict[str, Any]]:
    cases = []
    for line, row in read_rows(path):
        try:
            cases.append(Case.model_validate(row).model_dump(mode="json", exclude_defaults=True))
        except ValidationError as exc:
            raise pydantic_error(exc, path, line_of=lambda _loc, n=line: n) from None
    return cases


def _check(suite: Suite) -> None:
    """Cross-field rules pydantic cannot see: unique ids, one retrieval unit, revocations of known cases."""
    where = {"path": suite.path}
    seen: set[str] = set()
    for case in suite.cases:
        if case.id in seen:
            raise BadInputError(f"case id '{case.id}' is used twice", field="cases.id", **where)
        seen.add(case.id)
        for item in case.evidence:
            if item.unit is not None and item.unit != suite.suite.retrieval_unit:
                raise BadInputError(f"case '{case.id}' has {item.unit} evidence but the suite compares "
                                    f"{suite.suite.retrieval_unit}s; one comparison takes one retrieval unit",
                                    field="cases.evidence.unit", **where)
    if not suite.cases:
        raise BadInputError("the suite has no cases", field="cases", **where)
    for rev in suite.revocations:
        if rev.case not in seen:
            raise BadInputError(f"revocation '{rev.id}' names unknown case '{rev.case}'", field="revocations.case",
                                **where)
    limits = suite.thresholds
    gated = [limits.groundedness, limits.max_unsupported_generation_rate, limits.max_missing_evidence_rate]
    if suite.grounding is not None and all(t is None for t in gated):
        raise BadInputError("[grounding] names an answer judge but [thresholds] sets none of groundedness, "
                            "max_unsupported_generation_rate, max_missing_evidence_rate", field="grounding", **where)
    if suite.access is not None and (suite.access.acl is None) == (suite.access.corpus is None):
        raise BadInputError("[access] takes exactly one of acl or corpus", field="access", **where)
