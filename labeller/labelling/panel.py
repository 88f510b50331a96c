"""The machinery every run with several judges shares (juries, escalation): load and check the slice once,
run one judge at a time over it through job.run_judge with what is left of the budget, then measure,
write every file atomically and raise like label_job."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from labeller.errors import BadInputError, BudgetExceededError, JudgeError, LabellingFailedError
from labeller.io.memory import Input
from labeller.io.outputs import check_outputs, existing_files, refuse_inputs
from labeller.io.tables import table_format
from labeller.io.writing import write_rows
from labeller.judges.base import Judge
from labeller.judges.registry import make_judge, parse_judge_spec
from labeller.labelling.faults import verdicts_kept
from labeller.labelling.job import failures_path_for, load_pairs, run_judge
from labeller.labelling.jury_models import JuryRun, JuryStats
from labeller.labelling.models import LabelInputs, LabelOptions, LabelRun, LabelStats
from labeller.labelling.samples import check_sampling
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Label, Pair, Query
from labeller.rubric import Rubric, load_rubric
from labeller.store import default_spec, is_url


@dataclass
class Slice:
    """The loaded, checked inputs every judge of a run labels."""

    pairs: list[Pair]
    queries: dict[str, Query]
    corpus: dict[str, Doc]
    rubric: Rubric
    prices: PriceTable
    cache_spec: str | Path
    options: LabelOptions
    gold_path: str | Path | None = None
    gold_scale: str | None = None  # --from-scale: the gold file's own scale, as `agree` takes it
    skipped: list[str] = field(default_factory=list)  # a run's entries the inputs do not hold (warnings)


def judges_path_for(out_path: str | Path) -> Path:
    """labels.jsonl -> labels.judges.jsonl: every judge's own labels, beside the jury's."""
    out = Path(out_path)
    return out.with_name(f"{out.stem}.judges{out.suffix}")


def judge_names(specs: list[str]) -> list[str]:
    """'provider:model' of each --judge, refusing a judge named twice (it would only repeat its own verdicts)."""
    names: list[str] = []
    for spec in specs:
        provider, model = parse_judge_spec(spec)
        name = f"{provider}:{model}"
        if name in names:
            raise BadInputError(f"judge '{name}' is named twice (--judge, --escalate-to); expected different "
                                "judges: the second would only repeat the first one's cached verdicts", field="judge")
        names.append(name)
    return names


def prepare(specs: list[str], inputs: LabelInputs, gold: Input | None = None, gold_scale: str | None = None,
            sampled: int | None = None) -> tuple[Slice, list[Judge]]:
    """Every check label_job makes, for several judges, before anything is sent or written.

    The first `sampled` judges (all when None) get --samples and --temperature; the others are asked once
    per pair at their default decoding (escalation's expensive judge)."""
    options, out_path = inputs.options, inputs.out
    cache_spec = inputs.cache if inputs.cache is not None else default_spec()
    outputs = {}
    if out_path is not None:  # None: nothing is written, the labels are only returned
        table_format(out_path)
        outputs = {"--out": out_path, "the per-judge labels file": judges_path_for(out_path),
                   "the failures file": failures_path_for(out_path)}
    read = existing_files([inputs.queries, inputs.corpus, inputs.pairs, inputs.run, inputs.rubric, inputs.prices,
                           gold])
    if options.dry_run:
        refuse_inputs(outputs, read)
    else:
        check_outputs(inputs=read, files=outputs, dirs={"--cache": None if is_url(cache_spec) else cache_spec})
    judge_names(specs)
    rubric_obj = load_rubric(inputs.rubric)
    prices = load_prices(inputs.prices)
    key = "dry-run-sends-nothing" if options.dry_run else None  # as in label_job: a dry run needs no key
    sampled = len(specs) if sampled is None else sampled
    judges = [make_judge(spec, base_url=inputs.base_url, timeout=inputs.timeout, api_key=key,
                         output_mode=inputs.output_mode, temperature=(inputs.temperature or 0.0) if i < sampled else 0.0)
              for i, spec in enumerate(specs)]
    for i, judge in enumerate(judges):
        if i < sampled:
            check_sampling(judge, options.samples, options.aggregate, inputs.temperature)
    from labeller.io.inputs import read_corpus, read_queries

    queries, corpus = read_queries(inputs.queries), read_corpus(inputs.corpus)
    pairs, skipped = load_pairs(queries=queries, corpus=corpus, pairs_path=inputs.pairs, run_path=inputs.run,
                                depth=inputs.depth)
    rubric_obj.check_fields(queries.values(), corpus.values(), queries_path=inputs.queries, corpus_path=inputs.corpus)
    if gold is not None:
        gold_grades(gold, gold_scale)  # a bad gold file fails now, not after the judges were paid
    return Slice(pairs, queries, corpus, rubric_obj, prices, cache_spec, options, gold, gold_scale,
                 skipped), judges


def gold_grades(path, scale: str | None = None):
    """Every gold format `agree` reads (tables, TREC/BEIR qrels, ranx JSON), with its --from-scale."""
    from labeller.io.gold import read_grades
    from labeller.io.scales import command_scale

    return read_grades(path, role="gold", from_scale=command_scale(scale, [path]))


def spent(stats: LabelStats) -> float:
    return (stats.cost_usd or 0.0) + (stats.unconfirmed_cost_usd or 0.0)


def run_one(data: Slice, judge: Judge, pairs: list[Pair], budget_used: float, once: bool = False) -> LabelRun:
    """One judge over `pairs`, with what is left of --max-cost; `once`: one verdict per pair, whatever --samples."""
    options = data.options
    if options.max_cost is not None:
        options = options.model_copy(update={"max_cost": max(options.max_cost - budget_used, 0.0)})
    if once:  # the arbiter's verdicts are the ones a plain run of it caches
        options = options.model_copy(update={"samples": 1, "adaptive": False, "grade_probs": False})
    return run_judge(pairs, data.queries, data.corpus, judge, data.rubric, data.prices, options, data.cache_spec)


def stopped(run: LabelRun) -> bool:
    return bool(run.stats.stopped_by or run.stats.budget_stopped)


def total(values):
    """A sum of figures, None when any is unknown (a model with no price)."""
    values = list(values)
    return None if any(v is None for v in values) else round(sum(values), 6)


def by_pair(labels: list[Label]) -> dict[tuple[str, str], Label]:
    return {(lab.query_id, lab.doc_id): lab for lab in labels}


def total_stats(jury: JuryStats) -> None:
    """Requests, tokens and cost summed over the judges."""
    runs = list(jury.judges.values())
    jury.requests = sum(s.requests for s in runs)
    jury.input_tokens = sum(s.input_tokens for s in runs)
    jury.output_tokens = sum(s.output_tokens for s in runs)
    jury.cost_usd = total(s.cost_usd for s in runs)
    if jury.dry_run:
        jury.estimated_cost_usd = total(s.estimated_cost_usd for s in runs)


def finish(result: JuryRun, data: Slice, out_path, judge_grades: dict, final: dict, relevant_from: int,
           missing: list[str] = ()) -> None:
    """Agreement figures, then every file written atomically, then an error if anything is missing."""
    from labeller.agreement.jury import against_gold, inter_judge

    stats = result.stats
    stats.labelled, stats.failed = len(result.labels), len(data.pairs) - len(result.labels)
    stats.inter_judge = inter_judge(judge_grades) if len(judge_grades) > 1 else None
    if data.gold_path is not None:
        stats.against_gold = against_gold({**judge_grades, **final}, gold_grades(data.gold_path, data.gold_scale),
                                          relevant_from=relevant_from)
    if out_path is None:
        return raise_for(result, missing)
    with verdicts_kept(data.cache_spec):
        result.out_path = str(write_rows(out_path, (_row(lab, out_path) for lab in result.labels)))
        result.judges_path = str(write_rows(judges_path_for(out_path), (lab.model_dump() for lab in result.judge_labels)))
        failures_file = failures_path_for(out_path)
        if result.failures:
            result.failures_path = str(write_rows(failures_file, (f.model_dump() for f in result.failures)))
        else:
            failures_file.unlink(missing_ok=True)
    raise_for(result, missing)


def _row(label: Label, out_path) -> dict:
    """A label as a row; in a CSV the per-judge grades are one JSON cell (records.Label reads it back)."""
    import json

    row = label.model_dump()
    if table_format(out_path) == "csv" and row.get("judge_grades") is not None:
        row["judge_grades"] = json.dumps(row["judge_grades"], ensure_ascii=False)
    return row


def raise_for(result: JuryRun, missing: list[str]) -> None:
    s = result.stats
    runs = list(s.judges.items())
    skipped = f"; not run: {', '.join(missing)}" if missing else ""
    where = f" (see {result.failures_path})" if result.failures_path else ""
    error: Exception | None = None
    for judge, stats in runs:
        if stats.stopped_by:
            error = JudgeError(f"{judge}: {stats.stopped_by}; {s.labelled} of {s.requested} pairs labelled{skipped}{where}")
        elif stats.budget_stopped:
            error = BudgetExceededError(f"--max-cost reached during {judge} after ${s.cost_usd or 0:.4f} in all; "
                                        f"{s.labelled} of {s.requested} pairs labelled{skipped}{where}")
        if error is not None:
            break
    if error is None and s.failed:
        error = LabellingFailedError(f"{s.failed} of {s.requested} pairs lack a grade from every judge; "
                                     f"{s.labelled} labels {'written' if result.out_path else 'kept'}{where}")
    if error is not None:
        error.run = result  # type: ignore[attr-defined]
        raise error
