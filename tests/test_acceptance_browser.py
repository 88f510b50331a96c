"""The acceptance HTML report looked at in headless Chromium: the verdict in words, each candidate's
column, every failure with its case, identity, document and cause; no scripts or network resources."""

import re

import pytest
from acceptance_helpers import write_candidate, write_suite
from acceptance_kb import HttpKB
from browser_helpers import launched_chromium

from labeller.acceptance.job import ReportPaths, acceptance_run
from labeller.acceptance.runner import RunOptions


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


def test_the_html_report_reads_as_a_verdict_with_named_failures(tmp_path, browser):
    suite = write_suite(tmp_path)
    with HttpKB() as clean, HttpKB(("leak",)) as leaky:
        a = write_candidate(tmp_path, "clean", "http", {"url": clean.url + "/search"})
        b = write_candidate(tmp_path, "leaky", "http", {"url": leaky.url + "/search"})
        acceptance_run(RunOptions(suite=suite, candidates=[a, b]), ReportPaths(html=tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert not re.search(r"<script|https?://(?!127\.0\.0\.1)", html)
    page = browser.new_page()
    page.goto((tmp_path / "r.html").as_uri())
    assert "Verdict: FAIL (exit 1)" in page.inner_text("li")
    headers = page.locator("table").first.locator("th").all_inner_texts()
    assert headers == ["gate", "clean", "leaky"]
    rows = [r.locator("td").all_inner_texts() for r in page.locator("h2:text('Failures') + table tr").all()[1:]]
    assert ["leaky", "access", "c4", "bob", "hr-1", "permissions"] in [r[:6] for r in rows]
    assert all(r[0] == "leaky" for r in rows)
    page.close()
