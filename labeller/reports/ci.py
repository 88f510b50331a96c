"""What a CI system reads: JUnit XML (one test case per gated metric) and a Markdown summary for
$GITHUB_STEP_SUMMARY (or any job page), from the checks a command or pipeline ran.

A `Check` is one gated figure: a regression-gate comparison of one metric of one run, an absolute
floor, a prompt-change gate, "every pair labelled". JUnit marks a failed check as <failure> (a
`skip` status, for a check that was not run, as <skipped>); the Markdown table shows PASS, FAIL or
SKIP as plain words, which render everywhere (no emoji font needed).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["pass", "fail", "skip"]


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suite: str  # e.g. "evaluate", "regression", "validate_prompt"
    name: str  # e.g. "ndcg@10 of bm25: regression gate"
    status: Status
    message: str  # one sentence: the figures behind the verdict


def evaluation_checks(ev, suite: str = "evaluate", names: dict[str, str] | None = None) -> list[Check]:
    """The gated figures of an Evaluation: every gate comparison and every floor. `names` gives a run the name
    its checks carry when its file name changes from run to run (the regression pipeline's dated run file):
    CI history follows a test by its name."""
    from labeller.evaluation.gate import p_text

    names = names or {}
    checks = []
    if ev.gate is not None:
        for c in ev.gate.checks:
            # a regression fails; so does a comparison with nothing comparable (the gate fails on it);
            # a drop no test could judge under --require-significance passes, with the gate's note
            status: Status = "fail" if c.verdict in ("regression", "not-comparable") else "pass"
            delta = None if c.drop is None else -c.drop  # one sign everywhere: run - baseline, a drop is negative
            figures = (f"baseline {_num(c.baseline)}, run {_num(c.run_value)}, delta (run - baseline) "
                       f"{_num(delta, sign=True)} (fails below {-c.threshold:+g}), "
                       f"p {'undefined' if c.p_value is None else p_text(c.p_value)} "
                       f"(alpha {ev.gate.alpha})")
            note = f"; {c.note}" if getattr(c, "note", None) else ""
            checks.append(Check(suite=suite, name=f"{c.metric} of {names.get(c.run, c.run)}: regression gate",
                                status=status,
                                message=f"{c.verdict}: {figures}{note}"))
        if not ev.gate.passed and not any(c.status == "fail" for c in checks):
            checks.append(Check(suite=suite, name="regression gate", status="fail",
                                message="; ".join(getattr(ev.gate, "reasons", []) or ["failed"])))
    for f in ev.floors:
        checks.append(Check(suite=suite, name=f"{f.metric} of {names.get(f.run, f.run)}: floor {f.floor}",
                            status="pass" if f.passed else "fail",
                            message=f"{f.metric} {_num(f.value)} {'>=' if f.passed else '<'} floor {f.floor}"))
    return checks


def prompt_gate_check(gate, suite: str = "validate_prompt") -> Check:
    """The prompt-change gate of `labeller agree --baseline` (labeller.agreement.gate.GateResult) as a check."""
    figures = f"{gate.metric} new {_num(gate.new)}" + (f", old {_num(gate.old)}" if gate.old is not None else "")
    return Check(suite=suite, name=f"{gate.metric}: prompt-change gate", status="pass" if gate.verdict == "pass"
                 else "fail", message="; ".join([f"{gate.verdict} ({gate.change}): {figures}", *gate.reasons]))


def _num(value: float | None, sign: bool = False) -> str:
    return "undefined" if value is None else f"{value:+.4f}" if sign else f"{value:.4f}"


def junit_xml(checks: list[Check], name: str = "labeller") -> str:
    """JUnit XML: one <testsuite> per suite, one <testcase> per check."""
    root = ET.Element("testsuites", name=name, tests=str(len(checks)),
                      failures=str(sum(c.status == "fail" for c in checks)))
    suites: dict[str, list[Check]] = {}
    for check in checks:
        suites.setdefault(check.suite, []).append(check)
    for suite, members in suites.items():
        element = ET.SubElement(root, "testsuite", name=f"{name}.{suite}", tests=str(len(members)),
                                failures=str(sum(c.status == "fail" for c in members)),
                                skipped=str(sum(c.status == "skip" for c in members)), errors="0")
        for check in members:
            case = ET.SubElement(element, "testcase", classname=f"{name}.{suite}", name=check.name)
            if check.status == "fail":
                ET.SubElement(case, "failure", message=check.message, type="GateFailed").text = check.message
            elif check.status == "skip":
                ET.SubElement(case, "skipped", message=check.message)
            else:
                ET.SubElement(case, "system-out").text = check.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def summary_markdown(title: str, checks: list[Check], body: str = "") -> str:
    """A verdict line, the checks as a table, then `body` (the command's own Markdown summary)."""
    failed = [c for c in checks if c.status == "fail"]
    verdict = "FAIL" if failed else "PASS"
    lines = [f"## {title}: {verdict}", ""]
    if checks:
        lines += [f"{len(failed)} of {len(checks)} gated checks failed." if failed
                  else f"All {len(checks)} gated checks passed.", "",
                  "| check | result | figures |", "| --- | --- | --- |"]
        lines += [f"| {_cell(c.name)} | {c.status.upper()} | {_cell(c.message)} |" for c in checks]
    else:
        lines.append("No gated checks were configured (no baseline, no floor).")
    return "\n".join(lines) + "\n\n" + (body.rstrip() + "\n" if body else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_ci_outputs(checks: list[Check], *, title: str, body: str = "", junit: Path | None = None,
                     summary: Path | None = None) -> list[Path]:
    """Write the JUnit file (atomically, replacing it) and append the summary (GitHub's step summary is
    one file every step appends to). Returns what was written."""
    from labeller.io.writing import write_text

    written = []
    if junit is not None:
        written.append(write_text(junit, junit_xml(checks)))
    if summary is not None:
        summary.parent.mkdir(parents=True, exist_ok=True)
        with summary.open("a", encoding="utf-8") as handle:
            handle.write(summary_markdown(title, checks, body))
        written.append(summary)
    return written
