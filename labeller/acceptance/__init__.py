"""Acceptance tests of a retrieval system: the release gate (a versioned suite, systems under test,
access/outcome/coverage/latency/revocation/grounding gates, triage, the decision) and the older
metrics (required-evidence coverage, outcome classes, latency)."""

from labeller.acceptance.coverage import CoverageReport, QueryCoverage, evidence_coverage, read_evidence
from labeller.acceptance.latency import LatencyStats, latency_stats, percentile, timed_search
from labeller.acceptance.outcomes import (OUTCOMES, Outcome, OutcomeReport, OutcomeScore, abstentions_from_run,
                                          answerable_ids, outcome_report, read_abstentions, read_outcomes)
from labeller.acceptance.ranking import ranked_from_run
from labeller.acceptance.run import AcceptanceReport, acceptance_test

__all__ = [
    "OUTCOMES", "AcceptanceReport", "CoverageReport", "LatencyStats", "Outcome", "OutcomeReport", "OutcomeScore",
    "QueryCoverage", "abstentions_from_run", "acceptance_test", "answerable_ids", "evidence_coverage",
    "latency_stats", "outcome_report", "percentile", "ranked_from_run", "read_abstentions", "read_evidence", "read_outcomes",
    "timed_search",
]


def __getattr__(name: str):  # the release gate's entry points, imported on first use
    if name in ("RunOptions", "run_acceptance"):
        from labeller.acceptance import runner

        return getattr(runner, name)
    if name in ("read_suite", "suite_from_dict", "Suite"):
        from labeller.acceptance import suite

        return getattr(suite, name)
    raise AttributeError(name)
