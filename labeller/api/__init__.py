"""The Python API for notebooks: DataFrames (or files) in, DataFrames and result records out.

    import labeller
    labels = labeller.label(pairs, queries=queries, corpus=corpus, judge="openai:gpt-4.1-mini")
    agreement = labeller.agree(labels, gold)            # agreement.kappa, agreement.to_frame()
    result = labeller.evaluate(labels, run, "ndcg@10,recall@100")   # result.metrics, result.per_query_frame()
    versus = labeller.compare(labels, {"bm25": run_a, "dense": run_b})

The command line calls these same functions (or the jobs beneath them), with the same checks.
"""

from labeller.api.labelling import alabel, label
from labeller.api.measuring import EvaluationResult, agree, compare, evaluate

__all__ = ["EvaluationResult", "agree", "alabel", "compare", "evaluate", "label"]
