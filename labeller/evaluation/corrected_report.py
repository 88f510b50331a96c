"""The corrected figures as the reports show them: beside each plain figure, never in its place."""

from __future__ import annotations

from labeller.evaluation.corrected_results import Corrected, CorrectedValue
from labeller.reports.html import display_path

CORRECTED_HEADER = ["run", "metric", "plain (judge's labels)", "plain CI (queries)", "corrected",
                    "CI (judge error)", "CI (judge error + queries)"]
DIFFERENCE_HEADER = ["run − reference", "metric", "plain Δ", "corrected Δ", "CI (judge error + queries)",
                     "p (worse)"]


def _num(value: float | None, sign: bool = False) -> str:
    return "–" if value is None else f"{value:+.4f}" if sign else f"{value:.4f}"


def _ci(low: float | None, high: float | None, sign: bool = False) -> str:
    return "–" if low is None or high is None else f"[{_num(low, sign)}, {_num(high, sign)}]"


def _corrected_cell(value: CorrectedValue, sign: bool = False) -> str:
    return _num(value.estimate, sign) + (f" ({value.note})" if value.note else "")


def corrected_rows(c: Corrected) -> list[list[object]]:
    return [[run, m.metric, _num(m.plain), _ci(m.plain_ci_low, m.plain_ci_high), _corrected_cell(m.corrected),
             _ci(m.corrected.ci_low, m.corrected.ci_high), _ci(m.corrected.ci_low_queries, m.corrected.ci_high_queries)]
            for run, rows in c.runs.items() for m in rows]


def difference_rows(c: Corrected) -> list[list[object]]:
    return [[f"{d.run} − {d.reference}", d.metric, _num(d.plain, True), _corrected_cell(d.corrected, True),
             _ci(d.corrected.ci_low_queries, d.corrected.ci_high_queries, True),
             "–" if d.p_worse is None else f"{d.p_worse:.4f}"] for d in c.differences]


PER_QUERY_HEADER = ["run", "metric", "target coverage", "graded queries (calibration)", "other queries",
                    "mean interval width", "widest query"]


def per_query_rows(c: Corrected) -> list[list[object]]:
    """A line per run and metric; every query's interval is in the JSON (`corrected.per_query`)."""
    rows = []
    for p in c.per_query:
        widths = {q: high - low for q, (low, high) in p.intervals.items()}
        widest = max(widths, key=lambda q: (widths[q], q)) if widths else None
        rows.append([p.run, p.metric, f"{p.target_coverage:.0%}", p.calibration_queries, len(p.intervals),
                     "–" if not widths else f"{sum(widths.values()) / len(widths):.4f}" + (f" ({p.note})" if p.note
                                                                                           else ""),
                     "–" if widest is None else f"{widest} [{_num(p.intervals[widest][0])}, "
                                                f"{_num(p.intervals[widest][1])}]"])
    return rows


PER_QUERY_INTRO = ("Per-query intervals (conformal risk control, Oosterhuis et al. 2024): each query people did not "
                   "grade gets an interval that holds its value under people's grades for at least the target share "
                   "of such queries, calibrated on the queries people graded whole; every interval is in the JSON "
                   "(`corrected.per_query`).")


def corrected_intro(c: Corrected) -> str:
    level = f"{c.confidence:.0%}"
    design = ("gold pairs sampled within the judge's grades" if c.design == "pairs"
              else f"every judged pair of {c.gold_queries} sampled queries")
    if c.certain_pairs:
        design += f"; {c.certain_pairs} of them the runs' top positions, drawn with certainty"
    judge = f" by {', '.join(c.judge)}" if c.judge else ""
    return (f"Corrected with people's grades from `{display_path(c.gold)}`: {c.gold_pairs} of the {c.pool_pairs} "
            f"pairs labelled{judge} ({design}). Each corrected figure estimates the value under people's "
            f"grades for every judged pair; its {level} interval carries the judge's error, and the wider one "
            "the query sample too. The plain interval is a bootstrap over queries that takes the labels as the truth.")


def unseen_queries_line(c: Corrected) -> str | None:
    """Which figures' intervals the query design's unseen-queries floor widened (CorrectedValue.spread), in words:
    the table alone would show an interval wider than the graded queries' spread with no reason given."""
    named = [f"{run} {m.metric}" for run, rows in c.runs.items() for m in rows if m.corrected.spread == "unseen queries"]
    named += [f"{d.run} − {d.reference} {d.metric}" for d in c.differences if d.corrected.spread == "unseen queries"]
    if not named:
        return None
    return (f"Widened for queries no graded one shows ({', '.join(named)}): one pair's grade can move a query's hit "
            f"rate or MRR across [0, 1], and with {c.gold_queries} queries graded a few of the others could all "
            "differ from every graded one, so each end of the judge-error interval lies at least their share of "
            "all queries from the estimate (cut to the metric's range).")


def corrected_markdown(c: Corrected, table) -> list[str]:
    """The section's lines; `table(header, rows)` renders a table."""
    parts = ["### Corrected for the judge's error", "", corrected_intro(c), "", table(CORRECTED_HEADER,
                                                                                     corrected_rows(c)), ""]
    if c.differences:
        parts += [table(DIFFERENCE_HEADER, difference_rows(c)), ""]
    if unseen := unseen_queries_line(c):
        parts += [unseen, ""]
    if c.per_query and c.design == "queries":
        parts += [PER_QUERY_INTRO, "", table(PER_QUERY_HEADER, per_query_rows(c)), ""]
    parts += [f"- warning: {w}" for w in c.warnings]
    return parts + ([""] if c.warnings else [])
