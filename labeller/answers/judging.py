"""Split each answer into claims, then judge each claim against its query's passages: the two claim tasks
(labeller.tasks.claims) through the one labelling engine (labelling.task_run.judge_task), on one store.

- The split is asked once per answer (never sampled: --samples applies to the verdicts); an empty answer is an
  abstention with no claim, and costs nothing.
- A claim of a query with no passage at all is not_supported without a request: there is nothing to support it.
- --max-cost covers both steps: the verdicts get what the split left of the budget.
- With a jury (more judges) every claim is judged by each, the majority verdict wins (a tie: not_supported); with
  escalation the claims the first judge does not find supported (or whose samples disagreed) are asked of the
  second, whose verdict wins (labelling/task_panel.py). The split is always the first judge's.
- A dry run prices the splits not in the store; the verdicts of answers whose split is in the store are priced
  too (their claims are known); the others cannot be until their split is bought (said in the stats' notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from labeller.answers.models import AnswerInputs
from labeller.judges.base import Judge
from labeller.labelling.models import LabelOptions, LabelStats
from labeller.labelling.task_panel import judge_task_escalated, judge_task_jury
from labeller.labelling.task_run import cached_rows, judge_task
from labeller.prices import PriceTable
from labeller.records import LabelFailure
from labeller.store.base import VerdictStore
from labeller.tasks.claims import ClaimItem, ClaimRubric, ClaimSplitTask, ClaimVerdictTask, SplitItem

NO_PASSAGE = "no passage was retrieved for this query, so nothing supports the claim"


@dataclass
class Judged:
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)  # query id -> split row (verdict: ClaimList)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim id -> verdict row
    claims: dict[str, list[ClaimItem]] = field(default_factory=dict)  # query id -> its claims, in order
    failures: list[LabelFailure] = field(default_factory=list)
    stats: dict[str, LabelStats] = field(default_factory=dict)


def unsure(row: dict[str, Any]) -> bool:
    """Escalate a claim the cheap judge did not find supported, or whose samples disagreed."""
    return row["verdict"]["verdict"] != "supported" or row.get("sample_agreement", 1.0) < 1.0


async def judge_answers_claims(inputs: AnswerInputs, judge: Judge, store: VerdictStore, rubric: ClaimRubric,
                               options: LabelOptions, prices: PriceTable | None = None, *,
                               jury: list[Judge] | None = None, escalate_to: Judge | None = None) -> Judged:
    judged = Judged()
    items = [SplitItem(query_id=a.query_id, question=inputs.questions[a.query_id], answer=a.answer)
             for a in inputs.answers if a.answer.strip()]  # an empty answer has no claim: nothing to ask
    split = await judge_task(ClaimSplitTask(items, rubric), judge, store,
                             options.model_copy(update={"samples": 1, "adaptive": False}), prices=prices)
    judged.stats["split"], judged.failures = split.stats, list(split.failures)
    rows = split.rows
    if options.dry_run:  # what the store already holds of the splits tells which claims a real run would judge
        rows = await cached_rows(ClaimSplitTask(items, rubric), judge, store)
    judged.splits = {row["query_id"]: row for row in rows}
    to_judge: list[ClaimItem] = []
    for answer in inputs.answers:
        row = judged.splits.get(answer.query_id)
        if row is None:
            continue
        passages = [(p.passage_id, p.text) for p in inputs.passages.get(answer.query_id, [])]
        claims = judged.claims[answer.query_id] = [
            ClaimItem(query_id=answer.query_id, claim_id=f"{answer.query_id}#{n}",
                      question=inputs.questions[answer.query_id], claim=text, passages=passages)
            for n, text in enumerate(row["verdict"]["claims"], start=1)]
        if passages:
            to_judge += claims
        else:
            for claim in claims:
                judged.verdicts[claim.claim_id] = {"verdict": {"justification": NO_PASSAGE, "verdict": "not_supported",
                                                               "supporting": [], "contradicting": []},
                                                   "from_cache": False}
    left = options.max_cost
    if left is not None and not options.dry_run:
        left = max(0.0, left - (judged.stats["split"].cost_usd or 0.0))
    task, left_options = ClaimVerdictTask(to_judge, rubric), options.model_copy(update={"max_cost": left})
    if jury:
        verdicts = await judge_task_jury(task, [judge, *jury], store, left_options, prices=prices)
    elif escalate_to is not None:
        verdicts = await judge_task_escalated(task, judge, escalate_to, store, left_options, unsure, prices=prices)
    else:
        verdicts = await judge_task(task, judge, store, left_options, prices=prices)
    judged.stats["verdicts"] = verdicts.stats
    if options.dry_run and len(judged.splits) < len(items):
        verdicts.stats.estimate_notes.append(
            f"{len(items) - len(judged.splits)} answers have no claim split in the store yet: their claim verdicts "
            "are not in this estimate (about one request per sentence of each answer)")
    judged.verdicts.update({row["item_id"]: row for row in verdicts.rows})
    judged.failures += verdicts.failures
    return judged
