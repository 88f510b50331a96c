"""The answer judge held against people: its claim verdicts (an AnswerReport) against a gold file of claim verdicts
or answer-level grounded / not-grounded labels.

Gold rows (JSONL, CSV, Parquet), either form, mixed freely:
- {query_id, claim_id or claim, verdict: supported | contradicted | not_supported, annotator?, note?}: a claim is
  matched by its id, else by its text (case and whitespace folded) among the query's claims;
- {query_id, grounded: true | false, annotator?, note?}: an answer is grounded by the judge when every one of its
  judged claims is supported.

Figures: Cohen's kappa over the three verdicts (labeller.agreement.kappa, sklearn's), accuracy, the confusion
matrix (gold rows x judge columns), precision / recall / F1 of unsupported-claim detection (positive: a claim not
supported, i.e. not_supported or contradicted), the same for answers, and every disagreement with both sides' words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.agreement.kappa import cohen_kappa
from labeller.answers.inputs import _flag, _refuse_unknown
from labeller.answers.models import AnswerReport
from labeller.canaries.factrecall import normalise
from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require
from labeller.tasks.claims import CLAIM_VERDICTS

Verdict = Literal["supported", "contradicted", "not_supported"]
_COLUMNS = ("query_id", "claim_id", "claim", "verdict", "grounded", "annotator", "note", "created_at")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Detection(_Record):
    """Precision / recall / F1 of finding what is not supported (positive class: not supported)."""

    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    f1: float | None


class Disagreement(_Record):
    query_id: str
    claim_id: str | None  # None: an answer-level disagreement
    claim: str
    gold: str
    judge: str
    gold_note: str
    judge_justification: str


class ClaimAgreement(_Record):
    claims: int  # gold claims matched to a judged claim
    kappa: float | None
    accuracy: float | None
    confusion: list[list[int]]  # gold rows x judge columns, in `labels` order
    labels: list[str] = Field(default_factory=lambda: list(CLAIM_VERDICTS))
    unsupported: Detection
    answers: int  # answer-level gold rows matched
    answer_unsupported: Detection | None
    disagreements: list[Disagreement]
    unmatched: list[str]  # gold rows with no judged claim or answer to compare (query_id: claim)


def detection(gold_bad: list[bool], judge_bad: list[bool]) -> Detection:
    tp = sum(g and j for g, j in zip(gold_bad, judge_bad))
    fp = sum(j and not g for g, j in zip(gold_bad, judge_bad))
    fn = sum(g and not j for g, j in zip(gold_bad, judge_bad))
    tn = len(gold_bad) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if precision and recall:
        f1: float | None = 2 * precision * recall / (precision + recall)
    else:  # nothing found right: 0 when both sides had positives, undefined otherwise
        f1 = 0.0 if tp + fp and tp + fn else None
    r = lambda v: None if v is None else round(v, 6)  # noqa: E731
    return Detection(tp=tp, fp=fp, fn=fn, tn=tn, precision=r(precision), recall=r(recall), f1=r(f1))


def verdict_agreement(pairs: list[tuple[str, str]]) -> tuple[float | None, float | None, list[list[int]], Detection]:
    """(kappa, accuracy, confusion, unsupported detection) of (gold, judge) verdict pairs."""
    code = {v: i for i, v in enumerate(CLAIM_VERDICTS)}
    gold, judge = [code[g] for g, _ in pairs], [code[j] for _, j in pairs]
    confusion = [[0] * len(CLAIM_VERDICTS) for _ in CLAIM_VERDICTS]
    for g, j in zip(gold, judge):
        confusion[g][j] += 1
    kappa = cohen_kappa(gold, judge, list(range(len(CLAIM_VERDICTS))))
    accuracy = round(sum(g == j for g, j in zip(gold, judge)) / len(gold), 6) if gold else None
    bad = code["supported"]
    return (None if kappa is None else round(kappa, 6), accuracy, confusion,
            detection([g != bad for g in gold], [j != bad for j in judge]))


def claim_agreement(report: AnswerReport, gold_path: str | Path) -> ClaimAgreement:
    path = Path(gold_path)
    by_query = {r.query_id: r for r in report.answers}
    claim_pairs: list[tuple[str, str]] = []
    answer_gold: list[bool] = []
    answer_judge: list[bool] = []
    disagreements: list[Disagreement] = []
    unmatched: list[str] = []
    for line, row in read_rows(path):
        _refuse_unknown(row, _COLUMNS, str(path), line)
        qid = require(row, "query_id", path, line)
        note = str(row.get("note") or "")
        record = by_query.get(qid)
        if row.get("grounded") not in (None, ""):
            grounded = _flag(row["grounded"], str(path), line)
            judged = [c for c in record.claims if c.verdict is not None] if record else []
            if record is None or not judged:
                unmatched.append(f"{qid}: (answer)")
                continue
            judge_grounded = all(c.verdict == "supported" for c in judged)
            answer_gold.append(not grounded)
            answer_judge.append(not judge_grounded)
            if grounded != judge_grounded:
                why = "; ".join(f"{c.claim_id} {c.verdict}: {c.justification}"
                                for c in judged if c.verdict != "supported")
                disagreements.append(Disagreement(
                    query_id=qid, claim_id=None, claim=record.answer, gold="grounded" if grounded else "not grounded",
                    judge="grounded" if judge_grounded else "not grounded", gold_note=note,
                    judge_justification=why or "every claim supported"))
            continue
        verdict = require(row, "verdict", path, line)
        if verdict not in CLAIM_VERDICTS:
            raise BadInputError(f"unknown verdict '{verdict}'; expected one of {', '.join(CLAIM_VERDICTS)}",
                                path=str(path), line=line, field="verdict")
        wanted_id, wanted_text = row.get("claim_id"), normalise(str(row.get("claim") or ""))
        if not wanted_id and not wanted_text:
            raise BadInputError("expected claim_id or claim (or grounded, for an answer-level label)",
                                path=str(path), line=line, field="claim")
        claim = next((c for c in (record.claims if record else []) if (c.claim_id == wanted_id if wanted_id else
                                                                       normalise(c.text) == wanted_text)), None)
        if claim is None or claim.verdict is None:
            unmatched.append(f"{qid}: {wanted_id or row.get('claim')}")
            continue
        claim_pairs.append((verdict, claim.verdict))
        if verdict != claim.verdict:
            disagreements.append(Disagreement(query_id=qid, claim_id=claim.claim_id, claim=claim.text, gold=verdict,
                                              judge=claim.verdict, gold_note=note,
                                              judge_justification=claim.justification))
    kappa, accuracy, confusion, unsupported = verdict_agreement(claim_pairs)
    return ClaimAgreement(claims=len(claim_pairs), kappa=kappa, accuracy=accuracy, confusion=confusion,
                          unsupported=unsupported, answers=len(answer_gold),
                          answer_unsupported=detection(answer_gold, answer_judge) if answer_gold else None,
                          disagreements=disagreements, unmatched=unmatched)


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def agree_files(report_path: str | Path, gold_path: str | Path, *, min_kappa: float | None = None,
                min_f1: float | None = None) -> tuple[ClaimAgreement, list[str], list[str]]:
    """`labeller answers agree`: (the agreement, its summary lines, the gate checks that failed)."""
    from pydantic import ValidationError

    from labeller.io.validation import validation_error

    path = Path(report_path)
    try:
        report = AnswerReport.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BadInputError("file not found", path=str(path)) from None
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), expected="an answers.json from `labeller answers judge`") from None
    result = claim_agreement(report, gold_path)
    u = result.unsupported
    lines = [f"{result.claims} claims compared: kappa {_num(result.kappa)}, accuracy {_num(result.accuracy)}",
             f"unsupported-claim detection: precision {_num(u.precision)}, recall {_num(u.recall)}, F1 {_num(u.f1)} "
             f"(tp {u.tp}, fp {u.fp}, fn {u.fn}, tn {u.tn})",
             "confusion (rows: gold, columns: judge; " + ", ".join(result.labels) + "):"]
    lines += [f"  {label:14s} " + " ".join(f"{n:5d}" for n in row)
              for label, row in zip(result.labels, result.confusion)]
    if result.answer_unsupported is not None:
        a = result.answer_unsupported
        lines.append(f"{result.answers} answers compared: not-grounded detection precision {_num(a.precision)}, "
                     f"recall {_num(a.recall)}, F1 {_num(a.f1)}")
    for d in result.disagreements:
        lines.append(f"  {d.query_id} {d.claim_id or '(answer)'}: gold {d.gold}, judge {d.judge}: {d.claim[:120]}")
        lines.append(f"      gold: {d.gold_note or '–'} | judge: {d.judge_justification}")
    if result.unmatched:
        lines.append(f"{len(result.unmatched)} gold rows matched nothing judged: {', '.join(result.unmatched[:10])}")
    failed = []
    if min_kappa is not None and (result.kappa is None or result.kappa < min_kappa):
        failed.append(f"kappa {_num(result.kappa)} < {min_kappa:g}")
    if min_f1 is not None and (u.f1 is None or u.f1 < min_f1):
        failed.append(f"F1 {_num(u.f1)} < {min_f1:g}")
    return result, lines, failed
