"""The corrected figures in `labeller evaluate --report`'s page, looked at in headless Chromium: the gate's
verdict names the correction, and the corrected section shows every run and metric beside the plain figure."""

from __future__ import annotations

import pytest
from browser_helpers import launched_chromium

from tests.test_evaluation_corrected import _world_files


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("corrected")
    _world_files(root)
    from labeller.cli import main  # a module fixture has no capsys: the command through main directly

    with pytest.raises(SystemExit) as done:
        main([str(a) for a in ("evaluate", "--run", root / "bad.trec", "--baseline", root / "good.trec", "--labels",
                               root / "labels.txt", "--metrics", "ndcg@10,precision@5,mrr@10", "--gold",
                               root / "gold.jsonl", "--corrected", "--report", root / "report")])
    assert done.value.code == 1
    return root / "report" / "index.html"


@pytest.fixture(scope="module")
def page(report):
    for browser in launched_chromium():
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        tab.goto(report.as_uri())
        yield tab
        tab.close()


def test_the_verdict_says_the_gate_decided_on_corrected_figures(page):
    banner = page.locator(".banner").inner_text()
    assert banner.startswith("FAIL")
    assert "decided on figures corrected for the judge's error with gold" in banner


def test_the_corrected_section_shows_each_figure_beside_the_plain_one(page):
    section = page.locator("h2", has_text="Corrected for the judge's error").locator("xpath=..")
    headers = section.locator("table").first.locator("th").all_inner_texts()
    assert headers[:5] == ["run", "metric", "plain (judge's labels)", "plain CI (queries)", "corrected"]
    rows = section.locator("table").first.locator("tbody tr")
    assert rows.count() == 6  # two runs x three metrics
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count())]
    mrr = [c for c in cells if c[1] == "mrr@10"]
    assert mrr and all("whole queries" in c[4] for c in mrr)  # not corrected under the pair design, and why
    ndcg = [c for c in cells if c[1] == "ndcg@10"]
    assert all(c[2] == "1.0000" and c[5].startswith("[") for c in ndcg)  # the judge calls every pair relevant
    differences = section.locator("table").nth(1).locator("tbody tr")
    assert differences.count() == 2 and "bad − baseline:good" in differences.first.inner_text()
