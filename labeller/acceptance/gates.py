"""The release gates, computed over held-out cases only (tuning cases never count toward the decision).

Each gate a threshold names gives pass, fail or abstain (could not be checked, which blocks as a fail);
a threshold left out of the suite is a gate not run. Every failure names its case, identity, document
and likely cause.
"""

from __future__ import annotations

from statistics import fmean

from labeller.acceptance.latency import LatencyStats
from labeller.acceptance.result import CaseResult, Failure, GateResult
from labeller.acceptance.suite import Suite, Thresholds


# The likely cause when a case of this class is handled wrongly: an answerable case unanswered lacked its
# evidence; an access-denied case answered shows the permissions; a no-answer case answered ranked noise.
WRONG_OUTCOME = {"answerable": "retrieval_coverage", "access_denied": "permissions", "no_answer": "retrieval_ranking"}


def _status(ok: bool) -> str:
    return "pass" if ok else "fail"


def sample_gate(held: list[CaseResult], t: Thresholds) -> GateResult:
    return GateResult(gate="held_out_cases", status=_status(len(held) >= t.min_held_out), measured=len(held),
                      threshold=t.min_held_out, n=len(held),
                      detail="held-out cases answered; fewer than the minimum cannot decide a release")


def integration_gate(held: list[CaseResult], t: Thresholds) -> GateResult:
    errors = [Failure(case_id=c.case_id, user=c.user, reason=c.error or "", cause="integration")
              for c in held if c.error]
    return GateResult(gate="integration", status=_status(len(errors) <= t.max_errors), measured=len(errors),
                      threshold=t.max_errors, n=len(held), failures=errors, detail="calls that failed")


def access_gate(held: list[CaseResult], t: Thresholds, permissions_given: bool) -> GateResult:
    """A leak blocks; a case returning documents whose permissions are unknown abstains (and blocks past the
    tolerated count), because its access cannot be verified."""
    leaks = [Failure(case_id=c.case_id, user=c.user, doc_id=d, cause="permissions",
                     reason=f"returned to {c.user} (groups: {', '.join(c.groups) or 'none'}) who may not see it")
             for c in held for d in c.leaked]
    unverified = [c for c in held if c.unverified and not c.leaked]
    abstained = [Failure(case_id=c.case_id, user=c.user, doc_id=c.unverified[0], cause="permissions",
                         reason="access cannot be verified: no permissions known for "
                                + ", ".join(c.unverified[:3])) for c in unverified]
    detail = "documents returned to an identity that may not see them"
    if not permissions_given:
        detail += "; the suite gives no [access] permissions, so no access can be verified"
    status = "fail" if leaks else ("abstain" if len(unverified) > t.max_unverified_access else "pass")
    return GateResult(gate="access", status=status, measured=len(leaks), threshold=0, n=len(held),
                      failures=leaks + abstained, detail=detail)


def outcome_gates(held: list[CaseResult], t: Thresholds) -> list[GateResult]:
    gates = []
    for outcome in ("answerable", "no_answer", "access_denied"):
        threshold = getattr(t, outcome)
        if threshold is None:
            continue
        cases = [c for c in held if c.expected == outcome]
        rate = sum(c.outcome_correct for c in cases) / len(cases) if cases else None
        rule = "answered" if outcome == "answerable" else "abstained"
        wrong = [Failure(case_id=c.case_id, user=c.user, cause="integration" if c.error else WRONG_OUTCOME[outcome],
                         reason=c.error or f"expected {outcome}: should have {rule}")
                 for c in cases if not c.outcome_correct]
        gates.append(GateResult(gate=f"outcome:{outcome}", status="abstain" if rate is None else _status(
            rate >= threshold), measured=rate, threshold=threshold, n=len(cases), failures=wrong,
            detail=f"share of {outcome} cases {rule}" + ("" if cases else "; no held-out case of this class")))
    return gates


def coverage_gate(held: list[CaseResult], t: Thresholds, k: int) -> GateResult | None:
    if t.evidence_coverage is None:
        return None
    cases = [c for c in held if c.required]
    mean = fmean(c.covered / c.required for c in cases) if cases else None
    failures = [Failure(case_id=c.case_id, user=c.user, doc_id=item, cause="retrieval_coverage",
                        reason=f"required evidence '{item}' not in the top {k}") for c in cases for item in c.missing]
    failures += [Failure(case_id=c.case_id, user=c.user, doc_id=item, cause="source_or_revision",
                         reason=f"required evidence '{item}' returned at another revision than the suite pins")
                 for c in cases for item in c.stale]
    status = "abstain" if mean is None else _status(mean >= t.evidence_coverage and not any(c.stale for c in cases))
    return GateResult(gate="evidence_coverage", status=status, measured=mean, threshold=t.evidence_coverage,
                      n=len(cases), failures=failures, detail=f"mean required-evidence coverage@{k}; stale "
                      "evidence fails the gate")


def latency_gates(latency: LatencyStats | None, t: Thresholds) -> list[GateResult]:
    gates = []
    for name in ("p50_ms", "p95_ms", "p99_ms"):
        limit = getattr(t, name)
        if limit is None:
            continue
        gate = f"latency:{name[:-3]}"
        if latency is None:
            gates.append(GateResult(gate=gate, status="abstain", threshold=limit,
                                    detail="the system cannot be timed (a stored run)"))
            continue
        value = getattr(latency, name)
        enough = latency.n >= t.min_latency_samples
        detail = (f"n={latency.n} timed calls after {latency.warmup} warm-up, concurrency {latency.concurrency}"
                  + ("" if enough else f"; fewer than the {t.min_latency_samples} samples required"))
        failures = [] if value <= limit and enough else [Failure(reason=detail if not enough else
                                                                 f"{name[:-3]} {value:.1f} ms > {limit} ms",
                                                                 cause="operations")]
        gates.append(GateResult(gate=gate, status=_status(value <= limit and enough), measured=value,
                                threshold=limit, n=latency.n, detail=detail, failures=failures))
    return gates


def cost_gates(query_cost: float | None, ingestion_cost: float | None, t: Thresholds) -> list[GateResult]:
    gates = []
    for gate, value, limit in (("query_cost", query_cost, t.max_query_cost),
                               ("ingestion_cost", ingestion_cost, t.max_ingestion_cost)):
        if limit is None:
            continue
        status = "abstain" if value is None else _status(value <= limit)
        gates.append(GateResult(gate=gate, status=status, measured=value, threshold=limit,
                                detail="not reported by the system or its candidate file" if value is None else
                                "mean cost per query" if gate == "query_cost" else "cost of building the index"))
    return gates


def held_out(cases: list[CaseResult]) -> list[CaseResult]:
    return [c for c in cases if c.split == "held_out"]


def all_gates(suite: Suite, cases: list[CaseResult], latency: LatencyStats | None, query_cost: float | None,
              ingestion_cost: float | None, permissions_given: bool,
              grades: dict[str, dict[str, int]]) -> list[GateResult]:
    from labeller.acceptance.metrics_gate import metric_gates

    t, held = suite.thresholds, held_out(cases)
    gates = [sample_gate(held, t), integration_gate(held, t), access_gate(held, t, permissions_given)]
    gates += outcome_gates(held, t)
    gates += [g for g in (coverage_gate(held, t, suite.suite.k),) if g is not None]
    gates += metric_gates(suite, held, grades)
    gates += latency_gates(latency, t)
    gates += cost_gates(query_cost, ingestion_cost, t)
    return gates
