"""Triage across reruns, the append-only decision record, bake-offs and comparisons, redaction, and the
answer-grounding seam."""

import json

import pytest
from acceptance_helpers import CASES, write_candidate, write_suite
from acceptance_kb import HttpKB

from labeller.acceptance.job import ReportPaths, acceptance_run
from labeller.acceptance.runner import RunOptions
from labeller.cli import main


def cli(args, capsys):
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def run_http(tmp_path, faults=(), suite=None, triage=True, name="kb", **kw):
    suite = suite or write_suite(tmp_path)
    with HttpKB(faults) as kb:
        cand = write_candidate(tmp_path, name, "http", {"url": kb.url + "/search"})
        [result] = acceptance_run(RunOptions(suite=suite, candidates=[cand],
                                             triage=tmp_path / "triage.json" if triage else None, **kw),
                                  ReportPaths(json=tmp_path / f"{name}.json"))
    return result


def entries(tmp_path):
    return {e["case_id"]: e for e in json.loads((tmp_path / "triage.json").read_text())["entries"]}


# -- triage ---------------------------------------------------------------------------------------

def test_triage_sets_causes_keeps_edits_and_marks_fixed_on_rerun(tmp_path):
    run_http(tmp_path, ("drop",))
    first = entries(tmp_path)
    assert first["c2"]["cause"] == "retrieval_coverage" and first["c2"]["status"] == "failing"
    data = json.loads((tmp_path / "triage.json").read_text())
    for e in data["entries"]:
        if e["case_id"] == "c2":
            e.update(owner="omar", retest_date="2026-12-09", cause="retrieval_ranking", cause_set_by="omar")
    (tmp_path / "triage.json").write_text(json.dumps(data))
    rerun = run_http(tmp_path, ("drop",))
    assert any("case 'c2' still failing" in n and "owner omar, retest 2026-12-09" in n for n in rerun.notes)
    again = entries(tmp_path)["c2"]
    assert (again["status"], again["owner"], again["retest_date"], again["cause"]) == (
        "still_failing", "omar", "2026-12-09", "retrieval_ranking")
    fixed = run_http(tmp_path)
    assert entries(tmp_path)["c2"]["status"] == "fixed" and fixed.passed
    assert any("case 'c2' fixed" in n for n in fixed.notes)


@pytest.mark.parametrize("fault, case, cause", [("leak", "c4", "permissions"), ("error:toner", "c2", "integration"),
                                                ("stale", "c1", "source_or_revision")])
def test_the_primary_cause_is_set_where_labeller_can_tell(tmp_path, fault, case, cause):
    run_http(tmp_path, (fault,))
    assert entries(tmp_path)[case]["cause"] == cause


def test_a_silently_changed_held_out_case_refuses_to_pass_until_re_reviewed(tmp_path):
    assert run_http(tmp_path).passed
    changed = write_suite(tmp_path, cases=CASES.replace("toner invoice", "toner invoice supplies"))
    result = run_http(tmp_path, suite=changed)
    gate = next(g for g in result.gates if g.gate == "held_out_integrity")
    assert not result.passed and gate.status == "fail" and gate.failures[0].case_id == "c2"
    assert not run_http(tmp_path, suite=changed).passed  # still refused on the next rerun
    reviewed = CASES.replace("toner invoice", "toner invoice supplies").replace(
        'reviewer = "rita"\nreviewed_at = "2026-11-20"\n[[cases.evidence]]\ndoc_id = "inv-2"',
        'reviewer = "rita"\nreviewed_at = "2026-12-01"\n[[cases.evidence]]\ndoc_id = "inv-2"')
    ok = run_http(tmp_path, suite=write_suite(tmp_path, cases=reviewed))
    assert ok.passed and any("re-reviewed by rita on 2026-12-01" in n for n in ok.notes)


def test_changed_thresholds_are_called_out(tmp_path):
    run_http(tmp_path)
    result = run_http(tmp_path, suite=write_suite(tmp_path, {"evidence_coverage": 0.5}))
    assert any("thresholds changed" in n for n in result.notes)


# -- decision -------------------------------------------------------------------------------------

def test_decide_appends_who_when_digest_and_results(tmp_path, capsys):
    result = run_http(tmp_path, triage=False)
    log = tmp_path / "decisions.jsonl"
    code, out, _ = cli(["acceptance", "decide", "--results", tmp_path / "kb.json", "--decisions", log, "--by", "priya",
                        "--decision", "release", "--disposition", "all gates hold"], capsys)
    assert code == 0 and "recorded: release by priya" in out
    cli(["acceptance", "decide", "--results", tmp_path / "kb.json", "--decisions", log, "--by", "lee",
         "--decision", "block"], capsys)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["decided_by"] for x in lines] == ["priya", "lee"]
    assert lines[0]["suite_digest"] == result.suite["digest"] and lines[0]["verdict"] == "PASS"
    assert len(lines[0]["results_sha256"]) == 64 and lines[0]["candidates"] == {"kb": True}


def test_release_on_failing_results_is_refused(tmp_path, capsys):
    run_http(tmp_path, ("leak",), triage=False)
    log = tmp_path / "decisions.jsonl"
    base = ["acceptance", "decide", "--results", tmp_path / "kb.json", "--decisions", log, "--by", "priya"]
    code, _, err = cli([*base, "--decision", "release"], capsys)
    assert code == 2 and "release_with_exceptions" in err and not log.exists()
    code, _, err = cli([*base, "--decision", "release_with_exceptions"], capsys)
    assert code == 2 and "--disposition" in err
    code, _, _ = cli([*base, "--decision", "release_with_exceptions", "--disposition", "hr-1 ACL fixed upstream"],
                     capsys)
    assert code == 0 and json.loads(log.read_text())["verdict"] == "FAIL"
    log.write_text("not json\n")
    code, _, err = cli([*base, "--decision", "block"], capsys)
    assert code == 2 and "append-only" in err and log.read_text() == "not json\n"


# -- bake-off and comparison ----------------------------------------------------------------------

def test_a_bake_off_reports_candidates_side_by_side_under_identical_conditions(tmp_path, capsys):
    suite = write_suite(tmp_path)
    with HttpKB() as clean, HttpKB(("leak",)) as leaky:
        a = write_candidate(tmp_path, "clean", "http", {"url": clean.url + "/search"})
        b = write_candidate(tmp_path, "leaky", "http", {"url": leaky.url + "/search"})
        code, out, err = cli(["acceptance", "run", "--suite", suite, "--candidate", a, "--candidate", b,
                              "--out", tmp_path / "both.json"], capsys)
    assert code == 1 and "failed for leaky" in err and "clean" not in err.split("failed for")[1]
    assert "| gate | clean | leaky |" in out
    results = json.loads((tmp_path / "both.json").read_text())["results"]
    assert results[0]["conditions"] == results[1]["conditions"]


def test_compare_refuses_results_under_different_conditions(tmp_path, capsys):
    run_http(tmp_path, name="a", triage=False)
    run_http(tmp_path, name="b", triage=False)
    code, out, _ = cli(["acceptance", "compare", tmp_path / "a.json", tmp_path / "b.json"], capsys)
    assert code == 0 and "| gate | a | b |" in out
    run_http(tmp_path, name="c", triage=False, suite=write_suite(tmp_path, workload="warmup = 0\nconcurrency = 1",
                                                                 name="other.toml"))
    code, _, err = cli(["acceptance", "compare", tmp_path / "a.json", tmp_path / "c.json"], capsys)
    assert code == 2 and "workload" in err and "other conditions" in err


# -- redaction ------------------------------------------------------------------------------------

def test_redaction_keeps_no_query_text_in_any_output(tmp_path, capsys):
    suite = write_suite(tmp_path)
    with HttpKB(("error:toner",)) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"})
        code, out, err = cli(["acceptance", "run", "--suite", suite, "--candidate", cand, "--redact", "--out",
                              tmp_path / "r.json", "--md", tmp_path / "r.md", "--html", tmp_path / "r.html",
                              "--triage", tmp_path / "t.json"], capsys)
    assert code == 1 and "[query c2]" in out  # the error echoed the query: replaced
    for text in ("kite couriers invoice", "toner invoice", "zebra migration", "salary review"):
        assert text not in out + err
        for name in ("r.json", "r.md", "r.html", "t.json"):
            assert text not in (tmp_path / name).read_text(), (text, name)
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["redacted"] is True


# -- answer grounding seam ------------------------------------------------------------------------

def test_the_answers_table_and_the_grounding_gate(tmp_path):
    seen = []

    def grounder(rows):
        seen.extend(rows)
        return [{"query_id": r.query_id, "groundedness": 1.0 if r.citations[0] in r.returned else 0.0,
                 "attribution": "correct"} for r in rows]

    suite = write_suite(tmp_path, {"groundedness": 0.9})
    result = run_http(tmp_path, ("answers",), suite=suite, triage=False, grounding=grounder)
    assert {a.query_id for a in result.answers} == {"c1", "c2", "t1"} and result.answers[0].answer.startswith("See")
    assert {r.query_id for r in seen} == {"c1", "c2"}  # held-out answers only
    assert next(g for g in result.gates if g.gate == "grounding").status == "pass" and result.passed

    def harsh(rows):
        return [{"query_id": r.query_id, "groundedness": 0.2, "attribution": "unsupported_generation"} for r in rows]

    failed = run_http(tmp_path, ("answers",), suite=suite, triage=False, grounding=harsh)
    gate = next(g for g in failed.gates if g.gate == "grounding")
    assert gate.status == "fail" and {f.cause for f in gate.failures} == {"answer_grounding"} and not failed.passed
    without = run_http(tmp_path, ("answers",), suite=suite, triage=False)
    assert next(g for g in without.gates if g.gate == "grounding").status == "abstain" and not without.passed
    partial = run_http(tmp_path, ("answers",), suite=suite, triage=False, grounding=lambda rows: harsh(rows)[:1])
    assert next(g for g in partial.gates if g.gate == "grounding").status == "abstain"


def test_the_grounding_judge_named_on_the_command_line(tmp_path, capsys):
    suite = write_suite(tmp_path, {"groundedness": 0.9})
    with HttpKB(("answers",)) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"})
        base = ["acceptance", "run", "--suite", suite, "--candidate", cand, "--out", tmp_path / "r.json"]
        code, out, _ = cli([*base, "--grounding", "acceptance_helpers:citing_grounder"], capsys)
        assert code == 0 and "| grounding | PASS 1" in out
        code, _, err = cli([*base, "--grounding", "acceptance_helpers:nothing_here"], capsys)
    assert code == 2 and "answer judge 'acceptance_helpers:nothing_here'" in err and "--grounding" in err
    answers = json.loads((tmp_path / "r.json").read_text())["results"][0]["answers"]
    assert {"query_id": "c1", "answer": "See inv-1.", "citations": ["inv-1"], "returned": ["inv-1", "inv-2"]} in answers
