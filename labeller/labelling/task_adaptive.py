"""--samples auto:N for a task other than relevance (labeller.tasks; claim verdicts): samples in rounds, more only
where the first disagree, at most N an item.

A claim has no grade distribution to read, so every item is asked twice (samples 0 and 1, keyed as --samples N
keys them: a rerun pays nothing and --samples N reuses them); after k >= 2 samples an item is settled when its
samples agree (task.sample_answer: for a claim, the verdict), else it gets one more, up to N. An item whose sample
failed is not asked again: it is answered from the samples that succeeded. The row is collapsed as --samples
collapses them (task.aggregate: the majority verdict) and says how many samples were asked (`samples`); the stats
count items by samples asked (`sample_counts`). A dry run prices the two samples every item is asked. --batch is
refused (each round would be a batch of its own).
"""

from __future__ import annotations

import time
from collections import Counter
from functools import partial
from typing import Any

from labeller.errors import BadInputError
from labeller.judges.base import Judge
from labeller.labelling.adaptive import merge_rounds, sample_in_rounds, sync_round
from labeller.labelling.models import LabelOptions, LabelStats
from labeller.labelling.samples import failed_samples
from labeller.prices import PriceTable
from labeller.records import LabelFailure
from labeller.store.base import VerdictStore
from labeller.tasks.base import Task

Asked = list[dict[str, Any] | LabelFailure | None]  # one item's sample results so far, in sample order


def check_adaptive(task: Task, options: LabelOptions) -> None:
    if options.batch:
        raise BadInputError("--samples auto does not take --batch (each round of samples would be a batch of its "
                            "own, up to a day each); give a fixed --samples N with --batch", field="batch")
    if type(task).sample_answer is Task.sample_answer:
        raise BadInputError(f"--samples auto does not apply to the {task.name} task: its samples have nothing to "
                            "agree on", field="samples")


def needs_more(task: Task, results: Asked) -> bool:
    """The rule in the module docstring, given one item's sample results so far."""
    if any(not isinstance(r, dict) for r in results):
        return False
    return len(results) < 2 or len({task.sample_answer(r) for r in results if isinstance(r, dict)}) > 1


async def judge_task_adaptive(task: Task, judge: Judge, store: VerdictStore, options: LabelOptions,
                              prices: PriceTable) -> tuple[list[dict[str, Any]], list[LabelFailure], LabelStats]:
    """Rows, failures and stats of the task's items under --samples auto:N (options.samples is N)."""
    check_adaptive(task, options)
    started = time.monotonic()
    price = prices.lookup(judge.provider, judge.model)

    def part_for(items: list[int], samples: list[int]) -> Task:
        part = task.subset(items)
        part.sample_of = samples.__getitem__  # type: ignore[method-assign]  # item j keyed as its sample samples[j]
        return part

    asked, rounds = await sample_in_rounds(len(task.base_items), part_for, sync_round(judge, store, price), options,
                                           partial(needs_more, task), build=lambda row: row, dry_rounds=2)
    rows, failures = _collapsed(task, asked)
    stats = merge_rounds(rounds, options, [], Counter(len(chunk) for chunk in asked))
    if stats.dry_run and options.samples > 2:
        stats.estimate_notes = [note for note in stats.estimate_notes if not note.startswith("--samples auto:")] + [
            f"--samples auto:{options.samples}: the two samples every item is asked are priced; an item whose "
            f"samples disagree may take up to {options.samples - 2} more"]
    stats.elapsed_s = round(time.monotonic() - started, 3)
    return rows, failures, stats


def _collapsed(task: Task, asked: list[Asked]) -> tuple[list[dict[str, Any]], list[LabelFailure]]:
    rows: list[dict[str, Any]] = []
    failures: list[LabelFailure] = []
    for chunk in asked:
        answered = [r for r in chunk if isinstance(r, dict)]
        if answered:
            rows.append({**task.aggregate(answered), "samples": len(chunk)})
        failures += failed_samples(chunk, len(chunk), kept_of(answered))
    return rows, failures


def kept_of(answered: list[dict[str, Any]]) -> str:
    return (f"the row uses the {len(answered)} that succeeded" if answered
            else "no sample succeeded, so the item has no verdict")
