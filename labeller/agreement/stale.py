"""Stale results: labels (or gold grades) made under another rubric version, judge or model than asked for.

A calibration loop changes the rubric and re-runs the judge on the same pairs. A label file left over
from before the change still reads fine, so comparing it with gold would measure the old prompt while
the user believes it measures the new one. Every label row records its judge, model, rubric and rubric
version, and `labeller annotate` records the rubric version a person read; these checks compare them
with what the command (or pipeline config) asks for and say what no longer matches.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from labeller.io.memory import as_source
from labeller.io.tables import read_rows
from labeller.io.trec import is_table
from labeller.rubric import Rubric


def _counts(rows: list[dict], key: str) -> Counter:
    return Counter(str(r[key]) for r in rows if r.get(key) not in (None, ""))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def stale_labels(path: str | Path, *, rubric: Rubric | None = None, judge: str | None = None) -> list[str]:
    """Why the label file at `path` no longer matches `rubric` and `judge` ("provider:model"); [] if it does."""
    path = as_source(path)
    if not is_table(path):
        return []  # TREC qrels carry no provenance
    rows = [row for _, row in read_rows(path)]
    if not rows or "judge" not in rows[0]:
        return []
    out = []
    if rubric is not None:  # another version of the same rubric; a rubric of another name is a choice
        same = [r for r in rows if r.get("rubric") == rubric.name]
        other = {v: n for v, n in _counts(same, "rubric_version").items() if v != rubric.version}
        if other:
            versions = ", ".join(sorted(other))
            out.append(f"stale: {_plural(sum(other.values()), 'label')} in {path.name} were made with rubric version "
                       f"{versions}, but rubric '{rubric.name}' is now version {rubric.version}; relabel the pairs "
                       "(unchanged pairs come from the cache) before trusting these figures")
    if judge is not None:
        other = {v: n for v, n in _counts(rows, "judge").items() if v != judge}
        if other:
            out.append(f"stale: {_plural(sum(other.values()), 'label')} in {path.name} were made by judge "
                       f"{', '.join(sorted(other))}, not {judge} as asked; relabel with {judge}")
    return out


def stale_gold(path: str | Path, *, rubric: Rubric | None = None) -> list[str]:
    """Gold rows graded (by `labeller annotate`) under another version of `rubric`."""
    path = as_source(path)
    if rubric is None or not is_table(path):
        return []
    rows = [row for _, row in read_rows(path)]
    other = {v: n for v, n in _counts(rows, "rubric_version").items() if v != rubric.version}
    if not other:
        return []
    return [f"stale: {_plural(sum(other.values()), 'gold row')} in {path.name} were graded under rubric version "
            f"{', '.join(sorted(other))}, but rubric '{rubric.name}' is now version {rubric.version}; check that "
            "the change does not alter what those grades mean, or re-grade the frozen sample"]
