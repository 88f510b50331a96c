"""Juries: several judges grade one slice, and the jury's grade of a pair is their median.

Each judge labels the slice through the normal engine and verdict store (job.run_judge) under its own
cache keys, so no verdict is paid twice and a rerun sends nothing. Judges run one after another, in the
order given; with --max-cost each is given what the ones before it left of the budget.

The jury's grade is the median of its judges' grades; an even split takes the lower middle grade (the
rule gold consensus uses, io.gold.consensus_grade), so a jury never calls a pair more relevant than half
of its judges did. A pair some judge could not grade gets no jury grade: it is left out of --out and its
failure is listed (rerun to retry it; the other judges' verdicts come from the cache).

Files: --out holds one jury row per pair (judge "jury:median(A,B,...)", each judge's grade in
`judge_grades`); `<out stem>.judges<ext>` every judge's own labels; `<out stem>.failures.jsonl` failures.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.agreement.jury import InterJudge, JudgeAgreement
from labeller.errors import BadInputError, BudgetExceededError, JudgeError, LabellingFailedError
from labeller.io.gold import consensus_grade
from labeller.io.outputs import check_outputs, existing_files, refuse_inputs
from labeller.io.tables import table_format, write_rows
from labeller.judges.base import Judge
from labeller.judges.registry import make_judge, parse_judge_spec
from labeller.labelling.faults import verdicts_kept
from labeller.labelling.job import failures_path_for, load_pairs, run_judge
from labeller.labelling.models import LabelOptions, LabelRun, LabelStats
from labeller.prices import PriceTable, load_prices
from labeller.records import Doc, Label, LabelFailure, Pair, Query
from labeller.rubric import Rubric, load_rubric
from labeller.store import default_spec, is_url

RULE = "median"


class EscalationStats(BaseModel):
    """What an escalation run asked of its expensive judge, and why."""

    model_config = ConfigDict(extra="forbid")
    cheap: str
    expensive: str
    relevant_from: int
    near_cut: bool  # grades relevant_from - 1 and relevant_from were escalated
    below: float | None  # sample agreement under which a pair was escalated (labels with samples only)
    escalated: int = 0  # pairs sent to the expensive judge
    share: float = 0.0  # of the pairs the cheap judge graded
    for_near_cut: int = 0
    for_low_agreement: int = 0
    worst_case: int = 0  # dry run: pairs the cheap judge has not graded yet, all counted as escalated
    # What the labels used cost when their verdicts were bought (cached or not), so a rerun still shows
    # the price of escalating; None when a model has no known price.
    cheap_cost_usd: float | None = None
    expensive_cost_usd: float | None = None
    expensive_alone_usd: float | None = None  # the expensive judge on every pair, scaled from what it cost here
    notes: list[str] = Field(default_factory=list)


class JuryStats(BaseModel):
    """What `labeller label` with several judges (or an escalation) did, per judge and in total."""

    model_config = ConfigDict(extra="forbid")
    rule: str = RULE
    relevant_from: int = 3  # the relevance cut of kappa_relevant (and of escalation's near-the-cut rule)
    requested: int = 0  # pairs asked for
    labelled: int = 0  # pairs in --out
    failed: int = 0  # pairs left out of --out because a judge could not grade them
    dry_run: bool = False
    judges: dict[str, LabelStats] = Field(default_factory=dict)  # each judge's own run, in order
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None when some judge's model has no known price
    estimated_cost_usd: float | None = None  # dry runs
    inter_judge: InterJudge | None = None
    against_gold: list[JudgeAgreement] = Field(default_factory=list)  # with --gold
    escalation: EscalationStats | None = None


class JuryRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labels: list[Label] = Field(default_factory=list)  # the final label of each pair, in input order
    judge_labels: list[Label] = Field(default_factory=list)  # every judge's own labels
    failures: list[LabelFailure] = Field(default_factory=list)
    stats: JuryStats = Field(default_factory=JuryStats)
    out_path: str | None = None
    judges_path: str | None = None
    failures_path: str | None = None


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


def prepare(*, specs: list[str], queries_path, corpus_path, pairs_path, run_path, depth, rubric, cache_dir,
            out_path, base_url, options: LabelOptions, prices_path, timeout: float,
            gold_path=None) -> tuple[Slice, list[Judge]]:
    """Every check label_job makes, for several judges, before anything is sent or written."""
    cache_spec = cache_dir if cache_dir is not None else default_spec()
    table_format(out_path)
    inputs = existing_files([queries_path, corpus_path, pairs_path, run_path, rubric, prices_path, gold_path])
    outputs = {"--out": out_path, "the per-judge labels file": judges_path_for(out_path),
               "the failures file": failures_path_for(out_path)}
    if options.dry_run:
        refuse_inputs(outputs, inputs)
    else:
        check_outputs(inputs=inputs, files=outputs, dirs={"--cache": None if is_url(cache_spec) else cache_spec})
    judge_names(specs)
    rubric_obj = load_rubric(rubric)
    prices = load_prices(prices_path)
    key = "dry-run-sends-nothing" if options.dry_run else None  # as in label_job: a dry run needs no key
    judges = [make_judge(spec, base_url=base_url, timeout=timeout, api_key=key) for spec in specs]
    from labeller.io.inputs import read_corpus, read_queries

    queries, corpus = read_queries(queries_path), read_corpus(corpus_path)
    pairs = load_pairs(queries=queries, corpus=corpus, pairs_path=pairs_path, run_path=run_path, depth=depth)
    rubric_obj.check_fields(queries.values(), corpus.values(), queries_path=queries_path, corpus_path=corpus_path)
    if gold_path is not None:
        gold_grades(gold_path)  # a bad gold file fails now, not after the judges were paid
    return Slice(pairs, queries, corpus, rubric_obj, prices, cache_spec, options, gold_path), judges


def gold_grades(path):
    from labeller.io.gold import read_grades

    return read_grades(path, role="gold")


def spent(stats: LabelStats) -> float:
    return (stats.cost_usd or 0.0) + (stats.unconfirmed_cost_usd or 0.0)


def run_one(data: Slice, judge: Judge, pairs: list[Pair], budget_used: float) -> LabelRun:
    """One judge over `pairs`, with what is left of --max-cost."""
    options = data.options
    if options.max_cost is not None:
        options = options.model_copy(update={"max_cost": max(options.max_cost - budget_used, 0.0)})
    return run_judge(pairs, data.queries, data.corpus, judge, data.rubric, data.prices, options, data.cache_spec)


def stopped(run: LabelRun) -> bool:
    return bool(run.stats.stopped_by or run.stats.budget_stopped)


def jury_label(name: str, votes: list[Label]) -> Label:
    """The jury's row for one pair from each judge's label of it."""
    grades = {v.judge: v.grade for v in votes}
    grade = consensus_grade(list(grades.values()))
    voice = next(v for v in votes if v.grade == grade)  # the first judge who gave the jury's grade explains it
    shown = ", ".join(f"{j}={g}" for j, g in grades.items())
    key = hashlib.sha256("\n".join(v.cache_key for v in votes).encode("utf-8")).hexdigest()
    return Label(query_id=voice.query_id, doc_id=voice.doc_id, grade=grade,
                 justification=f"{RULE} of {shown}; {voice.judge}: {voice.justification}", judge=name,
                 provider="jury", model=name.partition(":")[2], rubric=voice.rubric,
                 rubric_version=voice.rubric_version, cache_key=f"jury:{key}",
                 input_tokens=total(v.input_tokens for v in votes), output_tokens=total(v.output_tokens for v in votes),
                 cached_input_tokens=total(v.cached_input_tokens for v in votes),
                 cost_usd=total(v.cost_usd for v in votes), latency_s=total(v.latency_s for v in votes),
                 created_at=max(v.created_at for v in votes), from_cache=all(v.from_cache for v in votes),
                 judge_grades=grades)


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


def label_jury_job(*, judge_specs: list[str], out_path: str | Path = "labels.jsonl",
                   options: LabelOptions | None = None, gold_path: str | Path | None = None,
                   relevant_from: int = 3, **inputs) -> JuryRun:
    """Label a slice with every judge, write the jury's labels, each judge's, and failures; raise like label_job.

    `inputs` are label_job's: queries_path, corpus_path, pairs_path, run_path, depth, rubric, cache_dir,
    base_url, prices_path, timeout."""
    if len(judge_specs) < 2:
        raise BadInputError("a jury needs at least two --judge", field="judge")
    options = options or LabelOptions()
    data, judges = prepare(specs=judge_specs, out_path=out_path, options=options, gold_path=gold_path,
                           **job_inputs(inputs))
    names = [j.name for j in judges]
    name = f"jury:{RULE}({','.join(names)})"
    stats = JuryStats(requested=len(data.pairs), dry_run=options.dry_run, relevant_from=relevant_from)
    runs: dict[str, LabelRun] = {}
    for judge in judges:
        run = run_one(data, judge, data.pairs, sum(spent(r.stats) for r in runs.values()))
        runs[judge.name] = run
        stats.judges[judge.name] = run.stats
        if stopped(run):
            break
    total_stats(stats)
    result = JuryRun(stats=stats, failures=[f for r in runs.values() for f in r.failures])
    if options.dry_run:
        return result
    per_judge = [by_pair(r.labels) for r in runs.values()]
    for pair in data.pairs:
        votes = [labels[(pair.query_id, pair.doc_id)] for labels in per_judge if (pair.query_id, pair.doc_id) in labels]
        if len(votes) == len(judges):
            result.labels.append(jury_label(name, votes))
    result.judge_labels = [lab for r in runs.values() for lab in r.labels]
    grades = {n: {k: lab.grade for k, lab in labels.items()} for n, labels in zip(runs, per_judge)}
    finish(result, data, out_path, grades, {name: {k: lab.grade for k, lab in by_pair(result.labels).items()}},
           relevant_from, missing=[n for n in names if n not in runs])
    return result


def job_inputs(inputs: dict) -> dict:
    known = {"queries_path", "corpus_path", "pairs_path", "run_path", "depth", "rubric", "cache_dir", "base_url",
             "prices_path", "timeout"}
    unknown = set(inputs) - known
    if unknown:
        raise TypeError(f"unexpected arguments {sorted(unknown)}")
    defaults = dict(pairs_path=None, run_path=None, depth=None, rubric="general", cache_dir=None, base_url=None,
                    prices_path=None, timeout=60.0)
    return {**defaults, **inputs}


def finish(result: JuryRun, data: Slice, out_path, judge_grades: dict, final: dict, relevant_from: int,
           missing: list[str] = ()) -> None:
    """Agreement figures, then every file written atomically, then an error if anything is missing."""
    from labeller.agreement.jury import against_gold, inter_judge

    stats = result.stats
    stats.labelled, stats.failed = len(result.labels), len(data.pairs) - len(result.labels)
    stats.inter_judge = inter_judge(judge_grades) if len(judge_grades) > 1 else None
    if data.gold_path is not None:
        stats.against_gold = against_gold({**judge_grades, **final}, gold_grades(data.gold_path),
                                          relevant_from=relevant_from)
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
                                     f"{s.labelled} labels written{where}")
    if error is not None:
        error.run = result  # type: ignore[attr-defined]
        raise error
