"""judge_task: any task (labeller.tasks) through the one engine: the same store, leases, retries, budget, rate
limits, dry run and --samples as relevance labelling (labelling.engine), with the task's rows as plain dicts.

--samples N asks each item N times (sample k > 0 hashed into its key) and collapses the samples that succeeded
with the task's aggregate(); every failed sample is a LabelFailure of its own. --samples auto:N asks more only
where the first samples disagree (labelling.task_adaptive). --batch is relevance-only for
--batch sends the task's misses through the provider's batch API (labelling.batched: the same keys, store,
leases, budget and failure counting); without it, open batches of a killed --batch run that cover the task's
items are polled to the end first, so nothing is paid twice.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from labeller.judges.base import Judge
from labeller.labelling.batch_results import finish_open_task_batches, judge_task_batched
from labeller.labelling.engine import _Run
from labeller.labelling.models import LabelOptions, LabelStats
from labeller.labelling.samples import check_sampling, failed_samples
from labeller.labelling.task_adaptive import judge_task_adaptive, kept_of
from labeller.prices import PriceTable, load_prices
from labeller.records import LabelFailure
from labeller.store.base import VerdictStore
from labeller.tasks.base import Task


class TaskRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rows: list[dict[str, Any]] = Field(default_factory=list)  # one per item answered, in item order
    failures: list[LabelFailure] = Field(default_factory=list)  # one per item (or sample) not answered
    stats: LabelStats = Field(default_factory=LabelStats)


async def judge_task(task: Task, judge: Judge, store: VerdictStore, options: LabelOptions | None = None, *,
                     prices: PriceTable | None = None) -> TaskRun:
    """Every item of the task answered from the store or by the judge, or a counted failure. Does not close
    the judge."""
    options = options or LabelOptions()
    check_sampling(judge, options.samples, options.aggregate)
    prices = prices or load_prices()
    if options.adaptive:  # --samples auto:N: more samples only where the first disagree (labelling.task_adaptive)
        rows, failures, stats = await judge_task_adaptive(task, judge, store, options, prices)
        return TaskRun(rows=rows, failures=failures, stats=stats)
    started = time.monotonic()
    work = task.with_samples(options.samples) if options.samples > 1 else task
    if options.batch:
        from labeller.batch import batch_client

        batch_client(judge)  # a judge with no batch API (offline:lexical) is refused before anything is read
        results, stats = await judge_task_batched(work, judge, store, options, prices)
        stats.samples = work.n
        if stats.dry_run:
            return TaskRun(stats=stats)
        stats.elapsed_s = round(time.monotonic() - started, 3)
        return _collapse(work, results, stats)
    if not options.dry_run:  # items in a killed --batch run's batches are collected, not bought again
        await finish_open_task_batches(work, judge, store, options, prices)
    price = prices.lookup(judge.provider, judge.model)
    kept: list[dict[str, Any]] = []
    run = _Run(work, judge, store, options, price, kept.extend)
    stats = await run.finish(started)
    if stats.dry_run:
        return TaskRun(stats=stats)
    results = run.done.in_position_order(kept, build=lambda row: row)
    return _collapse(work, results, stats)


async def cached_rows(task: Task, judge: Judge, store: VerdictStore) -> list[dict[str, Any]]:
    """The rows of the task's items the store already holds, in item order; nothing is sent (a dry run's view)."""
    keys = task.keys(judge, task.settings(judge), await judge.served_identity())(0, len(task.items))
    found = store.get_many(keys)
    return [task.row(qid, iid, found[key].model_dump(), True)
            for qid, iid, key in zip(task.query_ids, task.doc_ids, keys) if key in found]


def _collapse(task: Task, results: list[Any], stats: LabelStats) -> TaskRun:
    n = task.n
    rows: list[dict[str, Any]] = []
    failures: list[LabelFailure] = []
    for start in range(0, len(results), n):
        chunk = results[start:start + n]
        answered = [r for r in chunk if isinstance(r, dict)]
        if answered:
            rows.append(answered[0] if n == 1 else task.aggregate(answered))
        if n > 1:
            failures += failed_samples(chunk, n, kept_of(answered))
        else:
            failures += [r for r in chunk if isinstance(r, LabelFailure)]
    return TaskRun(rows=rows, failures=failures, stats=stats)
