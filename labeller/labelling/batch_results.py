"""The --batch entry points over a BatchRun (labelling.batched): relevance pairs (label_pairs_batched), any
other task (judge_task_batched), and polling a killed --batch run's open batches before a run without
--batch (finish_open_batches, finish_open_task_batches). A BatchRun resolves keys; here each position of
the task becomes its record or failure, the run's stats are counted, and samples are collapsed. batch_round is the
batch API as a round transport: --grade-probs' per-pair fallback (labelling.probs_fallback) runs over it, so the
pairs whose lines carry no log-probabilities get one follow-up batch of samples.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from labeller.batch import CLIENTS
from labeller.errors import BadInputError
from labeller.judges.base import Judge
from labeller.judges.grade_probs import prob_columns
from labeller.labelling.adaptive import Transport, no_probs_note
from labeller.labelling.batched import BatchRun
from labeller.labelling.grading import FALLBACK_SAMPLES, falls_back, plan_grading
from labeller.labelling.models import BatchSummary, LabelOptions, LabelRun, LabelStats
from labeller.labelling.probs_fallback import label_with_fallback
from labeller.labelling.samples import collapse, expand
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Label, LabelFailure, Pair, Query
from labeller.rubric import Rubric
from labeller.store.base import CachedVerdict, VerdictStore
from labeller.tasks.base import Task
from labeller.tasks.relevance import RelevanceTask

Settled = tuple[CachedVerdict | LabelFailure | None, bool]  # (what answers a position, whether from the store)


def settle(run: BatchRun) -> list[Settled]:
    """Each position's record or failure, and the run's counts: new, cached, failed, skipped, tokens, cost."""
    out: list[Settled] = []
    stats = run.stats
    key_of = [""] * len(run.pairs)
    for key, positions in run.by_key.items():
        for i in positions:
            key_of[i] = key
    for i, pair in enumerate(run.pairs):
        key = key_of[i]
        bought = run.done.get(key)
        rec = run.cached.get(key) if bought is None else bought
        if isinstance(rec, CachedVerdict):
            first = bought is not None and run.by_key[key][0] == i
            out.append((rec, not first))
            stats.new += first
            stats.cached += not first
        elif isinstance(rec, LabelFailure):
            out.append((rec.model_copy(update=dict(query_id=pair.query_id, doc_id=pair.doc_id)), False))
            if rec.reason.startswith("not sent:"):
                stats.skipped += 1
                stats.skipped_by_budget += stats.budget_stopped and "--max-cost" in rec.reason
            else:
                stats.failed += 1
        else:
            out.append((None, False))
    bought_verdicts = [v for v in run.done.values() if isinstance(v, CachedVerdict)]
    for rec in bought_verdicts:
        stats.input_tokens += rec.input_tokens or 0
        stats.output_tokens += rec.output_tokens or 0
        stats.cached_input_tokens += rec.cached_input_tokens or 0
    for tokens_in, tokens_out, _ in run.tokens.values():
        stats.input_tokens += tokens_in
        stats.output_tokens += tokens_out
    costs = [rec.cost_usd for rec in bought_verdicts] + list(run.spent.values())
    stats.cost_usd = None if run.price is None and costs else round(sum(c or 0.0 for c in costs), 6)
    return out


def _label(pair: Pair, rec: CachedVerdict, from_cache: bool) -> Label:
    probs = prob_columns(rec.grade_probs) if rec.grade_probs else {}  # --grade-probs: read from the batch's line
    return Label(**probs, query_id=pair.query_id, doc_id=pair.doc_id, grade=rec.verdict.grade,
                 justification=rec.verdict.justification, judge=rec.judge, provider=rec.provider, model=rec.model,
                 rubric=rec.rubric, rubric_version=rec.rubric_version, cache_key=rec.cache_key,
                 input_tokens=rec.input_tokens, output_tokens=rec.output_tokens,
                 cached_input_tokens=rec.cached_input_tokens, cost_usd=rec.cost_usd, latency_s=rec.latency_s,
                 created_at=rec.created_at, from_cache=from_cache, served_model=rec.served_model,
                 system_fingerprint=rec.system_fingerprint)


def _check_pairs(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc]) -> None:
    for pair in pairs:
        if pair.query_id not in queries or pair.doc_id not in corpus:
            missing = "query" if pair.query_id not in queries else "document"
            raise BadInputError(f"pair ({pair.query_id}, {pair.doc_id}) names an unknown {missing}")


def relevance_run(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                  rubric: Rubric, store: VerdictStore, options: LabelOptions, prices: PriceTable,
                  sample_of=lambda position: 0) -> BatchRun:
    """The BatchRun of relevance pairs (already expanded by --samples: sample_of says which sample each is)."""
    _check_pairs(pairs, queries, corpus)
    return BatchRun(RelevanceTask(pairs, queries, corpus, rubric, sample_of), judge, store, options, prices)


async def label_pairs_batched(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                              rubric: Rubric, store: VerdictStore, options: LabelOptions | None = None, *,
                              prices: PriceTable | None = None) -> LabelRun:
    """Label every pair through the provider's batch API: from the store when it can.

    Every pair ends as a Label or a LabelFailure, in input order. Does not close the judge.
    """
    options = options or LabelOptions(batch=True)
    started = time.monotonic()
    grading = plan_grading(judge, options)  # --grade-probs: logprobs in each line's body, or samples (Anthropic)
    options = grading.options
    if falls_back(grading, judge):  # a pair whose line carries no log-probabilities: a follow-up batch of samples
        _check_pairs(pairs, queries, corpus)
        return grading.finish(await label_with_fallback(
            pairs, queries, corpus, judge, rubric, store, options, grading.notes, prices=prices,
            transport=batch_round(judge, store, prices or load_prices())))
    work = expand(pairs, options.samples)  # --samples N: N requests per pair in the batches, one key each
    run = relevance_run(work.items, queries, corpus, judge, rubric, store, options, prices or load_prices(),
                        work.sample_of)
    await run.run()
    run.stats.warnings[:0] = grading.notes
    if options.dry_run:
        run.stats.samples = work.n
        return LabelRun(stats=run.stats)
    settled = settle(run)
    results = [rec if not isinstance(rec, CachedVerdict) else _label(pair, rec, from_cache)
               for pair, (rec, from_cache) in zip(run.pairs, settled)]
    run.stats.samples = work.n
    missing = sum(isinstance(v, CachedVerdict) and v.grade_probs is None for v in run.done.values())
    if grading.source == "logprobs" and missing:  # a server that takes `logprobs` and sends none back
        run.stats.warnings.append(no_probs_note(missing, run.stats.new, options))
    collapsed = collapse(work, results, options.aggregate)
    run.stats.elapsed_s = round(time.monotonic() - started, 3)
    return grading.finish(LabelRun(labels=[r for r in collapsed if isinstance(r, Label)],
                                   failures=[r for r in collapsed if isinstance(r, LabelFailure)], stats=run.stats))


async def judge_task_batched(work: Task, judge: Judge, store: VerdictStore, options: LabelOptions,
                             prices: PriceTable) -> tuple[list[Any], LabelStats]:
    """Every position of the task (samples already expanded) as its row (task.row) or LabelFailure, through the
    provider's batch API; the caller collapses samples. Does not close the judge."""
    work.check_inputs()
    run = BatchRun(work, judge, store, options, prices)
    await run.run()
    if options.dry_run:
        return [], run.stats
    rows = [work.row(pair.query_id, pair.doc_id, rec.model_dump(), cached) if isinstance(rec, CachedVerdict) else rec
            for pair, (rec, cached) in zip(run.pairs, settle(run))]
    return rows, run.stats


def batch_round(judge: Judge, store: VerdictStore, prices: PriceTable) -> Transport:
    """The batch API as a round transport (adaptive.sample_in_rounds): each round is a BatchRun of its own, so a
    killed run's rerun polls the round's open batch instead of paying for it again."""
    async def run_round(task: Task, options: LabelOptions) -> tuple[list[Any], LabelStats]:
        return await judge_task_batched(task, judge, store, options, prices)
    return run_round


async def finish_open_task_batches(task: Task, judge: Judge, store: VerdictStore, options: LabelOptions,
                                   prices: PriceTable) -> BatchSummary | None:
    """Before a run without --batch: poll to the end the open batches that cover its items (a --batch run killed
    while polling), so their items come from those batches instead of being paid again. None when no open batch
    of this provider is recorded."""
    if judge.provider not in CLIENTS or not store.open_batches(judge.provider):
        return None
    return await _collect_open(BatchRun(task, judge, store, options, prices))


async def finish_open_batches(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                              rubric: Rubric, store: VerdictStore, options: LabelOptions, *,
                              prices: PriceTable | None = None) -> BatchSummary | None:
    """finish_open_task_batches for relevance pairs."""
    if judge.provider not in CLIENTS or not store.open_batches(judge.provider):
        return None
    grading = plan_grading(judge, options)  # the keys the run will ask for (--grade-probs' settings in them)
    options = grading.options
    # a --batch run's follow-up batch of samples for the pairs without log-probabilities is collected too
    work = expand(pairs, FALLBACK_SAMPLES if falls_back(grading, judge) else options.samples)
    return await _collect_open(relevance_run(work.items, queries, corpus, judge, rubric, store, options,
                                             prices or load_prices(), work.sample_of))


async def _collect_open(run: BatchRun) -> BatchSummary:
    await run.run(submit=False)
    return run.summary
