"""The options a labelling run takes and the record of what it did."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.distributed.options import RayOptions
from labeller.io.memory import Input
from labeller.labelling.failure_log import FailureLog
from labeller.records import Label, LabelFailure
from labeller.retry import RetryPolicy


class LabelOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    concurrency: int = Field(default=16, ge=1)
    max_cost: float | None = Field(default=None, ge=0)  # USD; stop sending before the estimate passes it
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)
    dry_run: bool = False
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    progress: bool | None = None  # None: show a bar only when stderr is a terminal
    # --batch: send the pairs through the provider's batch API (labeller.labelling.batched)
    batch: bool = False
    poll_interval: float = Field(default=30.0, gt=0)  # seconds between polls of a batch in flight
    batch_max_requests: int | None = Field(default=None, ge=1)  # None: the provider's limit
    batch_max_bytes: int | None = Field(default=None, ge=1024)
    # --samples N: N verdicts per pair, collapsed by `aggregate` (labeller.labelling.samples)
    # (checked with a clear message by labelling.samples.check_sampling, not here)
    samples: int = 1
    aggregate: str = "median"
    # --samples auto:N: `samples` is the maximum N; more samples only where the first disagree or the grade's
    # distribution is spread (labeller.labelling.adaptive)
    adaptive: bool = False
    # --grade-probs: ask an OpenAI-compatible judge for token log-probabilities (top_logprobs alternatives per
    # token) and read the grade's distribution from them (labeller.judges.grade_probs)
    grade_probs: bool = False
    top_logprobs: int = Field(default=10, ge=1, le=20)
    # --ray [ADDRESS]: blocks of pairs judged by the workers of a Ray cluster into the store (labeller.distributed)
    ray: RayOptions | None = None


class LabelInputs(BaseModel):
    """What a labelling job reads and writes, and how it reaches its judge: one object from the command line, the
    Python API, the pipelines and the benchmarks to every job (one judge, a jury, an escalation, batch files).
    An input is a path or, from Python, a frame in memory (labeller.io.memory)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    queries: Input
    corpus: Input
    pairs: Input | None = None  # exactly one of pairs and run
    run: Input | None = None
    depth: int | None = None  # with run: its top K per query
    rubric: str | Path | None = "general"  # a shipped rubric's name or a file
    cache: str | Path | None = None  # a store directory or URL; None: $LABELLER_CACHE or .labeller-cache
    out: Path | None = Path("labels.jsonl")  # None: no file; the labels and failures are only returned
    base_url: str | None = None
    prices: Path | None = None
    timeout: float = 60.0
    temperature: float | None = None
    output_mode: str | None = None
    options: LabelOptions = Field(default_factory=LabelOptions)


class Judging(BaseModel):
    """Who grades: one judge, a jury (several judges), or an escalation (`escalate_to` grades again the pairs the
    first judge's label selects: below, near_cut, above; labelling.escalation), and the gold a jury or an
    escalation reports its agreement with."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    judges: list[str]
    escalate_to: str | None = None
    below: float | None = None  # escalate a label whose sample agreement is below this
    near_cut: bool = True  # ... whose grade is next to the relevance cut
    above: float | None = None  # ... whose grade entropy (bits) is above this
    relevant_from: int = 3
    gold: Input | None = None
    gold_scale: str | None = None


class BatchSummary(BaseModel):
    """What a --batch run did with provider batches."""

    model_config = ConfigDict(extra="forbid")
    submitted: int = 0  # batches this run created
    resumed: int = 0  # batches an earlier (killed) run created, polled to the end by this one
    completed: int = 0  # batches whose results were read into the store
    requests: int = 0  # requests this run put into batches
    polls: int = 0


class LabelStats(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # With --samples N > 1 the counts below count verdicts (pair x sample), N per pair.
    samples: int = 1
    requested: int = 0  # pairs asked for
    new: int = 0  # pairs graded by a request in this run (in a dry run: pairs that would be sent)
    cached: int = 0  # pairs answered from the cache, incl. ones another process graded meanwhile
    failed: int = 0  # pairs the judge could not grade within the retry policy
    skipped: int = 0  # pairs never sent because the run stopped (budget or a fatal judge error)
    skipped_by_budget: int = 0
    requests: int = 0  # attempts made, retries included (one that could not connect counts too)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float | None = 0.0  # None when the model has no known price
    # Attempts the provider may have billed without reporting usage (timeouts, drops after sending, 5xx),
    # each at its worst case; counted against --max-cost, reported beside cost_usd.
    unconfirmed_attempts: int = 0
    unconfirmed_cost_usd: float | None = 0.0
    elapsed_s: float = 0.0
    budget_stopped: bool = False
    stopped_by: str | None = None  # the fatal judge error that stopped the run
    dry_run: bool = False
    estimated_input_tokens: int | None = None  # dry runs: for the pairs that would be sent
    estimated_output_tokens: int | None = None
    estimated_cost_usd: float | None = None
    estimated_cached_input_tokens: int | None = None  # of the input tokens, those priced at the cached rate
    estimate_notes: list[str] = Field(default_factory=list)  # how the estimate was made, assumptions included
    batch: BatchSummary | None = None  # --batch runs only
    warnings: list[str] = Field(default_factory=list)  # inputs skipped (a run's unknown queries), said on stderr
    # --samples auto:N (labelling.adaptive): pairs by the number of samples asked, {"1": pairs, "2": ...}
    sample_counts: dict[str, int] | None = None


class LabelRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labels: list[Label] = Field(default_factory=list)  # in input pair order
    # in input pair order; a run's own FailureLog (on disk past a few thousand) is kept as it is
    failures: list[LabelFailure] | FailureLog = Field(default_factory=list)
    stats: LabelStats = Field(default_factory=LabelStats)
    out_path: str | None = None
    failures_path: str | None = None
