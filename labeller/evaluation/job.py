"""evaluate(): the whole `labeller evaluate` run, from file paths to one Evaluation record.

Order: check every option, read labels and runs (and a baseline), fill holes if asked, pick
ranx's kernel mode from the size of the work, score every run, compare with the reference (the
baseline, else the first run), judge the gate, and score again under --labels-alt for the
system-ranking agreement. Nothing is printed or written here except --fill-holes labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import BadInputError
from labeller.evaluation.compare import compare
from labeller.evaluation.floors import check_floors, parse_floors
from labeller.evaluation.gate import DEFAULT_ALPHA, DEFAULT_THRESHOLD, check_gate_options, gate, parse_thresholds
from labeller.evaluation.metrics import check_gain, check_relevant_from, cutoffs, parse_metrics
from labeller.evaluation.numba_cache import import_ranx_metrics, ranx_is_compiled, ranx_requested
from labeller.evaluation.qrels import Judgments, load_judgments
from labeller.evaluation.results import FORMAT, Evaluation, RunScores, Settings
from labeller.evaluation.runs import Ranking, load_run
from labeller.io.memory import Input
from labeller.io.scales import command_scale
from labeller.evaluation.scoring import score_run, workload
from labeller.evaluation.system_ranking import system_ranking
from labeller.io.validation import validation_error

DEFAULT_METRICS = "ndcg@10,recall@100,mrr@10"


class EvaluateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    runs: list[Input]
    # the runs' names in results, in order (the Python API's dict keys); None: each from its file (run_name)
    run_names: list[str] | None = None
    labels: Input
    metrics: str = DEFAULT_METRICS
    relevant_from: int = 3
    from_scale: str | None = None
    gain: str = "linear"
    average: str = "trec"
    baseline: Input | None = None
    baseline_name: str | None = None  # shown as "baseline:<name>"; None: from its file
    thresholds: list[str] = Field(default_factory=list)
    default_threshold: float = DEFAULT_THRESHOLD
    alpha: float = DEFAULT_ALPHA
    test: str = "randomization"
    require_significance: bool = False  # a drop the test cannot test passes (with a warning) instead of failing
    exact_scores: bool = False  # rank by the full double score instead of trec_eval's 32-bit float
    confidence: float = 0.95
    permutations: int = 10_000
    bootstrap: int = 10_000
    seed: int = 42
    labels_alt: Input | None = None
    fill_holes: bool = False
    depth: int | None = None
    judge: str | None = None
    queries: Input | None = None
    corpus: Input | None = None
    rubric: str = "general"
    cache: str | Path | None = None  # a store directory or URL; None: $LABELLER_CACHE or .labeller-cache
    base_url: str | None = None
    holes_out: Path | None = None
    prices: Path | None = None  # --fill-holes: the judge's price table, its timeout and output mode (as label's)
    timeout: float = 60.0
    output_mode: str | None = None
    # --fill-holes: a labeller.labelling.LabelOptions (concurrency, --max-cost); typed Any because importing
    # labeller.labelling loads the engine, 0.1 s on every evaluation's start-up
    label_options: Any = None
    fail_on_regression: bool | None = None  # None: on whenever there is a baseline (see outcome_error)
    floors: list[str] = Field(default_factory=list)  # --min METRIC=VALUE (labeller.evaluation.floors)
    gold: Input | None = None  # people's grades for a sample of the labelled pairs: corrected figures beside the plain
    gold_design: str = "auto"  # pairs | queries | auto (labeller.evaluation.corrected_pool)
    gold_sample: Input | None = None  # the frozen sample the gold was graded from: its plan and strata are checked,
    # and its pairs drawn with certainty (plan top:K) get inclusion probability 1
    corrected_gate: bool = False  # --corrected: the gate decides on the corrected differences
    per_query_coverage: float = 0.9  # target coverage of the per-query intervals (labeller.evaluation.corrected_conformal)


def _check(options: EvaluateOptions) -> None:
    if not options.runs:
        raise BadInputError("no run given; expected --run RUN (TREC, .jsonl, .csv or .parquet)", field="run")
    if options.run_names is not None and len(options.run_names) != len(options.runs):
        raise BadInputError(f"{len(options.run_names)} run names for {len(options.runs)} runs; expected one name "
                            "per run, in order", field="run_names")
    if options.run_names is not None and not all(name.strip() for name in options.run_names):
        raise BadInputError("a run name is empty; expected a name to show in results", field="run_names")
    if options.baseline_name is not None and options.baseline is None:  # a name for nothing would be dropped
        raise BadInputError("baseline_name names the baseline run; give baseline too", field="baseline_name")
    if options.fail_on_regression and options.baseline is None:  # asked for, with nothing to compare with
        raise BadInputError("--fail-on-regression needs --baseline (a run or a saved --json result)",
                            field="fail_on_regression")
    if options.average not in ("trec", "all"):
        raise BadInputError(f"--average '{options.average}' is unknown; expected trec or all", field="average")
    if not 0 < options.confidence < 1:
        raise BadInputError(f"--confidence {options.confidence} must be between 0 and 1", field="confidence")
    if options.permutations < 1 or options.bootstrap < 1:
        raise BadInputError("--permutations and --bootstrap must be at least 1")
    if options.seed < 0:
        raise BadInputError(f"--seed {options.seed} is negative; expected a whole number >= 0", field="seed")
    if options.default_threshold < 0:
        raise BadInputError(f"--default-threshold {options.default_threshold} is negative; expected a drop >= 0",
                            field="default_threshold")
    if options.depth is not None and options.depth < 1:
        raise BadInputError(f"--depth {options.depth} must be at least 1: how many top documents per query to "
                            "label", field="depth")
    check_relevant_from(options.relevant_from)
    check_gain(options.gain)
    check_gate_options(options.alpha, options.test)
    if not options.fill_holes:  # a hole-filling setting without --fill-holes would be dropped without a word
        given = [flag for flag, value in (("--judge", options.judge), ("--depth", options.depth),
                                          ("--base-url", options.base_url), ("--holes-out", options.holes_out),
                                          ("--prices", options.prices), ("--output-mode", options.output_mode))
                 if value is not None]
        if given:
            raise BadInputError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for --fill-holes, which "
                                "was not given; add --fill-holes (and --queries, --corpus) or drop "
                                f"{'it' if len(given) == 1 else 'them'}", field="fill_holes")
    if options.fill_holes:
        missing = [flag for flag, value in (("--judge", options.judge), ("--queries", options.queries),
                                            ("--corpus", options.corpus)) if value is None]
        if missing:
            raise BadInputError(f"--fill-holes needs {', '.join(missing)}: the judge labels the holes from the "
                                "query and document texts", field="fill_holes")
    from labeller.evaluation.corrected_pool import DESIGNS

    if options.gold_design not in DESIGNS:
        raise BadInputError(f"--gold-design '{options.gold_design}' is unknown; expected {', '.join(DESIGNS)}",
                            field="gold_design")
    if not 0 < options.per_query_coverage < 1:
        raise BadInputError(f"--per-query-coverage {options.per_query_coverage} must be between 0 and 1 (a share of "
                            "queries, e.g. 0.9)", field="per_query_coverage")
    if options.gold_sample is not None and options.gold is None:
        raise BadInputError("--gold-sample describes how --gold was drawn; give --gold too", field="gold_sample")
    if options.corrected_gate and options.gold is None:
        raise BadInputError("--corrected decides the gate on corrected estimates; give --gold (people's grades for "
                            "a sample of the labelled pairs)", field="corrected")
    if options.corrected_gate and options.baseline is None:
        raise BadInputError("--corrected is a regression gate on corrected estimates; give --baseline",
                            field="corrected")
    if options.labels_alt is not None and len(options.runs) + (options.baseline is not None) < 2:
        raise BadInputError("--labels-alt compares system orderings; give at least two runs (--run several times)",
                            field="labels_alt")


def _unique_names(rankings: list[Ranking]) -> None:
    seen: dict[str, int] = {}
    for ranking in rankings:
        count = seen.get(ranking.name, 0)
        seen[ranking.name] = count + 1
        if count:
            ranking.name = f"{ranking.name}#{count + 1}"


def load_saved(path: Path) -> Evaluation | None:
    """A baseline that is a saved `labeller evaluate --json` result, or None if it is a run file."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # JSON lines: a run stored as a table
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("labeller-evaluate"):
        return None
    try:
        return Evaluation.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), expected="a saved `labeller evaluate --json` result") from None


def _saved_reference(saved: Evaluation, path: Path, settings: Settings, names: list[str],
                     judges: list[str]) -> RunScores:
    if saved.judges and saved.judges != judges:
        now = "; ".join(judges) or "people (qrels or gold)"
        raise BadInputError(f"the saved baseline's figures are on labels by {'; '.join(saved.judges)}, and these "
                            f"labels are by {now}: a metric from one judge, model or rubric version is not "
                            "comparable with one from another; evaluate the baseline's run file on these labels "
                            "(--baseline RUN)", path=str(path), field="judges")
    if saved.settings != settings:
        raise BadInputError(f"the saved baseline was evaluated with {saved.settings.model_dump()} but this run uses "
                            f"{settings.model_dump()}; evaluate both the same way", path=str(path))
    missing = [n for n in names if n not in saved.per_query]
    if missing:
        raise BadInputError(f"the saved baseline has no per-query values for {', '.join(missing)}; it has "
                            f"{', '.join(saved.per_query) or 'none'}", path=str(path), field="per_query")
    return RunScores(name=f"baseline:{Path(path).name}", source=str(path), metrics=saved.metrics,
                     trec_eval=saved.trec_eval, per_query=saved.per_query, judged=saved.judged,
                     unjudged=saved.unjudged, queries=saved.queries, no_answer=saved.no_answer)


def _check_overlap(rankings: list[Ranking], judgments: Judgments) -> None:
    """A run none of whose queries has a judgment scores nothing: almost always the wrong labels file (or
    run), and a gate over it could only pass. Said once, clearly, instead of a table of blanks."""
    for ranking in rankings:
        if not any(q in judgments.grades for q in ranking.query_ids):
            queries = ranking.query_ids
            sample = ", ".join(sorted(queries)[:3]) + (", ..." if len(queries) > 3 else "")
            raise BadInputError(f"none of the {len(queries)} queries of run '{ranking.name}' ({sample}) "
                                f"has a judgment in {judgments.source}; expected labels for the run's queries "
                                "(the same query_id)", path=ranking.source or None, field="query_id")


def evaluate(options: EvaluateOptions) -> Evaluation:
    _check(options)
    specs = parse_metrics(options.metrics)
    settings = Settings(relevant_from=options.relevant_from, gain=options.gain, average=options.average,
                        exact_scores=options.exact_scores)
    thresholds = parse_thresholds(options.thresholds, specs, options.default_threshold)
    floors = parse_floors(options.floors, specs)
    scale = command_scale(options.from_scale, [options.labels, options.labels_alt])  # bare: qrels, else tables
    judgments = load_judgments(options.labels, scale)
    exact = options.exact_scores
    rankings = [load_run(p, name, exact_scores=exact)
                for p, name in zip(options.runs, options.run_names or [None] * len(options.runs))]
    saved = load_saved(options.baseline) if options.baseline is not None else None
    baseline_run = (load_run(options.baseline, options.baseline_name, exact_scores=exact)
                    if options.baseline and saved is None else None)
    if baseline_run is not None:
        baseline_run.name = f"baseline:{baseline_run.name}"
    everything = rankings + ([baseline_run] if baseline_run else [])
    _unique_names(everything)
    alt = load_judgments(options.labels_alt, scale, role="labels-alt") if options.labels_alt else None

    holes = None
    if options.fill_holes:
        from labeller.evaluation.holes import fill_holes

        depth = options.depth or max(cutoffs(specs))
        from labeller.labelling.models import LabelInputs, LabelOptions

        texts = LabelInputs(queries=options.queries, corpus=options.corpus, rubric=options.rubric, cache=options.cache,
                            base_url=options.base_url, out=options.holes_out, prices=options.prices,
                            timeout=options.timeout, output_mode=options.output_mode,
                            options=options.label_options or LabelOptions())
        judgments, holes, _ = fill_holes(everything, judgments, depth, options.judge, texts)

    for graded in (judgments, alt) if alt else (judgments,):
        _check_overlap(everything, graded)
    if ranx_requested():  # LABELLER_JIT=on|off: ranx's kernels; by default labeller's numpy ones
        import_ranx_metrics(workload(everything, judgments, specs, settings.average) * (2 if alt else 1))
    scores = {r.name: score_run(r, judgments, specs, settings) for r in everything}
    reference = (_saved_reference(saved, options.baseline, settings, [s.name for s in specs], judgments.judges) if saved
                 else scores[baseline_run.name] if baseline_run else scores[rankings[0].name])
    compared = [scores[r.name] for r in rankings if r.name != reference.name]
    pairing = "reference" if saved else "union"  # a saved baseline may predate some of today's labels
    comparisons = [compare(reference, run, specs, confidence=options.confidence, permutations=options.permutations,
                           bootstrap=options.bootstrap, seed=options.seed, pairing=pairing) for run in compared]
    corrected = None
    if options.gold is not None:
        corrected = _corrected(options, everything, scores, judgments, scale, specs, settings,
                               None if saved else reference.name)
    gate_result = (gate(comparisons, thresholds, alpha=options.alpha, test=options.test,
                        require_significance=options.require_significance,
                        corrected=corrected if options.corrected_gate else None, judges=judgments.judges)
                   if options.baseline is not None else None)
    ranking = None
    if alt is not None:
        alt_scores = {r.name: score_run(r, alt, specs, settings) for r in everything}
        ranking = system_ranking(scores, alt_scores, specs, str(options.labels), str(options.labels_alt))

    main = scores[rankings[0].name]
    if saved is not None:
        scores = {reference.name: reference, **scores}  # shown beside the runs in reports
    return Evaluation(
        format=FORMAT, run=main.name, metrics=main.metrics, trec_eval=main.trec_eval, per_query=main.per_query,
        judged=main.judged, unjudged=main.unjudged, queries=main.queries, no_answer=main.no_answer,
        settings=settings, labels=str(options.labels), runs=scores,
        baseline=reference.name if options.baseline is not None else None, comparisons=comparisons,
        gate=gate_result, holes=holes, system_ranking=ranking,
        floors=check_floors([scores[r.name] for r in rankings], floors),
        ranx_kernels=("compiled" if ranx_is_compiled() else "interpreted") if ranx_requested() else "numpy",
        corrected=corrected, judges=judgments.judges,
    )


def _corrected(options: EvaluateOptions, rankings: list[Ranking], scores: dict[str, RunScores], judgments: Judgments,
               scale: str | None, specs, settings: Settings, reference: str | None):
    """The figures corrected with --gold (labeller.evaluation.corrected), beside the plain ones."""
    from labeller.evaluation.corrected import corrected

    if options.corrected_gate and reference is None:
        raise BadInputError("--corrected needs the baseline's ranking, and a saved --json result has only its "
                            "per-query values; give the baseline run file", path=str(options.baseline),
                            field="corrected")
    from labeller.evaluation.corrected_pool import example_warnings, sample_certain, sample_warnings

    gold = load_judgments(options.gold, scale, role="gold")
    certain = sample_certain(options.gold_sample) if options.gold_sample is not None else None
    result = corrected(rankings, scores, judgments, gold, specs, settings, design=options.gold_design,
                       confidence=options.confidence, bootstrap=options.bootstrap, seed=options.seed,
                       reference=reference, per_query_coverage=options.per_query_coverage, certain=certain)

    result.warnings += example_warnings(gold, judgments.rubrics)
    if options.gold_sample is not None:
        result.warnings += sample_warnings(options.gold_sample, judgments, gold)
    return result.model_copy(update={"judge": judgments.judges})
