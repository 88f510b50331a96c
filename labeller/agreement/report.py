"""Agreement reports: Markdown, a self-contained HTML page (confusion heatmap) and a CSV of disagreements.

The HTML reads top-down the way a person asks: how good is the judge (summary), where does it go wrong
(heatmap), which pairs (disagreements, too generous then too strict, worst first), then every figure.
All three files are written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from labeller.agreement.disagreements import Disagreement, disagreements_csv, grouped
from labeller.agreement.jury_report import html_section as judges_html
from labeller.agreement.jury_report import markdown_lines as judges_markdown
from labeller.agreement.uncertainty import heading as uncertainty_heading
from labeller.agreement.uncertainty import html_section as uncertainty_html
from labeller.agreement.uncertainty import markdown_lines as uncertainty_markdown
from labeller.io.writing import write_text
from labeller.records import Doc, Query
from labeller.reports import NO_TEXTS, Estimate, banner, display_path, heatmap, interval_chart, page, table, with_text

if TYPE_CHECKING:
    from labeller.agreement.run import AgreeResult

FILES = ("agreement.md", "agreement.html", "disagreements.csv")
SHOWN = 200  # pairs on one side only listed in the HTML page


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _ci(interval, sign: str = "") -> str:
    if interval is None or interval.low is None:
        return "n/a"
    return f"{interval.low:{sign}.3f} to {interval.high:{sign}.3f}"


def generosity_sentence(result: AgreeResult) -> str:
    """A plain sentence on whether the judge grades higher or lower than people."""
    diff, ci = result.mean_signed_difference, result.ci.mean_signed_difference
    span = "" if ci.low is None else f" ({int(result.bootstrap.confidence * 100)}% CI {ci.low:+.2f} to {ci.high:+.2f})"
    if abs(diff) < 0.05:
        return f"On average the judge grades like people: the mean difference is {diff:+.2f} grades{span}."
    side = "more generous" if diff > 0 else "stricter"
    return f"The judge is {side} than people by {abs(diff):.2f} grades on average{span}."


def headline(result: AgreeResult) -> list[tuple[str, str]]:
    conf = int(result.bootstrap.confidence * 100)
    if result.n < 2:  # no kappa from one pair: said, not printed as 0.000 with a 0-0 interval
        return [("pairs compared", f"{result.n} pair over {result.queries} query"),
                *(("grade scale", note) for note in result.scales),
                ("Cohen's kappa, weighted kappa, Krippendorff's alpha",
                 "cannot be computed from one pair (chance agreement needs at least two pairs)"),
                ("exact agreement / within one grade", f"{result.exact_agreement:.1%} / {result.within_one:.1%}")]
    rows = [("pairs compared", f"{result.n} pairs over {result.queries} queries"),
            *(("grade scale", note) for note in result.scales),
            ("Cohen's kappa", f"{_num(result.kappa)} ({conf}% CI {_ci(result.ci.kappa)})"),
            ("quadratic-weighted kappa", f"{_num(result.kappa_quadratic)} ({conf}% CI {_ci(result.ci.kappa_quadratic)})"),
            ("Krippendorff's alpha (ordinal)", f"{_num(result.alpha_ordinal)} ({conf}% CI {_ci(result.ci.alpha_ordinal)})"),
            (f"kappa, relevant from grade {result.relevant_from}",
             f"{_num(result.kappa_relevant)} ({conf}% CI {_ci(result.ci.kappa_binary[str(result.relevant_from)])})"),
            ("exact agreement / within one grade", f"{result.exact_agreement:.1%} / {result.within_one:.1%}")]
    if result.ceiling:
        c = result.ceiling
        rows.append(("human ceiling", f"on the {c.pairs} pairs several people graded, people agree with each other at "
                                      f"kappa {_num(c.kappa)} (quadratic {_num(c.kappa_quadratic)}); the judge agrees "
                                      f"with each of them at {_num(c.judge_kappa)} (quadratic "
                                      f"{_num(c.judge_kappa_quadratic)})"))
    if result.prediction_powered:
        p = result.prediction_powered
        rows.append((f"share relevant (grade {p.relevant_from}+), prediction-powered",
                     f"{p.stratified_estimate:.1%} ({conf}% CI {p.stratified.low:.1%} to {p.stratified.high:.1%}) "
                     f"stratified by judge grade; {p.classic_estimate:.1%} ({p.classic.low:.1%} to "
                     f"{p.classic.high:.1%}) classic; the judge alone says {p.judge_only_share:.1%}"))
    rows.append(("disagreements", f"{result.too_generous} pairs judge too generous, {result.too_strict} too strict "
                                  f"(by {result.min_diff}+ grades)"))
    if result.uncertainty:  # labels made with --samples (labeller.agreement.uncertainty)
        rows.append(("judge uncertainty", result.uncertainty.verdict))
    if result.entropy:  # labels made with --grade-probs (labeller.agreement.entropy_bands)
        rows.append(("grade entropy", result.entropy.verdict))
    return rows


def figure_rows(result: AgreeResult) -> list[list[object]]:
    ci = result.ci
    rows: list[list[object]] = [
        [name, _num(getattr(result, name), 4), _ci(getattr(ci, name))]
        for name in ("kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "spearman", "kendall",
                     "exact_agreement", "within_one", "mean_signed_difference")]
    rows += [[f"kappa_binary (relevant from {k})", _num(v, 4), _ci(ci.kappa_binary[k])]
             for k, v in result.kappa_binary.items()]
    return rows


def _gate_lines(result: AgreeResult) -> list[str]:
    g = result.gate
    if g is None:
        return []
    lines = [f"Verdict: **{g.verdict.upper()}** ({g.change}). Metric: {g.metric}, new {_num(g.new)}"
             + (f", old {_num(g.old)}, new - old {_signed(g.difference)} (CI {_ci(g.ci, '+')})" if g.old is not None
                else "")
             + "; fails when " + (f"{g.metric} is below --min-kappa {g.min_kappa:g} or when " if g.min_kappa is not None else "")
             + f"the upper end of the CI of new - old is below -{g.max_drop:g}."]
    lines += [f"- {r}" for r in g.reasons]
    if g.old is not None:
        lines.append(f"{len(g.fixed)} pairs fixed (new grade closer to people's), {len(g.broken)} broken "
                     f"(further away), over {g.pairs} pairs.")
    return lines


def gate_change_chart(gate, sides: bool = True) -> Markup:
    """Old against new with their intervals (`sides`, when there is a baseline), then new − old with its
    interval, against 0 and the failing line −max_drop."""
    sides = [Estimate(figure=gate.metric, side=side, value=value, low=ci.low if ci else None,
                      high=ci.high if ci else None)
             for side, value, ci in (("old", gate.old, gate.old_ci), ("new", gate.new, gate.new_ci))
             if value is not None and sides]
    change = interval_chart([Estimate(figure=f"{gate.metric}: new − old", side="new − old", value=gate.difference,
                                      low=gate.ci.low if gate.ci else None, high=gate.ci.high if gate.ci else None)],
                            reference_lines=[(0.0, "0: no change"),
                                             (-gate.max_drop, f"−{gate.max_drop:g}: fails when the whole interval "
                                                              "lies left of this line")])
    return (interval_chart(sides, x_range=(min(0.0, *[e.low or 0 for e in sides]), 1.0)) if len(sides) == 2
            else Markup("")) + change


def markdown_report(result: AgreeResult, entries: list[Disagreement]) -> str:
    out = ["# Agreement of judge labels with human gold", "",
           f"Labels `{display_path(result.labels)}` against gold `{display_path(result.gold)}`.", "",
           generosity_sentence(result), ""]
    out += [f"- **{k}**: {v}" for k, v in headline(result)] + [""]
    out += [f"> warning: {w}" for w in result.warnings] + ([""] if result.warnings else [])
    if result.gate:
        out += ["## Prompt-change gate", ""] + _gate_lines(result) + [""]
    out += uncertainty_markdown(result.uncertainty) + uncertainty_markdown(result.entropy)
    out += judges_markdown(result.judges)
    out += ["## Confusion matrix (rows: human, columns: judge)", "",
            "| human \\ judge | " + " | ".join(map(str, result.confusion.grades)) + " |",
            "|---" * (len(result.confusion.grades) + 1) + "|"]
    out += [f"| {g} | " + " | ".join(map(str, row)) + " |" for g, row in zip(result.confusion.grades, result.confusion.matrix)]
    for direction, group in grouped(entries).items():
        out += ["", f"## {direction[0].upper()}{direction[1:]} ({len(group)})", ""]
        for e in group:
            out += [f"### {e.query_id} / {e.doc_id}: judge {e.judge_grade}, human {e.human_grade} ({e.difference:+d})", ""]
            out += [f"- query: {e.query}"] if e.query else []
            out += [f"- document: {e.document_excerpt}"] if e.document_excerpt else []
            out += [f"- human note: {e.human_note or '(none)'}", f"- judge: {e.judge_justification or '(none)'}", ""]
    out += ["", "## All figures", "", "| figure | value | CI |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in figure_rows(result)]
    return "\n".join(out) + "\n"


def _card(e: Disagreement) -> str:
    rows = [("human", f"{e.human_grade}: {e.human_note or '(no note)'}"),
            ("judge", f"{e.judge_grade}: {e.judge_justification or '(no justification)'}")]
    if e.query:
        rows.insert(0, ("query", e.query))
    if e.document_excerpt:
        rows.insert(1 if e.query else 0, ("document", e.document_excerpt))
    body = "".join(f"<b>{escape(k)}</b><span class=\"excerpt\">{escape(v)}</span>" for k, v in rows)
    return (f'<div class="card disagreement" data-direction="{escape(e.direction)}"><b>{escape(e.query_id)} / '
            f"{escape(e.doc_id)}</b> · judge {e.judge_grade}, human {e.human_grade} ({e.difference:+d})"
            f'<div class="kv">{body}</div></div>')


def _pair_cells(query_id: str, doc_id: str, queries: dict[str, Query] | None, corpus: dict[str, Doc] | None) -> list:
    query, doc = (queries or {}).get(query_id), (corpus or {}).get(doc_id)
    return [with_text(query_id, query.text if query else None), with_text(doc_id, doc.text if doc else None)]


def html_report(result: AgreeResult, entries: list[Disagreement], queries: dict[str, Query] | None = None,
                corpus: dict[str, Doc] | None = None) -> str:
    summary = (Markup(f"<p><b>{escape(generosity_sentence(result))}</b></p>")
               + table(["figure", "value"], headline(result))
               + Markup("".join(f'<p class="bad">warning: {escape(w)}</p>' for w in result.warnings)))
    texts_note = "" if queries and corpus else f'<p class="note">{escape(NO_TEXTS)}</p>'
    sections = [("Summary", summary)]
    if result.gate:
        cls = "ok" if result.gate.verdict == "pass" else "bad"
        lines = _gate_lines(result)
        body = Markup(f'<p class="{cls}">{escape(lines[0].replace("**", ""))}</p>' + "".join(
            f"<p>{escape(line)}</p>" for line in lines[1:]))
        g = result.gate
        sections.insert(0, ("", banner(g.verdict == "pass", f"prompt-change gate: {g.change}",
                                       f"{g.metric} new {_num(g.new)}" + (f", old {_num(g.old)}" if g.old is not None
                                                                          else ""))))
        chart = gate_change_chart(g) if g.difference is not None else Markup("")
        sections.append(("Prompt-change gate", body + chart
                         + Markup('<p><a href="#flipped">Pairs the change flipped</a></p>')))
    for bands in (result.uncertainty, result.entropy):
        if bands:
            sections.append((uncertainty_heading(bands), uncertainty_html(bands)))
    if result.judges:  # a jury or escalation file
        sections.append(("Against gold, by judge", judges_html(result.judges)))
    grades = [str(g) for g in result.confusion.grades]
    sections.append(("Confusion matrix", heatmap(result.confusion.matrix, grades, grades, "human grade", "judge grade")))
    for direction, group in grouped(entries).items():
        cards = "".join(_card(e) for e in group) or "<p>None.</p>"
        sections.append((f"{direction[0].upper()}{direction[1:]} ({len(group)})",
                         Markup(f'<div class="group" id="{direction.replace(" ", "-")}">{cards}</div>')))
    sides = result.one_side_only
    if sides.labels_only or sides.gold_only:
        listed = [["labels only", *_pair_cells(p.query_id, p.doc_id, queries, corpus)]
                  for p in sides.labels_only_pairs[:SHOWN]]
        listed += [["gold only", *_pair_cells(p.query_id, p.doc_id, queries, corpus)]
                   for p in sides.gold_only_pairs[:SHOWN]]
        sections.append(("Pairs on one side only", Markup(
            f"<p>{sides.labels_only} labelled pairs have no gold grade and {sides.gold_only} gold pairs have no "
            f"label; they are not in the figures above (first {SHOWN} of each listed; all are in --json).</p>"
            + texts_note) + table(["side", "query", "document"], listed)))
    if result.gate:
        flipped = Markup('<div id="flipped"></div>' + (texts_note if result.gate.fixed or result.gate.broken else
                                                       '<p class="note">None: the change flipped no pair.</p>'))
        for name, changes in (("Fixed", result.gate.fixed), ("Broken", result.gate.broken)):
            if changes:
                flipped += Markup(f"<h3>{name} (first {min(len(changes), SHOWN)} of {len(changes)})</h3>") + table(
                    ["query", "document", "human", "old", "new"],
                    [[*_pair_cells(c.query_id, c.doc_id, queries, corpus), c.gold, c.old, c.new]
                     for c in changes[:SHOWN]], (2, 3, 4))
        sections.append(("Pairs the change flipped", flipped))
    per_grade = [[g.grade, _num(g.precision), _num(g.recall), g.judge_count, g.gold_count] for g in result.per_grade]
    sections += [("All figures", table(["figure", "value", f"{int(result.bootstrap.confidence * 100)}% CI"],
                                       figure_rows(result))
                  + table(["grade", "judge precision", "judge recall", "judge count", "human count"], per_grade, (1, 2, 3, 4)))]
    subtitle = (f"labels {display_path(result.labels)} · gold {display_path(result.gold)} · bootstrap over queries, "
                f"{result.bootstrap.resamples} resamples")
    return page("Judge agreement with human gold", sections, subtitle)


def write_reports(directory: str | Path, result: AgreeResult, entries: list[Disagreement],
                  queries: dict[str, Query] | None = None, corpus: dict[str, Doc] | None = None) -> list[Path]:
    """agreement.md, agreement.html and disagreements.csv; `queries` and `corpus` put texts beside ids."""
    directory = Path(directory)
    md, html, csv = (directory / name for name in FILES)
    return [write_text(md, markdown_report(result, entries)),
            write_text(html, html_report(result, entries, queries, corpus)),
            write_text(csv, disagreements_csv(entries))]
