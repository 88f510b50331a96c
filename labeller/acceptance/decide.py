"""`labeller acceptance decide`: the reviewer's disposition and the release decision, recorded beside the
results, append-only (one JSON line per decision; earlier lines are never rewritten).

A decision names who decided, when, the suite digest, the results file and its sha256, and the verdict
the results gave. `release` is refused on failing results: releasing despite failures is
`release_with_exceptions`, which needs a written disposition.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labeller.acceptance.job import read_results
from labeller.errors import BadInputError
from labeller.io.outputs import check_outputs


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decided_by: str = Field(min_length=1)
    decided_at: str
    decision: Literal["release", "block", "release_with_exceptions"]
    disposition: str = ""
    suite_digest: str
    results_file: str
    results_sha256: str
    verdict: Literal["PASS", "FAIL"]
    candidates: dict[str, bool]  # name -> passed


def record_decision(results: Path, decisions: Path, by: str, decision: str, disposition: str = "") -> Decision:
    check_outputs(inputs=[results], files={"--decisions": decisions})
    found = read_results(results)
    passed = {r.candidate["name"]: r.passed for r in found}
    verdict = "PASS" if found and all(passed.values()) else "FAIL"
    if decision == "release" and verdict == "FAIL":
        failing = ", ".join(n for n, ok in passed.items() if not ok)
        raise BadInputError(f"the results fail ({failing}); `release` needs passing results. To release anyway, "
                            "decide release_with_exceptions with a --disposition saying why", path=str(results))
    if decision == "release_with_exceptions" and not disposition.strip():
        raise BadInputError("release_with_exceptions needs a --disposition saying why", field="disposition")
    digests = {r.conditions.suite_digest for r in found}
    if len(digests) != 1:
        raise BadInputError("the results answer different suites", path=str(results))
    if decisions.exists():  # append-only: an unreadable log is not appended to (or repaired)
        for n, line in enumerate(decisions.read_text(encoding="utf-8").splitlines(), 1):
            try:
                Decision.model_validate(json.loads(line))
            except ValueError:
                raise BadInputError("not a decision record; the decision log is append-only and was left as is",
                                    path=str(decisions), line=n) from None
    record = Decision(decided_by=by, decided_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      decision=decision, disposition=disposition, suite_digest=digests.pop(),
                      results_file=str(results), results_sha256=hashlib.sha256(results.read_bytes()).hexdigest(),
                      verdict=verdict, candidates=passed)
    with open(decisions, "a", encoding="utf-8") as log:
        log.write(record.model_dump_json() + "\n")
    return record
