"""The sending half of a labelling run: the misses a run planned (engine._Run), claimed in the store ahead of
the workers, sent by up to --concurrency workers at once, their verdicts saved as they settle; pairs another
process is grading waited for; the leases held renewed. engine._Run is planning and settling; this is Sending."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from labeller.errors import ConfigError, JudgeError, redact
from labeller.judges.base import Judge, JudgeReply
from labeller.labelling.budget import BudgetReached
from labeller.prices import EXPECTED_OUTPUT_TOKENS
from labeller.ratelimit import RateLimits
from labeller.retry import PairRejectedError, RetryExhaustedError, generate_with_retry
from labeller.rubric import JudgePrompt
from labeller.store.base import BUSY, DONE, IN_BATCH, LEASE_TTL, MINE, CachedVerdict, now_iso
from labeller.tokens import TokenCounter

POLL_SECONDS = 0.2  # how often to look again at a pair another process is grading
SYSTEMATIC_REJECTIONS = 5  # refused requests, with no success yet, that mean the request itself is wrong
Item = tuple[str, list[int]]  # a cache key and the positions of the pairs that share it


class _RateLimitedJudge(Judge):
    """Every request, retries included, waits for the rate limits before it is sent."""

    def __init__(self, inner: Judge, limits: RateLimits, counter: TokenCounter) -> None:
        self.inner, self.limits, self.counter = inner, limits, counter
        self.provider, self.model, self.base_url = inner.provider, inner.model, inner.base_url

    def decoding_settings(self):
        return self.inner.decoding_settings()

    async def generate(self, prompt: JudgePrompt) -> JudgeReply:
        await self.limits.acquire(self.counter.prompt(prompt) + EXPECTED_OUTPUT_TOKENS)
        return await self.inner.generate(prompt)


class Sending:
    """The workers' side of engine._Run (its state is the run's: queue, inflight, failed, held, claimed, waiting)."""

    queue: Any
    waiting: list[Item]

    def note_rejection(self, reason: str) -> None:
        """One refused pair is that pair's problem; refusals with no success at all mean the request
        itself is wrong (a bad parameter, a model that takes no schema): stop rather than pay N times."""
        self.rejected += 1
        if self.rejected >= SYSTEMATIC_REJECTIONS and self.stats.new == 0 and not self.stop_reason:
            self.stats.stopped_by = redact(f"the first {self.rejected} requests were all rejected: {reason}", self.secrets)
            self.stop_reason = f"the run stopped: {self.stats.stopped_by}"

    def budget_reached(self, item: Item) -> None:
        self.stats.budget_stopped = True
        self.stop_reason = self.stop_reason or f"the --max-cost budget of ${self.options.max_cost:g} was reached"
        self.cache.release([item[0]], self.owner)
        self.skip(item)

    def claim_ahead(self, item: Item) -> str:
        """The claim result of a queued item's key. The first worker to find its key unclaimed claims it and the
        next --concurrency queued keys in one call, so workers seldom wait for a transaction before sending (waiting
        for one per pair left about half of --concurrency in flight). Leases claimed ahead count as held: renewed
        while queued, released if the run is interrupted."""
        key = item[0]
        if key not in self.claimed:
            keys = [key] + [k for k, _ in itertools.islice(self.queue, self.options.concurrency)
                            if k not in self.claimed]
            for k, status in zip(keys, self.cache.claim(keys, self.owner)):
                self.claimed[k] = status
                if status == MINE:
                    self.held.add(k)
        return self.claimed.pop(key)

    async def process(self, item: Item, leased: bool = False) -> None:
        key, positions = item
        if not leased and not self.stop_reason:
            claimed = self.claim_ahead(item)
            if claimed == BUSY:  # another process is grading it: wait for its verdict
                self.waiting.append(item)
                return
            if claimed == IN_BATCH:
                return self.in_batch(item)
            if claimed == DONE:  # it landed between planning and now
                return self.from_cache(self.cache.get(key), positions)
            leased = True
        if self.stop_reason:  # a budget or fatal stop, perhaps while we were claiming
            if leased or self.claimed.pop(key, None) == MINE:
                self.cache.release([key], self.owner)
                self.held.discard(key)
            return self.skip(item)
        self.held.add(key)
        prompt = self.render(positions[0])
        started = time.monotonic()
        try:
            reply, attempts = await generate_with_retry(self.sender, prompt, self.options.retry, self.breaker)
        except BudgetReached:  # before an attempt (perhaps a retry, after attempts counted as they went)
            return self.budget_reached(item)
        except RetryExhaustedError as exc:
            self.cache.record_failure(self.failure(positions[0], key, str(exc), exc.attempts))
            self.failed[key] = (str(exc), exc.attempts)
            self.fail(key, positions, str(exc), exc.attempts)
            if isinstance(exc, PairRejectedError):
                self.note_rejection(str(exc))
            return
        except Exception as exc:  # JudgeError (bad key, unknown model) or a bug: stop sending, keep what is done
            reason = str(exc) if isinstance(exc, JudgeError) else f"unexpected {type(exc).__name__}: {exc}"
            self.stats.stopped_by = self.stats.stopped_by or redact(reason, self.secrets)
            self.stop_reason = f"the run stopped: {self.stats.stopped_by}"
            self.cache.release([key], self.owner)
            self.failed[key] = (reason, 1)
            self.fail(key, positions, reason, 1)
            return
        finally:
            self.held.discard(key)
            self.tick()
        cost = None if self.price is None else self.price.cost(reply.input_tokens, reply.output_tokens,
                                                               reply.cached_input_tokens)
        pair = self.pairs[positions[0]]
        record = CachedVerdict(
            cache_key=key, query_id=pair.query_id, doc_id=pair.doc_id, verdict=self.task.stored(reply.verdict),
            judge=self.judge.name, provider=self.judge.provider, model=self.judge.model, settings=self.settings,
            schema_version=self.task.schema_version, rubric=self.task.rubric_name,
            rubric_version=self.task.rubric_version,
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
            cached_input_tokens=reply.cached_input_tokens, cost_usd=cost,
            latency_s=round(time.monotonic() - started, 4), attempts=attempts, created_at=now_iso(),
            served_model=reply.served_model, system_fingerprint=reply.system_fingerprint,
            grade_probs=reply.grade_probs,
        )
        self.without_probs += self.options.grade_probs and self.task.reply is None and reply.grade_probs is None
        await self.saves.submit(record)  # on disk before anything else: a crash from here on loses nothing
        row = record.model_dump()
        self.label(positions[0], row, False)
        self.stats.new += 1
        if len(positions) > 1:  # identical pairs elsewhere in the input: paid once, served from this verdict
            self.from_cache(row, positions[1:])

    async def worker(self, leased: bool) -> None:
        try:
            while self.queue:
                item = self.queue.popleft()
                if len(self.queue) < self.options.concurrency:
                    self.hungry.set()
                try:
                    await self.process(item, leased)
                finally:
                    if not any(item is waiting for waiting in self.waiting):  # a waiting item is still open
                        self.inflight.pop(item[0], None)
                self.done.flush()
        finally:
            self.hungry.set()

    async def feed(self) -> None:
        """Plan a chunk, keep up to --concurrency workers sending its misses, and plan the next chunk only
        once the queue runs short: memory follows the concurrency, not the number of pairs."""
        workers: list[asyncio.Task] = []
        try:
            for todo in self.plan_chunks():
                if todo and self.options.max_cost is not None and self.price is None:
                    raise ConfigError(f"--max-cost needs a price for {self.judge.name}; add the model to a "
                                      "--prices file")
                self.queue.extend(todo)
                self.done.flush()
                while len(self.queue) >= self.options.concurrency:
                    workers = self.top_up(workers)
                    self.hungry.clear()
                    await self.hungry.wait()
                workers = self.top_up(workers)
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()

    def top_up(self, workers: list[asyncio.Task]) -> list[asyncio.Task]:
        """The workers still running (a finished one's error is raised here), plus new ones for the queue."""
        for task in workers:
            if task.done():
                task.result()
        alive = [task for task in workers if not task.done()]
        while self.queue and len(alive) < self.options.concurrency:
            alive.append(asyncio.create_task(self.worker(False)))
        return alive

    async def drain(self, leased: bool = False) -> None:
        workers = min(self.options.concurrency, len(self.queue))
        await asyncio.gather(*(self.worker(leased) for _ in range(workers)))

    async def wait_for_others(self) -> None:
        """Pairs leased by another process: take its verdict when it lands, or grade them if it gave up."""
        while self.waiting:
            await asyncio.sleep(POLL_SECONDS)
            found = self.cache.get_many([key for key, _ in self.waiting])
            pending = [item for item in self.waiting if item[0] not in found]
            for key, positions in self.waiting:
                if key in found:
                    self.from_cache(found[key], positions)
            if self.stop_reason:
                for item in pending:
                    self.skip(item)
                pending = []
            claimed = self.cache.claim([key for key, _ in pending], self.owner) if pending else []
            still: list[Item] = []
            for item, status in zip(pending, claimed):
                if status == MINE:
                    self.queue.append(item)
                elif status == DONE:
                    self.from_cache(self.cache.get(item[0]), item[1])
                elif status == IN_BATCH:
                    self.in_batch(item)
                else:
                    still.append(item)
            self.waiting = still
            self.tick()
            await self.drain(leased=True)

    async def renew_leases(self) -> None:
        while True:
            await asyncio.sleep(LEASE_TTL / 3)
            if self.held:
                self.cache.renew(list(self.held), self.owner)
