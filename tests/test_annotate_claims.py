"""The claim mode of the annotation page, in real headless chromium: a person judges an answer report's claims
blind (the judge's verdicts never reach the page), each judgment lands in the gold file, a restart resumes, and
`labeller answers agree` reads the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_helpers import launched_chromium
from cli_helpers import cli

from labeller.annotate.claims import ClaimSession, load_report
from labeller.annotate.claims_server import ClaimServer
from labeller.errors import BadInputError


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    from labeller.pipelines import run_pipeline
    from labeller.shipped import shipped_dir

    out = tmp_path_factory.mktemp("answers")
    run_pipeline(shipped_dir("pipelines") / "answers.toml", out_dir=out)
    return out / "answers.json"


@pytest.fixture(scope="module")
def browser(report):
    yield from launched_chromium()


def test_a_person_judges_claims_blind_and_the_gold_feeds_answers_agree(report, browser, tmp_path, capsys):
    gold = tmp_path / "claims-gold.jsonl"
    server = ClaimServer(ClaimSession(load_report(report), gold, "maria"))
    server.start_in_thread()
    page = browser.new_page()
    try:
        page.goto(server.url)
        page.wait_for_selector("#view-claim:not([hidden])")
        assert page.locator("#progress").inner_text() == "Claim 1 of 9"
        assert page.locator("#claim").inner_text().startswith("Paperline Stationers Ltd has sold us")
        assert page.locator(".passage").count() == 5 and "tx-" in page.locator(".pid").first.inner_text()
        content = page.content()
        assert "lexical claim-support heuristic" not in content  # no judge justification, no verdict: blind
        page.fill("#note", "the amount is right there")
        page.click("button[data-verdict=supported]")
        page.wait_for_function("document.getElementById('progress').textContent === 'Claim 2 of 9'")
        page.click("button[data-verdict=contradicted]")
        page.wait_for_function("document.getElementById('progress').textContent === 'Claim 3 of 9'")
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    assert [(r["claim_id"], r["verdict"], r["annotator"]) for r in rows] == [("q01#1", "supported", "maria"),
                                                                         ("q01#2", "contradicted", "maria")]
    assert rows[0]["note"] == "the amount is right there"
    resumed = ClaimSession(load_report(report), gold, "maria").queue()
    assert resumed["done"] == 2 and resumed["claim"]["claim_id"] == "q02#1"
    assert ClaimSession(load_report(report), gold, "tom").queue()["done"] == 0  # another person starts afresh
    code, out, err = cli(capsys, "answers", "agree", "--report", report, "--gold", gold, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["claims"] == 2 and [d["claim_id"] for d in result["disagreements"]] == ["q01#2"]


def test_bad_judgments_are_refused(report, tmp_path):
    session = ClaimSession(load_report(report), tmp_path / "g.jsonl", "maria")
    with pytest.raises(BadInputError, match="verdict must be one of"):
        session.judge({"claim_id": "q01#1", "verdict": "yes"})
    with pytest.raises(BadInputError, match="unknown claim"):
        session.judge({"claim_id": "q99#1", "verdict": "supported"})
    assert not (tmp_path / "g.jsonl").exists()
