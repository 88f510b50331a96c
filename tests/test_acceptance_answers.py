"""The answer-grounding gates judged by labeller.answers: a real HTTP system on loopback answers each case, the
suite's [grounding] judge (offline) splits every held-out answer into claims and judges them against the texts of
the documents the system returned. A hallucinating system is blocked (exit 1, cause answer grounding), a grounded
one passes, a rerun sends the judge nothing."""

import json

import pytest
from acceptance_helpers import CASES, write_candidate, write_suite
from acceptance_kb import DOCS, HttpKB

from labeller.cli import main

GATES = {"groundedness": 0.9, "max_unsupported_generation_rate": 0.0, "max_missing_evidence_rate": 0.0}


def suite_with_judge(tmp_path, grounding='corpus = "corpus.jsonl"', **kw):
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": d, "text": v["text"]}) + "\n"
                                                   for d, v in DOCS.items()), encoding="utf-8")
    return write_suite(tmp_path, {**GATES, **kw.pop("thresholds", {})}, extra=f"\n[grounding]\n{grounding}\n", **kw)


def run(tmp_path, capsys, suite, faults, *more):
    with HttpKB(faults) as kb:
        cand = write_candidate(tmp_path, "kb", "http", {"url": kb.url + "/search"})
        with pytest.raises(SystemExit) as done:
            main(["acceptance", "run", "--suite", str(suite), "--candidate", str(cand), "--out",
                  str(tmp_path / "r.json"), "--cache", str(tmp_path / "verdicts"), *map(str, more)])
    out = capsys.readouterr()
    result = json.loads((tmp_path / "r.json").read_text())["results"][0] if (tmp_path / "r.json").exists() else None
    return int(done.value.code or 0), out.out, out.err, result


def gates(result):
    return {g["gate"]: g for g in result["gates"] if g["gate"] in ("grounding", "unsupported_generation",
                                                                   "missing_evidence")}


def test_a_grounded_system_passes_and_a_rerun_sends_the_judge_nothing(tmp_path, capsys):
    suite = suite_with_judge(tmp_path)
    code, out, _, result = run(tmp_path, capsys, suite, ("grounded",))
    judged = gates(result)
    assert code == 0 and result["passed"], out
    assert {g: v["status"] for g, v in judged.items()} == dict.fromkeys(judged, "pass") and len(judged) == 3
    assert judged["grounding"]["measured"] == 1.0 and judged["grounding"]["n"] == 2  # c1 and c2, held out
    assert "judge offline:lexical, 2 claims, 4 requests sent" in judged["grounding"]["detail"]
    code, _, _, again = run(tmp_path, capsys, suite, ("grounded",))
    assert code == 0 and "2 claims, 0 requests sent" in gates(again)["grounding"]["detail"]


def test_a_hallucinating_system_is_blocked_with_answer_grounding_as_the_cause(tmp_path, capsys):
    suite = suite_with_judge(tmp_path)
    code, out, _, result = run(tmp_path, capsys, suite, ("hallucinate",), "--triage", tmp_path / "triage.json")
    judged = gates(result)
    assert code == 1 and not result["passed"]
    assert judged["grounding"]["status"] == "fail" and judged["grounding"]["measured"] == 0.0
    assert judged["unsupported_generation"]["status"] == "fail" and judged["unsupported_generation"]["measured"] == 1
    assert judged["missing_evidence"]["status"] == "pass"  # the evidence was there: generation's fault alone
    assert {(f["case_id"], f["cause"]) for f in judged["unsupported_generation"]["failures"]} == {
        ("c1", "answer_grounding"), ("c2", "answer_grounding")}
    entries = {e["case_id"]: e for e in json.loads((tmp_path / "triage.json").read_text())["entries"]}
    assert {entries[c]["cause"] for c in ("c1", "c2")} == {"answer_grounding"}
    assert "grounding" in out and "FAIL" in out


def test_missing_evidence_is_attributed_to_retrieval(tmp_path, capsys):
    # "drop": inv-2 is never returned, so c2's grounded-sounding answer rests on inv-1 while its evidence is missing
    suite = suite_with_judge(tmp_path, thresholds={"evidence_coverage": None, "metrics": None})
    code, _, _, result = run(tmp_path, capsys, suite, ("grounded", "drop"))
    missing = gates(result)["missing_evidence"]
    assert code == 1 and missing["status"] == "fail" and missing["measured"] == 0.5
    assert [(f["case_id"], f["cause"]) for f in missing["failures"]] == [("c2", "retrieval_coverage")]


def test_one_held_out_answer_is_enough_to_fail(tmp_path, capsys):
    one = "[[cases]]" + CASES.split("[[cases]]")[1]  # c1 alone
    suite = suite_with_judge(tmp_path, cases=one, thresholds={"no_answer": None, "access_denied": None},
                             access="")
    code, _, _, result = run(tmp_path, capsys, suite, ("hallucinate",))
    assert code == 1 and gates(result)["grounding"]["status"] == "fail" and gates(result)["grounding"]["n"] == 1
    code, _, _, result = run(tmp_path, capsys, suite, ("grounded",))
    assert gates(result)["grounding"]["status"] == "pass" and gates(result)["grounding"]["n"] == 1


def test_no_answers_abstain_and_block(tmp_path, capsys):
    suite = suite_with_judge(tmp_path)
    code, _, _, result = run(tmp_path, capsys, suite, ())
    assert code == 1 and {g["status"] for g in gates(result).values()} == {"abstain"}


@pytest.mark.parametrize("grounding, thresholds, message", [
    ('corpus = "nope.jsonl"', {}, "nope.jsonl"),
    ('corpus = "corpus.jsonl"\nclaim_rubric = "missing.md"', {}, "missing.md"),
    ('corpus = "corpus.jsonl"\njudges = "x"', {}, "judges"),
    ('corpus = "corpus.jsonl"', {"groundedness": None, "max_unsupported_generation_rate": None,
                                 "max_missing_evidence_rate": None}, "[thresholds] sets none"),
])
def test_a_bad_grounding_table_is_refused_before_any_system_is_asked(tmp_path, capsys, grounding, thresholds,
                                                                     message):
    suite = suite_with_judge(tmp_path, grounding, thresholds=thresholds)
    code, _, err, result = run(tmp_path, capsys, suite, ("grounded",))
    assert code == 2 and message in err and result is None


def test_a_suite_judge_and_a_grounding_function_together_are_refused(tmp_path, capsys):
    suite = suite_with_judge(tmp_path)
    code, _, err, _ = run(tmp_path, capsys, suite, ("grounded",), "--grounding", "acceptance_helpers:citing_grounder")
    assert code == 2 and "--grounding" in err and "keep one" in err


@pytest.mark.parametrize("marker, code, status", [("[[supported:inv-1]]", 0, "pass"), ("[[not_supported]]", 1, "fail")])
def test_an_llm_answer_judge_through_the_openai_sdk(tmp_path, capsys, monkeypatch, marker, code, status):
    from fakeapi import FakeAPI

    key = "sk-acceptance-SECRET-31"
    with FakeAPI(api_key=key) as api:
        monkeypatch.setenv("OPENAI_API_KEY", key)
        suite = suite_with_judge(tmp_path, 'corpus = "corpus.jsonl"\njudge = "openai:gpt-4.1-mini"\n'
                                           f'base_url = "{api.openai_url}"')
        got, out, err, result = run(tmp_path, capsys, suite, (f"answer:Kite couriers sent it {marker}.",))
        sent = api.total
    assert got == code and gates(result)["grounding"]["status"] == status, err
    assert sent == 4  # two held-out answers: a split and one claim verdict each
    assert "judge openai:gpt-4.1-mini, 2 claims, 4 requests sent" in gates(result)["grounding"]["detail"]
    assert key not in out + err + (tmp_path / "r.json").read_text()
