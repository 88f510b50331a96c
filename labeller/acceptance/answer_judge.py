"""The suite's answer judge: labeller.answers as the grounder of the grounding gates.

Each held-out answer is split into claims and every claim judged (the suite's [grounding] judge and claim rubric)
against the texts of the documents the system returned for its case, top `depth` first. The case's evidence is
the required evidence (so a missing document is attributed to retrieval) and its expected outcome tells a right
abstention from a wrong one. Verdicts go to the verdict store (`--cache`), so a rerun of the same answers pays
nothing. The corpus is read before any system is asked: a bad file costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labeller.acceptance.result import AnswerRow
from labeller.acceptance.suite import Grounding, Suite
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus
from labeller.records import Doc


class SuiteAnswerJudge:
    """A Grounder (acceptance.grounding) judging with labeller.answers; `detail` says what the last call did."""

    def __init__(self, suite: Suite, store: str | None) -> None:
        assert suite.grounding is not None
        self.suite, self.settings, self.store = suite, suite.grounding, store
        where = suite.resolve(self.settings.corpus)
        self.corpus: dict[str, Doc] = read_corpus(where)  # type: ignore[assignment]
        rubric = suite.resolve(self.settings.claim_rubric)
        if rubric is not None and not rubric.is_file():
            raise BadInputError("claim rubric file not found", path=str(rubric), field="grounding.claim_rubric")
        self.rubric = None if rubric is None else str(rubric)
        self.detail = ""

    def inputs(self, rows: Sequence[AnswerRow]) -> tuple[Any, list[str]]:
        from labeller.answers.models import Answer, AnswerInputs, Passage

        cases = {c.id: c for c in self.suite.cases}
        depth = self.settings.depth or self.suite.suite.k
        passages: dict[str, list[Passage]] = {}
        unknown: list[str] = []
        for row in rows:
            shown = row.returned[:depth]
            unknown += [d for d in shown if d not in self.corpus and d not in unknown]
            passages[row.query_id] = [Passage(passage_id=d, doc_id=d, text=self.corpus[d].text)
                                      for d in shown if d in self.corpus]
        required = {r.query_id: sorted({e.doc_id for e in cases[r.query_id].evidence}) for r in rows
                    if cases[r.query_id].evidence}
        inputs = AnswerInputs(
            questions={r.query_id: cases[r.query_id].query for r in rows},
            answers=[Answer(query_id=r.query_id, answer=r.answer, citations=r.citations or None) for r in rows],
            passages=passages, required=required or None,
            outcomes={r.query_id: cases[r.query_id].expected for r in rows})
        return inputs, unknown

    def __call__(self, rows: Sequence[AnswerRow]) -> list[dict[str, Any]]:
        from labeller.answers import AnswerOptions, grounding_records, judge_answers
        from labeller.answers.models import Thresholds
        from labeller.labelling import LabelOptions

        inputs, unknown = self.inputs(rows)
        g: Grounding = self.settings
        options = AnswerOptions(judge=g.judge, claim_rubric=self.rubric, store=self.store, base_url=g.base_url,
                                labelling=LabelOptions(max_cost=g.max_cost), thresholds=Thresholds(max_failures=None))
        report = judge_answers(inputs, options)
        requests = sum(s.requests for s in report.stats.values())
        cost = sum(s.cost_usd for s in report.stats.values())
        self.detail = (f"judge {report.judge}, {report.claims} claims, {requests} requests sent (${cost:.4f})"
                       + (f"; {len(report.failures)} claims or splits the judge could not give" if report.failures
                          else "")
                       + (f"; {len(unknown)} returned documents not in the grounding corpus (first '{unknown[0]}') "
                          "not shown to the judge" if unknown else ""))
        return grounding_records(report)
