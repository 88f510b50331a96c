"""Claim mode of the annotation page: people judge an answer report's claims blind (the judge's verdict is never
sent to the page), and each judgment is appended to a gold file `labeller answers agree` reads.

One person per session (`--annotator`); a gold file that exists is resumed (the claims this person judged already
are skipped). A row: {query_id, claim_id, claim, verdict, annotator, note, created_at}.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from labeller.answers.models import AnswerReport
from labeller.errors import BadInputError
from labeller.io.tables import read_rows
from labeller.store.base import now_iso
from labeller.tasks.claims import CLAIM_VERDICTS


class ClaimSession:
    def __init__(self, report: AnswerReport, gold: str | Path, annotator: str) -> None:
        if not annotator.strip():
            raise BadInputError("--annotator is empty; expected the name of the person judging", field="annotator")
        self.report, self.gold, self.annotator = report, Path(gold), annotator.strip()
        self.items = [(record, claim) for record in report.answers for claim in record.claims]
        self.by_id = {claim.claim_id: (record, claim) for record, claim in self.items}
        self.done: set[str] = set()
        if self.gold.is_file():
            for _, row in read_rows(self.gold):
                if row.get("annotator") == self.annotator and row.get("claim_id"):
                    self.done.add(str(row["claim_id"]))
        self.lock = threading.Lock()

    def queue(self) -> dict[str, Any]:
        """The next claim this person has not judged: the claim, the question and the passages; never a verdict."""
        with self.lock:
            left = [(r, c) for r, c in self.items if c.claim_id not in self.done]
            base = {"annotator": self.annotator, "done": len(self.items) - len(left), "total": len(self.items)}
            if not left:
                return {**base, "claim": None}
            record, claim = left[0]
            return {**base, "claim": {"claim_id": claim.claim_id, "query_id": record.query_id, "text": claim.text,
                                      "question": record.question, "answer": record.answer,
                                      "passages": [{"id": p.passage_id, "text": p.text} for p in record.passages]}}

    def judge(self, body: dict[str, Any]) -> dict[str, Any]:
        claim_id, verdict, note = body.get("claim_id"), body.get("verdict"), body.get("note", "")
        if claim_id not in self.by_id:
            raise BadInputError(f"unknown claim {claim_id!r}")
        if verdict not in CLAIM_VERDICTS:
            raise BadInputError(f"verdict must be one of {', '.join(CLAIM_VERDICTS)}")
        if not isinstance(note, str):
            raise BadInputError("note must be text")
        record, claim = self.by_id[claim_id]
        row = {"query_id": record.query_id, "claim_id": claim_id, "claim": claim.text, "verdict": verdict,
               "annotator": self.annotator, "note": note, "created_at": now_iso()}
        with self.lock:
            if claim_id not in self.done:  # a double click judges once
                with open(self.gold, "a", encoding="utf-8") as out:  # appended and synced: a crash loses nothing
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                self.done.add(claim_id)
        return self.queue()


def load_report(path: str | Path) -> AnswerReport:
    from pydantic import ValidationError

    from labeller.io.validation import validation_error

    path = Path(path)
    try:
        return AnswerReport.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BadInputError("file not found", path=str(path)) from None
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), expected="an answers.json from `labeller answers judge`") from None
