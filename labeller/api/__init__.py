"""The Python API for notebooks: DataFrames (or files) in, DataFrames and result records out.

    import labeller
    labels = labeller.label(pairs, queries=queries, corpus=corpus, judge="openai:gpt-4.1-mini")
    agreement = labeller.agree(labels, gold)            # agreement.kappa, agreement.to_frame()
    result = labeller.evaluate(labels, run, "ndcg@10,recall@100")   # result.metrics, result.per_query_frame()
    versus = labeller.compare(labels, {"bm25": run_a, "dense": run_b})
    biases = labeller.probe(gold, queries=queries, corpus=corpus, judge="openai:gpt-4.1-mini")  # .passed
    link = labeller.link_outcomes(outcomes, labels, run)  # link.recommendation.sentence, link.to_frame()
    labeller.export(result, to=["mlflow=http://127.0.0.1:5000"])   # as --export (docs/exporters.md)
    report = labeller.judge_answers(answers, queries=queries, corpus=corpus, run=run)  # .answers, .attribution

The command line calls these same functions (or the jobs beneath them), with the same checks. Each
is imported on first use, so a command pays only for the part it runs.
"""

_WHERE = {"label": "labelling", "alabel": "labelling", "agree": "agreeing", "evaluate": "evaluating",
          "compare": "evaluating", "EvaluationResult": "evaluating", "probe": "probing", "judge_answers": "answering",
          "link_outcomes": "outcomes", "OutcomesResult": "outcomes", "export": "exporting"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"labeller.api.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'labeller.api' has no attribute {name!r}")
