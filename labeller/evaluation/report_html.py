"""An Evaluation as a self-contained HTML page that answers its question at a glance: the gate's
PASS/FAIL first, then the metrics, how per-query values spread (one histogram per metric), and for a
comparison the per-query Δ (run − reference) with each query's text beside its id."""

from __future__ import annotations

from collections.abc import Sequence

import os
from collections.abc import Mapping
from pathlib import Path

from markupsafe import Markup, escape

from labeller.evaluation.report_rows import (COMPARISON_HEADER, GATE_HEADER, VERDICT, comparison_rows,
                                             gate_headline, gate_notes, gate_rows, metric_rows, settings_line)
from labeller.evaluation.results import Comparison, Evaluation
from labeller.reports import banner, bar_chart, excerpt, histogram, page, status_mark, table, with_text

MAX_BARS = 40
LOWEST = 10  # queries listed under "lowest-scoring"
QueryTexts = Mapping[str, object] | str | os.PathLike | None
NO_QUERY_TEXTS = ("Query texts are not shown: the evaluation was run without a queries file (pass --queries to "
                  "see each query's text beside its id).")


def query_texts(queries: QueryTexts) -> dict[str, str] | None:
    """{query_id: text} from a queries file, {id: Query} or {id: text}; None when there is nothing."""
    if queries is None:
        return None
    if isinstance(queries, (str, os.PathLike)):
        from labeller.io.inputs import read_queries

        queries = read_queries(Path(queries))
    return {qid: getattr(q, "text", q) if not isinstance(q, str) else q for qid, q in queries.items()}


def _para(markdown_text: str) -> str:
    """A Markdown one-liner as an escaped HTML paragraph (emphasis and code marks dropped)."""
    return f"<p>{escape(markdown_text.replace('**', '').replace('`', ''))}</p>"


def _verdict_cell(verdict: str) -> Markup:
    word, what = VERDICT[verdict]
    return Markup(f"{status_mark(word == 'PASS')} {escape(what)}")


def _verdict_banner(ev: Evaluation) -> str:
    if ev.gate is None and not ev.floors:
        return ""
    below = [fl for fl in ev.floors if not fl.passed]
    passed = (ev.gate is None or ev.gate.passed) and not below
    parts = [gate_headline(ev.gate).replace("**", "").replace("`", "")] if ev.gate is not None else []
    parts += [f"{fl.metric} of {fl.run} {fl.value if fl.value is None else round(fl.value, 4)} is below its floor "
              f"{fl.floor}" for fl in below]
    if ev.floors and not below:
        parts.append(f"every floor met ({', '.join(f'{fl.metric} >= {fl.floor}' for fl in ev.floors)})")
    return str(banner(passed, "", "; ".join(parts)))


def _label(qid: str, texts: dict[str, str] | None) -> str:
    text = (texts or {}).get(qid)
    return f"{qid} {excerpt(text, 60)}" if text else qid


def _distribution(ev: Evaluation, texts: dict[str, str] | None) -> str:
    run = ev.runs.get(ev.run)
    if run is None:
        return ""
    skip = set(run.no_answer.query_ids)
    panels = [histogram(m, [v for q, v in run.per_query.get(m, {}).items() if q not in skip]) for m in ev.metrics]
    body = (f"<p>How the averaged queries of {escape(ev.run)} spread: one histogram per metric; the dashed "
            "line is the mean.</p>" + f'<div class="panels">{"".join(map(str, panels))}</div>')
    first = next(iter(ev.metrics), None)
    values = sorted((v, q) for q, v in run.per_query.get(first, {}).items() if q not in skip) if first else []
    if values:
        rows = [[with_text(q, (texts or {}).get(q)), v] for v, q in values[:LOWEST]]
        body += (f"<h3>Lowest {escape(first)}: the {len(rows)} weakest queries</h3>"
                 + str(table(["query", first], rows, numeric=(1,))))
    return body + ("" if texts else f'<p class="note">{escape(NO_QUERY_TEXTS)}</p>')


def _delta_chart(ev: Evaluation, c: Comparison, metric: str, texts: dict[str, str] | None) -> str:
    ref = ev.runs.get(c.reference)
    run = ev.runs[c.run]
    base = ref.per_query[metric] if ref else {}
    if not base:
        return ""
    skip = set(run.no_answer.query_ids)
    deltas = sorted(((q, v - base[q]) for q, v in run.per_query[metric].items() if q in base and q not in skip),
                    key=lambda item: -abs(item[1]))
    title = f"<h3>{escape(metric)}: per-query Δ = {escape(c.run)} − {escape(c.reference)}</h3>"
    differing = [(q, d) for q, d in deltas if abs(d) > 1e-12]
    if not differing:
        return f"{title}<p>Identical on all {len(deltas)} queries.</p>"
    shown = sorted(differing[:MAX_BARS], key=lambda item: item[1])
    note = (f"<p>{len(differing)} of {len(deltas)} queries differ (a drop is a negative Δ, in red)"
            + (f"; the {len(shown)} largest are drawn" if len(differing) > len(shown) else "")
            + (f"; {len(deltas) - len(differing)} unchanged queries are not drawn" if len(deltas) > len(differing)
               else "") + ".</p>")
    chart = bar_chart([_label(q, texts) for q, _ in shown], [d for _, d in shown], label_width=420 if texts else 180,
                      width=940 if texts else 760, titles=[excerpt((texts or {}).get(q), 120) for q, _ in shown])
    return f"{title}{note}{chart}"


def _corrected_html(ev: Evaluation) -> str:
    from labeller.evaluation.corrected_report import (CORRECTED_HEADER, DIFFERENCE_HEADER, PER_QUERY_HEADER,
                                                      PER_QUERY_INTRO, corrected_intro, corrected_rows,
                                                      difference_rows, per_query_rows, unseen_queries_line)

    c = ev.corrected
    body = _para(corrected_intro(c)) + str(table(CORRECTED_HEADER, corrected_rows(c)))
    if c.differences:
        body += str(table(DIFFERENCE_HEADER, difference_rows(c)))
    if unseen := unseen_queries_line(c):
        body += _para(unseen)
    if c.per_query and c.design == "queries":
        body += _para(PER_QUERY_INTRO) + str(table(PER_QUERY_HEADER, per_query_rows(c)))
    return body + "".join(_para(f"Warning: {w}") for w in c.warnings)


def html(ev: Evaluation, texts: dict[str, str] | None = None, extra: Sequence[tuple[str, str]] = ()) -> str:
    """The page; `extra` sections (e.g. the pipeline's judge drift, which can fail a run whose gate
    passed) go right after the gate's banner."""
    header, rows = metric_rows(ev)
    verdict = _verdict_banner(ev)
    sections: list[tuple[str, str]] = ([("", verdict)] if verdict else []) + list(extra)
    sections.append(("Metrics", _para(settings_line(ev)) + str(table(header, rows))))
    if ev.corrected is not None:
        sections.append(("Corrected for the judge's error", _corrected_html(ev)))
    distribution = (f"Per-query distribution: {ev.run}", _distribution(ev, texts))
    if not ev.comparisons:  # a single run: how its queries spread is the question; else after the comparisons
        sections.append(distribution)
    if ev.gate is not None:
        sections.append(("Regression gate", _para(gate_headline(ev.gate))
                         + str(table(GATE_HEADER, gate_rows(ev.gate, _verdict_cell)))
                         + _para("Δ is the run under test minus the baseline: a drop is negative; the gate fails "
                                 "a Δ below the threshold's negative that is significant (or untestable).")
                         + "".join(_para(note[2:]) for note in gate_notes(ev.gate))))
    for c in ev.comparisons:
        body = str(table(COMPARISON_HEADER, comparison_rows(c)))
        body += "".join(_delta_chart(ev, c, t.metric, texts) for t in c.tests)
        sections.append((f"{c.run} against {c.reference}", body))
    if ev.comparisons:
        sections.append(distribution)
    if ev.no_answer.query_ids:
        sections.append(("No-answer bucket", "<p>No judged document is relevant for these queries; they are not "
                         "averaged into the means.</p>" + str(table(["query"], [[with_text(q, (texts or {}).get(q))]
                                                                              for q in ev.no_answer.query_ids]))))
    if ev.system_ranking is not None:
        sr = ev.system_ranking
        body = str(table(["metric", "Kendall τ", "p", "Spearman ρ", "p"],
                         [[a.metric, a.kendall_tau, a.kendall_p, a.spearman_rho, a.spearman_p] for a in sr.metrics],
                         numeric=(1, 2, 3, 4)))
        for a in sr.metrics:
            body += str(table(["run", f"{a.metric} ({sr.primary_labels})", f"{a.metric} ({sr.alternative_labels})"],
                              [[r, a.primary[r], a.alternative[r]] for r in sr.runs], numeric=(1, 2)))
        sections.append(("System ranking agreement", body))
    per_query = [[with_text(q, (texts or {}).get(q))] + [ev.per_query[m][q] for m in ev.metrics]
                 for q in sorted(next(iter(ev.per_query.values()), {}))]
    sections.append((f"Per query: {ev.run}", str(table(["query"] + list(ev.metrics), per_query,
                                                        numeric=tuple(range(1, len(ev.metrics) + 1))))))
    return page(f"labeller evaluate: {ev.run}", sections, subtitle=f"{ev.queries.averaged} queries averaged")
