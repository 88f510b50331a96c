"""Acceptance-test metrics beyond relevance: required-evidence coverage, outcome classes, latency."""

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
