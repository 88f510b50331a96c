"""The results of a labelling run, chunk by chunk, handed on in input order as soon as a chunk is settled.

A run plans its pairs a chunk at a time (render, hash, look up: engine.py); each pair then settles as a
label row or a LabelFailure. When every pair of the oldest open chunk has settled, its label rows go to
the sink (an output file being written, or a list) and the chunk is forgotten: memory holds the chunks
still open, not the whole run. Label rows are plain dicts shaped exactly like Label.model_dump(), built
straight from the stored verdict's JSON: a cached rerun builds no pydantic object per pair.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

import orjson

from labeller.judges.grade_probs import prob_columns
from labeller.labelling.failure_log import FailureLog
from labeller.records import Label, LabelFailure
from labeller.store.cached_row import CACHED_ROW, COPIED_FIELDS, LABEL_DEFAULTS, OWN_FIELDS, ROW_TEMPLATE

__all__ = ["CACHED_ROW", "PlannedChunks", "cached_lines", "json_bodies", "label_row", "labels_from_rows"]

_pick = itemgetter(*COPIED_FIELDS)


def cached_lines(query_ids: Sequence[str], doc_ids: Sequence[str], rows: Iterable[bytes]) -> list[bytes]:
    """The JSONL line (no newline) of each pair answered from the store, given its CACHED_ROW object: the
    same values, in the same order, as label_row() gives for the record."""
    return [b'{"query_id":"%b","doc_id":"%b",%b' % (q, d, row[1:])
            for q, d, row in zip(json_bodies(query_ids), json_bodies(doc_ids), rows)]


def json_bodies(texts: Sequence[str]) -> list[bytes]:
    """Each text as a JSON string without its quotes, in one orjson call: inside a JSON string every quote is
    escaped, so '","' only ever falls between two of them."""
    try:
        bodies = orjson.dumps(list(texts))[2:-2].split(b'","')
    except TypeError:  # a lone surrogate (orjson refuses it); json writes it raw, and UTF-8 then says where
        bodies = []
    if len(bodies) == len(texts) and texts:
        return bodies
    return [json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8") for text in texts]


def label_row(query_id: str, doc_id: str, record: dict[str, Any], from_cache: bool) -> dict[str, Any]:
    """The output row of a pair answered by `record` (a CachedVerdict as a dict): Label.model_dump()'s keys,
    in its order. The verdict and the pair are the pair's own; provenance fields come from the record
    (a field an older record lacks takes Label's default)."""
    verdict = record["verdict"]
    try:
        copied = _pick(record)
    except KeyError:
        copied = tuple(record.get(name, LABEL_DEFAULTS.get(name)) for name in COPIED_FIELDS)
    row = ROW_TEMPLATE.copy()  # keeps Label's field order; the updates below only fill values in
    row.update(zip(OWN_FIELDS, (query_id, doc_id, verdict["grade"], verdict["justification"])))
    row.update(zip(COPIED_FIELDS, copied))
    row["from_cache"] = from_cache
    probs = record.get("grade_probs")
    if probs:  # --grade-probs: the distribution stored with the verdict (judges.grade_probs)
        row.update(prob_columns(probs))
    return row


def labels_from_rows(rows: list[dict[str, Any]]) -> list[Label]:
    return [Label.model_validate(row) for row in rows]


_OPEN = object()  # a slot whose pair has not settled yet


class PlannedChunks:
    """Settled results of the pairs planned so far, slot by input position, emitted a whole chunk at a time."""

    def __init__(self, total: int, size: int, sink: Callable[[list[dict[str, Any]]], None]) -> None:
        self.total, self.size, self.sink = total, size, sink
        self.slots: dict[int, list[Any]] = {}  # chunk number -> its results by offset (_OPEN until settled)
        self.settled: dict[int, int] = {}  # chunk number -> pairs settled in it
        self.head = 0  # the oldest chunk not yet emitted
        self.planned = 0  # chunks planned so far
        self.failures = FailureLog()  # for the summary and the failures file (in input order), on disk past a few
        self.failed_positions = array("q")  # the input position of each of those failures

    def plan(self, chunk: int) -> list[Any]:
        """Open a chunk; its slots are returned for a planner that settles many pairs at once (filled())."""
        lo = chunk * self.size
        slots = self.slots[chunk] = [_OPEN] * (min(lo + self.size, self.total) - lo)
        self.settled[chunk] = 0
        self.planned = max(self.planned, chunk + 1)
        return slots

    def filled(self, chunk: int, count: int) -> None:
        """`count` open slots of the chunk were settled by writing into them directly."""
        self.settled[chunk] += count

    def settle(self, position: int, result: dict[str, Any] | LabelFailure) -> None:
        chunk, offset = divmod(position, self.size)
        slots = self.slots[chunk]
        if slots[offset] is not _OPEN:  # each pair settles once
            raise RuntimeError(f"pair {position} settled twice")
        slots[offset] = result
        self.settled[chunk] += 1

    def flush(self) -> None:
        """Emit every leading chunk whose pairs have all settled."""
        while self.head < self.planned:
            slots = self.slots[self.head]
            if self.settled[self.head] < len(slots):
                return
            rows = slots
            if any(isinstance(result, LabelFailure) for result in slots):
                rows = []
                for position, result in enumerate(slots, start=self.head * self.size):
                    if isinstance(result, LabelFailure):
                        self.failures.append(result)
                        self.failed_positions.append(position)
                    else:
                        rows.append(result)
            del self.slots[self.head], self.settled[self.head]
            self.head += 1
            self.sink(rows)

    def forget(self) -> None:
        """Let every chunk planned so far go, settled or not, emitting nothing (a dry run keeps no rows)."""
        self.slots.clear()
        self.settled.clear()
        self.head = self.planned

    def in_position_order(self, rows: list[dict[str, Any]],
                          build: Callable[[dict[str, Any]], Any] = Label.model_validate) -> list[Any]:
        """Every emitted result at its input position: `rows` are the label rows the sink was given, in
        order, each made by `build` (another task's rows stay dicts); a position whose chunk was never emitted
        (the run stopped) is None."""
        failed = dict(zip(self.failed_positions, self.failures))
        emitted = min(self.total, self.head * self.size)
        labels = iter(rows)
        out: list[Any] = [failed[p] if p in failed else build(next(labels)) for p in range(emitted)]
        return out + [None] * (self.total - emitted)
