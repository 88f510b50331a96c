"""Revocation, deletion and index lag: a change hook revokes or deletes, labeller re-asks until the document
is gone or a timeout passes; for a stored run, the post-change run is compared."""

import pytest
from acceptance_helpers import write_candidate, write_suite
from acceptance_kb import HttpKB, KnowledgeBase

from labeller.acceptance.job import ReportPaths, acceptance_run
from labeller.acceptance.runner import RunOptions
from labeller.acceptance.suite import read_suite
from labeller.errors import BadInputError
from labeller.retrieval import Hit
from labeller.systems.callable import CallableSystem
from labeller.systems.registry import CandidateSpec


def revocation(action="revoke", timeout=3.0, case="c1", doc="inv-1"):
    return (f'\n[[revocations]]\nid = "r1"\ncase = "{case}"\ndoc_id = "{doc}"\naction = "{action}"\n'
            f"timeout_s = {timeout}\ninterval_s = 0.05\n")


def lag_gate(result):
    return next(g for g in result.gates if g.gate == "revocation")


def http_with_hook(tmp_path, faults, thresholds=None, **rev):
    suite = write_suite(tmp_path, thresholds, extra=revocation(**rev))
    with HttpKB(faults) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"}, hook={"url": kb.url + "/change"})
        [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand]), ReportPaths())
    return result


def test_a_revocation_that_takes_effect_reports_its_lag(tmp_path):
    result = http_with_hook(tmp_path, ("lag:0.4",), {"max_revocation_lag_s": 10})
    [record] = result.revocations
    assert record["status"] == "gone" and record["lag_s"] >= 0.4 and record["polls"] >= 2
    assert lag_gate(result).status == "pass" and result.passed


def test_a_lag_over_the_threshold_fails(tmp_path):
    result = http_with_hook(tmp_path, ("lag:0.4",), {"max_revocation_lag_s": 0.1})
    gate = lag_gate(result)
    assert gate.status == "fail" and "over the 0.1 s allowed" in gate.failures[0].reason and not result.passed


@pytest.mark.parametrize("action, cause", [("revoke", "permissions"), ("delete", "operations")])
def test_a_document_still_returned_after_the_timeout_fails(tmp_path, action, cause):
    result = http_with_hook(tmp_path, ("lag:60",), action=action, timeout=0.5)
    gate = lag_gate(result)
    assert gate.status == "fail" and gate.failures[0].case_id == "c1" and gate.failures[0].doc_id == "inv-1"
    assert gate.failures[0].cause == cause and "still returned 0.5 s after the change" in gate.failures[0].reason


def test_a_python_change_hook(tmp_path):
    kb = KnowledgeBase()

    class Retriever:
        name = "kb"

        def search(self, query, k, identity=None):
            return [Hit(doc_id=r["doc_id"], score=r["score"])
                    for r in kb.search(query, identity.user, list(identity.groups), k)["results"]]

    suite = write_suite(tmp_path, extra=revocation(action="delete"))
    spec = CandidateSpec(name="py", kind="callable", system={"retriever": "x"})
    [result] = acceptance_run(RunOptions(suite=suite, systems=[(spec, CallableSystem(Retriever(), "py"))],
                                         change_hooks={"py": kb.change}), ReportPaths())
    assert result.revocations[0]["status"] == "gone" and "inv-1" in kb.deleted


def test_a_live_system_without_a_hook_abstains_and_blocks(tmp_path):
    suite = write_suite(tmp_path, extra=revocation())
    with HttpKB() as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"})
        [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand]), ReportPaths())
    assert lag_gate(result).status == "abstain" and not result.passed


def test_a_failing_hook_is_named(tmp_path):
    suite = write_suite(tmp_path, extra=revocation())
    with HttpKB() as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"},
                               hook={"url": "http://127.0.0.1:9/change"})  # nothing listens on port 9
        [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand]), ReportPaths())
    assert "change hook" in lag_gate(result).failures[0].reason and not result.passed


@pytest.mark.parametrize("after, status", [("c1 Q0 inv-2 1 1.0 x\n", "pass"), ("c1 Q0 inv-1 1 1.0 x\n", "fail")])
def test_a_stored_run_is_compared_with_its_post_change_run(tmp_path, after, status):
    (tmp_path / "run.trec").write_text("c1 Q0 inv-1 1 2.0 x\nc2 Q0 inv-2 1 2.0 x\nt1 Q0 pub-1 1 1.0 x\n")
    (tmp_path / "after.trec").write_text(after)
    suite = write_suite(tmp_path, extra=revocation())
    cand = write_candidate(tmp_path, "stored", "runfile", {"run": "run.trec"}, hook={"post_change_run": "after.trec"})
    [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand]), ReportPaths())
    assert lag_gate(result).status == status and result.revocations[0]["lag_s"] is None


def test_a_revocation_of_an_unknown_case_is_refused(tmp_path):
    with pytest.raises(BadInputError, match="unknown case 'c9'"):
        read_suite(write_suite(tmp_path, extra=revocation(case="c9")))
