"""judge_answers: AnswerInputs in memory -> AnswerReport (claims judged through the one engine, metrics,
attribution, gate); answers_job: the same from files, with the reports written (`labeller answers judge`)."""

from __future__ import annotations

import tempfile
from typing import Any

from labeller.answers.attribution import attribution_table
from labeller.answers.gate import gate_checks
from labeller.answers.inputs import check_inputs
from labeller.answers.judging import Judged, judge_answers_claims
from labeller.answers.metrics import answer_record, claim_results
from labeller.answers.models import AnswerInputs, AnswerOptions, AnswerReport
from labeller.judges.registry import make_judge
from labeller.errors import BadInputError
from labeller.labelling.faults import run_labelling
from labeller.prices import load_prices
from labeller.store import default_spec, open_store
from labeller.store.base import NoStoreError
from labeller.tasks.claims import load_claim_rubric


def judge_answers(inputs: AnswerInputs, options: AnswerOptions | None = None) -> AnswerReport:
    """Split every answer into claims, judge each against its passages, and attribute every failure. Verdicts are
    cached by content in the store: a rerun pays nothing. A dry run returns the estimate in report.stats."""
    options = options or AnswerOptions()
    check_inputs(inputs)
    if options.jury and options.escalate_to:
        raise BadInputError("give a jury or escalation, not both", field="escalate_to")
    rubric = load_claim_rubric(options.claim_rubric)
    prices = load_prices(options.prices)
    dry = options.labelling.dry_run

    def build(name: str):
        # A dry run sends nothing, so it needs no API key: a placeholder lets the client be built.
        return make_judge(name, base_url=options.base_url, timeout=options.timeout,
                          temperature=options.temperature or 0.0, output_mode=options.output_mode,
                          max_output_tokens=options.max_output_tokens, api_key="dry-run-sends-nothing" if dry else None)

    judge = build(options.judge)
    others = [build(name) for name in [*options.jury, *([options.escalate_to] if options.escalate_to else [])]]
    spec = options.store if options.store is not None else str(default_spec())

    async def _judge(where: str, sender, create: bool = True) -> Judged:
        try:
            with open_store(where, create=create) as store:
                return await judge_answers_claims(
                    inputs, sender, store, rubric, options.labelling, prices,
                    jury=others if options.jury else [], escalate_to=others[-1] if options.escalate_to else None)
        finally:
            for judge_ in (sender, *others):
                await judge_.aclose()

    if dry:
        try:
            judged = run_labelling(lambda sender: _judge(spec, sender, create=False), judge, spec)
        except NoStoreError:  # a dry run creates no store: everything is new
            with tempfile.TemporaryDirectory() as empty:
                judged = run_labelling(lambda sender: _judge(empty, sender), judge, empty)
    else:
        judged = run_labelling(lambda sender: _judge(spec, sender), judge, spec)
    name = (f"jury:majority({','.join([judge.name, *(j.name for j in others)])})" if options.jury else
            f"{judge.name} escalating to {others[-1].name}" if options.escalate_to else judge.name)
    return _report(inputs, options, judged, rubric.name, name)


def _report(inputs: AnswerInputs, options: AnswerOptions, judged: Judged, rubric: str, judge: str) -> AnswerReport:
    by_item = {f.doc_id: f for f in judged.failures if f.doc_id != "answer"}
    split_failed = {f.query_id for f in judged.failures if f.doc_id == "answer"}  # the split's item id
    records = []
    if not options.labelling.dry_run:
        for answer in inputs.answers:
            claims = claim_results(judged.claims.get(answer.query_id, []), judged.verdicts, by_item)
            records.append(answer_record(answer, inputs, judged.splits.get(answer.query_id), claims,
                                         answer.query_id in split_failed))
    table, counts = attribution_table(records)
    grounded = [r.groundedness for r in records if r.groundedness is not None]
    checks = [] if options.labelling.dry_run else gate_checks(records, options.thresholds, len(judged.failures))
    return AnswerReport(judge=judge, claim_rubric=rubric, answers=records, attribution=table, counts=counts,
                        mean_groundedness=round(sum(grounded) / len(grounded), 6) if grounded else None,
                        claims=sum(len(r.claims) for r in records), failures=judged.failures, checks=checks,
                        passed=all(c.passed for c in checks), stats=judged.stats)


def grounding_records(report: AnswerReport) -> list[dict[str, Any]]:
    """One plain record per query, for other gates (the acceptance suite): query_id, groundedness, attribution,
    the claim counts, evidence_retrieved, answer_correct, abstained, abstention_correct."""
    keep = ("query_id", "groundedness", "attribution", "supported", "contradicted", "not_supported", "failed",
            "evidence_retrieved", "answer_correct", "abstained", "abstention_correct")
    return [{name: getattr(record, name) for name in keep} for record in report.answers]
