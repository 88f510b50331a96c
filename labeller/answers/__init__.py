"""Answer evaluation: is every claim of a generated answer supported by what was retrieved, and when a case fails,
is it retrieval's fault, generation's, or both?

The data flow, one module a step: inputs.py (answers, run or contexts, queries, corpus, required evidence,
expected facts, outcomes) -> judging.py (split each answer into claims, judge each claim against its passages:
the claim tasks of labeller.tasks.claims through the one labelling engine) -> metrics.py (per answer) ->
attribution.py (per query) -> gate.py -> report.py / report_html.py. run.py ties them together.

For callers (the acceptance gate, notebooks):

    from labeller.answers import judge_answers, AnswerInputs, AnswerOptions
    report = judge_answers(inputs, options)        # report.answers: one AnswerRecord per query
    [(a.query_id, a.groundedness, a.attribution) for a in report.answers]
"""

from __future__ import annotations

_WHERE = {"judge_answers": "run", "AnswerInputs": "models", "AnswerOptions": "models", "AnswerRecord": "models",
          "AnswerReport": "models", "Thresholds": "models", "grounding_records": "run", "answers_job": "run"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"labeller.answers.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'labeller.answers' has no attribute {name!r}")
