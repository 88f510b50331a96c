"""The label_slice page: did every pair get a grade, how grades spread, and per query what was graded
what and why, with the query's text and an excerpt of each document beside their ids."""

from __future__ import annotations

from collections import Counter

from markupsafe import Markup, escape

from labeller.records import Doc, Label, Query
from labeller.reports import banner, bar_chart, display_path, excerpt, page, table, with_text

SHOWN = 200  # pairs listed on the page (all are in labels.jsonl)
GRADE_COLOURS = {1: "#b3261e", 2: "#d55e00", 3: "#8a6d00", 4: "#2f7d4f", 5: "#17703a"}


def rubric_name(labels: list[Label], fallback: str) -> str:
    """A rubric as a person names it: name and version, never the path it was read from."""
    if labels:
        return f"{labels[0].rubric} (version {labels[0].rubric_version})"
    return display_path(fallback)


def grade_badge(grade: int) -> Markup:
    return Markup(f'<b class="grade" style="color:{GRADE_COLOURS.get(grade, "#1d232b")}">{grade}</b>')


def _by_query(labels: list[Label], queries: dict[str, Query], corpus: dict[str, Doc]) -> str:
    groups: dict[str, list[Label]] = {}
    for lb in labels[:SHOWN]:
        groups.setdefault(lb.query_id, []).append(lb)
    cards = []
    for qid, group in groups.items():
        query = queries.get(qid)
        rows = [[with_text(lb.doc_id, corpus[lb.doc_id].text if lb.doc_id in corpus else None), grade_badge(lb.grade),
                 excerpt(lb.justification, 200), "cache" if lb.from_cache else "new"] for lb in group]
        cards.append(f'<div class="card query-group" data-query="{escape(qid)}"><b class="id">{escape(qid)}</b> '
                     f'<span class="excerpt">{escape(excerpt(query.text if query else "", 200))}</span>'
                     + str(table(["document", "grade", "justification", "verdict from"], rows, numeric=(1,)))
                     + "</div>")
    return "".join(cards)


def slice_page(title: str, summary: list[str], labels: list[Label], failed: int, queries: dict[str, Query],
               corpus: dict[str, Doc], subtitle: str) -> str:
    from labeller.pipelines.steps import paragraphs

    grades = Counter(lb.grade for lb in labels)
    verdict = (banner(True, f"all {len(labels)} pairs labelled") if not failed else
               banner(False, f"{failed} pairs could not be labelled", "(left out, never given a grade; rerun to "
                                                                       "retry them)"))
    listed = min(len(labels), SHOWN)
    heading = (f"Labels by query (all {listed})" if listed == len(labels)
               else f"Labels by query (first {listed} of {len(labels)}; all are in labels.jsonl)")
    return page(title, [
        ("", str(verdict)),
        ("Summary", paragraphs(summary)),
        ("Grade distribution", bar_chart([f"grade {g}" for g in range(1, 6)], [grades.get(g, 0) for g in range(1, 6)],
                                         value_format="{:.0f}")),
        (heading, _by_query(labels, queries, corpus)),
    ], subtitle=subtitle)
