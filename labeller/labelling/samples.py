"""Self-consistency (`--samples N`): ask the judge N times per pair, then collapse the N verdicts into one label.

- Expanding: each pair becomes N work items (pair, sample k). Sample k is a cached verdict of its own:
  its cache key hashes k (labeller.cache_key; sample 0 keeps the key a run without --samples uses), so
  raising N from 3 to 5 pays only for samples 3 and 4, and a dry run prices only the samples not cached.
- Sampling needs a judge that samples: OpenAI-compatible judges at `--temperature` above 0; Anthropic
  judges always sample (the installed SDK sends no temperature, so the API's default of 1.0 applies);
  the offline judge is deterministic (every sample would be the same), so N > 1 is refused for it.
- Collapsing: the label's grade is the aggregate of the samples that succeeded:
  - median: the middle grade; with an even number of grades, the lower of the two middle ones;
  - majority: the most frequent grade; a tie between grades goes to the lower median of the tied
    grades (so [2, 2, 4, 4, 5] gives 2).
  Both tie rules round down, toward "not relevant": an uncertain pair is never lifted over the
  relevance cut by a tie. The label keeps the sample grades, their agreement (the share equal to the
  aggregate) and spread (max - min); its justification, cache key and created_at are those of the
  first sample whose grade is the aggregate; tokens, cost and latency are summed over the samples.
- Failed samples: a pair is labelled from the samples that succeeded (`samples` says how many were
  asked, `sample_grades` holds those that came back); every failed sample is a LabelFailure row of its
  own (its cache key, "sample k of N" in the reason), so the run reports it and a rerun retries only it.
  A pair with no successful sample has no label: never a grade made up from nothing.
- --batch: the expanded (pair, sample) items go into the provider batches like pairs do, each under its
  own cache key (which is also its batch custom_id), and are collapsed the same way (labelling.batch_results).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from labeller.errors import BadInputError
from labeller.judges.base import Judge
from labeller.records import Label, LabelFailure, Pair

AGGREGATES = ("median", "majority")
# Each sample is a paid request: N multiplies a run's cost by N. Self-consistency's gains flatten out well before
# this (most use 5-20; Wang et al. 2023 went to 40), so more is a typo (100000 for 10), refused before anything is sent.
MAX_SAMPLES = 50
ANTHROPIC_DEFAULT_TEMPERATURE = 1.0  # what Anthropic's API uses when a request names no temperature


def sampling_temperature(judge: Judge) -> float:
    """The temperature the judge's requests are sampled at (0: the same prompt gets the same answer)."""
    if judge.provider == "offline":
        return 0.0
    settings = judge.decoding_settings()
    if "temperature" in settings:
        return float(settings["temperature"])
    return ANTHROPIC_DEFAULT_TEMPERATURE if judge.provider == "anthropic" else 0.0


def check_sampling(judge: Judge, samples: int, aggregate: str, temperature: float | None = None) -> None:
    """Refuse, before anything is read or sent, sample settings that cannot give N different verdicts."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise BadInputError(f"--samples {samples} must be a whole number of at least 1 (1: one verdict per pair)",
                            field="samples")
    if samples > MAX_SAMPLES:
        raise BadInputError(f"--samples {samples} is over the maximum of {MAX_SAMPLES} (each sample is a paid request "
                            f"per pair: {samples} would multiply the cost by {samples})", field="samples")
    if aggregate not in AGGREGATES:
        raise BadInputError(f"--aggregate '{aggregate}' is unknown; expected one of {', '.join(AGGREGATES)}",
                            field="aggregate")
    if temperature is not None and not 0 <= temperature <= 2:
        raise BadInputError(f"--temperature {temperature} is out of range; expected a number from 0 to 2",
                            field="temperature")
    if temperature is not None and judge.provider != "openai":
        why = ("the installed anthropic SDK sends no temperature: Anthropic samples at its default of 1.0, "
               "so --samples works without --temperature") if judge.provider == "anthropic" else \
            f"{judge.name} is deterministic and takes no temperature"
        raise BadInputError(f"--temperature does not apply to {judge.name}: {why}", field="temperature")
    if samples == 1:
        return
    if judge.provider == "offline":
        raise BadInputError(f"--samples {samples}: {judge.name} is deterministic, so every sample would give the "
                            "same grade; self-consistency needs an LLM judge that samples", field="samples")
    if sampling_temperature(judge) <= 0:
        raise BadInputError(f"--samples {samples} at temperature 0: every sample would give the same grade; "
                            "give --temperature above 0 (e.g. --temperature 0.7)", field="samples")


@dataclass(frozen=True)
class Expansion:
    """The work items of a run: each pair `n` times in a row, sample 0 first."""

    items: Sequence[Pair]
    n: int = 1

    def sample_of(self, position: int) -> int:
        return position % self.n


def expand(pairs: Sequence[Pair], n: int) -> Expansion:
    return Expansion(pairs if n == 1 else [p for p in pairs for _ in range(n)], n)


def aggregate_grade(grades: Sequence[int], rule: str) -> int:
    """The aggregate of sample grades under `rule` (see the module docstring for the tie rules)."""
    if not grades:
        raise ValueError("no grades to aggregate")
    if rule == "majority":
        counts = Counter(grades)
        top = max(counts.values())
        grades = [g for g in counts if counts[g] == top]
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]  # the lower middle: ties round toward "not relevant"


def _sum(values: list[float | int | None]) -> float | int | None:
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def combine(labels: list[Label], n: int, rule: str) -> Label:
    """One label from the successful samples of one pair, in sample order."""
    grades = [label.grade for label in labels]
    grade = aggregate_grade(grades, rule)
    chosen = next(label for label in labels if label.grade == grade)
    cost = _sum([label.cost_usd for label in labels])
    latency = _sum([label.latency_s for label in labels])
    return chosen.model_copy(update={
        "grade": grade, "input_tokens": _sum([label.input_tokens for label in labels]),
        "output_tokens": _sum([label.output_tokens for label in labels]),
        "cached_input_tokens": _sum([label.cached_input_tokens for label in labels]),
        "cost_usd": None if cost is None else round(cost, 8),
        "latency_s": None if latency is None else round(latency, 4),
        "from_cache": all(label.from_cache for label in labels),
        "samples": n, "sample_grades": grades, "sample_agreement": round(grades.count(grade) / len(grades), 6),
        "sample_spread": max(grades) - min(grades), "aggregate": rule})


def collapse(expansion: Expansion, results: Sequence[Label | LabelFailure | None],
             rule: str) -> list[Label | LabelFailure]:
    """Per-work-item results (in work order) → one Label per pair with a successful sample, plus one
    LabelFailure per failed sample, in pair order."""
    n = expansion.n
    if n == 1:
        return [r for r in results if r is not None]
    out: list[Label | LabelFailure] = []
    for start in range(0, len(results), n):
        out.extend(collapse_pair(results[start:start + n], n, rule))
    return out


def collapse_pair(chunk: Sequence[Label | LabelFailure | None], n: int, rule: str) -> list[Label | LabelFailure]:
    """One pair's n sample results (in sample order) → its Label (if a sample succeeded) and one LabelFailure
    per failed sample."""
    labels = [r for r in chunk if isinstance(r, Label)]
    out: list[Label | LabelFailure] = [combine(labels, n, rule)] if labels else []
    kept = (f"the label uses the {len(labels)} that succeeded" if labels
            else "no sample succeeded, so the pair has no label")
    return out + failed_samples(chunk, n, kept)


def failed_samples(chunk: Sequence[object], n: int, kept: str) -> list[LabelFailure]:
    """The failed samples of one item (in sample order), each reason saying which sample of n it was and what
    the item `kept`."""
    return [failure.model_copy(update={"reason": f"sample {k + 1} of {n} ({kept}): {failure.reason}"})
            for k, failure in enumerate(chunk) if isinstance(failure, LabelFailure)]
