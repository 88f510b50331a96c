"""label_pairs: cache lookups, then bounded concurrent judge calls for what is missing (labelling.sending)."""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from labeller.errors import redact
from labeller.io.tables import load_own
from labeller.judges.base import Judge
from labeller.labelling.batch import LoopBatcher
from labeller.labelling.budget import MeteredJudge, Spending
from labeller.labelling.adaptive import NO_PROBS, label_adaptive, no_probs_note
from labeller.labelling.estimate import estimate_requests
from labeller.labelling.grading import falls_back, plan_grading
from labeller.labelling.probs_fallback import label_with_fallback
from labeller.labelling.rows import CACHED_ROW, PlannedChunks, cached_lines, labels_from_rows
from labeller.labelling.models import LabelOptions, LabelRun, LabelStats
from labeller.labelling.planning import Found, looked_up
from labeller.labelling.samples import check_sampling, collapse, expand
from labeller.labelling.sending import POLL_SECONDS, SYSTEMATIC_REJECTIONS, Item, Sending, _RateLimitedJudge
from labeller.prices import ModelPrice, PriceTable, load_prices
from labeller.progress import ProgressBar
from labeller.ratelimit import RateLimits
from labeller.records import Doc, Label, LabelFailure, Pair, Query
from labeller.retry import CircuitBreaker
from labeller.rubric import JudgePrompt, Rubric
from labeller.store.base import CachedVerdict, VerdictStore, new_owner, now_iso
from labeller.tasks.base import Task
from labeller.tasks.relevance import RelevanceTask
from labeller.tokens import TokenCounter

__all__ = ["PLAN_CHUNK", "POLL_SECONDS", "SYSTEMATIC_REJECTIONS", "Item", "RowSink", "label_pairs"]

PLAN_CHUNK = 20_000  # pairs planned (rendered, hashed, looked up) at a time; their rows are written together
RowSink = Callable[[list[dict[str, Any]]], None]  # takes label rows (Label.model_dump() shape), in input order


def _secrets(judge: Judge) -> list[str | None]:
    return [v for k, v in os.environ.items() if k.endswith("_API_KEY")] + list(judge.secrets())


class _Run(Sending):
    """One run of a task (labeller.tasks): its items planned, looked up, sent (labelling.sending) and settled in
    input order."""

    def __init__(self, task: Task, judge: Judge, cache: VerdictStore, options: LabelOptions,
                 price: ModelPrice | None, sink: RowSink, lines: bool = False) -> None:
        self.task, self.pairs = task, task.items
        self.render, self.row = task.render, task.row  # the prompt of position i; a settled item's output row
        self.judge, self.cache, self.options, self.price = judge, cache, options, price
        self.stats = LabelStats(requested=len(task.items), dry_run=options.dry_run,
                                cost_usd=0.0 if price is not None else None,
                                unconfirmed_cost_usd=0.0 if price is not None else None)
        self.counter = TokenCounter(judge.provider, judge.model)
        self.spending = Spending(self.stats, price, options.max_cost, self.counter, judge.max_output_tokens)
        self.breaker = CircuitBreaker(options.retry.breaker_threshold, options.retry.refusal_threshold)
        limits = RateLimits(options.requests_per_minute, options.tokens_per_minute)
        metered = MeteredJudge(judge, self.spending)
        self.sender = _RateLimitedJudge(metered, limits, self.counter) if limits.active else metered
        self.settings = task.settings(judge)
        self.secrets = _secrets(judge)
        self.done = PlannedChunks(len(task.items), PLAN_CHUNK, sink)
        self.dry_rows = True  # a dry run keeps the rows of pairs the store answers (see dry_run)
        self.lines = lines  # the sink takes a cached pair's row as its JSONL line, built by the store (rows.CACHED_ROW)
        self.query_ids, self.doc_ids = task.query_ids, task.doc_ids
        self.inflight: dict[str, list[int]] = {}  # keys queued or being graded: later duplicates join them
        self.failed: dict[str, tuple[str, int]] = {}  # keys that failed this run: (reason, attempts)
        self.hungry = asyncio.Event()  # set when the queue runs short: time to plan the next chunk
        self.owner = new_owner()
        self.held: set[str] = set()
        self.queue: deque[Item] = deque()
        self.waiting: list[Item] = []
        self.stop_reason: str | None = None
        self.rejected = 0  # pairs the provider refused outright (HTTP 400/413/422)
        # Leases are claimed ahead of the workers (claim_ahead); a worker waits one loop pass for its verdict's
        # commit (batch.LoopBatcher), the verdicts of a pass in one transaction. On the loop itself: a store
        # thread measured slower (each SQLite call hands the GIL back and forth with a busy loop).
        self.claimed: dict[str, str] = {}  # claim results of queued keys, claimed ahead of their workers
        self.saves = LoopBatcher(cache.put_many)
        self.bar: ProgressBar | None = None
        self.served: str | None = None  # what a local server says it serves under the model name (cache key)
        self.without_probs = 0  # --grade-probs: new relevance verdicts whose reply carried no grade distribution

    # -- planning -------------------------------------------------------------------------------
    def plan_chunks(self) -> Iterator[list[Item]]:
        """Chunk by chunk (labelling.planning): answer what the store holds (one lookup per many keys: a remote
        store is not asked per pair) and yield the rest, one item per distinct cache key. A pair found in the
        store becomes its output row straight from the stored JSON (or, with lines, from the store's own)."""
        keys = self.task.keys(self.judge, self.settings, self.served)
        for lo, hi, chunk_keys, found in looked_up(len(self.pairs), PLAN_CHUNK, keys, self.lookup,
                                                   self.cache.reads_ahead,
                                                   lambda key: key in self.inflight or key in self.failed):
            yield self.settle_chunk(lo, hi, chunk_keys, found)

    def lookup(self, keys: list[str]) -> Found:
        if self.lines:
            return self.cache.get_many_projected(keys, CACHED_ROW)
        return {}, self.cache.get_many_raw(keys)

    def settle_chunk(self, lo: int, hi: int, keys: list[str], found: Found) -> list[Item]:
        """The pairs lo..hi, given their keys and what the store holds of them (rows.CACHED_ROW objects, and
        records as stored): answered from the store, joined to the same key queued earlier, failed as it
        failed earlier, or returned to be sent (one item per key)."""
        chunk, query_ids, doc_ids, row = lo // PLAN_CHUNK, self.query_ids, self.doc_ids, self.row
        slots = self.done.plan(chunk)
        inflight, failed = self.inflight, self.failed
        projected, stored = found
        todo: list[Item] = []
        if len(projected) == len(keys):  # the whole chunk is in the store (a rerun): lines straight into their slots
            slots[:] = cached_lines(query_ids[lo:hi], doc_ids[lo:hi], [projected[key] for key in keys])
        elif len(stored) == len(keys):
            for offset, qid, did, key in zip(range(hi - lo), query_ids[lo:hi], doc_ids[lo:hi], keys):
                slots[offset] = row(qid, did, load_own(stored[key]), True)
        if len(projected) == len(keys) or len(stored) == len(keys):
            self.done.filled(chunk, hi - lo)
            self.stats.cached += hi - lo
            return todo
        by_key: dict[str, list[int]] = {}
        for i, key in zip(range(lo, hi), keys):
            by_key.setdefault(key, []).append(i)
        for key, positions in by_key.items():
            if key in inflight:  # the same prompt earlier in the input, not yet answered: paid once
                inflight[key].extend(positions)
            elif key in failed:
                reason, attempts = failed[key]
                self.fail(key, positions, reason, attempts)
            elif key in projected:
                lines = cached_lines([query_ids[i] for i in positions], [doc_ids[i] for i in positions],
                                     [projected[key]] * len(positions))
                for i, line in zip(positions, lines):
                    self.done.settle(i, line)
                self.stats.cached += len(positions)
            elif key in stored:
                self.from_cache(load_own(stored[key]), positions)
            else:
                inflight[key] = positions
                todo.append((key, positions))
        return todo

    def dry_run(self) -> None:
        """The estimate, each chunk's prompts rendered and counted as it is planned (none kept): every pair not
        answered from the store would be new. The rows of pairs the store answers are kept for a caller that keeps
        rows (an escalation's dry run reads them), and none for one that streams them (the CLI: nothing is written)."""
        def prompts() -> Iterator[JudgePrompt]:
            for todo in self.plan_chunks():
                self.done.flush() if self.dry_rows else self.done.forget()
                yield from (self.render(positions[0]) for _, positions in todo)

        est = estimate_requests(prompts(), provider=self.judge.provider, model=self.judge.model, price=self.price,
                                counter=self.counter, concurrency=self.options.concurrency)
        s = self.stats
        s.new = s.requested - s.cached
        s.estimated_input_tokens, s.estimated_cached_input_tokens = est.input_tokens, est.cached_input_tokens
        s.estimated_output_tokens = est.output_tokens
        s.estimated_cost_usd = None if est.cost_usd is None else round(est.cost_usd, 6)
        s.estimate_notes = est.notes

    # -- results --------------------------------------------------------------------------------
    def label(self, i: int, record: dict[str, Any], from_cache: bool) -> None:
        self.done.settle(i, self.row(self.query_ids[i], self.doc_ids[i], record, from_cache))

    def from_cache(self, rec: CachedVerdict | dict[str, Any], positions: list[int]) -> None:
        record = rec.model_dump() if isinstance(rec, CachedVerdict) else rec
        for i in positions:
            self.label(i, record, True)
        self.stats.cached += len(positions)

    def fail(self, key: str, positions: list[int], reason: str, attempts: int) -> None:
        for i in positions:
            self.done.settle(i, self.failure(i, key, reason, attempts))
        self.stats.failed += len(positions)

    def failure(self, i: int, key: str, reason: str, attempts: int) -> LabelFailure:
        pair = self.pairs[i]
        return LabelFailure(query_id=pair.query_id, doc_id=pair.doc_id, judge=self.judge.name,
                            rubric=self.task.rubric_name, rubric_version=self.task.rubric_version, cache_key=key,
                            reason=redact(reason, self.secrets), attempts=attempts, created_at=now_iso())

    def skip(self, item: Item) -> None:
        key, positions = item
        for i in positions:
            self.done.settle(i, self.failure(i, key, f"not sent: {self.stop_reason}", 0))
        self.stats.skipped += len(positions)
        if self.stats.budget_stopped:
            self.stats.skipped_by_budget += len(positions)

    def in_batch(self, item: Item) -> None:
        """A provider batch still open covers this pair: its answer will come from there, so nothing is
        sent, and nothing waits for hours either."""
        key, positions = item
        reason = "not sent: an open provider batch covers this pair; rerun with --batch to collect it"
        for i in positions:
            self.done.settle(i, self.failure(i, key, reason, 0))
        self.stats.skipped += len(positions)

    def tick(self, force: bool = False) -> None:
        if self.bar is not None:
            s = self.stats
            self.bar.tick(s.new + s.cached + s.failed + s.skipped, s.cached, s.failed + s.skipped,
                          s.input_tokens + s.output_tokens, s.cost_usd, force=force)

    # -- sending --------------------------------------------------------------------------------
    async def finish(self, started: float) -> LabelStats:
        """Run, then the stats with the run's figures rounded (`started`: time.monotonic() at the call's start)."""
        await self.run()
        stats = self.stats
        stats.samples = self.options.samples
        if self.without_probs:
            stats.warnings.append(no_probs_note(self.without_probs, self.stats.new, self.options))
        stats.elapsed_s = round(time.monotonic() - started, 3)
        if stats.cost_usd is not None:
            stats.cost_usd = round(stats.cost_usd, 6)
        return stats

    async def run(self) -> None:
        # A GET /v1/models to a local server, even in a dry run (it is not a paid request, and the dry run's
        # cached count needs the same keys); nothing for OpenAI's API.
        self.served = await self.judge.served_identity()
        self.task.check_inputs()
        if self.options.dry_run:
            return self.dry_run()
        renewer = asyncio.create_task(self.renew_leases())
        with ProgressBar(len(self.pairs), self.options.progress) as self.bar:
            try:
                self.tick(force=True)
                await self.feed()
                await self.wait_for_others()
                self.done.flush()
                self.tick(force=True)
            finally:
                renewer.cancel()
                if self.held:  # interrupted: let other processes take these pairs at once
                    self.cache.release(list(self.held), self.owner)


async def label_pairs(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                      rubric: Rubric, cache: VerdictStore, options: LabelOptions | None = None, *,
                      prices: PriceTable | None = None, sink: RowSink | None = None, lines: bool = False) -> LabelRun:
    """Label every pair: from the cache when it can, from the judge otherwise.

    Every pair ends as a Label or a LabelFailure, in input order. With a `sink`, label rows
    (Label.model_dump()'s shape) go to it a chunk at a time, in input order, and the LabelRun holds no
    labels (a large run is written as it goes); without one they are returned. lines=True: the sink also
    takes JSONL lines (bytes, no newline) among the rows, a pair answered from the store as its store read
    it (rows.CACHED_ROW). Does not close the judge.
    """
    options = options or LabelOptions()
    check_sampling(judge, options.samples, options.aggregate)
    grading = plan_grading(judge, options)  # --grade-probs: log-probabilities, or samples where the judge gives none
    options, notes, sink = grading.options, grading.notes, grading.sink(sink)
    if options.adaptive:
        return grading.finish(await label_adaptive(pairs, queries, corpus, judge, rubric, cache, options, notes,
                                                   prices=prices))
    if falls_back(grading, judge):
        # a pair whose reply carries no log-probabilities falls back to samples on its own (labelling.probs_fallback)
        return grading.finish(await label_with_fallback(pairs, queries, corpus, judge, rubric, cache, options, notes,
                                                        prices=prices))
    started = time.monotonic()
    price = (prices or load_prices()).lookup(judge.provider, judge.model)
    work = expand(pairs, options.samples)  # --samples N: each pair N times, one verdict per sample
    sampled = options.samples > 1  # the N samples of a pair are collapsed at the end: nothing is streamed
    kept: list[dict[str, Any]] = []
    # A cached rerun's lines come from the store's projected row, which holds no grade distribution.
    lines = lines and sink is not None and not sampled and not options.grade_probs
    keep = sink is None or sampled
    run = _Run(RelevanceTask(work.items, queries, corpus, rubric, work.sample_of), judge, cache, options, price,
               kept.extend if keep else sink, lines=lines)
    run.dry_rows = keep
    stats = await run.finish(started)
    stats.warnings[:0] = notes
    if grading.source == "logprobs" and not sampled:  # temperature 0: the pairs without a distribution keep none
        stats.warnings = [f"{w} (at temperature 0 a pair cannot fall back to samples: give --temperature above 0)"
                          if NO_PROBS in w else w for w in stats.warnings]
    if options.dry_run and not keep:  # counted and estimated; no row kept, none streamed
        return grading.finish(LabelRun(stats=stats))
    if sampled:
        results = collapse(work, run.done.in_position_order(kept), options.aggregate)
        return grading.finish(LabelRun(labels=[r for r in results if isinstance(r, Label)],
                                       failures=[r for r in results if isinstance(r, LabelFailure)], stats=stats))
    return grading.finish(LabelRun(labels=labels_from_rows(kept), failures=run.done.failures, stats=stats))
