"""How a run grades each pair beyond one plain request, and where --grade-probs takes its distribution from.

- `--grade-probs` asks the judge for token log-probabilities (Judge.ask_grade_probs; judges.grade_probs). Each
  label then carries the grade's distribution with `grade_probs_source: "logprobs"`.
- A judge that gives none (Anthropic, a forced tool call, OpenAI's reasoning models) falls back to samples, and
  the run says so once in its warnings: each pair is asked FALLBACK_SAMPLES times (5; `--samples N` with N > 1
  asks N; `--samples auto:N` samples adaptively, at most N: a pair without a distribution gets a second sample
  and more while its samples disagree), and its distribution is the shares of its sample grades
  (`grade_probs_source: "samples"`; its expected grade and entropy as for log-probabilities). Five samples give
  shares in steps of 0.2: coarser than log-probabilities, and paid five times.
- A judge that cannot sample (temperature 0: every sample would give the same grade) cannot fall back: the run
  says so and its labels carry no distribution (give --temperature above 0).
- A server that takes `logprobs` and sends none back (for every reply, or for some) is only known from its
  replies. A pair asked once whose reply carried none falls back to samples on its own (labelling.probs_fallback:
  FALLBACK_SAMPLES in all, keyed as --samples 5 keys them, `grade_probs_source: "samples"`; with --batch through
  one follow-up batch); the run says once how many pairs did. A pair sampled more than once (--samples N, or --samples auto, which gives a pair without a
  distribution a second sample) takes the shares of its samples. At temperature 0 a pair cannot fall back: it
  carries none, and the run says so (adaptive.no_probs_note).
- Every label of a run that is not one plain request per pair names how it was graded in `grading`
  (grading_label): "grade-probs logprobs top 10", "grade-probs from samples; samples", "samples auto". It is part
  of the label set's identity (io.gold.label_identities, the pipelines' judge drift): a figure from a
  log-probability run is not silently compared with one from a sampling run. The number of samples and their
  aggregate are in the row's own columns and not in `grading`: more samples estimate the same judge's grade
  better, and a changed N would otherwise make every figure incomparable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labeller.judges.base import Judge
from labeller.judges.grade_probs import prob_columns, sample_distribution
from labeller.labelling.models import LabelOptions, LabelRun
from labeller.labelling.samples import sampling_temperature
from labeller.records import Label

FALLBACK_SAMPLES = 5  # samples a pair where --grade-probs gets no log-probabilities and --samples names no N
NOTE = "--grade-probs: "


def grading_label(options: LabelOptions, source: str | None) -> str | None:
    """The run's grading policy as the `grading` column names it; None for one plain request per pair."""
    parts = []
    if source == "logprobs":
        parts.append(f"grade-probs logprobs top {options.top_logprobs}")
    elif source == "samples":
        parts.append("grade-probs from samples")
    if options.adaptive:
        parts.append("samples auto")
    elif options.samples > 1:
        parts.append("samples")
    return "; ".join(parts) or None


@dataclass(frozen=True)
class Grading:
    """A run's grading plan: the options it runs with, what it says once, and what each label row gains."""

    options: LabelOptions
    notes: list[str]
    source: str | None = None  # where grade_probs come from: "logprobs", "samples" or None (not asked or not given)

    @property
    def label(self) -> str | None:
        return grading_label(self.options, self.source)

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A label row (Label.model_dump()'s shape) with its distribution from samples and its grading."""
        grades = row.get("sample_grades")
        # a pair whose replies carried no log-probabilities (a server that ignores `logprobs`) but that was
        # sampled more than once takes its samples' shares too
        missing = self.source == "logprobs" and not row.get("grade_probs") and len(grades or []) > 1
        if grades and (self.source == "samples" or missing):
            row.update(prob_columns(sample_distribution(grades), "samples"))
        if self.label:
            row["grading"] = self.label
        return row

    def sink(self, sink: Callable[[list[Any]], None] | None) -> Callable[[list[Any]], None] | None:
        if sink is None or self.label is None:
            return sink
        return lambda rows: sink([self.row(r) if isinstance(r, dict) else r for r in rows])

    def finish(self, run: LabelRun) -> LabelRun:
        if self.label is None:
            return run
        run.labels = [Label.model_validate(self.row(label.model_dump())) for label in run.labels]
        return run


def falls_back(grading: Grading, judge: Judge) -> bool:
    """Whether a pair whose reply carries no log-probabilities falls back to samples on its own
    (labelling.probs_fallback): log-probabilities asked, one request a pair, a judge that samples."""
    options = grading.options
    return (grading.source == "logprobs" and options.samples == 1 and not options.adaptive
            and sampling_temperature(judge) > 0)


def plan_grading(judge: Judge, options: LabelOptions) -> Grading:
    """Ask the judge for log-probabilities when --grade-probs is given; where it gives none, fall back to samples
    (the module docstring). Call once per run, before any request is built: the settings join the cache key."""
    if not options.grade_probs:
        return Grading(options, [])
    reason = judge.ask_grade_probs(options.top_logprobs)
    if reason is None:
        return Grading(options, [], "logprobs")
    plain = options.model_copy(update={"grade_probs": False})
    if sampling_temperature(judge) <= 0:
        return Grading(plain, [f"{NOTE}{reason}, and at temperature 0 every sample would give the same grade, so "
                               "the labels carry no grade probabilities (give --temperature above 0 to take them "
                               "from samples)"])
    n = options.samples if options.samples > 1 or options.adaptive else FALLBACK_SAMPLES
    sampled = plain.model_copy(update={"samples": n})
    how = (f"up to {n} samples a pair (--samples auto: more only while they disagree)" if options.adaptive
           else f"{n} samples a pair")
    return Grading(sampled, [f"{NOTE}{reason}, so the run falls back to samples: each pair's distribution is the "
                             f"shares of its grades over {how} (grade_probs_source: samples)"], "samples")
