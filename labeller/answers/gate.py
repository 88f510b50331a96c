"""The answer gate: each threshold set in Thresholds is one check; the run passes only if every check does.

Rates are over the answers evaluated, so one bad answer of one fails a tiny sample as surely as a large one. A
check whose value cannot be computed (no answer has claims, no expected facts) fails rather than pass unseen.
"""

from __future__ import annotations

from statistics import fmean

from labeller.answers.models import AnswerRecord, GateCheck, Thresholds


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(fmean(known), 6) if known else None


def _rate(records: list[AnswerRecord], classes: tuple[str, ...]) -> float | None:
    return round(sum(r.attribution in classes for r in records) / len(records), 6) if records else None


def gate_checks(records: list[AnswerRecord], thresholds: Thresholds, failures: int) -> list[GateCheck]:
    values: dict[str, tuple[float | None, bool]] = {  # name -> (value, True when the value must stay at or above)
        "min_groundedness": (_mean([r.groundedness for r in records]), True),
        "max_unsupported_generation_rate": (_rate(records, ("unsupported_generation", "both")), False),
        "max_missing_evidence_rate": (_rate(records, ("missing_evidence", "both", "correct_without_evidence")), False),
        "max_ignored_context_rate": (_rate(records, ("ignored_context",)), False),
        "max_contradicted": (float(sum(r.contradicted for r in records)), False),
        "min_fact_recall": (_mean([r.fact_recall for r in records]), True),
        "max_forbidden_hits": (float(sum(len(r.forbidden_hits) for r in records)), False),
        "min_abstention_accuracy": (_mean([None if r.abstention_correct is None else float(r.abstention_correct)
                                           for r in records]), True),
        "max_failures": (float(failures), False),
    }
    checks = []
    for name, (value, at_least) in values.items():
        threshold = getattr(thresholds, name)
        if threshold is None:
            continue
        if value is None:
            checks.append(GateCheck(name=name, threshold=threshold, value=None, passed=False,
                                    detail="nothing to measure it on (no answer has what it needs)"))
            continue
        passed = value >= threshold if at_least else value <= threshold
        checks.append(GateCheck(name=name, threshold=threshold, value=value, passed=passed,
                                detail=f"{value:g} {'>=' if at_least else '<='} {threshold:g}"
                                if passed else f"{value:g} {'<' if at_least else '>'} {threshold:g}"))
    return checks
