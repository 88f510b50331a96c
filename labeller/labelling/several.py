"""`labeller label` with one judge, a jury (several --judge) or an escalation (--escalate-to): one entry point."""

from __future__ import annotations

from labeller.errors import BadInputError
from labeller.labelling.models import Judging, LabelInputs


def label_any(judging: Judging, inputs: LabelInputs, keep_labels: bool = True):
    """label_job for one judge, label_jury_job for several, label_escalation_job with escalate_to;
    keep_labels=False (one judge only) writes the labels as they settle and returns none (label_job)."""
    judges = judging.judges
    if inputs.options.ray is not None and (judging.escalate_to is not None or len(judges) > 1):
        raise BadInputError("--ray takes one --judge: juries and escalation are not distributed yet", field="ray")
    if judging.escalate_to is not None:
        if len(judges) != 1:
            got = "none" if not judges else f"{len(judges)} ({', '.join(judges)})"
            raise BadInputError(f"--escalate-to needs exactly one --judge, the cheap judge that grades every pair; "
                                f"got {got}", field="judge")
        from labeller.labelling.escalation import label_escalation_job

        return label_escalation_job(judging, inputs)
    if judging.above is not None:
        raise BadInputError("--escalate-above-entropy applies to an escalation: give --escalate-to EXPENSIVE_JUDGE too")
    if judging.below is not None:
        raise BadInputError("--escalate-below applies to an escalation: give --escalate-to EXPENSIVE_JUDGE too")
    if not judges:
        raise BadInputError("missing --judge; expected openai:<model>, anthropic:<model> or offline:lexical "
                            "(repeat --judge for a jury)", field="judge")
    if len(judges) > 1:
        from labeller.labelling.jury import label_jury_job

        return label_jury_job(judging, inputs)
    if judging.gold is None and judging.gold_scale is not None:
        raise BadInputError("--from-scale is the scale of --gold; give --gold too", field="from_scale")
    if judging.gold is not None:
        raise BadInputError("--gold applies to juries and escalation; for one judge use `labeller agree --labels "
                            "OUT --gold GOLD`")
    from labeller.labelling.job import label_job

    return label_job(inputs, judges[0], keep_labels=keep_labels)
