"""The relevance task: a (query, document) pair graded 1-5 under a rubric, the engine's first and fastest task.

Its prompt is Rubric.render; its reply the records.Verdict (labeller.tasks.reply.VERDICT, sent as the judge's
own decoding settings, so every cache key is what it was before tasks existed); its keys come from the
incremental key path (labelling.planning.PairKeys: each query's part hashed once, a document's text hashed from
its bytes in the file); its rows are Label rows, straight from the store's projected row in a cached rerun.
Samples are collapsed by labelling.samples (median or majority of grades).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from labeller.io.inputs import known_in, pair_ids
from labeller.errors import BadInputError
from labeller.judges.base import SCHEMA_VERSION, Judge
from labeller.labelling.planning import PairKeys
from labeller.labelling.rows import label_row
from labeller.records import Doc, Pair, Query
from labeller.rubric import JudgePrompt, Rubric, SamePromptCheck
from labeller.tasks.base import Keys, Task


class RelevanceTask(Task):
    name = "relevance"
    reply = None
    lines = True

    def __init__(self, pairs: Sequence[Pair], queries: dict[str, Query], corpus: dict[str, Doc], rubric: Rubric,
                 sample_of: Callable[[int], int] = lambda position: 0) -> None:
        # `pairs` are already expanded by labelling.samples (sample_of says which sample each is).
        self.items, self.queries, self.corpus, self.rubric = pairs, queries, corpus, rubric
        self.sample_of = sample_of  # type: ignore[method-assign]
        self.rubric_name, self.rubric_version = rubric.name, rubric.version
        self.query_ids, self.doc_ids = pair_ids(pairs)

    @property
    def schema_version(self) -> str:
        return SCHEMA_VERSION

    def settings(self, judge: Judge) -> dict[str, Any]:
        return judge.decoding_settings()

    def render(self, position: int) -> JudgePrompt:
        return self.rubric.render(self.queries[self.query_ids[position]], self.corpus[self.doc_ids[position]])

    def check_inputs(self) -> None:
        """Every pair's query and document are known, the rubric's fields exist, and the pairs do not all render
        to one prompt (usually settled by the second pair)."""
        self.rubric.check_fields(self.queries.values(), self.corpus.values())
        known = known_in(self.items, self.queries, self.corpus)
        for qid, did in zip(self.query_ids, self.doc_ids) if not known else ():  # which pair, and what it lacks
            if qid not in self.queries or did not in self.corpus:
                missing = "query" if qid not in self.queries else "document"
                raise BadInputError(f"pair ({qid}, {did}) names an unknown {missing}")
        same = SamePromptCheck(self.rubric)
        for i in range(len(self.doc_ids)):
            same.add(self.render(i))
            if same.varied_prompt:
                break
        same.check()

    def keys(self, judge: Judge, settings: dict[str, Any], served: str | None) -> Keys:
        return PairKeys(judge=judge, settings=settings, served=served, rubric=self.rubric, queries=self.queries,
                        corpus=self.corpus, query_ids=self.query_ids, doc_ids=self.doc_ids, sample_of=self.sample_of)

    def stored(self, reply: Any) -> Any:
        return reply

    row = staticmethod(label_row)
