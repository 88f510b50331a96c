"""Grade probabilities in a run (`--grade-probs`) and adaptive self-consistency (`--samples auto:N`).

--grade-probs asks the judge for token log-probabilities (Judge.ask_grade_probs); a judge that cannot give them
(Anthropic, a forced tool call, OpenAI's reasoning models) says why once, in the run's warnings, and the run falls
back to samples (labelling.grading). A server that takes the request but sends none back (one that ignores
`logprobs`) is counted and said once too.

--samples auto:N asks each pair in rounds, sample k in round k, each sample keyed as `--samples N` keys it
(sample 0 as a run without samples), so a rerun pays nothing and `--samples N` reuses them:
- after the first sample, a pair is settled when its grade distribution is known and its entropy is at most
  judges.grade_probs.ENTROPY_SPREAD (0.5 bits); a pair without one (no --grade-probs, or the server gave none)
  or with a spread one gets a second sample;
- after k >= 2 samples, a pair is settled when its k grades agree; otherwise it gets one more, up to N;
- a pair whose sample failed is not asked again (it is labelled from the samples that succeeded, as --samples does).
The label is collapsed from the samples asked as --samples collapses them (`samples` says how many were asked);
the stats count pairs by samples asked (`sample_counts`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from labeller.errors import BadInputError
from labeller.judges.base import Judge
from labeller.judges.grade_probs import ENTROPY_SPREAD, grade_entropy
from labeller.labelling.models import LabelOptions, LabelRun, LabelStats
from labeller.labelling.samples import collapse_pair
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Label, LabelFailure, Pair, Query
from labeller.rubric import Rubric
from labeller.store.base import VerdictStore
from labeller.tasks.base import Task

NOTE = "--grade-probs: "
_SUMMED = ("requested", "new", "cached", "failed", "skipped", "skipped_by_budget", "requests", "input_tokens",
           "output_tokens", "cached_input_tokens", "unconfirmed_attempts")
_SUMMED_OR_NONE = ("cost_usd", "unconfirmed_cost_usd", "estimated_input_tokens", "estimated_output_tokens",
                   "estimated_cost_usd", "estimated_cached_input_tokens")


AUTO_MAX_SAMPLES = 5  # `--samples auto` without a maximum


def parse_samples(text: str | int) -> tuple[int, bool]:
    """`--samples` as given: N, or auto[:N] (adaptive, at most N samples a pair) -> (N, adaptive)."""
    value = str(text).strip()
    head, sep, tail = value.partition(":")
    try:
        if head == "auto":
            return (int(tail) if sep else AUTO_MAX_SAMPLES), True
        if not sep:
            return int(value), False
    except ValueError:
        pass
    raise BadInputError(f"--samples '{value}' is not a number of samples; expected N (e.g. 3) or auto:N "
                        f"(e.g. auto:5: more samples only where the first are unsure, at most N)", field="samples")


NO_PROBS = ("came back without token log-probabilities at the grade (the server ignores `logprobs`, or the grade's "
            "token was not among them)")


def no_probs_note(missing: int, new: int, options: LabelOptions) -> str:
    fallback = "; --samples auto asked those pairs a second sample" if options.adaptive else ""
    return f"{NOTE}{missing} of {new} new verdicts {NO_PROBS}; they carry none{fallback}"


def needs_more(results: Sequence[Label | LabelFailure | None]) -> bool:
    """The rule in the module docstring, given one pair's sample results so far."""
    if any(not isinstance(r, Label) for r in results):
        return False
    if len(results) == 1:
        probs = results[0].grade_probs  # type: ignore[union-attr]
        return probs is None or grade_entropy(probs) > ENTROPY_SPREAD
    return len({r.grade for r in results if isinstance(r, Label)}) > 1


async def label_adaptive(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                         rubric: Rubric, cache: VerdictStore, options: LabelOptions, notes: list[str], *,
                         prices: PriceTable | None = None) -> LabelRun:
    """--samples auto:N over the pairs (labelling.engine.label_pairs hands it on); labels in pair order."""
    from labeller.tasks.relevance import RelevanceTask

    started = time.monotonic()
    price = (prices or load_prices()).lookup(judge.provider, judge.model)

    def part_for(items: list[int], samples: list[int]) -> RelevanceTask:
        return RelevanceTask([pairs[i] for i in items], queries, corpus, rubric, samples.__getitem__)

    asked, rounds = await sample_in_rounds(len(pairs), part_for, sync_round(judge, cache, price), options,
                                           needs_more)
    results = [r for chunk in asked for r in collapse_pair([s for s in chunk if s is not None], len(chunk),
                                                          options.aggregate)]
    stats = merge_rounds(rounds, options, notes, Counter(len(chunk) for chunk in asked))
    stats.elapsed_s = round(time.monotonic() - started, 3)
    return LabelRun(labels=[r for r in results if isinstance(r, Label)],
                    failures=[r for r in results if isinstance(r, LabelFailure)], stats=stats)


Transport = Callable[[Task, LabelOptions], Awaitable[tuple[list[Any], LabelStats]]]
"""How one round of a task is asked: (each position's row, LabelFailure or None (never settled), in position order;
the round's stats). sync_round below, or batch_results.batch_round (one provider batch a round)."""


def sync_round(judge: Judge, store: VerdictStore, price: Any) -> Transport:
    """The synchronous engine (labelling.engine._Run) as a round transport."""
    async def run_round(task: Task, options: LabelOptions) -> tuple[list[Any], LabelStats]:
        from labeller.labelling.engine import _Run  # the engine imports this module

        kept: list[dict[str, Any]] = []
        run = _Run(task, judge, store, options, price, kept.extend)
        stats = await run.finish(time.monotonic())
        return run.done.in_position_order(kept, build=lambda row: row), stats
    return run_round


async def sample_in_rounds(count: int, part_for: Callable[[list[int], list[int]], Task], transport: Transport,
                           options: LabelOptions, needs_more: Callable[[list[Any]], bool],
                           build: Callable[[dict[str, Any]], Any] = Label.model_validate,
                           dry_rounds: int = 1, rest_at_once: bool = False) -> tuple[list[list[Any]], list[LabelStats]]:
    """The rounds of --samples auto:N over `count` items of any task: round k asks sample k of every item still
    pending (`part_for(items, samples)`: the task over those items, item j keyed as samples[j]); an item stays
    pending while `needs_more(its results so far)` and fewer than N were asked. With rest_at_once, round 1 asks
    samples 1..N-1 of each item still pending at once (the --grade-probs fallback, whose rule is settled by the
    first reply: one follow-up batch rather than N-1). The budget left is handed from round to round (as
    --max-cost counts); a stop ends the rounds; a dry run prices its first `dry_rounds` rounds. Returns each item's
    results in sample order (`build` makes them from rows) and each round's stats."""
    asked: list[list[Any]] = [[] for _ in range(count)]
    pending = list(range(count))
    rounds: list[LabelStats] = []
    k = 0
    while k < options.samples:
        upto = options.samples if rest_at_once and k == 1 else k + 1
        spent = sum((s.cost_usd or 0.0) + (s.unconfirmed_cost_usd or 0.0) for s in rounds)
        one = options.model_copy(update={"samples": 1, "max_cost": None if options.max_cost is None
                                         else max(options.max_cost - spent, 0.0)})
        items = [i for i in pending for _ in range(k, upto)]
        results, stats = await transport(part_for(items, [s for _ in pending for s in range(k, upto)]), one)
        rounds.append(stats)
        for i, result in zip(items, results):
            asked[i].append(build(result) if isinstance(result, dict) else result)
        if stats.stopped_by or stats.budget_stopped or (stats.dry_run and k + 1 >= dry_rounds):
            break
        k = upto
        if stats.dry_run:  # priced as asked again: the same items
            continue
        pending = [i for i in pending if k < options.samples and needs_more(asked[i])]
        if not pending:
            break
    return asked, rounds


def merge_rounds(rounds: list[LabelStats], options: LabelOptions, notes: list[str], counts: Counter,
                 more: str | None = None) -> LabelStats:
    """One LabelStats for the rounds: counts and spending summed (they count samples), the first round's
    estimate notes, the grade-probability note of the first round only (later rounds ask the pairs again)."""
    first = rounds[0]
    merged = first.model_copy(deep=True)
    for name in _SUMMED:
        setattr(merged, name, sum(getattr(s, name) for s in rounds))
    for name in _SUMMED_OR_NONE:
        values = [getattr(s, name) for s in rounds]
        setattr(merged, name, None if any(v is None for v in values) else round(sum(values), 6))
    if merged.batch is not None:  # one provider batch (or more) a round: the summary counts them all
        for name in type(merged.batch).model_fields:
            setattr(merged.batch, name, sum(getattr(s.batch, name) for s in rounds if s.batch is not None))
    merged.budget_stopped = any(s.budget_stopped for s in rounds)
    merged.stopped_by = next((s.stopped_by for s in rounds if s.stopped_by), None)
    later = [w for s in rounds[1:] for w in s.warnings if not w.startswith(NOTE)]
    merged.warnings = [*notes, *first.warnings, *later]
    merged.samples = options.samples
    merged.sample_counts = {str(n): counts[n] for n in sorted(counts)}
    if merged.dry_run and (options.samples > 1 or more):
        merged.estimate_notes.append(more or f"--samples auto:{options.samples}: the first sample of each pair is "
                                     f"priced; a pair the judge is unsure of may take up to {options.samples - 1} more")
    return merged
