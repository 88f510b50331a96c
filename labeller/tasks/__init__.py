"""What a judge is asked: one file per task, each its prompt rendering, reply schema, cache-key material and how
samples aggregate, all run by the one labelling engine (labeller.labelling.engine.judge_task).

- relevance.py: the grade 1-5 of a (query, document) pair (the engine's fast key path);
- claims.py: the claim split of an answer, and the verdict on one claim against the passages shown.
"""
