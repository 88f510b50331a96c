"""The gates beyond one pass of the cases: revocation lag (re-asks after a change) and answer grounding
(judged by a function given from outside)."""

from __future__ import annotations

from typing import Any

from labeller.acceptance.grounding import grounding_gate
from labeller.acceptance.lag import revocation_gate
from labeller.acceptance.result import AnswerRow, CaseResult, GateResult
from labeller.acceptance.suite import Suite
from labeller.systems.base import SystemUnderTest
from labeller.systems.registry import CandidateSpec


def extra_gates(suite: Suite, spec: CandidateSpec, system: SystemUnderTest, cases: list[CaseResult],
                answers: list[AnswerRow], options: Any) -> tuple[list[dict[str, Any]], list[GateResult]]:
    revocations, gates = revocation_gate(suite, spec, system, options.change_hooks.get(spec.name))
    held = {c.case_id for c in cases if c.split == "held_out"}
    grounding = grounding_gate(answers, held, options.grounding, suite.thresholds.groundedness)
    gates += [grounding] if grounding is not None else []
    return revocations, gates
