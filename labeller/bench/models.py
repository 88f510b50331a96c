"""The records `labeller judge-bench` produces: one row of figures per judge, and the run around them."""

from __future__ import annotations

from labeller.agreement.bootstrap import Interval
from labeller.records import Record

FORMAT = "labeller-judge-bench/1"


class Figure(Record):
    """A point estimate with its query-resampled interval (None: undefined, e.g. one grade on a side)."""

    value: float | None
    ci: Interval


class Cost(Record):
    """What 1,000 pairs cost, from the tokens the verdicts recorded (cached ones included: what they cost
    when they were bought). None: no recorded tokens, no price for the model, or no batch price."""

    pairs_with_tokens: int
    input_tokens_per_1k: float | None
    output_tokens_per_1k: float | None
    usd_per_1k: float | None
    usd_per_1k_batch: float | None
    priced: bool  # the price table knows this model


class Speed(Record):
    """Throughput of this run's new requests; `cached` when every pair came from the cache."""

    new: int
    cached: int
    failed: int
    requests: int
    elapsed_s: float
    pairs_per_second: float | None  # new pairs per second of labelling wall time; None when nothing was new

    @property
    def all_cached(self) -> bool:
        return self.new == 0


class Ranking(Record):
    """System ordering under gold and under the judge's labels (Kendall tau-b, labeller.evaluation)."""

    metric: str
    kendall_tau: float | None
    spearman_rho: float | None
    gold: dict[str, float | None]  # run -> mean metric under the gold grades
    judge: dict[str, float | None]  # run -> mean metric under the judge's grades


class JudgeScore(Record):
    judge: str
    rubric: str
    rubric_version: str
    n: int  # pairs compared with gold
    queries: int
    kappa: Figure
    kappa_quadratic: Figure
    alpha_ordinal: Figure
    kappa_relevant: Figure  # binarized at relevant_from on both sides
    exact_agreement: Figure
    above_gold_scale: int = 0  # judge grades above the gold scale's top (compared as they are unless --clip-to-gold)
    clipped: int = 0  # of those, the ones moved to the top of the gold scale (--clip-to-gold)
    ranking: Ranking | None = None
    speed: Speed
    cost: Cost
    labels: str | None = None  # where this judge's labels were written (--labels-dir)


class BenchResult(Record):
    format: str = FORMAT
    gold: str
    pairs: int
    queries: int
    gold_scale: tuple[int, int]  # on labeller's scale, e.g. (1, 4) for 0-3 qrels
    relevant_from: int
    confidence: float
    resamples: int
    seed: int
    runs: list[str] = []
    metric: str | None = None
    judges: list[JudgeScore]
    warnings: list[str] = []
