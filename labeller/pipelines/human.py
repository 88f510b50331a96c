"""Human grades a pipeline was given (`inputs.gold`, or the qrels of `inputs.beir`) beside the judge's.

A pair a person graded is never sent to the judge: the human grade wins and costs nothing. The judge
fills only the pool pairs nobody graded. The judgments a regression run evaluates with are both, in one
table (query_id, doc_id, grade, judge, justification), every grade on labeller's 1-5 scale.
"""

from __future__ import annotations

from pathlib import Path

from labeller.io.gold import read_grades, settled_grades
from labeller.io.writing import write_rows
from labeller.pipelines.config import PipelineConfig, gold_scale
from labeller.records import Label, Pair, Query

HUMAN = "human"  # the `judge` column of a human grade in the merged judgments


class HumanGrades:
    """The settled human grade of each pair whose query is in today's inputs (qrels often cover more queries:
    those rows are not today's business and are counted, not refused)."""

    def __init__(self, cfg: PipelineConfig, queries: dict[str, Query]):
        self.path = cfg.inputs.gold
        self.grades: dict[tuple[str, str], int] = {}
        self.other_queries = 0
        if self.path is None:
            return
        graded = read_grades(self.path, role="gold", from_scale=gold_scale(cfg))
        for (qid, did), grade in settled_grades(graded).items():
            if qid in queries:
                self.grades[(qid, did)] = grade
            else:
                self.other_queries += 1

    def unjudged(self, pairs: list[Pair]) -> list[Pair]:
        """The pairs no person graded: the only ones the judge is asked about."""
        return [p for p in pairs if (p.query_id, p.doc_id) not in self.grades]

    def judgments(self, labels: list[Label], path: Path) -> Path:
        """Human grades and the judge's labels in one table; a human grade wins over the judge's."""
        rows = [{"query_id": q, "doc_id": d, "grade": g, "judge": HUMAN, "justification": f"gold {self.path.name}"}
                for (q, d), g in self.grades.items()]
        rows += [{"query_id": x.query_id, "doc_id": x.doc_id, "grade": x.grade, "judge": x.judge,
                  "justification": x.justification} for x in labels if (x.query_id, x.doc_id) not in self.grades]
        return write_rows(path, rows)

    def sentence(self, pool: int, judged: int) -> str:
        """How many grades of the pool came from people, how many from the judge."""
        if self.path is None:
            return ""
        extra = (f" ({self.other_queries} gold rows for queries not in inputs.queries left out)"
                 if self.other_queries else "")
        return (f"Human grades from {self.path.name}: {len(self.grades)} used{extra}; {pool - judged} of the "
                f"{pool} pool pairs graded by people (never sent to the judge), {judged} by the judge.")
