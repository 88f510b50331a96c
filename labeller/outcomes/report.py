"""An OutcomesReport as Markdown (terminal, CI log) and as a self-contained HTML page; both show the same rows."""

from __future__ import annotations

from pathlib import Path

from markupsafe import escape

from labeller.io.writing import write_text
from labeller.outcomes.results import CELLS, OutcomesReport
from labeller.reports.html import banner, display_path, page, table, with_text

REPORT_FILES = ("index.html", "summary.md", "result.json")
CELL_NAMES = {"retrieval_fault": "retrieval failed, task failed (retrieval's fault)",
              "agent_fault": "retrieval ok, task failed (the agent's)",
              "over_penalised": "retrieval failed, task ok (the metric over-penalises)",
              "both_ok": "both fine"}
PREDICTION_HEADER = ["metric", "AUC", "interval", "slope", "P(ok) at 0", "P(ok) at 1", "ok: task rate (n)",
                     "failed: task rate (n)", "note"]


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _rate(rate: float | None, n: int) -> str:
    return f"{_num(rate, 2)} ({n})"


def prediction_rows(report: OutcomesReport) -> list[list[str]]:
    rows = []
    for p in report.predictions:
        notes = [n for n, on in (("best", p.metric == report.recommendation.metric), ("as good as best",
                 p.as_good_as_best), ("separates perfectly", p.separated)) if on]
        rows.append([p.metric, _num(p.auc), f"{_num(p.auc_low)}–{_num(p.auc_high)}", _num(p.slope, 2),
                     _num(p.p_at_0, 2), _num(p.p_at_1, 2), _rate(p.ok_rate, p.ok_n),
                     _rate(p.failed_rate, p.failed_n), ", ".join(notes)])
    return rows


def _md_table(header: list[str], rows: list[list[object]]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)])


def _joined_line(report: OutcomesReport) -> str:
    j = report.joined
    return (f"{j.analysed} of {j.outcomes} outcome rows analysed (joined on {report.key}); task success rate "
            f"{_num(report.outcome_rate)}; {len(j.no_judgments)} without judgments, {len(j.no_answer)} with nothing "
            f"relevant to find (left out); {j.not_in_outcomes} judged queries without an outcome.")


def markdown(report: OutcomesReport) -> str:
    parts = [f"## labeller outcomes: {report.run}", "", report.recommendation.sentence, "", _joined_line(report), "",
             _md_table(PREDICTION_HEADER, prediction_rows(report)), ""]
    a = report.attribution
    if a is not None:
        parts += [f"### Attribution by {a.metric} (retrieval ok when >= {a.ok_from:g})", "",
                  _md_table(["cell", "queries", "examples"],
                            [[CELL_NAMES[c], a.counts[c], ", ".join(q.query_id for q in a.queries[c][:8])]
                             for c in CELLS]), ""]
    if report.regression is not None:
        parts += [f"### Regression against {report.regression.baseline}", "", report.regression.sentence, ""]
    if report.gate is not None:
        g = report.gate
        parts += [f"Downstream gate: {'PASS' if g.passed else 'FAIL'}: {g.reason}.", ""]
    parts += [f"WARNING: {w}." for w in report.warnings]
    return "\n".join(parts).rstrip() + "\n"


def html(report: OutcomesReport, texts: dict[str, str] | None = None) -> str:
    texts = texts or {}
    sections = [("", str(banner(report.recommendation.predictive, "What to gate on", report.recommendation.sentence))
                 + f'<p class="note">{escape(_joined_line(report))}</p>'),
                ("Which metric predicts the outcome", str(table(PREDICTION_HEADER, prediction_rows(report),
                                                               numeric=range(1, 8))))]
    a = report.attribution
    if a is not None:
        body = table(["cell", "queries"], [[CELL_NAMES[c], a.counts[c]] for c in CELLS], numeric=[1])
        for cell in CELLS[:3]:
            if a.queries[cell]:
                body += f"<h3>{escape(CELL_NAMES[cell])}</h3>" + table(
                    ["query", a.metric, "trace"],
                    [[with_text(q.query_id, q.text or texts.get(q.query_id)), q.value, q.trace_id or "–"]
                     for q in a.queries[cell]], numeric=[1])
        sections.append((f"Whose fault: by {a.metric} (ok when >= {a.ok_from:g})", str(body)))
    r = report.regression
    if r is not None:
        body = f"<p>{escape(r.sentence)}</p>"
        for group, cases in r.queries.items():
            if cases:
                body += f"<h3>{escape(group.replace('_', ' '))}</h3>" + table(
                    ["query", "baseline", "run"], [[with_text(c.query_id, c.text or texts.get(c.query_id)),
                                                   c.baseline_value, c.run_value] for c in cases], numeric=[1, 2])
        sections.append((f"Regression against {r.baseline}", body))
    if report.gate is not None:
        sections.append(("Downstream-weighted gate", str(banner(report.gate.passed, "PASS" if report.gate.passed
                                                               else "FAIL", report.gate.reason))))
    return page(f"labeller outcomes: {report.run}", sections, subtitle=f"outcomes: {display_path(report.outcomes)}")


def write_report(report: OutcomesReport, directory: str | Path, texts: dict[str, str] | None = None) -> Path:
    directory = Path(directory)
    write_text(directory / "result.json", report.model_dump_json(indent=2) + "\n")
    write_text(directory / "summary.md", markdown(report))
    write_text(directory / "index.html", html(report, texts))
    return directory / "index.html"
