"""`labeller answers judge` and labeller.answers end to end: the real CLI in-process and the real OpenAI SDK over
real HTTP to the fake API, which splits answers into sentences and answers each claim's planted verdict (a
[[supported:d1]] / [[contradicted:d6]] / [[not_supported]] marker in the sentence; [[abstain]] marks an
abstention). Each query is planted to land in one attribution class; the offline judge runs the same pipeline
with no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import cli, jsonl
from fakeapi import FakeAPI

KEY = "sk-answers-SECRET-77aa"
DOCS = {f"d{i}": f"Document {i} about the tower." for i in range(1, 9)}
# query -> (answer, required docs, facts, outcome, expected attribution)
PLANTED = {
    "q1": ("The tower is 330 m tall [[supported:d1]].", ["d1"], ["330 m"], "answerable", "ok"),
    "q2": ("The tower is 330 m tall [[supported:d2]]. It is painted gold [[not_supported]].", ["d2"], ["330 m"],
           "answerable", "unsupported_generation"),
    "q3": ("I cannot find that in the documents. [[abstain]]", ["d3"], ["1889"], "answerable", "missing_evidence"),
    "q4": ("It opened in 1925 [[not_supported]].", ["d4"], ["1889"], "answerable", "both"),
    "q5": ("It opened in 1889 [[not_supported]].", ["d5"], ["1889"], "answerable", "correct_without_evidence"),
    "q6": ("It weighs 7 tonnes [[contradicted:d6]].", ["d6"], ["10,100 tonnes"], "answerable", "ignored_context"),
    "q7": ("I am not allowed to share salaries. [[abstain]]", None, None, "access_denied", "ok"),
}
# the run: each query's top docs; d3, d4, d5 are ranked below --depth 2 for q3, q4, q5 (evidence missing)
RUN = {"q1": ["d1", "d8"], "q2": ["d2", "d8"], "q3": ["d7", "d8", "d3"], "q4": ["d7", "d8", "d4"],
       "q5": ["d7", "d8", "d5"], "q6": ["d6", "d8"], "q7": ["d8"]}


def write_inputs(folder: Path, planted=PLANTED) -> dict[str, Path]:
    folder.mkdir(exist_ok=True)
    run = folder / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} {r} {10 - r} sys\n" for q, ds in RUN.items() for r, d in enumerate(ds, 1)))
    return {
        "queries": jsonl(folder / "queries.jsonl", [{"query_id": q, "text": f"question {q}"} for q in planted]),
        "corpus": jsonl(folder / "corpus.jsonl", [{"doc_id": d, "text": t} for d, t in DOCS.items()]),
        "answers": jsonl(folder / "answers.jsonl", [{"query_id": q, "answer": a[0], "citations": a[1] or []}
                                                    for q, a in planted.items()]),
        "run": run,
        "required": jsonl(folder / "required.jsonl", [{"query_id": q, "doc_id": d} for q, a in planted.items()
                                                      for d in a[1] or []]),
        "facts": jsonl(folder / "facts.jsonl", [{"query_id": q, "facts": a[2]} for q, a in planted.items() if a[2]]),
        "outcomes": jsonl(folder / "outcomes.jsonl", [{"query_id": q, "outcome": a[3]} for q, a in planted.items()]),
    }


def args(files: dict[str, Path], *extra) -> list:
    out = ["answers", "judge", "--depth", "2"]
    for name, path in files.items():
        out += [f"--{name}", path]
    return out + list(extra)


@pytest.fixture
def api(monkeypatch):
    with FakeAPI(api_key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        yield server


@pytest.mark.parametrize("judge", ["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5"])
def test_every_query_lands_in_its_planted_class_and_a_rerun_sends_nothing(api, tmp_path, capsys, monkeypatch, judge):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", judge, "--cache", tmp_path / "cache", "--json")
    code, out, err = cli(capsys, *common)
    assert code == 0, err
    report = json.loads(out)
    got = {a["query_id"]: a["attribution"] for a in report["answers"]}
    assert got == {q: p[4] for q, p in PLANTED.items()}
    assert report["attribution"]["correct_without_evidence"] == ["q5"] and report["counts"]["ok"] == 2
    by_q = {a["query_id"]: a for a in report["answers"]}
    assert [c["verdict"] for c in by_q["q2"]["claims"]] == ["supported", "not_supported"]
    assert by_q["q2"]["groundedness"] == 0.5 and by_q["q2"]["citation_precision"] == 1.0
    assert by_q["q2"]["citation_recall"] == 0.5 and by_q["q6"]["contradicted"] == 1
    assert by_q["q3"]["abstained"] and by_q["q3"]["abstention_correct"] is False
    assert by_q["q7"]["abstained"] and by_q["q7"]["abstention_correct"] is True and by_q["q7"]["claims"] == []
    assert by_q["q5"]["missing_evidence"] == ["d5"] and by_q["q5"]["answer_correct"] is True
    sent = api.total
    assert sent == 7 + 6  # seven splits, six claims judged (q3 and q7 abstain with no claim)
    code, out, _ = cli(capsys, *common)
    assert code == 0 and api.total == sent  # a rerun pays nothing
    again = json.loads(out)["answers"]
    assert {a["query_id"]: a["attribution"] for a in again} == got
    assert all(c["from_cache"] for a in again for c in a["claims"])
    assert KEY not in out and not any(KEY in p.read_text(errors="ignore") for p in (tmp_path / "cache").rglob("*")
                                      if p.is_file() and p.suffix in (".json", ".jsonl", ".txt"))


def test_malformed_claim_replies_are_retried_then_counted_and_the_gate_fails(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    api.poison["gold [[not_supported]]"] = "stray"  # q2's second claim: always names a passage not shown
    api.script(["malformed", "range"])  # the first request: retried, then right
    code, out, err = cli(capsys, *args(files, "--judge", "openai:gpt-4.1-mini", "--cache", tmp_path / "cache",
                                       "--json"))
    assert code == 1 and "max_failures" in err
    report = json.loads(out)
    assert len(report["failures"]) == 1 and report["failures"][0]["doc_id"] == "q2#2"
    assert report["attribution"]["unattributed"] == ["q2"]  # never a verdict made up
    others = {a["query_id"]: a["attribution"] for a in report["answers"] if a["query_id"] != "q2"}
    assert others == {q: p[4] for q, p in PLANTED.items() if q != "q2"}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One fake server and one store for the gate tests: the first run buys the verdicts, the rest are cached."""
    with FakeAPI(api_key=KEY) as server:
        yield server, write_inputs(tmp_path_factory.mktemp("in")), tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("flag, bad, good, failing", [
    ("--min-groundedness", "0.9", "0.3", "min_groundedness"),  # mean of 1, .5, 0, 0, 0 over answers with claims
    ("--max-unsupported-rate", "0.1", "0.3", "max_unsupported_generation_rate"),  # q2, q4: 2/7
    ("--max-missing-evidence-rate", "0.2", "0.5", "max_missing_evidence_rate"),  # q3, q4, q5: 3/7
    ("--max-ignored-context-rate", "0", "0.2", "max_ignored_context_rate"),  # q6: 1/7
    ("--max-contradicted", "0", "1", "max_contradicted"),
    ("--min-fact-recall", "0.95", "0.5", "min_fact_recall"),  # 4 of 6 answers recall their fact
    ("--min-abstention-accuracy", "0.95", "0.8", "min_abstention_accuracy"),  # q3 abstained wrongly: 6/7
])
def test_each_gate_threshold_fails_on_the_bad_cases_and_passes_when_met(shared, capsys, monkeypatch, flag, bad, good,
                                                                         failing):
    api, files, cache = shared
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    common = args(files, "--judge", "openai:gpt-4.1-mini", "--base-url", api.openai_url, "--cache", cache)
    code, out, err = cli(capsys, *common, flag, bad)
    assert code == 1 and f"answer gate failed: {failing}" in err and f"FAIL {failing}" in out
    code, out, err = cli(capsys, *common, flag, good)
    assert code == 0, err


def _tiny(folder: Path, answer: str) -> dict[str, Path]:
    folder.mkdir()
    return {"queries": jsonl(folder / "q.jsonl", [{"query_id": "q1", "text": "How tall is the tower?"}]),
            "answers": jsonl(folder / "a.jsonl", [{"query_id": "q1", "answer": answer}]),
            "contexts": jsonl(folder / "c.jsonl", [{"query_id": "q1", "doc_id": "d1",
                                                    "text": "The Eiffel Tower is 330 m tall."}])}


@pytest.mark.parametrize("answer, passes", [("The Eiffel Tower is 330 m tall.", True),
                                            ("The Eiffel Tower is painted gold.", False)])
def test_a_tiny_sample_of_one_answer_fails_the_gate_offline(tmp_path, capsys, answer, passes):
    files = _tiny(tmp_path / "in", answer)
    extra = ["--cache", tmp_path / "cache", "--min-groundedness", "0.9", "--max-unsupported-rate", "0"]
    code, out, err = cli(capsys, "answers", "judge", *[x for n, p in files.items() for x in (f"--{n}", p)], *extra)
    assert code == (0 if passes else 1), err
    assert out.startswith("PASS" if passes else "FAIL")


def test_reports_and_dry_run_offline(tmp_path, capsys):
    files = _tiny(tmp_path / "in", "The Eiffel Tower is 330 m tall [d1]. It is <i>painted</i> gold.")
    flags = [x for n, p in files.items() for x in (f"--{n}", p)] + ["--cache", tmp_path / "cache"]
    code, out, err = cli(capsys, "answers", "judge", *flags, "--dry-run")
    assert code == 0 and "dry run, split: 1 to send" in out and not (tmp_path / "cache").exists()
    code, out, err = cli(capsys, "answers", "judge", *flags, "--report", tmp_path / "report")
    assert code == 0, err
    page = (tmp_path / "report" / "answers.html").read_text()
    assert page.index("Attribution") < page.index("Answers") and 'data-verdict="supported"' in page
    assert 'data-verdict="not_supported"' in page and "The Eiffel Tower is 330 m tall." in page
    assert "<script" not in page and "<i>" not in page and "&lt;i&gt;" in page  # the answer's text is escaped
    markdown = (tmp_path / "report" / "answers.md").read_text()
    assert markdown.startswith("# Answer evaluation") and markdown.index("## Attribution") < markdown.index("## Answers")
    assert json.loads((tmp_path / "report" / "answers.json").read_text())["answers"][0]["groundedness"] == 0.5
    code, out, err = cli(capsys, "answers", "judge", *flags, "--dry-run")
    assert "split: 0 to send, 1 cached" in out and "verdicts: 0 to send, 2 cached" in out


def test_the_python_api_takes_frames_in_memory(tmp_path):
    import pandas as pd

    import labeller
    from labeller.answers import AnswerOptions, Thresholds, grounding_records
    from labeller.errors import BadInputError

    queries = pd.DataFrame([{"query_id": "q1", "text": "How tall is the tower?"},
                            {"query_id": "q2", "text": "When did it open?"},
                            {"query_id": "q3", "text": "What is the architect's salary?"}])
    corpus = pd.DataFrame([{"doc_id": "d1", "text": "The Eiffel Tower is 330 m tall."},
                           {"doc_id": "d2", "text": "Paris has many museums."}])
    answers = pd.DataFrame([{"query_id": "q1", "answer": "The Eiffel Tower is 330 m tall.", "citations": ["d1"]},
                            {"query_id": "q2", "answer": "It opened in 1889.", "citations": []},
                            {"query_id": "q3", "answer": "  ", "citations": None}])  # an empty answer abstains
    run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d2": 1.0}}
    required = pd.DataFrame([{"query_id": "q1", "doc_id": "d1"}, {"query_id": "q2", "doc_id": "d9"}])
    options = AnswerOptions(store=str(tmp_path / "cache"), thresholds=Thresholds(min_groundedness=0.9))
    report = labeller.judge_answers(answers, queries=queries, corpus=corpus, run=run, required=required,
                                    options=options)
    records = {r["query_id"]: r for r in grounding_records(report)}
    assert records["q1"]["attribution"] == "ok" and records["q1"]["groundedness"] == 1.0
    assert records["q2"]["attribution"] == "both" and records["q2"]["groundedness"] == 0.0
    assert report.answers[0].citation_precision == 1.0 and not report.passed
    assert records["q3"]["abstained"] and records["q3"]["attribution"] == "ok" and records["q3"]["groundedness"] is None
    assert report.stats["split"].requested == 2  # the empty answer was not sent to be split
    bad = pd.DataFrame([{"query_id": "q1", "answer": "x", "cited": ["d1"]}])
    with pytest.raises(BadInputError, match="answers DataFrame:1: field 'cited': unknown column"):
        labeller.judge_answers(bad, queries=queries, corpus=corpus, run=run, options=options)


def test_the_bundled_sample_answers_show_every_attribution_class_offline(tmp_path):
    """`labeller run pipelines/answers.toml` (and so `labeller demo`): BM25's top 5 over the bundled ledger, the
    bundled answers judged with the offline judge, each class of failure shown at least once."""
    from labeller.pipelines import run_pipeline
    from labeller.shipped import shipped_dir

    result = run_pipeline(shipped_dir("pipelines") / "answers.toml", out_dir=tmp_path / "answers")
    assert result.status == "passed"
    figures = result.figures
    assert {k: figures[f"attribution.{k}"] for k in ("missing_evidence", "unsupported_generation", "both",
                                                     "correct_without_evidence", "ignored_context", "ok")} == \
        {"missing_evidence": 1, "unsupported_generation": 1, "both": 1, "correct_without_evidence": 1,
         "ignored_context": 2, "ok": 3}
    report = json.loads((tmp_path / "answers" / "answers.json").read_text())
    verdicts = {c["claim_id"]: c["verdict"] for a in report["answers"] for c in a["claims"]}
    assert verdicts["q02#2"] == "not_supported" and verdicts["q03#1"] == "contradicted" and verdicts["q01#1"] == "supported"
    again = run_pipeline(shipped_dir("pipelines") / "answers.toml", out_dir=tmp_path / "answers")
    assert again.figures == figures
    broken = run_pipeline(shipped_dir("pipelines") / "answers.toml", out_dir=tmp_path / "gated",
                          overrides=["answers.min_groundedness=0.9"])
    assert broken.status == "failed" and broken.exit_code == 1


def test_the_answer_judge_against_gold_claim_verdicts(tmp_path, capsys):
    """`labeller answers agree`: kappa and unsupported-claim P/R/F1 cross-checked against scikit-learn's own
    functions, the confusion matrix, disagreements with both sides' words, and a gate that can fail."""
    from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

    from labeller.pipelines import run_pipeline
    from labeller.shipped import shipped_dir

    run_pipeline(shipped_dir("pipelines") / "answers.toml", out_dir=tmp_path / "a")
    report = tmp_path / "a" / "answers.json"
    judged = {c["claim_id"]: (c["verdict"], c["text"]) for a in json.loads(report.read_text())["answers"]
              for c in a["claims"]}
    gold = {**{cid: v for cid, (v, _) in judged.items()}, "q04#1": "supported", "q09#2": "contradicted"}
    rows = [{"query_id": cid.split("#")[0], "claim_id": cid, "verdict": v, "note": f"person on {cid}"}
            for cid, v in gold.items() if cid != "q09#2"]
    rows.append({"query_id": "q09", "claim": judged["q09#2"][1].upper(), "verdict": "contradicted"})  # by its text
    rows += [{"query_id": "q02", "grounded": False}, {"query_id": "q01", "grounded": "false", "note": "too vague"},
             {"query_id": "q05", "claim": "no such claim", "verdict": "supported"}]
    gold_file = jsonl(tmp_path / "gold.jsonl", rows)
    code, out, err = cli(capsys, "answers", "agree", "--report", report, "--gold", gold_file, "--json")
    assert code == 0, err
    result = json.loads(out)
    ids = list(gold)
    g, j = [gold[i] for i in ids], [judged[i][0] for i in ids]
    assert result["claims"] == 9 and result["kappa"] == pytest.approx(cohen_kappa_score(g, j), abs=1e-6)
    p, r, f, _ = precision_recall_fscore_support([x != "supported" for x in g], [x != "supported" for x in j],
                                                 average="binary")
    u = result["unsupported"]
    assert (u["precision"], u["recall"], u["f1"]) == (pytest.approx(p), pytest.approx(r), pytest.approx(f))
    assert sum(map(sum, result["confusion"])) == 9 and result["confusion"][0][2] == 1  # gold supported, judge not
    assert {(d["claim_id"], d["gold"], d["judge"]) for d in result["disagreements"]} == {
        ("q04#1", "supported", "not_supported"), ("q09#2", "contradicted", "supported"),
        (None, "not grounded", "grounded")}
    assert any(d["gold_note"] == "too vague" for d in result["disagreements"]) and result["unmatched"] == [
        "q05: no such claim"]
    code, out, err = cli(capsys, "answers", "agree", "--report", report, "--gold", gold_file, "--min-kappa", "0.95")
    assert code == 1 and "kappa" in err and "confusion" in out


def test_samples_and_the_budget_through_the_command(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", "openai:gpt-4.1-mini", "--cache", tmp_path / "cache")
    code, out, err = cli(capsys, *common, "--samples", "3", "--temperature", "0.7", "--json")
    assert code == 0, err
    assert api.total == 7 + 6 * 3  # the split once per answer, three verdicts per claim
    claims = [c for a in json.loads(out)["answers"] for c in a["claims"]]
    assert {c["claim_id"]: c["verdict"] for c in claims}["q6#1"] == "contradicted"
    prices = tmp_path / "prices.toml"  # about $0.5 a request: the budget buys a few splits, then stops
    prices.write_text('[openai."gpt-4.1-nano"]\ninput = 1000\noutput = 1000\n')
    sent = api.total
    code, out, err = cli(capsys, *args(files, "--judge", "openai:gpt-4.1-nano", "--cache", tmp_path / "cache2",
                                       "--max-cost", "2", "--prices", prices, "--concurrency", "1"))
    assert code == 3 and "--max-cost reached" in err and "not sent" in err
    assert 0 < api.total - sent < 7


def test_samples_auto_asks_two_verdicts_a_claim_and_more_only_where_they_disagree(api, tmp_path, capsys):
    """The planted verdicts are steady, so every claim's two samples agree and none gets a third (the counts of a
    planted disagreement are in tests/test_claims_adaptive.py)."""
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", "openai:gpt-4.1-mini", "--cache", tmp_path / "cache")
    code, out, err = cli(capsys, *common, "--samples", "auto:4", "--temperature", "0.7", "--json")
    assert code == 0, err
    assert api.total == 7 + 6 * 2  # the split once per answer, two verdicts per claim
    claims = [c for a in json.loads(out)["answers"] for c in a["claims"]]
    assert all(len(c["sample_verdicts"]) == 2 for c in claims if c.get("sample_verdicts") is not None)
    assert sum(c.get("sample_verdicts") is not None for c in claims) == 6


def test_a_jury_and_escalation_judge_the_claims(api, tmp_path, capsys):
    """A jury of the fake LLM and the offline judge (a tie between them is not_supported), and escalation from the
    fake LLM to the offline judge (the direction only matters to cost: any judge can be either)."""
    files = write_inputs(tmp_path / "in")
    cache = tmp_path / "cache"
    code, out, err = cli(capsys, *args(files, "--judge", "openai:gpt-4.1-mini", "--jury", "offline:lexical",
                                       "--cache", cache, "--json"))
    assert code == 0, err
    report = json.loads(out)
    claims = {c["claim_id"]: c for a in report["answers"] for c in a["claims"]}
    assert claims["q1#1"]["judge_verdicts"] == {"openai:gpt-4.1-mini": "supported", "offline:lexical": "not_supported"}
    assert claims["q1#1"]["verdict"] == "not_supported"  # one each: the tie goes to not_supported
    assert report["judge"] == "jury:majority(openai:gpt-4.1-mini,offline:lexical)"
    sent = api.total
    code, out, err = cli(capsys, *args(files, "--judge", "openai:gpt-4.1-mini", "--escalate-to", "offline:lexical",
                                       "--cache", cache, "--json"))
    assert code == 0, err
    claims = {c["claim_id"]: c for a in json.loads(out)["answers"] for c in a["claims"]}
    # the claims the first judge did not find supported are asked of the second, whose verdict wins
    assert {cid for cid, c in claims.items() if c["escalated"]} == {"q2#2", "q4#1", "q5#1", "q6#1"}
    assert {cid: c["verdict"] for cid, c in claims.items()} == {
        "q1#1": "supported", "q2#1": "supported", "q2#2": "not_supported", "q4#1": "not_supported",
        "q5#1": "not_supported", "q6#1": "not_supported"}
    assert api.total == sent  # the LLM's verdicts were bought by the jury run: served from the store


def test_a_faulty_provider_gives_every_claim_its_planted_verdict_or_a_counted_failure(tmp_path, capsys, monkeypatch):
    """429s, 500s, dropped connections, malformed JSON, out-of-schema and missing fields at random: every split and
    claim ends right or as a counted failure, the attribution of every fully judged answer is the planted one, and
    reruns finish the failures and then send nothing."""
    from fakeapi import Faults

    faults = Faults(rate_limit=0.15, server_error=0.1, drop=0.05, malformed=0.08, out_of_range=0.06, missing=0.05,
                    retry_after=0.01, seed=7)
    with FakeAPI(api_key=KEY, faults=faults) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        files = write_inputs(tmp_path / "in")
        common = args(files, "--judge", "openai:gpt-4.1-mini", "--base-url", server.openai_url, "--cache",
                      tmp_path / "cache", "--json", "--max-failures", "99")
        planted_claims = {"q1#1": "supported", "q2#1": "supported", "q2#2": "not_supported", "q4#1": "not_supported",
                          "q5#1": "not_supported", "q6#1": "contradicted"}
        for attempt in range(6):
            code, out, err = cli(capsys, *common)
            assert code == 0, err
            report = json.loads(out)
            failed = {f["doc_id"] if f["doc_id"] != "answer" else f["query_id"] for f in report["failures"]}
            for answer in report["answers"]:
                for claim in answer["claims"]:
                    assert claim["verdict"] in (planted_claims[claim["claim_id"]], None)
                    assert (claim["verdict"] is None) == (claim["claim_id"] in failed)
                if answer["attribution"] is not None:
                    assert answer["attribution"] == PLANTED[answer["query_id"]][4]
                else:
                    assert answer["failed"] > 0
            if not report["failures"]:
                break
        assert not report["failures"] and report["counts"]["unattributed"] == 0
        sent = server.total
        cli(capsys, *common)
        assert server.total == sent
