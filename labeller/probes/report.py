"""The probe report: a table per probe in Markdown and HTML, and every figure (and pair) as JSON."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup, escape

from labeller.agreement.bootstrap import Interval
from labeller.io.tables import write_text
from labeller.probes.models import ProbeReport, ProbeResult
from labeller.reports import bar_chart, page, table

HEADER = ["probe", "verdict", "pairs", "failed", "queries", "mean shift", "interval", "mean abs shift", "interval",
          "changed", "threshold"]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _ci(ci: Interval) -> str:
    return "-" if ci.low is None or ci.high is None else f"[{ci.low:+.3f}, {ci.high:+.3f}]"


def row(r: ProbeResult) -> list[str]:
    changed = "-" if r.share_changed is None else f"{r.share_changed:.1%}"
    return [r.probe, r.verdict.upper(), str(r.graded), str(r.failed), str(r.queries), _num(r.mean_shift),
            _ci(r.mean_shift_interval), _num(r.mean_abs_shift), _ci(r.mean_abs_shift_interval), changed,
            f"{r.threshold:g}" + (" (abs)" if r.gated == "mean_abs_shift" else "")]


def summary_lines(report: ProbeReport) -> list[str]:
    c = report.cost
    cost = "unknown" if c.cost_usd is None else f"${c.cost_usd:.4f}"
    return [f"judge {report.judge}, rubric {report.rubric}; reference grades: {report.reference}",
            f"seed {report.seed}; {report.confidence:.0%} intervals from {report.resamples} query resamples",
            f"verdicts: {c.new} new, {c.cached} from the cache, {c.failed} failed; {c.requests} requests, cost {cost}"]


def markdown_report(report: ProbeReport) -> str:
    lines = ["# Judge bias probes", "", *(f"- {s}" for s in summary_lines(report)), "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row(r)) + " |" for r in report.probes]
    lines += ["", f"**{'PASS' if report.passed else 'FAIL'}**: a probe fails when its mean shift (near-duplicate: "
                  "mean absolute shift) is beyond its threshold.", ""]
    for r in report.probes:
        lines += [f"## {r.probe}: {r.verdict.upper()}", "", r.what[:1].upper() + r.what[1:] + ".", ""] + [f"- {reason}" for reason in r.reasons]
        lines.append("")
    return "\n".join(lines)


def html_report(report: ProbeReport) -> str:
    rows = [[cell if i != 1 else Markup(f'<span class="{"ok" if r.verdict == "pass" else "bad"}">{cell}</span>')
             for i, cell in enumerate(row(r))] for r in report.probes]
    sections = [("Probes", str(table(HEADER, rows, numeric=range(2, 10)))),
                ("Mean shift per probe", str(bar_chart([r.probe for r in report.probes],
                                                       [r.mean_shift or 0.0 for r in report.probes])))]
    for r in report.probes:
        moved = [s for s in r.shifts if s.shift]
        body = f"<p>{escape(r.what[:1].upper() + r.what[1:])}.</p>"
        body += "".join(f"<p>{escape(reason)}</p>" for reason in r.reasons)
        if moved:
            body += str(table(["query", "document", "reference", "original", "perturbed", "shift"],
                              [[s.query_id, s.doc_id, s.reference, s.original, s.perturbed, f"{s.shift:+d}"]
                               for s in moved[:50]], numeric=range(2, 6)))
        sections.append((f"{r.probe}: {r.verdict.upper()}", body))
    verdict = "PASS" if report.passed else "FAIL"
    return page(f"Judge bias probes: {verdict}", sections, subtitle=" · ".join(summary_lines(report)))


def write_reports(directory: str | Path, report: ProbeReport) -> list[Path]:
    d = Path(directory)
    return [write_text(d / "probes.md", markdown_report(report)), write_text(d / "probes.html", html_report(report)),
            write_text(d / "probes.json", report.model_dump_json(indent=2))]
