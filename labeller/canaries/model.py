"""The canary file: one source of truth for planting canaries and for probing with them.

A canary is a synthetic record whose key facts are globally unique strings (X9-KITE-42, LO1923),
planted into a test copy of a corpus and then asked about. Three kinds:

- single-store: one `payload` (the planted document) in one `store`, holding `facts`;
- cross-source: `sources` keyed by store, each with its own payload and facts; it passes only
  when the facts of every store are found;
- no-hallucination: no facts, a non-empty `forbidden` list and usually no payload; it passes
  while none of the forbidden strings (fabricated values, refusal boilerplate) shows up.

A TOML canary file holds `[[canary]]` tables; a JSONL file holds one canary object per line.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from labeller.canaries.factrecall import normalise
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

    def forms(self) -> list[str]:
        return [self.value, *(a for a in self.aliases if a.strip())]


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
        if self.sources:
            if self.payload is not None or self.facts or self.fields or self.store != DEFAULT_STORE:
                raise ValueError("a cross-source canary keeps payload, facts and fields inside [sources.<store>]; "
                                 "remove the top-level payload/facts/fields/store")
            if len(self.sources) < 2:
                raise ValueError("a cross-source canary needs at least two stores in `sources`")
        elif not self.facts and not self.forbidden:
            raise ValueError("a canary needs facts to recall, or a forbidden list (a no-hallucination probe)")
        elif self.facts and self.payload is None:
            raise ValueError("a canary with facts needs a payload: the document that holds them")
        for doc in self.documents():
            text = normalise(doc.text)
            for fact in doc.facts:
                if not any(normalise(form) in text for form in fact.forms()):
                    raise ValueError(f"fact '{fact.value}' (or an alias) must appear in the payload of store '{doc.store}'")
        return self

    @property
    def canary_id(self) -> str:
        """The id given, or one derived from the question so a file without ids still plants the same way."""
        return self.id or "cn-" + hashlib.sha256(self.question.encode("utf-8")).hexdigest()[:10]

    @property
    def kind(self) -> str:
        if self.sources:
            return "cross-source"
        return "single" if self.facts else "no-hallucination"

    def documents(self) -> list[CanaryDoc]:
        if self.sources:
            return [CanaryDoc(doc_id=f"canary-{self.canary_id}-{store}", store=store, text=src.payload,
                              facts=src.facts, fields=src.fields) for store, src in sorted(self.sources.items())]
        if self.payload is None:
            return []
        return [CanaryDoc(doc_id=f"canary-{self.canary_id}", store=self.store, text=self.payload,
                          facts=self.facts, fields=self.fields)]

    def facts_by_store(self) -> dict[str, list[Fact]]:
        return {doc.store: doc.facts for doc in self.documents() if doc.facts}


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
    unknown = sorted(set(data) - {"canary"})
    if unknown:
        raise BadInputError(f"unknown top-level key(s) {unknown}; expected only [[canary]] tables", path=str(path))
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
            texts = [normalise(d.text) for d in other.documents()]
            for facts in canary.facts_by_store().values():
                for fact in facts:
                    if any(normalise(f) in t for f in fact.forms() for t in texts):
                        raise BadInputError(
                            f"fact '{fact.value}' of canary '{canary.canary_id}' also appears in canary "
                            f"'{other.canary_id}'; expected globally unique facts", path=where, field="facts")

