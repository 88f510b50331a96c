"""The canary file: one source of truth for planting canaries and for probing with them.

A canary is a synthetic record whose key facts are globally unique strings (X9-KITE-42, LO1923),
planted into a test copy of a corpus and then asked about. Three kinds:

- single-store: one `payload` (the planted document) in one `store`, holding `facts`;
- cross-source: `sources` keyed by store, each with its own payload and facts; it passes only
  when the facts of every store are found;
- no-hallucination: no facts, a non-empty `forbidden` list and usually no payload; it passes
  while none of the forbidden strings (fabricated values, refusal boilerplate) shows up;
- live: a `[canary.live]` table (live.py): the answer must come from an external service and must
  show the check was made; nothing is planted.

Any single-store canary may also be a *self-exam* (`self_exam = true`, dates.py): the date of its
own `planted_at` is one more fact, recalled from answers (the payload need not hold it).

A TOML canary file holds `[[canary]]` tables (and an optional `[suite]` table, suite.py); a JSONL
file holds one canary object per line. Facts are matched as whole tokens (factrecall.py).
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from labeller.canaries.dates import date_forms, planted_date
from labeller.canaries.factrecall import contains, token_text
from labeller.canaries.live import LiveCheck
from labeller.errors import BadInputError
from labeller.io.tables import read_rows
from labeller.io.tomlfile import read_toml
from labeller.io.validation import validation_error

DEFAULT_STORE = "default"
_CANARY_HEADER = re.compile(r"^\s*\[\[\s*canary\s*\]\]")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fact(_Strict):
    """A fact to recall. It counts as recalled when its value or any alias appears."""

    value: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _matchable(self) -> Fact:
        for form in [self.value, *self.aliases]:
            if token_text(form) == "  ":
                raise ValueError(f"fact form {form!r} has no letter or digit; facts are matched as whole tokens")
        return self

    def forms(self) -> list[str]:
        return [self.value, *self.aliases]


class Source(_Strict):
    """The part of a cross-source canary that lives in one store."""

    payload: str = Field(min_length=1)
    facts: list[Fact] = Field(min_length=1)
    fields: dict[str, Any] = Field(default_factory=dict)


class CanaryDoc(_Strict):
    """One document a canary plants."""

    doc_id: str
    store: str
    text: str
    facts: list[Fact]
    fields: dict[str, Any]


class Canary(_Strict):
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    question: str = Field(min_length=1)
    planted_at: str
    payload: str | None = None
    store: str = DEFAULT_STORE
    facts: list[Fact] = Field(default_factory=list)
    fields: dict[str, Any] = Field(default_factory=dict)
    sources: dict[str, Source] = Field(default_factory=dict)
    forbidden: list[str] = Field(default_factory=list)
    # A forbidden hit fails a canary whatever the threshold, so 0 would make a test that cannot fail.
    pass_threshold: float = Field(default=1.0, gt=0.0, le=1.0)
    self_exam: bool = False  # the date of planted_at is a fact too (dates.py)
    live: LiveCheck | None = None  # a question for an external service (live.py)

    @field_validator("planted_at")
    @classmethod
    def _iso_time(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("expected an ISO 8601 timestamp such as 2026-01-05T09:00:00Z") from None
        return value

    @model_validator(mode="after")
    def _one_shape(self) -> Canary:
        if self.live is not None and (self.payload is not None or self.sources or self.self_exam or self.fields):
            raise ValueError("a live canary plants nothing: remove payload, sources, fields and self_exam (its facts, "
                             "if any, are values seeded in the live service)")
        if self.self_exam and (self.sources or self.payload is None):
            raise ValueError("a self-exam canary needs a payload (the record whose planted date is asked) and "
                             "no sources")
        if self.live is not None:
            return self
        if self.sources:
            if self.payload is not None or self.facts or self.fields or self.store != DEFAULT_STORE:
                raise ValueError("a cross-source canary keeps payload, facts and fields inside [sources.<store>]; "
                                 "remove the top-level payload/facts/fields/store")
            if len(self.sources) < 2:
                raise ValueError("a cross-source canary needs at least two stores in `sources`")
        elif not self.facts and not self.forbidden and not self.self_exam:
            raise ValueError("a canary needs facts to recall, or a forbidden list (a no-hallucination probe)")
        elif self.facts and self.payload is None:
            raise ValueError("a canary with facts needs a payload: the document that holds them")
        for doc in self.documents():
            text = token_text(doc.text)
            for fact in doc.facts:
                if not any(contains(text, form) for form in fact.forms()):
                    raise ValueError(f"fact '{fact.value}' (or an alias) must appear in the payload of store "
                                     f"'{doc.store}', as whole tokens")
        return self

    @property
    def canary_id(self) -> str:
        """The id given, or one derived from the question so a file without ids still plants the same way."""
        return self.id or "cn-" + hashlib.sha256(self.question.encode("utf-8")).hexdigest()[:10]

    @property
    def kind(self) -> str:
        if self.live is not None:
            return "live"
        if self.sources:
            return "cross-source"
        return "single" if self.facts or self.self_exam else "no-hallucination"

    def documents(self) -> list[CanaryDoc]:
        if self.sources:
            return [CanaryDoc(doc_id=f"canary-{self.canary_id}-{store}", store=store, text=src.payload,
                              facts=src.facts, fields=src.fields) for store, src in sorted(self.sources.items())]
        if self.payload is None:
            return []
        return [CanaryDoc(doc_id=f"canary-{self.canary_id}", store=self.store, text=self.payload,
                          facts=self.facts, fields=self.fields)]

    def facts_by_store(self) -> dict[str, list[Fact]]:
        """The facts planted in each store: what retrieved passages are scored on."""
        return {doc.store: doc.facts for doc in self.documents() if doc.facts}

    def date_fact(self) -> Fact | None:
        if not self.self_exam:
            return None
        value, *aliases = date_forms(planted_date(self.planted_at))
        return Fact(value=value, aliases=aliases)

    def answer_facts(self) -> dict[str, list[Fact]]:
        """What an answer is scored on: the planted facts, the self-exam date, a live service's facts."""
        if self.live is not None:
            return {self.live.service: list(self.facts)} if self.facts else {}
        facts = {store: list(f) for store, f in self.facts_by_store().items()}
        date = self.date_fact()
        if date is not None:
            facts.setdefault(self.store, []).append(date)
        return facts


def load_canaries(path: str | Path) -> list[Canary]:
    """Read a canary file (.toml with [[canary]] tables, or .jsonl), checking ids and fact uniqueness."""
    path = Path(path)
    if path.suffix.lower() == ".toml":
        items = _toml_items(path)
    else:
        items = list(read_rows(path))
    canaries: list[Canary] = []
    for line, item in items:
        try:
            canaries.append(Canary.model_validate(item))
        except ValidationError as exc:
            raise validation_error(exc, path=str(path), line=line) from None
    if not canaries:
        raise BadInputError("no canaries; expected at least one [[canary]] table or JSON line", path=str(path))
    check_canaries(canaries, path)
    return canaries


def _toml_items(path: Path) -> list[tuple[int | None, dict[str, Any]]]:
    """Each [[canary]] table with the line of its header, so errors point into the file."""
    data = read_toml(path)
    unknown = sorted(set(data) - {"canary", "suite"})
    if unknown:
        raise BadInputError(f"unknown top-level key(s) {unknown}; expected [[canary]] tables and an optional "
                            "[suite] table", path=str(path))
    tables = data.get("canary", [])
    if not isinstance(tables, list):
        raise BadInputError("`canary` must be an array of tables ([[canary]])", path=str(path), field="canary")
    headers = [n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
               if _CANARY_HEADER.match(text)]
    lines: list[int | None] = headers if len(headers) == len(tables) else [None] * len(tables)  # inline arrays
    return list(zip(lines, tables))


def check_canaries(canaries: list[Canary], path: str | Path | None = None) -> None:
    """Ids must be unique, and no canary's facts may appear in another canary's documents."""
    where = str(path) if path is not None else None
    seen: set[str] = set()
    for canary in canaries:
        if canary.canary_id in seen:
            raise BadInputError(f"canary id '{canary.canary_id}' is used twice; expected unique ids",
                                path=where, field="id")
        seen.add(canary.canary_id)
    for canary in canaries:
        for other in canaries:
            if other is canary:
                continue
            texts = [token_text(d.text) for d in other.documents()]
            for facts in canary.facts_by_store().values():
                for fact in facts:
                    if any(contains(t, f) for f in fact.forms() for t in texts):
                        raise BadInputError(
                            f"fact '{fact.value}' of canary '{canary.canary_id}' also appears in canary "
                            f"'{other.canary_id}'; expected globally unique facts", path=where, field="facts")

