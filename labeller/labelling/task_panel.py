"""Juries and escalation over any task (labeller.tasks), each judge through judge_task: the same store, so no
verdict is paid twice and a rerun sends nothing. Judges run one after another; with --max-cost each is given what
the ones before it left of the budget.

- jury: every judge answers every item; the task's combine() makes the jury's row (claims: the majority verdict,
  a tie not_supported). An item some judge could not answer gets no jury row: its failures are listed (as
  relevance juries do: labelling/jury.py), and a rerun retries only them.
- escalation: the first judge answers every item; the items whose row `unsure(row)` says so (claims: any verdict
  but supported, or samples that disagreed) are asked of the second judge, whose row replaces the first's and is
  marked escalated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labeller.judges.base import Judge
from labeller.labelling.models import LabelOptions, LabelStats
from labeller.labelling.task_run import TaskRun, judge_task
from labeller.prices import PriceTable
from labeller.store.base import VerdictStore
from labeller.tasks.base import Task


def _left(options: LabelOptions, spent: list[LabelStats]) -> LabelOptions:
    if options.max_cost is None:
        return options
    used = sum(stats.cost_usd or 0.0 for stats in spent)
    return options.model_copy(update={"max_cost": max(0.0, options.max_cost - used)})


def _merged(runs: list[LabelStats], requested: int) -> LabelStats:
    total = LabelStats(requested=requested, samples=runs[0].samples, dry_run=runs[0].dry_run)
    for stats in runs:
        for name in ("new", "cached", "failed", "skipped", "skipped_by_budget", "requests", "input_tokens",
                     "output_tokens", "cached_input_tokens", "unconfirmed_attempts"):
            setattr(total, name, getattr(total, name) + getattr(stats, name))
        total.cost_usd = None if total.cost_usd is None or stats.cost_usd is None else total.cost_usd + stats.cost_usd
        total.budget_stopped = total.budget_stopped or stats.budget_stopped
        total.stopped_by = total.stopped_by or stats.stopped_by
        total.elapsed_s += stats.elapsed_s
        total.estimate_notes += stats.estimate_notes
        if stats.estimated_cost_usd is not None:
            total.estimated_cost_usd = (total.estimated_cost_usd or 0.0) + stats.estimated_cost_usd
    return total


async def judge_task_jury(task: Task, judges: list[Judge], store: VerdictStore, options: LabelOptions, *,
                          prices: PriceTable | None = None) -> TaskRun:
    runs: list[TaskRun] = []
    for judge in judges:
        runs.append(await judge_task(task, judge, store, _left(options, [r.stats for r in runs]), prices=prices))
    answered = [{(row["query_id"], row["item_id"]): row for row in run.rows} for run in runs]
    rows = []
    for item in task.base_items:
        votes = {judge.name: found[(item.query_id, item.doc_id)] for judge, found in zip(judges, answered)
                 if (item.query_id, item.doc_id) in found}
        if len(votes) == len(judges):
            rows.append(task.combine(votes))
    failures = [f for run in runs for f in run.failures]
    return TaskRun(rows=rows, failures=failures, stats=_merged([r.stats for r in runs], len(task.base_items)))


async def judge_task_escalated(task: Task, cheap: Judge, expensive: Judge, store: VerdictStore,
                               options: LabelOptions, unsure: Callable[[dict[str, Any]], bool], *,
                               prices: PriceTable | None = None) -> TaskRun:
    first = await judge_task(task, cheap, store, options, prices=prices)
    if options.dry_run:
        return first
    by_item = {(row["query_id"], row["item_id"]): row for row in first.rows}
    doubtful = [i for i, item in enumerate(task.base_items) if (item.query_id, item.doc_id) in by_item
                and unsure(by_item[(item.query_id, item.doc_id)])]
    second = await judge_task(task.subset(doubtful), expensive, store, _left(options, [first.stats]), prices=prices)
    for row in second.rows:
        by_item[(row["query_id"], row["item_id"])] = {**row, "escalated": True}
    rows = [by_item[(p.query_id, p.doc_id)] for p in task.base_items if (p.query_id, p.doc_id) in by_item]
    return TaskRun(rows=rows, failures=first.failures + second.failures,
                   stats=_merged([first.stats, second.stats], len(task.base_items)))
