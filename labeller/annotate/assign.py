"""Who grades which pair: every pair once, a share of them (the overlap) by two people.

Deterministic: the sample id, the annotator names and the overlap decide everything, so restarting
the server (or starting it on another machine) gives everybody the same pairs in the same order.
The overlap pairs are chosen by a hash of the sample id and the pair, so they are spread over the
sample rather than bunched at its start; each pair goes to the people with the fewest pairs so far.
"""

from __future__ import annotations

import hashlib

from labeller.annotate.sample import Sample, SampleRow
from labeller.errors import BadInputError

SHARED_BY = 2  # people per overlap pair


def _digest(*parts: str) -> str:
    return hashlib.sha256("\t".join(parts).encode("utf-8")).hexdigest()


def check_annotators(names: list[str]) -> list[str]:
    cleaned = [n.strip() for n in names if n.strip()]
    if not cleaned:
        raise BadInputError("no annotator names; expected e.g. --annotators alice,bob", field="annotators")
    for name in cleaned:
        if len(name) > 40 or not all(ch.isalnum() or ch in "-_." for ch in name):
            raise BadInputError(f"annotator name '{name}' must be 1-40 letters, digits, '-', '_' or '.'",
                                field="annotators")
    if len(set(cleaned)) != len(cleaned):
        raise BadInputError("an annotator name is given twice; expected distinct names", field="annotators")
    return cleaned


def assign(sample: Sample, annotators: list[str], overlap: float) -> dict[str, list[SampleRow]]:
    """Each annotator's pairs in sample order. `overlap` is the share of pairs graded by two people."""
    if not 0 <= overlap <= 1:
        raise BadInputError(f"--overlap {overlap} is not a share; expected a number from 0 to 1", field="overlap")
    names = check_annotators(annotators)
    if len(names) == 1:
        return {names[0]: list(sample.rows)}
    ranked = sorted(sample.rows, key=lambda r: _digest(sample.sample_id, r.query_id, r.doc_id))
    shared = round(overlap * len(ranked))
    load = {n: 0 for n in names}
    mine: dict[str, list[SampleRow]] = {n: [] for n in names}
    for index, row in enumerate(ranked):
        copies = SHARED_BY if index < shared else 1
        key = row.query_id + "\t" + row.doc_id
        chosen = sorted(names, key=lambda n: (load[n], _digest(sample.sample_id, key, n)))[:copies]
        for name in chosen:
            load[name] += 1
            mine[name].append(row)
    return {n: sorted(rows, key=lambda r: r.position) for n, rows in mine.items()}


def shared_pairs(assignment: dict[str, list[SampleRow]]) -> set[tuple[str, str]]:
    counts: dict[tuple[str, str], int] = {}
    for rows in assignment.values():
        for r in rows:
            counts[r.query_id, r.doc_id] = counts.get((r.query_id, r.doc_id), 0) + 1
    return {pair for pair, n in counts.items() if n > 1}
