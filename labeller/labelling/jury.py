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

With --samples N each judge's grade is the aggregate of its own N samples (--aggregate), and the jury
row pools them as the jury's uncertainty: `sample_grades` lists every judge's sample grades (judge by
judge), `samples` their count, `sample_agreement` the share equal to the jury's grade and `sample_spread`
their range, so `labeller agree` bands jury rows as it bands a single judge's.
"""

from __future__ import annotations

import hashlib

from labeller.errors import BadInputError
from labeller.io.gold import consensus_grade
from labeller.labelling.jury_models import RULE, JuryRun, JuryStats
from labeller.labelling.models import Judging, LabelInputs, LabelRun
from labeller.labelling.panel import by_pair, finish, prepare, run_one, spent, stopped, total, total_stats
from labeller.records import Label


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
                 judge_grades=grades, **_pooled_samples(votes, grade))


def _pooled_samples(votes: list[Label], grade: int) -> dict:
    """The sample columns of a jury row: every judge's samples pooled (none unless every judge was sampled)."""
    if any(v.sample_grades is None for v in votes):
        return {}
    pooled = [g for v in votes for g in v.sample_grades or []]
    return dict(samples=sum(v.samples or 0 for v in votes), sample_grades=pooled,
                sample_agreement=round(pooled.count(grade) / len(pooled), 6), sample_spread=max(pooled) - min(pooled),
                aggregate=votes[0].aggregate)


def label_jury_job(judging: Judging, inputs: LabelInputs) -> JuryRun:
    """Label a slice with every judge, write the jury's labels, each judge's, and failures; raise like label_job."""
    judge_specs, relevant_from = judging.judges, judging.relevant_from
    if len(judge_specs) < 2:
        raise BadInputError("a jury needs at least two --judge", field="judge")
    options = inputs.options
    data, judges = prepare(judge_specs, inputs, judging.gold, judging.gold_scale)
    names = [j.name for j in judges]
    name = f"jury:{RULE}({','.join(names)})"
    stats = JuryStats(requested=len(data.pairs), dry_run=options.dry_run, relevant_from=relevant_from,
                      warnings=data.skipped)
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
    finish(result, data, inputs.out, grades, {name: {k: lab.grade for k, lab in by_pair(result.labels).items()}},
           relevant_from, missing=[n for n in names if n not in runs])
    return result
