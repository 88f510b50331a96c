"""The answer report page (reports.html conventions: one stylesheet, no scripts, escaped text): the gate banner,
the attribution table first, then each answer with its claims marked by verdict beside the excerpt of the
passage that supports or contradicts each."""

from __future__ import annotations

from markupsafe import Markup, escape

from labeller.answers.models import AnswerRecord, AnswerReport, ClaimResult
from labeller.answers.report import MARK, answer_rows, attribution_rows
from labeller.reports.html import banner, excerpt, page, table

_COLOUR = {"supported": "ok", "contradicted": "bad", "not_supported": "bad", None: "bad"}


def _claim(claim: ClaimResult, texts: dict[str, str]) -> str:
    ids = claim.supporting or claim.contradicting
    evidence = "".join(f'<div class="excerpt block"><span class="id">{escape(pid)}</span> '
                       f"{escape(excerpt(texts.get(pid, ''), 300))}</div>" for pid in ids)
    verdict = claim.verdict or "failed"
    why = escape(claim.failure or claim.justification)
    return (f'<tr data-verdict="{escape(verdict)}"><td class="{_COLOUR[claim.verdict]}">{MARK[claim.verdict]} '
            f"{escape(verdict)}</td><td>{escape(claim.text)}</td><td>{evidence or '–'}"
            f'<div class="note">{why}</div></td></tr>')


def _answer(record: AnswerRecord) -> str:
    texts = {p.passage_id: p.text for p in record.passages}
    facts = "".join(f"<div><b>{escape(name)}</b></div><div>{escape(value)}</div>"
                    for name, value in answer_rows(record))
    claims = "".join(_claim(c, texts) for c in record.claims) or '<tr><td colspan="3">no claims</td></tr>'
    return (f'<div class="card" id="q-{escape(record.query_id)}"><h3><span class="id">{escape(record.query_id)}</span> '
            f"· {escape(record.attribution or 'unattributed')}</h3>"
            f'<p class="excerpt block">{escape(record.answer)}</p><div class="kv">{facts}</div>'
            f"<table><thead><tr><th>verdict</th><th>claim</th><th>passage</th></tr></thead><tbody>{claims}"
            "</tbody></table></div>")


def html_page(report: AnswerReport) -> str:
    failing = [c.name for c in report.checks if not c.passed]
    head = banner(report.passed, "PASS" if report.passed else "FAIL",
                  f"{len(report.answers)} answers, {report.claims} claims" +
                  (f"; failing: {', '.join(failing)}" if failing else ""))
    attribution = table(["class", "count", "queries", "meaning"], attribution_rows(report), numeric=[1])
    sections = [("", str(head)), ("Attribution", str(attribution))]
    if report.checks:
        sections.append(("Gate", str(table(["check", "threshold", "value", "result"],
                                           [(c.name, f"{c.threshold:g}", "–" if c.value is None else f"{c.value:g}",
                                             Markup('<span class="ok">pass</span>') if c.passed else
                                             Markup('<span class="bad">FAIL</span>')) for c in report.checks]))))
    sections.append(("Answers", "".join(_answer(r) for r in report.answers)))
    return page("Answer evaluation", sections,
                subtitle=f"judge {report.judge} · claim rubric {report.claim_rubric} · mean groundedness "
                         f"{'–' if report.mean_groundedness is None else f'{report.mean_groundedness:.3f}'}")
