"""The outcomes report, looked at in Debian's headless chromium as a person reads it: what to gate on in words,
the metrics ranked, whose fault each failure is with the query texts beside the ids, the regression's split."""

from __future__ import annotations

import json

import pytest
from browser_helpers import launched_chromium
from outcomes_helpers import planted, with_first_relevant_at, write_labels, write_outcomes, write_run


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcomes-report")
    ranking, judgments, first = planted(n=120, relevant=1, seed=4)
    ok = sorted(q for q, r in first.items() if r <= 3)
    candidate = with_first_relevant_at(ranking, judgments, {q: 15 for q in ok[:6]}, "candidate")
    success = {q: r <= 3 for q, r in first.items()}
    (root / "queries.jsonl").write_text("".join(json.dumps({"query_id": q, "text": f"transaction number {q}"}) + "\n"
                                                for q in first))
    from labeller.cli import main

    args = ["outcomes", "--labels", write_labels(root / "labels.jsonl", judgments),
            "--run", write_run(root / "candidate.trec", candidate),
            "--outcomes", write_outcomes(root / "o.jsonl", {**success, **{q: False for q in ok[:6]}}),
            "--baseline", write_run(root / "baseline.trec", ranking),
            "--baseline-outcomes", write_outcomes(root / "bo.jsonl", success),
            "--queries", root / "queries.jsonl", "--bootstrap", "100", "--report", root / "report"]
    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    assert done.value.code == 1  # six succeeding tasks lost their evidence: the downstream gate fails
    return root / "report" / "index.html", ok[:6]


@pytest.fixture(scope="module")
def browser(report):
    yield from launched_chromium()


def test_the_page_says_what_to_gate_on_and_whose_fault_each_failure_is(browser, report):
    path, lost = report
    page = browser.new_page()
    page.goto(path.as_uri())
    assert "Gate on hit_rate@3" in page.locator(".banner").first.inner_text()
    headings = page.locator("h2").all_inner_texts()
    assert headings[:2] == ["Which metric predicts the outcome", "Whose fault: by hit_rate@3 (ok when >= 0.5)"]
    first_row = page.locator("table").nth(0).locator("tbody tr").first.locator("td").all_inner_texts()
    assert first_row[0] == "hit_rate@3" and "best" in first_row[-1]
    regression = page.locator("section", has=page.locator("h2", has_text="Regression against"))
    assert "Of the 6 newly failing tasks, 6 lost their evidence" in regression.inner_text()
    for qid in lost:
        assert f"transaction number {qid}" in regression.inner_text()
    gate = page.locator("section", has=page.locator("h2", has_text="Downstream-weighted gate"))
    assert "FAIL" in gate.inner_text()
    assert page.locator("script").count() == 0
    page.close()
