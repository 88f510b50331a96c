"""The labelling engine: pairs → cache lookups → bounded concurrent judge calls → labels.

The flow of one run (label_job, then label_pairs):

1. Load and validate every input (rubric, prices, judge name and key, queries, corpus, pairs or
   the top K of a run) before anything is sent; bad input raises BadInputError and writes nothing.
2. Refuse rubric fields no row has, and pairs with different data that all render to one prompt.
   Then plan the pairs a chunk at a time (engine.PLAN_CHUNK): render each pair's prompt (data escaped
   so it cannot close its block), compute its cache key and look the chunk's keys up in one store
   round trip per few thousand. Pairs whose key is in the cache are answered from it (from_cache=True,
   original created_at); identical pairs share one request, across chunks too. The next chunk is
   planned only when the queue of pairs to send runs short, so memory follows --concurrency; what
   grows with the slice (the inputs' indexes, the pairs' ids) is in temporary files (io.spill).
   With --samples N each pair is N work items, sample k with its own cache key (labelling.samples),
   collapsed back into one label per pair at the end (such a run keeps its labels until then).
3. A dry run stops here: it counts new and cached pairs and estimates tokens and cost, a chunk at a time
   (labelling.estimate: the shared rubric prefix at the cached-input rate when the provider caches it);
   from the command line it keeps no row.
4. `concurrency` workers (labelling.sending) take the remaining keys in input order. For each: take a lease in the
   cache (so another process labelling into the same cache never pays for it too; a pair leased
   elsewhere is waited for and read from the cache; leases are claimed --concurrency queued keys
   at a time, ahead of the workers, so none waits for a transaction before sending), then call the
   judge under the retry policy
   (labeller.retry). Every attempt, retries included, is metered (labelling.budget): it is sent only
   if spent + possibly billed + in flight + its own worst case stays within --max-cost, and one the
   provider may bill without reporting usage (a timeout, a drop after sending) counts at its worst
   case. A circuit breaker shared by all pairs stops the run when attempts in a row cannot connect.
   A verdict is written to the cache the moment it arrives (the verdicts of one event-loop pass in
   one transaction: batch.LoopBatcher); its worker waits that one pass, until it is committed.
5. Every pair ends as a Label or a LabelFailure (judge gave up, or never sent because the budget
   or a fatal judge error stopped the run). Once every pair of the oldest open chunk has settled,
   its label rows (labelling.rows) go to the output's temporary file, in input order; the file is
   moved into place at the end (atomically: no half-written output; a Parquet file is written then, a
   row group at a time, its columns gathered on disk: io.parquet_rows, io.parquet_columns). Failures
   (on disk past the first few thousand: labelling.failure_log) go to `<out stem>.failures.jsonl`. Then label_job raises if anything was not
   labelled.
"""

from labeller.labelling.engine import label_pairs
from labeller.labelling.job import failures_path_for, label_job, load_pairs
from labeller.labelling.models import Judging, LabelInputs, LabelOptions, LabelRun, LabelStats

__all__ = ["Judging", "LabelInputs", "LabelOptions", "LabelRun", "LabelStats", "failures_path_for", "label_job", "label_pairs", "load_pairs"]
