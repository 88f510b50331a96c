"""An Evaluation as Markdown (terminal, CI log, pull-request comment) and as an HTML report
(labeller.evaluation.report_html); the rows both show are in labeller.evaluation.report_rows."""

from __future__ import annotations

from collections.abc import Sequence

from pathlib import Path

from labeller.evaluation.report_html import QueryTexts, html, query_texts
from labeller.evaluation.report_rows import (COMPARISON_HEADER, GATE_HEADER, comparison_rows, gate_headline,
                                             gate_notes, gate_rows, metric_rows, num, pairing_line, settings_line)
from labeller.evaluation.results import Evaluation
from labeller.io.writing import write_text

__all__ = ["REPORT_FILES", "html", "markdown", "write_report"]


def _md_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(ev: Evaluation) -> str:
    parts = [f"## labeller evaluate: {ev.run}", "", settings_line(ev), ""]
    header, rows = metric_rows(ev)
    parts += [_md_table(header, rows), ""]
    q = ev.queries
    parts += [f"Queries: {q.averaged} averaged of {q.evaluated} evaluated; {q.in_run} in the run, {q.run_only} "
                 f"of them without judgments (skipped), {q.missing_from_run} judged queries missing from the run"
                 + (" (skipped in its means, as trec_eval does; 0 in the comparisons and the gate)."
                    if q.missing_from_run and ev.settings.average == "trec" and ev.comparisons else "."), ""]
    if ev.no_answer.query_ids:
        ids = ", ".join(ev.no_answer.query_ids[:20]) + (" …" if len(ev.no_answer.query_ids) > 20 else "")
        parts += [f"No-answer bucket: {len(ev.no_answer.query_ids)} queries have no document graded "
                  f">= {ev.no_answer.relevant_from} and are not averaged into the means: {ids}", ""]
    unjudged = {k: v for k, v in ev.unjudged.items() if v}
    if unjudged:
        parts += ["Unjudged documents count as not relevant: "
                  + ", ".join(f"{v} in the top {k.split('@')[1]}" for k, v in unjudged.items())
                  + (". Use --fill-holes to label them." if ev.holes is None else "."), ""]
    if ev.holes is not None:
        h = ev.holes
        parts += [f"Holes filled by {h.judge} ({h.rubric}) in the top {h.depth}: {h.holes} unjudged pairs, "
                  f"{h.new} labelled now, {h.from_cache} from the cache, {h.failed} failed"
                  + (f", stopped: {h.stopped}" if h.stopped else "") + ".", ""]
    for c in ev.comparisons:
        parts += [f"### {c.run} against {c.reference}", "",
                  _md_table(COMPARISON_HEADER, comparison_rows(c)), "",
                  pairing_line(c) + f" {c.confidence:.0%} bootstrap CI "
                  f"({c.bootstrap} resamples); randomization test with {c.permutations} sign flips "
                  "(exact when ≤ 20 queries differ).", ""]
    if ev.corrected is not None:
        from labeller.evaluation.corrected_report import corrected_markdown

        parts += corrected_markdown(ev.corrected, _md_table)
    if ev.gate is not None:
        parts += ["### Regression gate", "", gate_headline(ev.gate), "",
                  _md_table(GATE_HEADER, gate_rows(ev.gate)), ""]
        notes = gate_notes(ev.gate)
        parts += notes + [""] if notes else []
    if ev.system_ranking is not None:
        sr = ev.system_ranking
        parts += [f"### System ranking: `{sr.primary_labels}` against `{sr.alternative_labels}`", "",
                  _md_table(["metric", "Kendall τ", "Spearman ρ", "runs"],
                            [[a.metric, num(a.kendall_tau, 3), num(a.spearman_rho, 3), len(sr.runs)]
                             for a in sr.metrics])]
    return "\n".join(parts).rstrip("\n") + "\n"


REPORT_FILES = ("result.json", "summary.md", "index.html")  # what write_report writes, for the early output check


def write_report(ev: Evaluation, directory: str | Path, queries: QueryTexts = None,
                 extra: Sequence[tuple[str, str]] = ()) -> Path:
    """index.html, summary.md and result.json in `directory`, each written atomically. `queries` (a queries
    file or {query_id: text}) puts each query's text beside its id in the HTML page; `extra` sections go
    into the HTML page right after the verdict."""
    directory = Path(directory)
    write_text(directory / "result.json", ev.model_dump_json(indent=2) + "\n")
    write_text(directory / "summary.md", markdown(ev))
    write_text(directory / "index.html", html(ev, query_texts(queries), extra))
    return directory / "index.html"
