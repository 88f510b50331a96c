"""An Evaluation as Markdown (terminal, CI log, pull-request comment) and as an HTML report."""

from __future__ import annotations

from pathlib import Path

from markupsafe import escape

from labeller.evaluation.results import Comparison, Evaluation, GateResult, RunScores
from labeller.io.tables import write_text
from labeller.reports.html import bar_chart, page, table

MAX_BARS = 40
_VERDICT = {"regression": "❌ regression", "drop-not-significant": "⚠️ drop, not significant",
            "drop-untestable": "⚠️ drop, untested (too few queries; --require-significance)",
            "drop-within-threshold": "✅ drop within threshold", "no-drop": "✅ no drop",
            "not-comparable": "❌ not comparable"}


def _f(value: float | None, digits: int = 4, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "–" if value is None else "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _settings_line(ev: Evaluation) -> str:
    s = ev.settings
    average = ("trec_eval default: queries in the run that have judgments" if s.average == "trec"
               else "all judged queries, missing ones score 0 (trec_eval -c)")
    return (f"Labels: `{ev.labels}` · relevant from grade {s.relevant_from} · NDCG gain {s.gain} · "
            f"averaging: {average}")


def _runs_in_order(ev: Evaluation) -> list[RunScores]:
    runs = list(ev.runs.values())
    return sorted(runs, key=lambda r: r.name != ev.baseline)  # baseline first, then as given


def _metric_rows(ev: Evaluation) -> tuple[list[str], list[list[object]]]:
    runs = _runs_in_order(ev)
    header = ["metric"] + [r.name for r in runs]
    rows: list[list[object]] = [[m] + [_f(r.metrics.get(m)) for r in runs] for m in ev.metrics]
    if ev.no_answer.query_ids:
        rows += [[f"{m} (trec_eval, no-answer included)"] + [_f(r.trec_eval.get(m)) for r in runs] for m in ev.metrics]
    rows += [[k] + [_f(r.judged.get(k)) for r in runs] for k in ev.judged]
    return header, rows


def _md_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _comparison_rows(c: Comparison) -> list[list[object]]:
    return [[t.metric, t.n, _f(t.reference_mean), _f(t.run_mean), _f(t.difference, sign=True),
             f"[{_f(t.ci_low, sign=True)}, {_f(t.ci_high, sign=True)}]", _p(t.p_t_test), _p(t.p_randomization),
             f"{t.wins}/{t.losses}/{t.ties}"] for t in c.tests]


_COMPARISON_HEADER = ["metric", "queries", "reference", "run", "Δ", "CI", "p (t-test)", "p (randomization)", "W/L/T"]
_GATE_HEADER = ["run", "metric", "baseline", "run value", "drop", "threshold", "p (worse)", "smallest p",
                "verdict", "decided by"]


def _gate_rows(g: GateResult) -> list[list[object]]:
    return [[c.run, c.metric, _f(c.baseline), _f(c.run_value), _f(c.drop, sign=True), _f(c.threshold), _p(c.p_value),
             _p(c.smallest_p), _VERDICT[c.verdict], c.decided_by] for c in g.checks]


def _gate_headline(g: GateResult) -> str:
    if not g.passed:
        return f"**Regression gate: FAILED** against `{g.baseline}`: " + "; ".join(g.reasons)
    headline = (f"**Regression gate: PASSED** against `{g.baseline}`: no drop above its threshold is significant "
                f"(p < {g.alpha}, one-sided {g.test} test), nor on too few queries for a test to tell")
    if g.warnings:
        headline += " **but not everything was gated**: " + "; ".join(g.warnings)
    return headline


def _gate_notes(g: GateResult) -> list[str]:
    notes = sorted({c.note for c in g.checks if c.note and c.verdict != "not-comparable"})
    return [f"- {note}" for note in notes]


def _pairing_line(c: Comparison) -> str:
    if c.not_comparable:
        return f"Nothing to compare: {c.not_comparable}."
    if c.pairing == "shared":
        return "Δ = run − reference on queries both averaged;"
    lacking = f"{c.only_in_reference} queries the run lacks score 0 for it"
    if c.pairing == "union":
        return (f"Δ = run − reference on the queries either side averaged ({lacking}, "
                f"{c.only_in_run} the reference lacks score 0 for the reference, as trec_eval -c);")
    return (f"Δ = run − reference on the saved baseline's queries ({lacking}; {c.only_in_run} queries the "
            "baseline has no value for are left out);")


def markdown(ev: Evaluation) -> str:
    parts = [f"## labeller evaluate: {ev.run}", "", _settings_line(ev), ""]
    header, rows = _metric_rows(ev)
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
                  _md_table(_COMPARISON_HEADER, _comparison_rows(c)), "",
                  _pairing_line(c) + f" {c.confidence:.0%} bootstrap CI "
                  f"({c.bootstrap} resamples); randomization test with {c.permutations} sign flips "
                  "(exact when ≤ 20 queries differ).", ""]
    if ev.gate is not None:
        parts += ["### Regression gate", "", _gate_headline(ev.gate), "",
                  _md_table(_GATE_HEADER, _gate_rows(ev.gate)), ""]
        notes = _gate_notes(ev.gate)
        parts += notes + [""] if notes else []
    if ev.system_ranking is not None:
        sr = ev.system_ranking
        parts += [f"### System ranking: `{sr.primary_labels}` against `{sr.alternative_labels}`", "",
                  _md_table(["metric", "Kendall τ", "Spearman ρ", "runs"],
                            [[a.metric, _f(a.kendall_tau, 3), _f(a.spearman_rho, 3), len(sr.runs)]
                             for a in sr.metrics])]
    return "\n".join(parts).rstrip("\n") + "\n"


def _delta_chart(ev: Evaluation, c: Comparison, metric: str) -> str:
    ref = ev.runs.get(c.reference)
    run = ev.runs[c.run]
    base = ref.per_query[metric] if ref else {}
    if not base:
        return ""
    skip = set(run.no_answer.query_ids)
    deltas = sorted(((q, v - base[q]) for q, v in run.per_query[metric].items() if q in base and q not in skip),
                    key=lambda item: -abs(item[1]))
    title = f"<h3>{escape(metric)}: per-query {escape(c.run)} − {escape(c.reference)}</h3>"
    if all(abs(d) <= 1e-12 for _, d in deltas):
        return f"{title}<p>Identical on all {len(deltas)} queries.</p>"
    shown = sorted(deltas[:MAX_BARS], key=lambda item: item[1])
    note = (f"<p>The {len(shown)} largest of {len(deltas)} per-query differences.</p>"
            if len(deltas) > len(shown) else "")
    return f"{title}{note}" + str(bar_chart([q for q, _ in shown], [d for _, d in shown]))


def _para(markdown_text: str) -> str:
    """A Markdown one-liner as an escaped HTML paragraph (emphasis and code marks dropped)."""
    return f"<p>{escape(markdown_text.replace('**', '').replace('`', ''))}</p>"


def html(ev: Evaluation) -> str:
    header, rows = _metric_rows(ev)
    sections: list[tuple[str, str]] = [("Metrics", _para(_settings_line(ev)) + str(table(header, rows)))]
    if ev.gate is not None:
        sections.append(("Regression gate", _para(_gate_headline(ev.gate))
                         + str(table(_GATE_HEADER, _gate_rows(ev.gate)))
                         + "".join(_para(note[2:]) for note in _gate_notes(ev.gate))))
    for c in ev.comparisons:
        body = str(table(_COMPARISON_HEADER, _comparison_rows(c)))
        body += "".join(_delta_chart(ev, c, t.metric) for t in c.tests)
        sections.append((f"{c.run} against {c.reference}", body))
    if ev.no_answer.query_ids:
        sections.append(("No-answer bucket", "<p>No judged document is relevant for these queries; they are not "
                         "averaged into the means.</p>" + str(table(["query"], [[q] for q in ev.no_answer.query_ids]))))
    if ev.system_ranking is not None:
        sr = ev.system_ranking
        body = str(table(["metric", "Kendall τ", "p", "Spearman ρ", "p"],
                         [[a.metric, a.kendall_tau, a.kendall_p, a.spearman_rho, a.spearman_p] for a in sr.metrics],
                         numeric=(1, 2, 3, 4)))
        for a in sr.metrics:
            body += str(table(["run", f"{a.metric} ({sr.primary_labels})", f"{a.metric} ({sr.alternative_labels})"],
                              [[r, a.primary[r], a.alternative[r]] for r in sr.runs], numeric=(1, 2)))
        sections.append(("System ranking agreement", body))
    per_query = [[q] + [ev.per_query[m][q] for m in ev.metrics] for q in sorted(next(iter(ev.per_query.values()), {}))]
    sections.append((f"Per query: {ev.run}", str(table(["query"] + list(ev.metrics), per_query,
                                                        numeric=tuple(range(1, len(ev.metrics) + 1))))))
    return page(f"labeller evaluate: {ev.run}", sections, subtitle=f"{ev.queries.averaged} queries averaged")


REPORT_FILES = ("result.json", "summary.md", "index.html")  # what write_report writes, for the early output check


def write_report(ev: Evaluation, directory: str | Path) -> Path:
    """index.html, summary.md and result.json in `directory`, each written atomically."""
    directory = Path(directory)
    write_text(directory / "result.json", ev.model_dump_json(indent=2) + "\n")
    write_text(directory / "summary.md", markdown(ev))
    write_text(directory / "index.html", html(ev))
    return directory / "index.html"
