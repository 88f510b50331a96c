"""Escalation: a cheap judge grades every pair, an expensive one only the pairs the cheap one is unsure of.

A pair is escalated when the cheap judge's grade is next to the relevance cut (grade relevant_from - 1
or relevant_from, where a wrong step flips relevant/not relevant; on by default), or when its label
carries a self-consistency figure (`sample_agreement`, from --samples) below `below`, or a grade distribution
(--grade-probs) whose entropy is above `above` bits (--escalate-above-entropy; judges.grade_probs). The final label is
the expensive judge's where it was asked (`escalated` True), else the cheap judge's (`escalated` False);
`judge_grades` holds both grades where both exist. Both judges go through the verdict store, so a rerun
sends nothing and changing the rule pays only for newly selected pairs.

With --samples N (and --temperature) the cheap judge is sampled N times per pair, and its aggregate and
sample agreement drive the rule; the expensive judge is the arbiter and is asked once per escalated pair
at its default decoding (temperature 0 for OpenAI-compatible judges), so an escalation costs one expensive
request per escalated pair and its verdicts are the ones a plain `--judge EXPENSIVE` run caches.

A dry run prices the cheap run, then the expensive one on an upper bound of the pairs to escalate:
the cached cheap labels that the rule selects, plus every pair the cheap judge has not graded yet.
"""

from __future__ import annotations

import math

from labeller.errors import BadInputError
from labeller.judges.grade_probs import ENTROPY_SPREAD
from labeller.labelling.jury_models import EscalationStats, JuryRun, JuryStats
from labeller.labelling.models import Judging, LabelInputs
from labeller.labelling.panel import by_pair, finish, prepare, run_one, spent, stopped, total, total_stats
from labeller.records import GRADE_MAX, Label

NEAR_CUT = "the grade is next to the relevance cut"
SPREAD = "grade entropy"
MAX_ENTROPY = math.log2(GRADE_MAX)


def check_rule(*, relevant_from: int, below: float | None, near_cut: bool, above: float | None = None) -> None:
    if not 2 <= relevant_from <= GRADE_MAX:
        raise BadInputError(f"--relevant-from {relevant_from} is not a grade from 2 to {GRADE_MAX}",
                            field="relevant_from")
    if below is not None and not 0 < below <= 1:
        raise BadInputError(f"--escalate-below {below} is out of range; expected a share of samples above 0 and "
                            "at most 1 (e.g. 0.8)", field="escalate_below")
    if above is not None and not 0 <= above < MAX_ENTROPY:
        raise BadInputError(f"--escalate-above-entropy {above} is out of range; expected bits from 0 to below "
                            f"{MAX_ENTROPY:.3f} (log2 of 5 grades), e.g. {ENTROPY_SPREAD}", field="escalate_above_entropy")
    if below is None and not near_cut and above is None:
        raise BadInputError("--no-escalate-near-cut without --escalate-below or --escalate-above-entropy would "
                            "escalate nothing; give --escalate-below (with --samples), --escalate-above-entropy "
                            "(with --grade-probs) or keep the near-the-cut rule")


def reason(label: Label, *, relevant_from: int, below: float | None, near_cut: bool,
           above: float | None = None) -> str | None:
    """Why this cheap label goes to the expensive judge, or None."""
    agreement = getattr(label, "sample_agreement", None)  # set by --samples; absent on single-sample labels
    if below is not None and agreement is not None and agreement < below:
        return f"sample agreement {agreement:.2f} < {below:g}"
    entropy = getattr(label, "grade_entropy", None)  # set by --grade-probs where the judge gives log-probabilities
    if above is not None and entropy is not None and entropy > above:
        return f"{SPREAD}: {entropy:.2f} bits > {above:g}"
    if near_cut and label.grade in (relevant_from - 1, relevant_from):
        return NEAR_CUT
    return None


def label_escalation_job(judging: Judging, inputs: LabelInputs) -> JuryRun:
    """Label every pair with the cheap judge (judging.judges[0]), the selected ones with the expensive judge
    (judging.escalate_to); write the final labels (--out), both judges' own labels (`.judges` file) and failures;
    raise like label_job."""
    relevant_from, below, near_cut, above = judging.relevant_from, judging.below, judging.near_cut, judging.above
    check_rule(relevant_from=relevant_from, below=below, near_cut=near_cut, above=above)
    options = inputs.options
    data, (cheap, expensive) = prepare([judging.judges[0], judging.escalate_to], inputs, judging.gold,
                                       judging.gold_scale, sampled=1)
    esc = EscalationStats(cheap=cheap.name, expensive=expensive.name, relevant_from=relevant_from, near_cut=near_cut,
                          below=below, above=above)
    stats = JuryStats(requested=len(data.pairs), dry_run=options.dry_run, relevant_from=relevant_from,
                      warnings=data.skipped,
                      escalation=esc)
    first = run_one(data, cheap, data.pairs, 0.0)
    stats.judges[cheap.name] = first.stats
    cheap_labels = by_pair(first.labels)
    why = {key: r for key, lab in cheap_labels.items()
           if (r := reason(lab, relevant_from=relevant_from, below=below, near_cut=near_cut, above=above))}
    selected = [p for p in data.pairs if (p.query_id, p.doc_id) in why]
    if options.dry_run:  # every pair the cheap judge has not graded may turn out to need escalating
        unknown = [p for p in data.pairs if (p.query_id, p.doc_id) not in cheap_labels]
        esc.worst_case = len(unknown)
        selected += unknown
        esc.notes.append(f"escalation priced as an upper bound: {len(why)} cached cheap labels selected, plus all "
                         f"{len(unknown)} pairs the cheap judge has not graded yet" if unknown else
                         "escalation priced exactly: every cheap verdict is cached, so the selection is known")
    _count(esc, why, len(selected), len(cheap_labels) if not options.dry_run else len(data.pairs))
    if below is not None and not any(getattr(lab, "sample_agreement", None) is not None for lab in first.labels):
        esc.notes.append("--escalate-below had no effect: the cheap labels carry no sample agreement "
                         "(label with --samples N)")
    if above is not None and not any(getattr(lab, "grade_entropy", None) is not None for lab in first.labels):
        esc.notes.append("--escalate-above-entropy had no effect: the cheap labels carry no grade probabilities "
                         "(label with --grade-probs, with a judge that gives token log-probabilities)")
    result = JuryRun(stats=stats, failures=list(first.failures))
    second = None
    if selected and not stopped(first):
        second = run_one(data, expensive, selected, spent(first.stats), once=True)
        stats.judges[expensive.name] = second.stats
        result.failures += second.failures
    total_stats(stats)
    if options.dry_run:
        return result
    expensive_labels = by_pair(second.labels) if second else {}
    for pair in data.pairs:
        key = (pair.query_id, pair.doc_id)
        final = _final(cheap_labels.get(key), expensive_labels.get(key), key in why)
        if final is not None:
            result.labels.append(final)
    result.judge_labels = list(first.labels) + (list(second.labels) if second else [])
    _costs(esc, first.labels, second.labels if second else [])
    grades = {cheap.name: {k: lab.grade for k, lab in cheap_labels.items()},
              expensive.name: {k: lab.grade for k, lab in expensive_labels.items()}}
    from labeller.agreement.jury import ESCALATED

    finish(result, data, inputs.out, grades, {ESCALATED: {k: lab.grade for k, lab in by_pair(result.labels).items()}},
           relevant_from, missing=[expensive.name] if selected and second is None else [])
    return result


def _count(esc: EscalationStats, why: dict, escalated: int, graded: int) -> None:
    esc.escalated, esc.graded = escalated, graded
    esc.share = round(escalated / graded, 6) if graded else 0.0
    esc.for_near_cut = sum(1 for r in why.values() if r == NEAR_CUT)
    esc.for_spread = sum(1 for r in why.values() if r.startswith(SPREAD))
    esc.for_low_agreement = len(why) - esc.for_near_cut - esc.for_spread


def _costs(esc: EscalationStats, cheap: list[Label], expensive: list[Label]) -> None:
    esc.cheap_cost_usd = total(lab.cost_usd for lab in cheap)
    esc.expensive_cost_usd = total(lab.cost_usd for lab in expensive)
    if expensive and esc.expensive_cost_usd is not None:
        esc.expensive_alone_usd = round(esc.expensive_cost_usd * len(cheap) / len(expensive), 6)


def _final(cheap: Label | None, expensive: Label | None, selected: bool) -> Label | None:
    """The expensive judge's label where it was asked, else the cheap one's; None when the one needed failed."""
    if cheap is None or (selected and expensive is None):
        return None
    chosen = expensive if selected else cheap
    grades = {cheap.judge: cheap.grade, **({expensive.judge: expensive.grade} if expensive else {})}
    return chosen.model_copy(update={"judge_grades": grades, "escalated": selected})
