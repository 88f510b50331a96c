"""A hook for an optimisation loop: score a canary suite in memory and get the scores back.

An optimiser (a grid, optuna, a prompt search) changes a retriever's or an agent's settings and calls
`score_canaries` once per trial; it reads files never, and returns the suite's verdict: each canary's
score, their mean and lowest, and every criterion with what it required and measured::

    from labeller.canaries import load_canaries, score_canaries
    from labeller.io.inputs import read_corpus

    canaries, corpus = load_canaries("canaries.toml"), read_corpus("corpus.test.jsonl")

    def objective(trial):
        retriever = build_retriever(k1=trial.suggest_float("k1", 0.5, 2.0))
        return score_canaries(canaries, corpus=corpus, retriever=retriever).mean_score

`answer` may stand in for (or add to) the retriever: a function from a canary question to the
system's answer text (or an `Answer` with its tool calls), as a workflow under test gives it; or
`output`, a whole workflow's output (one log or answer blob) that every canary is scored on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from labeller.canaries.answers import Answer, output_answers
from labeller.canaries.model import Canary
from labeller.canaries.probe import probe, retrieve
from labeller.canaries.suite import SuiteCriteria, SuiteVerdict, check_floors
from labeller.errors import BadInputError
from labeller.records import Doc
from labeller.retrieval.base import Retriever


def score_canaries(canaries: Sequence[Canary], *, corpus: Mapping[str, Doc] | None = None,
                   retriever: Retriever | None = None, answer: Callable[[str], str | Answer] | None = None,
                   output: str | None = None, k: int = 10, criteria: SuiteCriteria | None = None) -> SuiteVerdict:
    """Each canary's score (0..1), the mean and lowest, and the criteria's verdict (see suite.py)."""
    if retriever is not None and corpus is None:
        raise BadInputError("a retriever is scored over the planted corpus: pass corpus= (the test copy)")
    criteria = criteria or SuiteCriteria()
    check_floors(criteria, [c.canary_id for c in canaries])
    ranked = texts = None
    if retriever is not None:
        ranked, texts, _ = retrieve(canaries, retriever, k)
    if answer is not None and output is not None:
        raise BadInputError("give answer= (a function) or output= (a workflow's whole output), not both")
    answers = output_answers(output, [c.canary_id for c in canaries]) if output is not None else None
    if answer is not None:
        replies = {c.canary_id: answer(c.question) for c in canaries}
        answers = {cid: r if isinstance(r, Answer) else Answer(text=r) for cid, r in replies.items()}
    return probe(canaries, corpus, ranked, k=k, hit_texts=texts, answers=answers, criteria=criteria).suite
