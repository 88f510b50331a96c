"""How an evaluation ends for a script or CI job: the error (and exit code) its result calls for.

Kept apart from `evaluate()` so the result can be printed and its report written first; the
command line then raises what `outcome_error` returns.
"""

from __future__ import annotations

from labeller.errors import BudgetExceededError, GateFailedError, JudgeError, LabellerError, LabellingFailedError
from labeller.evaluation.results import Evaluation


def outcome_error(result: Evaluation, fail_on_regression: bool | None = None) -> LabellerError | None:
    """None when the run is clean; else the first problem: hole filling stopped by the budget (exit 3)
    or by the judge, holes left unlabelled, or a failed gate (a regression, or nothing comparable). `fail_on_regression`
    defaults to on whenever the evaluation has a baseline."""
    holes = result.holes
    if holes is not None and holes.stopped == "budget":
        return BudgetExceededError(f"--max-cost reached while filling holes; {holes.failed} holes left unjudged")
    if holes is not None and holes.stopped:
        return JudgeError(f"filling holes stopped: {holes.stopped}")
    if holes is not None and holes.failed:
        return LabellingFailedError(f"{holes.failed} of {holes.holes} holes could not be labelled and counted as not "
                                    "relevant; rerun the same command to retry them")
    if fail_on_regression is None:
        fail_on_regression = result.baseline is not None
    failed = []
    if fail_on_regression and result.gate is not None and not result.gate.passed:
        failed = ["regression gate failed: " + "; ".join(result.gate.reasons)]
    below = [f"{c.metric} of {c.run} is {'undefined' if c.value is None else f'{c.value:.4f}'}, below its floor "
             f"{c.floor}" for c in result.floors if not c.passed]
    if below:  # floors are gates of their own: they fail whatever --fail-on-regression says
        failed.append("floor failed: " + "; ".join(below))
    return GateFailedError("; ".join(failed)) if failed else None


def outcome_warnings(result: Evaluation) -> list[str]:
    """What a passing gate did not test (--require-significance on too few queries), a mix of judges, and why
    a corrected figure may not hold (--gold): said aloud."""
    corrected = list(result.corrected.warnings) if result.corrected is not None else []
    return (list(result.gate.warnings) if result.gate is not None else []) + corrected
