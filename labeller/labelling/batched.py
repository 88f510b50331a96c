"""BatchRun: the --batch path of any task (labeller.tasks). Store lookups, then provider batches for what is missing.

The task gives each item's prompt (render, carrying its reply spec), its cache key (keys: the very keys the
synchronous engine computes, through cache_key.judge_fields) and what the store keeps of a reply (stored);
the entry points and the results by position are in labelling.batch_results. The flow of one run:

1. Render every item and compute its cache key exactly as the synchronous path does (same prompt,
   settings and key), so a verdict is interchangeable whichever way it was bought. Items in the
   store are answered from it.
2. Open batches recorded in the store that cover pending keys (a run killed while polling, or
   another process's batch) are polled to the end instead of being submitted again.
3. The other pending keys are claimed (store leases): keys another process holds are waited for.
   Claimed keys are split into batches within the provider's limits; each batch is created, then
   its id and keys are persisted in the store (put_batch) before its leases are released, so from
   then on its keys are BUSY to everyone until the batch is finished.
4. Every batch is polled each --poll-interval seconds; when it has ended its results are read
   into the store as they arrive (a verdict per success, a counted failure per error, malformed
   or out-of-range reply, expired or cancelled request), and the batch is marked finished. A
   rerun resubmits only the keys that ended without a verdict.

The one window not covered: a process killed after the provider created a batch and before
put_batch returned (milliseconds) leaves a batch the store does not know; its keys are sent again.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from labeller.batch import BatchClient, BatchLimits, Outcome, batch_client, split
from labeller.batch.base import DAMAGED
from labeller.errors import ConfigError, JudgeError, redact
from labeller.judges.base import Judge, RejectedRequestError, TransientError
from labeller.labelling.models import BatchSummary, LabelOptions, LabelStats
from labeller.prices import EXPECTED_OUTPUT_TOKENS, PriceTable, estimate_tokens
from labeller.records import LabelFailure
from labeller.retry import call_with_retry
from labeller.rubric import JudgePrompt
from labeller.store.base import (DONE, IN_BATCH, LOOKUP_CHUNK, MINE, BatchRecord, CachedVerdict, VerdictStore,
                                 new_owner, now_iso)
from labeller.tasks.base import Task

WRITE_CHUNK = 500  # results per store transaction while a batch is read
MAX_POLL_FAILURES = 10  # consecutive failed polls before the run stops (its batches stay recorded)


def _secrets() -> list[str | None]:
    import os

    return [v for k, v in os.environ.items() if k.endswith("_API_KEY")]


class BatchRun:
    """One --batch run of a task (labeller.tasks): its items' keys planned, missing ones sent in provider
    batches, results read into the store. Results by position: labelling.batch_results."""

    def __init__(self, task: Task, judge: Judge, store: VerdictStore, options: LabelOptions,
                 prices: PriceTable) -> None:
        self.task, self.pairs = task, task.items  # an item is a Pair: (query_id, item id)
        self.judge, self.store, self.options, self.prices = judge, store, options, prices
        limits = None
        if options.batch_max_requests or options.batch_max_bytes:
            base = batch_client(judge).limits
            limits = BatchLimits(max_requests=options.batch_max_requests or base.max_requests,
                                 max_bytes=options.batch_max_bytes or base.max_bytes)
        self.client: BatchClient = batch_client(judge, limits)
        self.settings = task.settings(judge)
        self.served: str | None = None  # judge.served_identity(), asked before plan(): part of every key
        self.price = prices.lookup(judge.provider, judge.model)
        self.owner = new_owner()
        self.by_key: dict[str, list[int]] = {}
        self.done: dict[str, CachedVerdict | LabelFailure] = {}  # keys resolved by batches in this run
        self.cached: dict[str, CachedVerdict] = {}  # keys answered from the store
        self.spent: dict[str, float | None] = {}  # what a failed request still cost (a malformed reply is paid)
        self.tokens: dict[str, tuple[int, int, int]] = {}
        self.polling: dict[str, BatchRecord] = {}
        self.summary = BatchSummary()
        self.stats = LabelStats(requested=len(self.pairs), dry_run=options.dry_run, batch=self.summary)
        self.reserved = 0.0  # estimated batch cost of what this run submitted
        self.last_line = ""

    # -- planning -------------------------------------------------------------------------------
    def prompt(self, key: str) -> JudgePrompt:
        return self.task.render(self.by_key[key][0])

    def prompt_of(self, key: str) -> JudgePrompt | None:
        """The prompt a result is checked against: its own when this run holds the key; for a key of another
        process's batch, the task's reply spec without the prompt's context (relevance: None, the verdict)."""
        if key in self.by_key:
            return self.task.render(self.by_key[key][0])
        return None if self.task.reply is None else JudgePrompt(system="", user="", reply=self.task.reply)

    def plan(self) -> set[str]:
        """Every item's key (task.keys: the very keys the synchronous path computes); the keys the store lacks."""
        keys_of = self.task.keys(self.judge, self.settings, self.served)
        pending = set()
        for lo in range(0, len(self.pairs), LOOKUP_CHUNK):
            keys = keys_of(lo, min(lo + LOOKUP_CHUNK, len(self.pairs)))
            for i, key in enumerate(keys, start=lo):
                self.by_key.setdefault(key, []).append(i)
            found = self.store.get_many(list(dict.fromkeys(keys)))
            self.cached.update(found)
            pending.update(k for k in keys if k not in found)
        return pending

    def estimate(self, key: str) -> float:
        if self.price is None:
            return 0.0
        return self.price.cost(estimate_tokens(self.prompt(key)), EXPECTED_OUTPUT_TOKENS, batch=True) or 0.0

    # -- submitting -----------------------------------------------------------------------------
    def adopt(self, pending: set[str]) -> None:
        """Poll the open batches that cover pending keys, whoever submitted them."""
        for record in self.store.open_batches(self.client.provider):
            if record.batch_id not in self.polling and pending.intersection(record.keys):
                self.polling[record.batch_id] = record
                self.summary.resumed += 1

    def fail(self, key: str, reason: str, attempts: int = 1) -> None:
        pair = self.pairs[self.by_key[key][0]]
        failure = LabelFailure(query_id=pair.query_id, doc_id=pair.doc_id, judge=self.judge.name,
                               rubric=self.task.rubric_name, rubric_version=self.task.rubric_version, cache_key=key,
                               reason=redact(reason, _secrets()), attempts=attempts, created_at=now_iso())
        self.store.record_failure(failure)
        self.done[key] = failure

    def meta(self, keys: list[str]) -> dict[str, Any]:
        """What any process needs to store this batch's verdicts, even one run with other inputs."""
        pairs = {key: [self.pairs[self.by_key[key][0]].query_id, self.pairs[self.by_key[key][0]].doc_id]
                 for key in keys}
        meta = {"judge": self.judge.name, "model": self.judge.model, "settings": self.settings,
                "rubric": self.task.rubric_name, "rubric_version": self.task.rubric_version, "pairs": pairs}
        if self.task.reply is not None:  # another task's batch (relevance records stay as they always were)
            meta["task"] = self.task.name
        return meta

    def within_budget(self, keys: list[str]) -> list[str]:
        budget = self.options.max_cost
        if budget is None:
            return keys
        kept = []
        for key in keys:
            cost = self.estimate(key)
            if self.reserved + cost > budget:
                self.stats.budget_stopped = True
                break
            self.reserved += cost
            kept.append(key)
        return kept

    async def submit(self, keys: list[str]) -> None:
        """Send claimed keys in as many batches as the limits need; persist each before polling it."""
        sendable = self.within_budget(keys)
        skipped = keys[len(sendable):]
        for key in skipped:
            self.done[key] = self.not_sent(key, f"the --max-cost budget of ${self.options.max_cost:g} was reached")
        self.store.release(skipped, self.owner)
        groups, too_large = split(((key, self.client.entry(key, self.prompt(key))) for key in sendable),
                                  self.client.limits, self.client.size)
        for key, reason in too_large:
            self.fail(key, reason, attempts=0)
        for n, group in enumerate(groups):
            group_keys = [key for key, _ in group]
            try:
                batch_id = await call_with_retry(lambda: self.client.submit([e for _, e in group]), self.options.retry)
            except RejectedRequestError as exc:  # this batch's content was refused: its pairs fail, the run goes on
                for key in group_keys:
                    self.fail(key, exc.reason)
                continue
            except (JudgeError, TransientError) as exc:
                rest = [key for later in groups[n:] for key, _ in later]
                self.stop(rest, str(exc) if isinstance(exc, JudgeError) else f"{exc} (batch not created)")
                return
            record = self.store.put_batch(self.client.provider, batch_id, group_keys, self.meta(group_keys))
            self.store.release(group_keys, self.owner)  # the open batch now keeps them BUSY to everyone
            self.polling[batch_id] = record
            self.summary.submitted += 1
            self.summary.requests += len(group_keys)
            self.stats.requests += len(group_keys)
            later = [key for g in groups[n + 1:] for key, _ in g]
            if later:
                self.store.renew(later, self.owner)
            self.report()

    def stop(self, keys: list[str], reason: str) -> None:
        self.stats.stopped_by = self.stats.stopped_by or redact(reason, _secrets())
        self.store.release(keys, self.owner)
        for key in keys:
            self.done[key] = self.not_sent(key, f"the run stopped: {self.stats.stopped_by}")

    def not_sent(self, key: str, reason: str) -> LabelFailure:
        pair = self.pairs[self.by_key[key][0]]
        return LabelFailure(query_id=pair.query_id, doc_id=pair.doc_id, judge=self.judge.name,
                            rubric=self.task.rubric_name, rubric_version=self.task.rubric_version, cache_key=key,
                            reason=f"not sent: {reason}",
                            attempts=0, created_at=now_iso())

    # -- polling and results --------------------------------------------------------------------
    async def poll(self) -> None:
        failures = 0
        while self.polling and not self.stats.stopped_by:
            for batch_id, record in list(self.polling.items()):
                try:
                    status = await call_with_retry(lambda: self.client.status(batch_id), self.options.retry)
                    self.summary.polls += 1
                    if status.ended:
                        await call_with_retry(lambda: self.collect(record, status.status, status.reason),
                                              self.options.retry)
                        del self.polling[batch_id]
                    failures = 0
                except JudgeError as exc:  # e.g. a batch id the provider does not know (another account or URL)
                    self.stats.stopped_by = redact(f"batch {batch_id}: {exc}; it stays recorded in the store: rerun "
                                                   "with the key and --base-url it was sent with", _secrets())
                    return
                except TransientError as exc:
                    failures += 1
                    if failures >= MAX_POLL_FAILURES:
                        self.stats.stopped_by = f"{exc}; the batches stay recorded: rerun the command to resume them"
                        return
            self.report()
            if self.polling:
                await asyncio.sleep(self.options.poll_interval)

    async def collect(self, record: BatchRecord, status: str, reason: str | None) -> None:
        """Read an ended batch into the store, result by result; then mark it finished."""
        keys = set(record.keys)
        seen: set[str] = set()
        buffer: list[CachedVerdict] = []
        damaged = 0
        async for outcome in self.client.results(record.batch_id, self.prompt_of):
            damaged += outcome.reason == DAMAGED
            if outcome.custom_id not in keys or outcome.custom_id in seen:
                continue  # a line for another batch's request, or a duplicate line: never a second verdict
            seen.add(outcome.custom_id)
            if outcome.reply is not None:
                buffer.append(self.verdict(record, outcome))
                if len(buffer) >= WRITE_CHUNK:
                    self.save(buffer)
                    buffer = []
            else:
                self.failed(record, outcome)
        self.save(buffer)
        why = f"no result: the batch ended {status}" + (f" ({reason})" if reason else "")
        if damaged:  # the missing results are likely those lines: a rerun asks for these pairs again
            why += f"; {damaged} result line{'s were' if damaged > 1 else ' was'} damaged (not JSON)"
        for key in keys - seen:
            self.failed(record, Outcome(custom_id=key, reason=why))
        self.store.finish_batch(record.provider, record.batch_id, outcome=status)
        self.summary.completed += 1

    def verdict(self, record: BatchRecord, outcome: Outcome) -> CachedVerdict:
        reply, meta, key = outcome.reply, record.meta, outcome.custom_id
        assert reply is not None
        price = self.prices.lookup(record.provider, meta.get("model", self.judge.model))
        cost = None if price is None else price.cost(reply.input_tokens, reply.output_tokens,
                                                     reply.cached_input_tokens, batch=True)
        query_id, doc_id = meta.get("pairs", {}).get(key) or ["", ""]
        return CachedVerdict(cache_key=key, query_id=query_id, doc_id=doc_id, verdict=self.task.stored(reply.verdict),
                             judge=meta.get("judge", self.judge.name), provider=record.provider,
                             model=meta.get("model", self.judge.model), settings=meta.get("settings", self.settings),
                             schema_version=self.task.schema_version, rubric=meta.get("rubric", self.task.rubric_name),
                             rubric_version=meta.get("rubric_version", self.task.rubric_version),
                             input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                             cached_input_tokens=reply.cached_input_tokens, cost_usd=cost, attempts=1,
                             created_at=now_iso(), served_model=reply.served_model,
                             system_fingerprint=reply.system_fingerprint, grade_probs=reply.grade_probs)

    def save(self, records: list[CachedVerdict]) -> None:
        if records:
            self.store.put_many(records)  # in the store before the next result is read
            for rec in records:
                if rec.cache_key in self.by_key:
                    self.done[rec.cache_key] = rec

    def failed(self, record: BatchRecord, outcome: Outcome) -> None:
        key = outcome.custom_id
        if key in self.by_key:
            self.fail(key, outcome.reason or "no verdict")
            if outcome.input_tokens or outcome.output_tokens:  # a malformed reply was still paid for
                price = self.prices.lookup(record.provider, record.meta.get("model", self.judge.model))
                self.tokens[key] = (outcome.input_tokens, outcome.output_tokens, 0)
                self.spent[key] = None if price is None else price.cost(outcome.input_tokens, outcome.output_tokens,
                                                                        batch=True)
        else:
            pair = record.meta.get("pairs", {}).get(key) or ["", ""]
            self.store.record_failure(LabelFailure(
                query_id=pair[0], doc_id=pair[1], judge=record.meta.get("judge", ""), cache_key=key,
                rubric=record.meta.get("rubric", ""), rubric_version=record.meta.get("rubric_version", ""),
                reason=redact(outcome.reason or "no verdict", _secrets()), attempts=1, created_at=now_iso()))

    # -- the run --------------------------------------------------------------------------------
    async def run(self, submit: bool = True) -> None:
        """Label the pending pairs; with submit=False only poll the open batches that cover them."""
        self.served = await self.judge.served_identity()
        pending = self.plan()
        if self.options.dry_run:
            return self.dry_run(pending)
        if not submit:
            self.adopt(pending)
            return await self.poll()
        if self.options.max_cost is not None and self.price is None and pending:
            raise ConfigError(f"--max-cost needs a price for {self.judge.name}; add the model to a --prices file")
        try:
            while pending:
                self.adopt(pending)
                covered = {key for record in self.polling.values() for key in record.keys}
                to_claim = sorted(pending - covered, key=lambda k: self.by_key[k][0])  # input order
                claimed = dict(zip(to_claim, self.store.claim(to_claim, self.owner))) if to_claim else {}
                if any(s == DONE for s in claimed.values()):
                    self.cached.update(self.store.get_many([k for k, s in claimed.items() if s == DONE]))
                await self.submit([k for k in to_claim if claimed[k] == MINE])
                await self.poll()
                if self.stats.stopped_by:
                    for key in pending - set(self.done) - set(self.cached):
                        self.done.setdefault(key, self.not_sent(key, f"the run stopped: {self.stats.stopped_by}"))
                    break
                pending = {k for k in pending if k not in self.done and k not in self.cached}
                if any(claimed.get(k) == IN_BATCH for k in pending):
                    continue  # another process's batch appeared since adopt(): poll it at once
                if pending:  # leased by another process: wait for its verdicts or its batch
                    await asyncio.sleep(self.options.poll_interval)
        finally:
            self.store.release([k for k in self.by_key if k not in self.done and k not in self.cached], self.owner)
        self.report()

    def dry_run(self, pending: set[str]) -> None:
        self.stats.new = sum(len(self.by_key[k]) for k in pending)
        self.stats.cached = len(self.pairs) - self.stats.new
        self.stats.estimated_input_tokens = sum(estimate_tokens(self.prompt(k)) for k in pending)
        self.stats.estimated_output_tokens = EXPECTED_OUTPUT_TOKENS * len(pending)
        self.stats.estimated_cost_usd = None if self.price is None else round(sum(self.estimate(k) for k in pending), 6)

    def report(self) -> None:
        """One progress line on stderr whenever something changed: batches, pairs done, failures, cost."""
        if self.options.progress is False:
            return
        s = self.summary
        done = sum(1 for v in self.done.values() if isinstance(v, CachedVerdict))
        failed = sum(1 for v in self.done.values() if isinstance(v, LabelFailure))
        cost = sum(v.cost_usd or 0.0 for v in self.done.values() if isinstance(v, CachedVerdict))
        cost += sum(c or 0.0 for c in self.spent.values())
        line = (f"labeller: batch: {s.submitted} submitted, {s.resumed} resumed, {s.completed} completed; "
                f"{done + len(self.cached)}/{len(self.by_key)} pairs done, {failed} failed, ${cost:.4f} so far")
        if line != self.last_line:
            print(line, file=sys.stderr, flush=True)
            self.last_line = line
