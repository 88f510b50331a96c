"""Revocation, deletion and index lag: after a change, how long until the document stops coming back?

For a live system, the candidate's change hook (a Python callable, or an HTTP endpoint POSTed
{"action", "doc_id", "user", "groups"}) revokes the identity's access to a document or deletes it;
labeller then re-asks the case's query as the case's identity every `interval_s` until the document is
gone or `timeout_s` passes, and reports the lag. For a stored run, the `post_change_run` made after the
change is read instead: the document must be absent from the case's results there (no lag can be timed).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labeller.acceptance.execute import request_of
from labeller.acceptance.result import Failure, GateResult
from labeller.acceptance.suite import Revocation, Suite
from labeller.errors import BadInputError, redact
from labeller.systems.base import SystemUnderTest
from labeller.systems.registry import CandidateSpec

Hook = Callable[..., Any]


def hook_of(spec: CandidateSpec, given: Hook | None) -> Hook | None:
    if given is not None:
        return given
    h = spec.change_hook
    if h is None or (h.callable is None and h.url is None):
        return None
    if h.callable is not None:
        from labeller.retrieval.imported import load_object

        return load_object(h.callable)
    secret = os.environ.get(h.auth_env) if h.auth_env else None
    if h.auth_env and not secret:
        raise BadInputError(f"the change hook's auth header comes from ${h.auth_env}, which is not set",
                            path=spec.path or None, field="change_hook.auth_env")

    def post(**change: Any) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        try:
            reply = httpx.post(h.url, json=change, headers=headers, timeout=30)
        except httpx.HTTPError as exc:
            raise RuntimeError(redact(f"change hook call failed: {type(exc).__name__}: {exc}", [secret])) from None
        if reply.status_code >= 400:
            raise RuntimeError(f"change hook answered HTTP {reply.status_code}")
    return post


def _live(system: SystemUnderTest, suite: Suite, rev: Revocation, hook: Hook) -> dict[str, Any]:
    case = next(c for c in suite.cases if c.id == rev.case)
    request = request_of(case, suite.suite.k)
    record: dict[str, Any] = {"id": rev.id, "case": rev.case, "doc_id": rev.doc_id, "action": rev.action}
    if rev.doc_id not in [r.doc_id for r in system.search(request).results]:
        return {**record, "status": "abstain", "reason": "the document was not returned before the change"}
    try:
        hook(action=rev.action, doc_id=rev.doc_id, user=case.identity.user, groups=list(case.identity.groups))
    except Exception as exc:  # the hook is the user's code or endpoint: its failure is named, not raised
        return {**record, "status": "abstain", "reason": f"change hook failed: {type(exc).__name__}: {exc}"}
    changed, polls = time.monotonic(), 0
    while True:
        polls += 1
        response = system.search(request)
        lag = time.monotonic() - changed
        if response.error is None and rev.doc_id not in [r.doc_id for r in response.results]:
            return {**record, "status": "gone", "lag_s": round(lag, 3), "polls": polls}
        if lag >= rev.timeout_s:
            return {**record, "status": "still_returned", "lag_s": None, "polls": polls,
                    "reason": f"still returned {rev.timeout_s:g} s after the change"}
        time.sleep(rev.interval_s)


def _stored(spec: CandidateSpec, suite: Suite, rev: Revocation) -> dict[str, Any]:
    from labeller.systems.runfile import RunFileSystem

    record: dict[str, Any] = {"id": rev.id, "case": rev.case, "doc_id": rev.doc_id, "action": rev.action}
    after = spec.change_hook.post_change_run if spec.change_hook else None
    if after is None:
        return {**record, "status": "abstain", "reason": "a stored run needs [change_hook] post_change_run"}
    run = RunFileSystem.from_file(Path(spec.path).parent / after, spec.name)
    gone = rev.doc_id not in run.ranked.get(rev.case, [])[:suite.suite.k]
    return {**record, "status": "gone" if gone else "still_returned", "lag_s": None,
            **({} if gone else {"reason": "still returned in the post-change run"})}


def revocation_gate(suite: Suite, spec: CandidateSpec, system: SystemUnderTest,
                    hook: Hook | None) -> tuple[list[dict[str, Any]], list[GateResult]]:
    if not suite.revocations:
        return [], []
    hook = hook_of(spec, hook) if system.live else None
    records = []
    for rev in suite.revocations:
        if system.live and hook is None:
            records.append({"id": rev.id, "case": rev.case, "doc_id": rev.doc_id, "action": rev.action,
                            "status": "abstain", "reason": "no change hook: give [change_hook] callable or url"})
        else:
            records.append(_live(system, suite, rev, hook) if system.live else _stored(spec, suite, rev))
    limit = suite.thresholds.max_revocation_lag_s
    failures = []
    for r in records:
        late = r["status"] == "gone" and limit is not None and r.get("lag_s") is not None and r["lag_s"] > limit
        if r["status"] != "gone" or late:
            reason = r.get("reason") or f"gone after {r['lag_s']} s, over the {limit} s allowed"
            failures.append(Failure(case_id=r["case"], doc_id=r["doc_id"], reason=f"{r['action']}: {reason}",
                                    cause="permissions" if r["action"] == "revoke" else "operations"))
    status = "pass" if not failures else (
        "abstain" if all(r["status"] == "abstain" for r in records) else "fail")
    lags = [r["lag_s"] for r in records if r.get("lag_s") is not None]
    return records, [GateResult(gate="revocation", status=status, measured=max(lags) if lags else None,
                                threshold=limit, n=len(records), failures=failures,
                                detail="documents gone after revocation or deletion; measured: the longest lag (s)")]
