"""`labeller acceptance run`: one suite, one or more candidates under identical conditions, every gate.

For each candidate: open its system, ask every case as its identity under the suite's workload, score
each case, run the gates over the held-out cases, measure revocation lag, judge answers (when a
grounding function is given), update the triage file, and record it all with the suite's digest and the
comparison conditions. The run passes only when every gate of every candidate holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean

from labeller.acceptance.access import Permissions, read_permissions
from labeller.acceptance.cases import score_case
from labeller.acceptance.execute import ask_all
from labeller.acceptance.gates import all_gates
from labeller.acceptance.metrics_gate import metric_specs, suite_grades
from labeller.acceptance.result import AcceptanceResult, AnswerRow, Conditions
from labeller.acceptance.suite import Suite, read_suite
from labeller.errors import BadInputError
from labeller.systems.base import SystemUnderTest
from labeller.systems.registry import CandidateSpec, open_system, read_candidate


@dataclass
class RunOptions:
    suite: str | Path | Suite
    candidates: Sequence[str | Path | CandidateSpec] = ()
    systems: Sequence[tuple[CandidateSpec, SystemUnderTest]] = ()  # already-open systems (the Python API)
    triage: str | Path | None = None
    redact: bool = False  # keep no raw query text in any output
    grounding: Callable | None = None  # answers -> per-query grounding records (else the suite's [grounding] judge)
    store: str | None = None  # the verdict store of the suite's answer judge (None: $LABELLER_CACHE or .labeller-cache)
    change_hooks: dict[str, Callable] = field(default_factory=dict)  # candidate name -> Python change hook


@dataclass(frozen=True)
class SuiteInputs:
    """The files a suite names, read once before any system is asked (a bad one then costs nothing)."""

    permissions: Permissions | None
    grades: dict[str, dict[str, int]]
    grounder: Callable | None = None  # the answer judge of the grounding gates

    @classmethod
    def read(cls, suite: Suite, options: RunOptions) -> SuiteInputs:
        metric_specs(suite)
        permissions = read_permissions(suite.access, Path(suite.path).parent) if suite.access else None
        grounder = options.grounding
        if suite.grounding is not None:
            if grounder is not None:
                raise BadInputError("the suite's [grounding] table names an answer judge and --grounding gives "
                                    "another; keep one", path=suite.path, field="grounding")
            from labeller.acceptance.answer_judge import SuiteAnswerJudge

            grounder = SuiteAnswerJudge(suite, options.store)
        return cls(permissions, suite_grades(suite), grounder)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def conditions_of(suite: Suite) -> Conditions:
    held = sorted((c.id, c.query) for c in suite.held_out())
    query_set = "sha256:" + hashlib.sha256(repr(held).encode()).hexdigest()
    c = suite.conditions
    return Conditions(suite_digest=suite.digest, corpus_snapshot=c.corpus_snapshot, query_set=query_set,
                      identities=sorted({case.identity.user for case in suite.cases}),
                      retrieval_unit=suite.suite.retrieval_unit, k=suite.suite.k,
                      workload=c.workload.model_dump(), evaluation_budget=c.evaluation_budget)


def suite_record(suite: Suite) -> dict:
    return {"name": suite.suite.name, "version": suite.suite.version, "path": suite.path, "digest": suite.digest,
            "thresholds": suite.thresholds.model_dump(), "thresholds_digest": suite.thresholds.digest()}


def assess_candidate(suite: Suite, inputs: SuiteInputs, spec: CandidateSpec, system: SystemUnderTest,
                     options: RunOptions) -> AcceptanceResult:
    started = now()
    calls, latency = ask_all(system, suite)
    cases = [score_case(call, inputs.permissions, options.redact) for call in calls]
    answers = [AnswerRow(query_id=c.case.id, answer=c.response.answer, citations=c.response.citations,
                         returned=[r.doc_id for r in c.response.results])
               for c in calls if c.response.answer is not None]
    costs = [c.cost for c in cases if c.cost is not None]
    query_cost = fmean(costs) if costs else None
    gates = all_gates(suite, cases, latency, query_cost, spec.ingestion_cost, inputs.permissions is not None,
                      inputs.grades)
    from labeller.acceptance.extras import extra_gates

    revocations, more = extra_gates(suite, spec, system, cases, answers, inputs.grounder, options.change_hooks)
    gates += more
    if options.redact:  # before anything is written, the triage file included
        from labeller.acceptance.redact import Redactor

        scrub = Redactor({c.id: c.query for c in suite.cases})
        cases = [scrub(c).model_copy(update={"query": None}) for c in cases]
        answers, gates, revocations = [scrub(a) for a in answers], [scrub(g) for g in gates], scrub.dicts(revocations)
    notes: list[str] = []
    if options.triage is not None:
        from labeller.acceptance.triage import update_triage

        integrity, notes = update_triage(Path(options.triage), suite, spec.name, cases, gates, started)
        gates += integrity
    candidate = {"name": spec.name, "kind": spec.kind, "retrieval_unit": spec.retrieval_unit,
                 "configuration": spec.configuration, "system": system.describe(), "path": spec.path}
    result = AcceptanceResult(suite=suite_record(suite), candidate=candidate, conditions=conditions_of(suite),
                              started_at=started, finished_at=now(), redacted=options.redact, latency=latency,
                              query_cost=query_cost, ingestion_cost=spec.ingestion_cost, cases=cases,
                              answers=answers, revocations=revocations, gates=gates, notes=notes,
                              passed=all(g.holds for g in gates))
    return result


def run_acceptance(options: RunOptions) -> list[AcceptanceResult]:
    """Every candidate's result, in the order given; all under the same suite and conditions."""
    suite = options.suite if isinstance(options.suite, Suite) else read_suite(options.suite)
    specs = [c if isinstance(c, CandidateSpec) else read_candidate(c) for c in options.candidates]
    names = [s.name for s in specs] + [s.name for s, _ in options.systems]
    if not names:
        raise BadInputError("no candidate to test; give at least one --candidate file")
    if len(set(names)) != len(names):
        raise BadInputError(f"two candidates are both named '{next(n for n in names if names.count(n) > 1)}'; "
                            "a side-by-side report needs distinct names", field="name")
    for spec in [*specs, *(s for s, _ in options.systems)]:  # refused before any system is asked anything
        if spec.retrieval_unit != suite.suite.retrieval_unit:
            raise BadInputError(f"candidate '{spec.name}' returns {spec.retrieval_unit}s but the suite compares "
                                f"{suite.suite.retrieval_unit}s; one comparison takes one retrieval unit",
                                path=spec.path or None, field="retrieval_unit")
    inputs = SuiteInputs.read(suite, options)
    opened: list[SystemUnderTest] = []  # every candidate opened first: a bad one is refused before any is asked
    try:
        pairs = []
        for spec in specs:
            opened.append(open_system(spec))
            pairs.append((spec, opened[-1]))
        return [assess_candidate(suite, inputs, spec, system, options)
                for spec, system in [*pairs, *options.systems]]
    finally:
        for system in opened:
            system.close()
