"""The answer report as text: summary lines for the terminal, a Markdown page (attribution table first, then the
gate, then each answer's claims with their verdicts) and JSON (the AnswerReport itself)."""

from __future__ import annotations

from labeller.answers.models import ATTRIBUTIONS, AnswerRecord, AnswerReport

MEANING = {
    "missing_evidence": "required evidence not retrieved in the top K (retrieval's fault)",
    "unsupported_generation": "a claim the retrieved passages do not support (generation's fault)",
    "both": "evidence missing and a claim unsupported",
    "correct_without_evidence": "right answer, evidence not retrieved: still a retrieval failure",
    "ignored_context": "evidence retrieved, yet the answer is wrong or abstained",
    "ok": "grounded, and the evidence was there",
    "unattributed": "the judge could not split the answer or judge a claim (counted failures)",
}
MARK = {"supported": "+", "contradicted": "x", "not_supported": "?", None: "!"}  # plain text: no emoji font needed


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def summary_lines(report: AnswerReport) -> list[str]:
    n = len(report.answers)
    lines = [f"{'PASS' if report.passed else 'FAIL'}: {n} answers, {report.claims} claims, mean groundedness "
             f"{_num(report.mean_groundedness)}, {len(report.failures)} failures (judge {report.judge})"]
    for name in (*ATTRIBUTIONS, "unattributed"):
        ids = report.attribution.get(name, [])
        if ids:
            shown = ", ".join(ids[:8]) + (f" (+{len(ids) - 8})" if len(ids) > 8 else "")
            lines.append(f"  {name}: {len(ids)}  {shown}")
    for check in report.checks:
        lines.append(f"  {'ok  ' if check.passed else 'FAIL'} {check.name}: {check.detail}")
    return lines


def attribution_rows(report: AnswerReport) -> list[tuple[str, int, str, str]]:
    return [(name, report.counts.get(name, 0), ", ".join(report.attribution.get(name, [])), MEANING[name])
            for name in (*ATTRIBUTIONS, "unattributed")]


def answer_rows(record: AnswerRecord) -> list[tuple[str, str]]:
    """The per-answer figures, as (name, value) for either page."""
    return [("attribution", record.attribution or "unattributed"), ("groundedness", _num(record.groundedness)),
            ("claims", f"{record.supported} supported, {record.contradicted} contradicted, "
                       f"{record.not_supported} not supported, {record.failed} failed"),
            ("evidence retrieved", "–" if record.evidence_retrieved is None else
             ("yes" if record.evidence_retrieved else f"no (missing {', '.join(record.missing_evidence)})")),
            ("citations", f"precision {_num(record.citation_precision)}, recall {_num(record.citation_recall)}"),
            ("facts", f"recall {_num(record.fact_recall)}, forbidden {', '.join(record.forbidden_hits) or 'none'}"),
            ("abstained", f"{'yes' if record.abstained else 'no'}" + (
                "" if record.abstention_correct is None else
                f" (expected {record.expected_outcome}: {'right' if record.abstention_correct else 'wrong'})"))]


def markdown(report: AnswerReport) -> str:
    out = [f"# Answer evaluation: {'PASS' if report.passed else 'FAIL'}", "",
           f"{len(report.answers)} answers, {report.claims} claims, "
           f"mean groundedness {_num(report.mean_groundedness)}; "
           f"judge `{report.judge}`, claim rubric `{report.claim_rubric}`.", "", "## Attribution", "",
           "| class | count | queries | meaning |", "| --- | ---: | --- | --- |"]
    out += [f"| {name} | {count} | {ids} | {meaning} |" for name, count, ids, meaning in attribution_rows(report)]
    if report.checks:
        out += ["", "## Gate", "", "| check | threshold | value | result |", "| --- | ---: | ---: | --- |"]
        out += [f"| {c.name} | {c.threshold:g} | {_num(c.value)} | {'pass' if c.passed else 'FAIL'} |"
                for c in report.checks]
    out += ["", "## Answers"]
    for record in report.answers:
        out += ["", f"### {record.query_id}", ""] + [f"- {name}: {value}" for name, value in answer_rows(record)]
        out += [""] + [f"  {MARK[c.verdict]} {c.verdict or 'failed'}: {c.text}"
                       + (f" [{', '.join(c.supporting or c.contradicting)}]" if c.supporting or c.contradicting else "")
                       for c in record.claims]
    if report.failures:
        out += ["", "## Failures", ""] + [f"- {f.query_id} {f.doc_id}: {f.reason}" for f in report.failures]
    return "\n".join(out) + "\n"
