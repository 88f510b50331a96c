"""Answerable, no-answer and access-denied queries are different outcomes, scored apart.

For a no-answer query (the corpus holds no answer) and an access-denied query (the answer exists
but this user may not see it) abstaining is the right answer. Their results are never averaged into
relevance metrics: `answerable_ids` gives the only queries relevance metrics should be computed on.

An outcomes file has rows {query_id, outcome} with outcome one of answerable, no_answer,
access_denied; queries it does not list are answerable. A system abstains on a query when it
returns nothing (or nothing scoring at least `min_score`), or when an answers file says
{query_id, abstained: true}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from labeller.errors import BadInputError
from labeller.io.inputs import check_known
from labeller.io.memory import as_source
from labeller.io.tables import read_rows, require
from labeller.records import RunEntry

Outcome = Literal["answerable", "no_answer", "access_denied"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


def refuse_unknown(row: Mapping[str, object], known: tuple[str, ...], path: Path, line: int, what: str) -> None:
    """Every field of the older acceptance files is used or refused: identities, source URIs, revisions and
    reviewers are suite fields (labeller acceptance run), not columns these files can carry."""
    extra = sorted(set(row) - set(known))
    if extra:
        raise BadInputError(f"unknown field; {what} rows have {', '.join(known)}. Identities, source URIs, "
                            "revisions and reviewers belong in a suite: see `labeller acceptance run` "
                            "(docs/acceptance.md)", path=str(path), line=line, field=extra[0])


class OutcomeScore(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    outcome: Outcome
    n: int
    abstained: int
    correct: int  # answered for answerable queries, abstained for the other two
    rate: float | None  # correct / n; None when there are no such queries
    wrong: list[str]  # query ids handled wrongly: false abstentions, or answers/leaks


class OutcomeReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    outcomes: list[OutcomeScore]  # one per outcome; deliberately no overall average


def read_outcomes(path: str | Path, queries: Mapping[str, object] | None = None) -> dict[str, Outcome]:
    """Rows {query_id, outcome}; each query_id must be one of `queries` when they are given."""
    path = as_source(path)
    out: dict[str, Outcome] = {}
    for line, row in read_rows(path):
        refuse_unknown(row, ("query_id", "outcome"), path, line, "outcomes")
        qid = require(row, "query_id", path, line)
        check_known(qid, "", queries, None, path, line)
        value = require(row, "outcome", path, line)
        if value not in OUTCOMES:
            raise BadInputError(f"unknown outcome '{value}'; expected one of {', '.join(OUTCOMES)}",
                                path=str(path), line=line, field="outcome")
        if qid in out:
            raise BadInputError(f"query '{qid}' is listed twice", path=str(path), line=line, field="query_id")
        out[qid] = value  # type: ignore[assignment]
    return out


def read_abstentions(path: str | Path) -> dict[str, bool]:
    """An answers file with {query_id, abstained} rows (true/false, 1/0, yes/no)."""
    path = Path(path)
    out: dict[str, bool] = {}
    for line, row in read_rows(path):
        refuse_unknown(row, ("query_id", "abstained"), path, line, "answers")
        qid = require(row, "query_id", path, line)
        raw = row.get("abstained")
        value = str(raw).strip().lower() if raw is not None else ""
        if value not in ("true", "false", "1", "0", "yes", "no"):
            raise BadInputError(f"expected true or false, got {raw!r}", path=str(path), line=line, field="abstained")
        out[qid] = value in ("true", "1", "yes")
    return out


def abstentions_from_run(query_ids: Iterable[str], entries: Sequence[RunEntry],
                         min_score: float | None = None) -> dict[str, bool]:
    """A query abstained when the run has no entry for it (scoring at least min_score, when given)."""
    answered = {e.query_id for e in entries if min_score is None or e.score >= min_score}
    return {qid: qid not in answered for qid in query_ids}


def answerable_ids(query_ids: Iterable[str], expected: Mapping[str, Outcome]) -> list[str]:
    """The queries relevance metrics may be computed on."""
    return [q for q in query_ids if expected.get(q, "answerable") == "answerable"]


def outcome_report(expected: Mapping[str, Outcome], abstained: Mapping[str, bool]) -> OutcomeReport:
    """Score each outcome class on its own. `expected` lists every query (answerable ones included)."""
    missing = sorted(q for q in expected if q not in abstained)
    if missing:
        raise BadInputError(f"no response for {len(missing)} quer{'y' if len(missing) == 1 else 'ies'} "
                            f"(first: '{missing[0]}'); expected an abstained flag or run entries for every query")
    scores = []
    for outcome in OUTCOMES:
        qids = sorted(q for q, o in expected.items() if o == outcome)
        absent = [q for q in qids if abstained[q]]
        wrong = sorted(set(qids) - set(absent)) if outcome != "answerable" else absent
        correct = len(qids) - len(wrong)
        scores.append(OutcomeScore(outcome=outcome, n=len(qids), abstained=len(absent), correct=correct,
                                   rate=correct / len(qids) if qids else None, wrong=wrong))
    return OutcomeReport(outcomes=scores)
