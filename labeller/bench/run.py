"""judge_bench: every judge grades the human-labelled pairs through the cache, and each is measured
against the people (agreement with query-resampled intervals, system ranking, speed, cost).

Order: check every option and read every input (gold, queries, corpus, runs, prices) before the first
request, so bad input costs nothing; then one judge after the other through `labeller label`'s job.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.agreement.measure import CUTS
from labeller.bench.agreement import agreement, figures, label_file
from labeller.bench.cost import cost_per_1k
from labeller.bench.labelling import label_with, speed, write_pairs
from labeller.bench.models import BenchResult, JudgeScore
from labeller.bench.ranking import RankingScorer, load_runs
from labeller.errors import BadInputError
from labeller.io.gold import GradeFile, read_grades
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.outputs import check_outputs, existing_files
from labeller.io.scales import command_scale
from labeller.judges.registry import parse_judge_spec, require_api_key
from labeller.labelling import LabelOptions
from labeller.prices import load_prices
from labeller.records import Pair

DEFAULT_METRIC = "ndcg@10"


class BenchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gold: Path
    queries: Path
    corpus: Path
    judges: list[str]
    rubric: str = "general"
    runs: list[Path] = Field(default_factory=list)
    metric: str = DEFAULT_METRIC
    from_scale: str | None = None
    clip_to_gold: bool = False
    relevant_from: int = 3
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    cache: str | Path | None = None
    base_url: str | None = None
    prices: Path | None = None
    timeout: float = 60.0
    label_options: LabelOptions = Field(default_factory=LabelOptions)
    labels_dir: Path | None = None  # keep each judge's labels here (default: a temporary directory)
    outputs: dict[str, Path] = Field(default_factory=dict)  # flag -> report file, checked before anything is sent
    report_dir: Path | None = None  # --report DIR, checked as a directory too


def _check(options: BenchOptions) -> None:
    if not options.judges:
        raise BadInputError("no judge given; expected --judge PROVIDER:MODEL (repeatable)", field="judge")
    seen: set[tuple[str, str]] = set()
    for spec in options.judges:
        parsed = parse_judge_spec(spec)
        if parsed in seen:
            raise BadInputError(f"--judge {spec} is given twice; each judge is benchmarked once", field="judge")
        seen.add(parsed)
        require_api_key(spec, options.base_url)  # every judge's key, before the first judge pays for anything
    if options.relevant_from not in CUTS:
        raise BadInputError(f"--relevant-from {options.relevant_from} is not a grade from 2 to {max(CUTS)}",
                            field="relevant_from")
    if options.resamples < 1:
        raise BadInputError(f"--bootstrap {options.resamples} must be at least 1", field="bootstrap")
    if options.seed < 0:
        raise BadInputError(f"--seed {options.seed} is negative; expected a whole number >= 0", field="seed")
    if not 0 < options.confidence < 1:
        raise BadInputError(f"--confidence {options.confidence} must lie between 0 and 1", field="confidence")
    if len(options.runs) == 1:
        raise BadInputError("one --run orders nothing; give at least two runs to compare system rankings",
                            field="run")
    inputs = existing_files([options.gold, options.queries, options.corpus, *options.runs, options.prices,
                             options.rubric])
    check_outputs(inputs=inputs, files=dict(options.outputs), dirs={"--labels-dir": options.labels_dir,
                                                                         "--report": options.report_dir})


def gold_pairs(gold: GradeFile) -> list[Pair]:
    return [Pair(query_id=q, doc_id=d) for q, d in dict.fromkeys((r.query_id, r.doc_id) for r in gold.rows)]


def judge_bench(options: BenchOptions) -> BenchResult:
    _check(options)
    prices = load_prices(options.prices)
    queries, corpus = read_queries(options.queries), read_corpus(options.corpus)
    gold = read_grades(options.gold, role="gold", from_scale=command_scale(options.from_scale, [options.gold]),
                       queries=queries, corpus=corpus)
    pairs = gold_pairs(gold)
    if not pairs:
        raise BadInputError("the gold file holds no grade (only \"can't judge\" or \"later\" rows)",
                            path=str(options.gold))
    scorer = (RankingScorer(load_runs(options.runs), gold, options.metric, options.relevant_from)
              if options.runs else None)
    scores = []
    with tempfile.TemporaryDirectory(prefix="labeller-bench-") as scratch:
        labels_dir = options.labels_dir or Path(scratch)
        pairs_path = write_pairs(pairs, Path(scratch) / "pairs.jsonl")
        for n, spec in enumerate(options.judges, start=1):
            out = labels_dir / f"judge-{n}-{spec.replace(':', '-').replace('/', '-')}.jsonl"
            run = label_with(spec, pairs_path=pairs_path, queries=options.queries, corpus=options.corpus,
                             rubric=options.rubric, out_path=out, cache=options.cache, base_url=options.base_url,
                             options=options.label_options, prices=options.prices, timeout=options.timeout)
            scores.append(_score(spec, run, gold, scorer, options, prices,
                                 kept=str(out) if options.labels_dir else None))
    return BenchResult(gold=str(options.gold), pairs=len(pairs), queries=len({p.query_id for p in pairs}),
                       gold_scale=gold.scale, relevant_from=options.relevant_from, confidence=options.confidence,
                       resamples=options.resamples, seed=options.seed, runs=[str(r) for r in options.runs],
                       metric=scorer.metric if scorer else None, judges=scores, warnings=_warnings(scores, gold))


def _score(spec, run, gold, scorer, options: BenchOptions, prices, kept: str | None) -> JudgeScore:
    provider, model = parse_judge_spec(spec)
    if not run.labels:
        raise BadInputError(f"judge {spec} graded none of the {run.stats.requested} gold pairs "
                            f"({run.stats.failed} failed); nothing to compare", field="judge")
    labels = label_file(run.labels, f"{spec} labels")
    compared = label_file(run.labels, f"{spec} labels", gold.scale[1]) if options.clip_to_gold else labels
    measured = agreement(compared, gold, relevant_from=options.relevant_from, resamples=options.resamples,
                         seed=options.seed, confidence=options.confidence)
    first = run.labels[0]
    return JudgeScore(judge=f"{provider}:{model}", rubric=first.rubric, rubric_version=first.rubric_version,
                      n=measured.n, queries=measured.queries, **figures(measured),
                      above_gold_scale=sum(label.grade > gold.scale[1] for label in run.labels),
                      clipped=len(compared.clipped),
                      ranking=scorer.rank(labels) if scorer else None, speed=speed(run),
                      cost=cost_per_1k(run.labels, prices, provider, model), labels=kept)


def _warnings(scores: list[JudgeScore], gold: GradeFile) -> list[str]:
    out = []
    if gold.not_grades:
        out.append(f"{gold.not_grades} gold rows are \"can't judge\" or \"later\": not grades, left out")
    for score in scores:
        if score.speed.failed:
            out.append(f"{score.judge}: {score.speed.failed} pairs could not be graded after retries; left out "
                       "of its figures (rerun to retry them)")
        if score.above_gold_scale and not score.clipped:
            out.append(f"{score.judge}: {score.above_gold_scale} grades are above the gold scale's top "
                       f"({gold.scale[1]}) and can never match a person's; --clip-to-gold compares them as "
                       f"{gold.scale[1]}")
        if score.clipped:
            out.append(f"{score.judge}: {score.clipped} grades above the gold scale's top ({gold.scale[1]}) were "
                       "clipped to it (--clip-to-gold)")
    return out
