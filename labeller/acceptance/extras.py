"""The gates beyond one pass of the cases: revocation lag (re-asks after a change) and answer grounding
(judged by the suite's answer judge or a function given from outside)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labeller.acceptance.grounding import grounding_gates
from labeller.acceptance.lag import revocation_gate
from labeller.acceptance.result import AnswerRow, CaseResult, GateResult
from labeller.acceptance.suite import Suite
from labeller.systems.base import SystemUnderTest
from labeller.systems.registry import CandidateSpec


def extra_gates(suite: Suite, spec: CandidateSpec, system: SystemUnderTest, cases: list[CaseResult],
                answers: list[AnswerRow], grounder: Callable | None,
                change_hooks: dict[str, Callable]) -> tuple[list[dict[str, Any]], list[GateResult]]:
    revocations, gates = revocation_gate(suite, spec, system, change_hooks.get(spec.name))
    held = {c.case_id for c in cases if c.split == "held_out"}
    gates += grounding_gates(answers, held, grounder, suite.thresholds)
    return revocations, gates
