"""The probe report: a table per probe in Markdown and HTML, and every figure (and pair) as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from markupsafe import Markup, escape

from labeller.agreement.bootstrap import Interval
from labeller.io.writing import write_text
from labeller.probes.models import ProbeReport, ProbeResult
from labeller.records import Doc, Query
from labeller.reports import NO_TEXTS, Estimate, banner, interval_chart, page, status_mark, table, with_text

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


SHIFT = "shift (perturbed − original)"


def _estimate(r: ProbeResult) -> Estimate:
    """The figure the probe's gate reads, with its interval (near-duplicate: the mean absolute shift)."""
    absolute = r.gated == "mean_abs_shift"
    value, ci = (r.mean_abs_shift, r.mean_abs_shift_interval) if absolute else (r.mean_shift, r.mean_shift_interval)
    return Estimate(figure=r.probe, side="mean absolute shift" if absolute else "mean shift", value=value,
                    low=ci.low, high=ci.high)


def _chart(report: ProbeReport) -> Markup:
    lines = [(0.0, "no shift")]
    for t in sorted({r.threshold for r in report.probes}):
        lines += [(-t, f"-{t:g} threshold"), (t, f"+{t:g} threshold")] if t else []
    note = (f'<p class="note">Each probe\'s gated figure in grades (shift = perturbed − original), with its {report.confidence:.0%} '
            "query-resampled interval; a point beyond a threshold line fails the probe.</p>")
    return Markup(note) + interval_chart([_estimate(r) for r in report.probes], reference_lines=lines)


def _examples(r: ProbeResult, queries: Mapping[str, Query] | None, corpus: Mapping[str, Doc] | None) -> str:
    moved = [s for s in r.shifts if s.shift]
    if not moved:
        return "<p>No pair changed its grade.</p>"
    rows = [[with_text(s.query_id, queries[s.query_id].text if queries and s.query_id in queries else None),
             with_text(s.doc_id, corpus[s.doc_id].text if corpus and s.doc_id in corpus else None),
             Markup(f'<span class="id">{escape(s.probe_doc_id)}</span>'), s.reference, s.original, s.perturbed,
             f"{s.shift:+d}"] for s in sorted(moved, key=lambda s: (-abs(s.shift or 0), s.query_id, s.doc_id))[:50]]
    body = str(table(["query", "document", "perturbed copy", "reference", "original", "perturbed", SHIFT], rows,
                     numeric=range(3, 7)))
    more = f"<p class=\"note\">{len(moved) - 50} more pairs changed; all are in probes.json.</p>" if len(moved) > 50 else ""
    return body + more + ("" if queries and corpus else f'<p class="note">{escape(NO_TEXTS)}</p>')


def html_report(report: ProbeReport, queries: Mapping[str, Query] | None = None,
                corpus: Mapping[str, Doc] | None = None) -> str:
    """The page: the verdict first, then each probe's shift against its threshold, then the pairs that moved."""
    rows = [[cell if i != 1 else status_mark(r.verdict == "pass") for i, cell in enumerate(row(r))]
            for r in report.probes]
    failed = [r.probe for r in report.probes if r.verdict == "fail"]
    headline = (f"every probe within its threshold ({len(report.probes)} probes)" if not failed else
                f"{len(failed)} of {len(report.probes)} probes beyond their threshold: {', '.join(failed)}")
    sections = [("", str(banner(report.passed, headline, "A probe fails when its mean shift (near-duplicate: mean "
                                                          "absolute shift) is beyond its threshold."))),
                ("Shift per probe against its threshold", str(_chart(report))),
                ("Probes", str(table(HEADER, rows, numeric=range(2, 10))))]
    for r in report.probes:
        body = f"<p>{status_mark(r.verdict == 'pass')} {escape(r.what[:1].upper() + r.what[1:])}.</p>"
        body += "".join(f"<p>{escape(reason)}</p>" for reason in r.reasons)
        sections.append((f"{r.probe}: pairs whose grade moved", body + _examples(r, queries, corpus)))
    verdict = "PASS" if report.passed else "FAIL"
    return page(f"Judge bias probes: {verdict}", sections, subtitle=" · ".join(summary_lines(report)))


def write_reports(directory: str | Path, report: ProbeReport, queries: Mapping[str, Query] | None = None,
                  corpus: Mapping[str, Doc] | None = None) -> list[Path]:
    d = Path(directory)
    return [write_text(d / "probes.md", markdown_report(report)),
            write_text(d / "probes.html", html_report(report, queries, corpus)),
            write_text(d / "probes.json", report.model_dump_json(indent=2))]
