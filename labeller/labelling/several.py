"""`labeller label` with one judge, a jury (several --judge) or an escalation (--escalate-to): one entry point."""

from __future__ import annotations

from pathlib import Path

from labeller.errors import BadInputError


def label_any(judges: list[str], inputs: dict, *, escalate_to: str | None = None, below: float | None = None,
              near_cut: bool = True, above: float | None = None, relevant_from: int = 3, gold_path: str | Path | None = None,
              gold_scale: str | None = None,
              keep_labels: bool = True):
    """label_job for one judge (unchanged), label_jury_job for several, label_escalation_job with escalate_to.
    `inputs` are label_job's keyword arguments other than the judge; keep_labels=False (one judge only)
    writes the labels as they settle and returns none (label_job)."""
    options = inputs.get("options")
    if options is not None and options.ray is not None and (escalate_to is not None or len(judges) > 1):
        raise BadInputError("--ray takes one --judge: juries and escalation are not distributed yet", field="ray")
    if escalate_to is not None:
        if len(judges) != 1:
            got = "none" if not judges else f"{len(judges)} ({', '.join(judges)})"
            raise BadInputError(f"--escalate-to needs exactly one --judge, the cheap judge that grades every pair; "
                                f"got {got}", field="judge")
        from labeller.labelling.escalation import label_escalation_job

        return label_escalation_job(cheap_spec=judges[0], expensive_spec=escalate_to, below=below, near_cut=near_cut,
                                    above=above, relevant_from=relevant_from, gold_path=gold_path, gold_scale=gold_scale, **inputs)
    if above is not None:
        raise BadInputError("--escalate-above-entropy applies to an escalation: give --escalate-to EXPENSIVE_JUDGE too")
    if below is not None:
        raise BadInputError("--escalate-below applies to an escalation: give --escalate-to EXPENSIVE_JUDGE too")
    if not judges:
        raise BadInputError("missing --judge; expected openai:<model>, anthropic:<model> or offline:lexical "
                            "(repeat --judge for a jury)", field="judge")
    if len(judges) > 1:
        from labeller.labelling.jury import label_jury_job

        return label_jury_job(judge_specs=judges, relevant_from=relevant_from, gold_path=gold_path,
                              gold_scale=gold_scale, **inputs)
    if gold_path is None and gold_scale is not None:
        raise BadInputError("--from-scale is the scale of --gold; give --gold too", field="from_scale")
    if gold_path is not None:
        raise BadInputError("--gold applies to juries and escalation; for one judge use `labeller agree --labels "
                            "OUT --gold GOLD`")
    from labeller.labelling.job import label_job

    return label_job(judge_spec=judges[0], keep_labels=keep_labels, **inputs)
