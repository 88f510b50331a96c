"""The rows and sentences the Markdown and the HTML evaluation reports share.

One sign convention everywhere: Δ is the run under test minus the reference (the baseline), so a
drop is a negative Δ in every table, chart and sentence; the gate's threshold is shown on the same
scale (it fails below −threshold). No emoji: verdicts are the words PASS and FAIL.
"""

from __future__ import annotations

from labeller.evaluation.results import Comparison, Evaluation, GateCheck, GateResult, RunScores
from labeller.reports.html import display_path

# verdict -> (status word, what happened); a drop the gate let through still says PASS, with why
VERDICT = {"regression": ("FAIL", "regression"), "drop-not-significant": ("PASS", "drop, not significant"),
           "drop-untestable": ("PASS", "drop, untested (too few queries; --require-significance)"),
           "drop-within-threshold": ("PASS", "drop within threshold"), "no-drop": ("PASS", "no drop"),
           "not-comparable": ("FAIL", "not comparable")}


def verdict_text(verdict: str) -> str:
    word, what = VERDICT[verdict]
    return f"{word}: {what}"


def num(value: float | None, digits: int = 4, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def pval(value: float | None) -> str:
    from labeller.evaluation.gate import p_text

    return "–" if value is None else p_text(value)


def settings_line(ev: Evaluation) -> str:
    s = ev.settings
    average = ("trec_eval default: queries in the run that have judgments" if s.average == "trec"
               else "all judged queries, missing ones score 0 (trec_eval -c)")
    judges = f" (by {'; '.join(ev.judges)})" if ev.judges else ""
    return (f"Labels: `{display_path(ev.labels)}`{judges} · relevant from grade {s.relevant_from} · NDCG gain {s.gain} · "
            f"averaging: {average}")


def runs_in_order(ev: Evaluation) -> list[RunScores]:
    runs = list(ev.runs.values())
    return sorted(runs, key=lambda r: r.name != ev.baseline)  # baseline first, then as given


def metric_rows(ev: Evaluation) -> tuple[list[str], list[list[object]]]:
    runs = runs_in_order(ev)
    header = ["metric"] + [r.name for r in runs]
    rows: list[list[object]] = [[m] + [num(r.metrics.get(m)) for r in runs] for m in ev.metrics]
    if ev.no_answer.query_ids:
        rows += [[f"{m} (trec_eval, no-answer included)"] + [num(r.trec_eval.get(m)) for r in runs] for m in ev.metrics]
    rows += [[k] + [num(r.judged.get(k)) for r in runs] for k in ev.judged]
    return header, rows


COMPARISON_HEADER = ["metric", "queries", "reference", "run", "Δ (run − reference)", "CI of Δ", "p (t-test)",
                     "p (randomization)", "W/L/T"]
GATE_HEADER = ["run", "metric", "baseline", "run value", "Δ (run − baseline)", "fails when Δ <", "p (worse)",
               "smallest p", "verdict", "decided by"]


def comparison_rows(c: Comparison) -> list[list[object]]:
    return [[t.metric, t.n, num(t.reference_mean), num(t.run_mean), num(t.difference, sign=True),
             f"[{num(t.ci_low, sign=True)}, {num(t.ci_high, sign=True)}]", pval(t.p_t_test), pval(t.p_randomization),
             f"{t.wins}/{t.losses}/{t.ties}"] for t in c.tests]


def delta(c: GateCheck) -> float | None:
    """The check's Δ, run − baseline (the gate stores the drop, baseline − run)."""
    return None if c.drop is None else -c.drop


def gate_rows(g: GateResult, verdict=verdict_text) -> list[list[object]]:
    return [[c.run, c.metric, num(c.baseline), num(c.run_value), num(delta(c), sign=True), num(-c.threshold, sign=True),
             pval(c.p_value), pval(c.smallest_p), verdict(c.verdict), c.decided_by] for c in g.checks]


def gate_headline(g: GateResult) -> str:
    if not g.passed:
        return f"**Regression gate: FAILED** against `{g.baseline}`{_corrected_by(g)}: " + "; ".join(g.reasons)
    test = ("one-sided normal test on the corrected difference, judge error included" if g.corrected
            else f"one-sided {g.test} test")
    headline = (f"**Regression gate: PASSED** against `{g.baseline}`{_corrected_by(g)}: no drop above its threshold "
                f"is significant (p < {g.alpha}, {test}), nor on too few queries for a test to tell")
    untested = [w for w in g.warnings if "was not gated" in w]
    if untested:
        headline += " **but not everything was gated**: " + "; ".join(untested)
    if len(g.judges) > 1:
        headline += f" **and the labels mix {len(g.judges)} judges or rubric versions**"
    return headline


def _corrected_by(g: GateResult) -> str:
    judged = f" on labels by {'; '.join(g.judges)}" if g.judges else ""
    return judged + (f" (decided on figures corrected for the judge's error with gold `{display_path(g.corrected)}`)"
                     if g.corrected else "")


def gate_notes(g: GateResult) -> list[str]:
    notes = sorted({c.note for c in g.checks if c.note and c.verdict != "not-comparable"})
    return [f"- {note}" for note in notes]


def pairing_line(c: Comparison) -> str:
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
