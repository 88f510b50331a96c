"""--grade-probs against a server that takes `logprobs` but sends none back, for every reply or for some: each
pair whose reply carries no distribution falls back to samples on its own, as a whole run does when its judge
gives no log-probabilities (labelling.grading): it is asked FALLBACK_SAMPLES - 1 more times (keyed as
`--samples 5` keys them, so a rerun pays nothing), and its distribution is the shares of its sample grades
(`grade_probs_source: "samples"`). A pair whose reply did carry one keeps it, from one request. The run says once
how many pairs fell back. Only a judge that samples (temperature above 0) can fall back; at temperature 0 the
pairs carry none and the run says so (adaptive.no_probs_note).

The rounds are adaptive.sample_in_rounds' (rest_at_once), through any transport: round 0 asks every pair (its key
that of a run without samples), and round 1 samples 1..4 of the pairs whose first reply had no distribution, all at
once (the rule is settled by the first reply). Synchronously that is one more pass of requests; with --batch
(batch_results.batch_round) one follow-up batch, recorded in the store like any other, so a killed run's rerun
polls it instead of paying again, and --max-cost counts it (the budget left after round 0 is handed on). Like
--samples auto, the labels are returned whole rather than streamed (a pair's label is known after its last round).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from labeller.judges.base import Judge
from labeller.labelling.adaptive import NO_PROBS, NOTE, Transport, merge_rounds, sample_in_rounds, sync_round
from labeller.labelling.grading import FALLBACK_SAMPLES
from labeller.labelling.models import LabelOptions, LabelRun
from labeller.labelling.samples import collapse_pair
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Label, LabelFailure, Pair, Query
from labeller.rubric import Rubric
from labeller.store.base import VerdictStore


def lacks_probs(results: Sequence[Any]) -> bool:
    """A pair is asked again while its first reply (a Label) carried no distribution and no sample failed."""
    return all(isinstance(r, Label) for r in results) and results[0].grade_probs is None


def fallback_note(asked: list[list[Any]], samples: int) -> str | None:
    """The run's one note on the pairs that fell back (None when every reply carried a distribution)."""
    first = [chunk[0] for chunk in asked if chunk and isinstance(chunk[0], Label)]
    missing = [chunk for chunk in asked if chunk and isinstance(chunk[0], Label) and chunk[0].grade_probs is None]
    if not missing:
        return None
    short = sum(len(chunk) < samples for chunk in missing)
    stuck = (f"; {short} of them got fewer than {samples} samples (a sample failed, or the run stopped): their "
             "distribution is the shares of the samples that came back" if short else "")
    return (f"{NOTE}{len(missing)} of {len(first)} pairs {NO_PROBS}; each of those pairs was asked again, "
            f"{samples} samples in all (keyed as --samples {samples} keys them), and its distribution is the shares "
            f"of its sample grades (grade_probs_source: samples){stuck}")


async def label_with_fallback(pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], judge: Judge,
                              rubric: Rubric, cache: VerdictStore, options: LabelOptions, notes: list[str], *,
                              prices: PriceTable | None = None, transport: Transport | None = None) -> LabelRun:
    """One request per pair, and FALLBACK_SAMPLES for a pair whose reply carried no distribution; labels in pair
    order (labelling.engine.label_pairs hands a --grade-probs run with log-probabilities on to it, and
    batch_results.label_pairs_batched with its batch transport). Two rounds through `transport` (default: the
    synchronous engine): sample 0 of every pair, then samples 1..N-1 of the pairs without a distribution."""
    from labeller.tasks.relevance import RelevanceTask

    started = time.monotonic()
    if transport is None:
        transport = sync_round(judge, cache, (prices or load_prices()).lookup(judge.provider, judge.model))

    def part_for(items: list[int], samples: list[int]) -> RelevanceTask:
        return RelevanceTask([pairs[i] for i in items], queries, corpus, rubric, samples.__getitem__)

    sampled = options.model_copy(update={"samples": FALLBACK_SAMPLES})
    asked, rounds = await sample_in_rounds(len(pairs), part_for, transport, sampled, lacks_probs, rest_at_once=True)
    results: list[Label | LabelFailure] = []
    for chunk in asked:
        got = [s for s in chunk if s is not None]
        results.extend(got if len(chunk) == 1 else collapse_pair(got, len(chunk), options.aggregate))
    more = (f"--grade-probs: the first request of each pair is priced; a pair whose reply carries no "
            f"log-probabilities takes {FALLBACK_SAMPLES - 1} more (samples in its place)")
    stats = merge_rounds(rounds, sampled, notes, Counter(len(chunk) for chunk in asked), more)  # at most 5 a pair
    stats.warnings = [w for w in stats.warnings if not (w.startswith(NOTE) and NO_PROBS in w)]
    note = fallback_note(asked, FALLBACK_SAMPLES)
    stats.warnings += [note] if note else []
    stats.elapsed_s = round(time.monotonic() - started, 3)
    return LabelRun(labels=[r for r in results if isinstance(r, Label)],
                    failures=[r for r in results if isinstance(r, LabelFailure)], stats=stats)
