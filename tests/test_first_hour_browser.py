"""The first hour's pages looked at in headless Chromium as a person would (issue 25): the judge-bench
reference line stays on the row it belongs to, and the trend page's runs table fits the page."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_helpers import launched_chromium
from test_first_hour import beir_folder

SHOTS = Path("/tmp/shots-first-hour")  # for a person to look at; never in the repository


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    """judge-bench on a BEIR folder with 0-3 qrels, the offline judge: its report page."""
    root = tmp_path_factory.mktemp("bench")
    beir_folder(root / "beir")
    with pytest.MonkeyPatch.context():
        from labeller.cli import main

        with pytest.raises(SystemExit) as done:
            main(["judge-bench", "--beir", str(root / "beir"), "--judge", "offline:lexical", "--cache",
                  str(root / "cache"), "--report", str(root / "bench"), "--clip-to-gold"])
    assert done.value.code in (0, None)
    return root / "bench" / "judge-bench.html"


@pytest.fixture(scope="module")
def browser(bench):
    yield from launched_chromium()  # after the reports: Playwright's sync API holds an event loop in this thread


@pytest.fixture
def view(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 800})

    def open_(path: Path):
        page.goto(path.as_uri())
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{path.parent.name}-{path.name}.png"), full_page=True)
        return page

    yield open_
    page.close()


def test_the_published_kappa_line_crosses_the_kappa_row_only(view, bench):
    page = view(bench)
    lines = page.locator("svg line.reference")
    assert lines.count() == 2  # chance (every figure) and LLMJudge's best kappa (Cohen's kappa only)
    published = lines.nth(1).bounding_box()
    chance = lines.nth(0).bounding_box()
    rows = {name: page.locator(f'g.estimate[data-figure="{name}"]').first.bounding_box()
            for name in ("Cohen's kappa", "kappa, quadratic weights", "Krippendorff's alpha (ordinal)")}
    below = rows["kappa, quadratic weights"]
    assert published["y"] + published["height"] <= below["y"], (published, below)  # stops above the next row
    assert published["y"] + published["height"] >= rows["Cohen's kappa"]["y"]  # reaches its own row
    assert chance["y"] + chance["height"] >= rows["Krippendorff's alpha (ordinal)"]["y"]  # chance spans them all


def test_the_trend_pages_runs_table_fits_the_page(view, tmp_path):
    from labeller.evaluation.metrics import parse_metrics
    from labeller.pipelines.history import HistoryRow
    from labeller.pipelines.trend import trend_page

    metrics = ["ndcg@10", "recall@100", "mrr@10", "map@100"]
    history = [HistoryRow(run_at=f"2026-12-0{d}T02:00:00+00:00", retriever=name, metric=m, value=0.61234,
                          baseline_value=0.6, rescored_value=0.59876, rescored_baseline_value=0.58, judged=0.9,
                          rescored_judged=0.95, judge="openai:gpt-4.1-mini", rubric_version="v3")
               for d, name in enumerate(("teamsearch.client:search_with_reranker", "run file official-run.trec",
                                         "bm25"), start=1) for m in metrics]
    (tmp_path / "trend.html").write_text(trend_page(history, parse_metrics(metrics), "t"))
    page = view(tmp_path / "trend.html")
    table = page.locator("section table").last.bounding_box()
    body = page.locator("body").bounding_box()
    assert table["x"] + table["width"] <= body["x"] + body["width"] + 1, (table, body)
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    cells = page.locator("section table").last.locator("tbody tr").first.locator("td").all_inner_texts()
    assert "0.5988" in " ".join(cells) and "0.6123" in " ".join(cells)  # both figures still given
