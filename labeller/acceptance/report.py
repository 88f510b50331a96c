"""Acceptance reports in Markdown, HTML and JSON: one candidate, or several side by side.

The tables are built once (`sections`) and rendered twice, so the Markdown and HTML say the same thing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from labeller.acceptance.result import AcceptanceResult, GateResult

Table = tuple[str, list[str], list[list[str]]]  # title, header, rows


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) and value % 1 else f"{value:g}"


def _cell(gate: GateResult | None) -> str:
    if gate is None:
        return "not run"
    return f"{gate.status.upper()} {_figure(gate.measured)} (need {_figure(gate.threshold)}, n={_figure(gate.n)})"


def verdict(results: Sequence[AcceptanceResult]) -> str:
    return "PASS" if results and all(r.passed for r in results) else "FAIL"


def sections(results: Sequence[AcceptanceResult]) -> tuple[list[str], list[Table]]:
    first = results[0]
    s, c = first.suite, first.conditions
    lines = [f"Verdict: **{verdict(results)}** (exit {0 if verdict(results) == 'PASS' else 1})",
             f"Suite {s['name']} version {s['version']}, digest `{s['digest']}`; thresholds approved by "
             f"{s['thresholds']['approved_by']} on {s['thresholds']['approved_at']}",
             f"Conditions: corpus {c.corpus_snapshot}; query set `{c.query_set}`; identities "
             f"{', '.join(c.identities)}; {c.retrieval_unit}s, k={c.k}; workload {json.dumps(c.workload)}; "
             f"evaluation budget {c.evaluation_budget or 'not given'}"]
    names = [r.candidate["name"] for r in results]
    gate_names = list(dict.fromkeys(g.gate for r in results for g in r.gates))
    by = [{g.gate: g for g in r.gates} for r in results]
    gates: Table = ("Gates", ["gate", *names], [[g, *(_cell(b.get(g)) for b in by)] for g in gate_names])
    about: Table = ("Candidates", ["candidate", "kind", "system", "configuration", "latency", "query cost",
                                   "ingestion cost", "verdict"],
                    [[r.candidate["name"], r.candidate["kind"], json.dumps(r.candidate["system"], default=str),
                      json.dumps(r.candidate["configuration"]),
                      "n/a" if r.latency is None else f"p50 {r.latency.p50_ms:.1f} / p95 {r.latency.p95_ms:.1f} / "
                      f"p99 {_figure(r.latency.p99_ms)} ms (n={r.latency.n}, warm-up {r.latency.warmup}, "
                      f"concurrency {r.latency.concurrency})",
                      _figure(r.query_cost), _figure(r.ingestion_cost), "PASS" if r.passed else "FAIL"]
                     for r in results])
    failures: Table = ("Failures", ["candidate", "gate", "case", "identity", "document", "cause", "reason"],
                       [[r.candidate["name"], g.gate, f.case_id or "", f.user or "", f.doc_id or "", f.cause or "",
                         f.reason] for r in results for g in r.gates if not g.holds for f in g.failures])
    notes: Table = ("Notes", ["candidate", "note"], [[r.candidate["name"], n] for r in results for n in r.notes])
    return lines, [t for t in (gates, about, failures, notes) if t[2]]


def markdown(results: Sequence[AcceptanceResult]) -> str:
    lines, tables = sections(results)
    out = ["# Acceptance test", "", *(f"- {line}" for line in lines), ""]
    for title, header, rows in tables:
        out += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def html_page(results: Sequence[AcceptanceResult]) -> str:
    lines, tables = sections(results)
    body = ["<h1>Acceptance test</h1>", "<ul>"]
    body += [f"<li>{html.escape(line).replace('**', '')}</li>" for line in lines] + ["</ul>"]
    for title, header, rows in tables:
        body += [f"<h2>{html.escape(title)}</h2>", "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>"
                                                                             for h in header) + "</tr>"]
        body += ["<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows]
        body.append("</table>")
    style = "body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Acceptance test</title><style>{style}"
            f"</style></head><body>{''.join(body)}</body></html>\n")


def json_text(results: Sequence[AcceptanceResult]) -> str:
    return json.dumps({"verdict": verdict(results), "results": [r.model_dump(mode="json") for r in results]},
                      indent=2) + "\n"
