"""Every report a user generates, looked at in a real headless Chromium (Debian's `chromium`) the way a
person reads it: the verdict in words, texts beside ids, charts with the points they should have,
runs told apart on the trend, one sign for a drop. Plus scans that need no browser: no emoji, no
install or absolute paths, no scripts or network resources in any generated page or summary.

The reports are generated once per module as a user would: `labeller demo`, `labeller agree --report`
(with and without texts), `labeller evaluate --report` (one run), and further regression runs into the
demo's history, one of them deliberately broken so its gate fails.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from browser_helpers import launched_chromium
from evaluation_helpers import cli

import labeller
from labeller.agreement import AgreeOptions, agree
from labeller.pipelines import run_pipeline
from labeller.pipelines.demo import run_demo

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pipelines" / "sample"
GOLD = ROOT / "gold" / "transactions.jsonl"
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D]")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site")
    before = os.getcwd()
    os.chdir(root)  # as a user would: paths typed relative to where they stand
    try:
        for name in ("queries.jsonl", "corpus.jsonl", "baseline.trec"):
            shutil.copy(SAMPLE / name, name)
        run_demo("out/demo")
        labels = "out/demo/label_slice/labels.jsonl"
        agree(AgreeOptions(labels=labels, gold=GOLD, queries="queries.jsonl", corpus="corpus.jsonl",
                           report_dir="agree-texts"))
        agree(AgreeOptions(labels=labels, gold=GOLD, report_dir="agree-bare"))
        qrels = "out/demo/regression/labels.jsonl"
        code, _, _ = cli("evaluate", "--run", "baseline.trec", "--labels", qrels, "--queries", "queries.jsonl",
                         "--report", "eval-single")
        assert code == 0
        code, _, _ = cli("evaluate", "--run", "baseline.trec", "--labels", qrels, "--report", "eval-bare")
        assert code == 0
        config = ROOT / "pipelines" / "regression.toml"
        for overrides in ([], ["retriever.name=random"]):
            run_pipeline(config, out_dir="out/demo/regression", overrides=overrides)
    finally:
        os.chdir(before)
    return root


@pytest.fixture(scope="module")
def browser(site):
    # after the site: Playwright's sync API runs an event loop in this thread, and labelling calls asyncio.run
    yield from launched_chromium()


@pytest.fixture
def view(browser, site):
    page = browser.new_page(viewport={"width": 1200, "height": 900})

    def open_(relative: str):
        page.goto((site / relative).as_uri())
        return page

    yield open_
    page.close()


def _reports(site: Path) -> list[Path]:
    inputs = {"queries.jsonl", "corpus.jsonl", "baseline.trec"}
    return [p for p in sorted(site.rglob("*")) if p.suffix in (".html", ".md") and p.name not in inputs]


def _regression_reports(site: Path) -> list[Path]:
    return sorted((site / "out/demo/regression/reports").glob("*/index.html"))


def test_no_report_has_emoji_install_paths_scripts_or_network_resources(site):
    reports = _reports(site)
    assert len(reports) >= 16  # demo index, 4 pipelines' pages (answers: html and md), agreement x3, evaluate x2, regression x3 + trend
    install = str(Path(labeller.__file__).resolve().parent.parent)
    for path in reports:
        text = path.read_text(encoding="utf-8")
        assert not EMOJI.findall(text), f"{path.name}: emoji {EMOJI.findall(text)[:3]}"
        assert "site-packages" not in text and install not in text and str(site) not in text, path
        assert not re.search(r"(?<![\w.:-])/(tmp|home|usr|work|root|var|opt)/", text), path
        if path.suffix == ".html":
            assert "<script" not in text and not re.search(r'(src|href)="(https?:)?//', text), path


def test_the_demo_index_gives_each_pipeline_a_plain_word_verdict(view):
    page = view("out/demo/index.html")
    banners = page.locator(".banner").all_inner_texts()
    assert [b.split()[0] for b in banners] == ["PASS", "PASS", "PASS", "PASS"]
    assert page.locator(".banner .mark").count() == 4  # the mark is SVG, not a font glyph


def test_the_answers_page_puts_attribution_first_and_marks_every_claim(view):
    page = view("out/demo/answers/answers.html")
    assert page.locator(".banner").inner_text().startswith("PASS")
    headings = page.locator("h2").all_inner_texts()
    assert headings.index("Attribution") < headings.index("Answers")
    first_table = page.locator("table").first.inner_text()
    assert "correct_without_evidence" in first_table and "q04" in first_table
    assert page.locator(".card").count() == 9  # one per bundled answer
    assert page.locator('tr[data-verdict="contradicted"]').count() == 1
    supported = page.locator('tr[data-verdict="supported"]').first
    assert "tx-" in supported.locator(".excerpt").first.inner_text()  # the supporting passage beside the claim


def test_label_slice_shows_query_and_document_text_beside_every_id(view, site):
    page = view("out/demo/label_slice/report.html")
    assert page.locator(".banner").inner_text().startswith("PASS")
    groups = page.locator(".query-group")
    assert groups.count() == 20  # 200 pairs shown, top 10 of each query
    first = groups.first
    from labeller.io.inputs import read_queries

    query_text = " ".join(read_queries(site / "queries.jsonl")["q01"].text.split())
    assert first.locator(".id").first.inner_text() == "q01"
    assert query_text.startswith(first.locator(".excerpt").first.inner_text().rstrip("…")[:60])
    rows = page.locator(".query-group tbody tr")
    assert rows.count() == 200
    for i in (0, 57, 199):  # every document cell holds the id and an excerpt of its text
        cell = rows.nth(i).locator("td").first
        assert re.fullmatch(r"tx-\d{5}", cell.locator(".id").inner_text())
        assert len(cell.locator(".excerpt").inner_text()) > 20
    assert "config labeller:pipelines/label_slice.toml" in page.inner_text(".sub")
    assert re.search(r"rubric transactions \(version [0-9a-f]{12}\)", page.inner_text(".sub"))


def test_validate_prompt_charts_old_against_new_with_intervals_and_lists_flips_with_texts(view):
    page = view("out/demo/validate_prompt/report.html")
    assert re.match(r"PASS\s+kappa old 0\.\d{3} → new 0\.\d{3}", page.locator(".banner").inner_text())
    estimates = page.locator("g.estimate")
    sides = {estimates.nth(i).get_attribute("data-side").split(":")[0] for i in range(estimates.count())}
    assert estimates.count() == 5 * 2 + 1 and sides == {"old", "new", "new − old"}
    assert page.locator("g.estimate .whisker").count() == 11  # every estimate has its interval
    assert page.locator("line.reference").count() == 2  # 0 and the gate's -max_drop
    broken = page.locator("h2", has_text="Broken").locator("xpath=..").locator("tbody tr")
    assert broken.count() == 24
    cells = broken.first.locator("td")
    assert cells.nth(0).locator(".excerpt").count() == 1 and cells.nth(1).locator(".excerpt").count() == 1


def test_agreement_pages_put_texts_beside_ids_or_say_why_not(view):
    with_texts = view("agree-texts/agreement.html")
    side = with_texts.locator("h2", has_text="one side only").locator("xpath=..")
    assert side.locator("tbody tr").first.locator(".excerpt").count() == 2
    assert "not shown" not in side.inner_text()
    bare = view("agree-bare/agreement.html")
    side = bare.locator("h2", has_text="one side only").locator("xpath=..")
    assert "Query and document texts are not shown" in side.inner_text()


def test_a_single_run_shows_how_its_queries_spread(view, site):
    import json

    page = view("eval-single/index.html")
    result = json.loads((site / "eval-single/result.json").read_text())
    histograms = page.locator("svg[aria-label$='distribution over queries']")
    assert histograms.count() == len(result["metrics"]) == 3
    for i in range(3):  # every averaged query lands in one bin
        counts = histograms.nth(i).locator("rect.bin").evaluate_all("bs => bs.map(b => +b.dataset.count)")
        assert len(counts) == 10 and sum(counts) == result["queries"]["averaged"]
        assert histograms.nth(i).locator("line.mean").count() == 1
    lowest = page.locator("h3", has_text="weakest queries").locator("xpath=following-sibling::table[1]")
    assert lowest.locator("tbody tr").count() == 10 and lowest.locator(".excerpt").count() == 10
    assert "Query texts are not shown" in view("eval-bare/index.html").inner_text("body")


def test_a_drop_is_a_negative_delta_in_every_table_and_summary(view, site):
    failed = _regression_reports(site)[-1]  # the random retriever's run
    page = view(str(failed.relative_to(site)))
    assert page.locator(".banner").inner_text().startswith("FAIL")
    gate = page.locator("h2", has_text="Regression gate").locator("xpath=..").locator("table")
    header = gate.locator("th").all_inner_texts()
    assert "drop" not in header and "Δ (run − baseline)" in header
    column = header.index("Δ (run − baseline)")
    gate_deltas = {}
    for row in gate.locator("tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        gate_deltas[cells[1]] = float(cells[column])
        assert float(cells[column]) == pytest.approx(float(cells[3]) - float(cells[2]), abs=1.5e-4)
        assert cells[header.index("verdict")].startswith("FAIL")
    assert gate_deltas and all(d < 0 for d in gate_deltas.values())
    comparison = page.locator("h2", has_text=" against ").locator("xpath=..").locator("table").first
    for row in comparison.locator("tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        assert float(cells[4]) == pytest.approx(gate_deltas[cells[0]], abs=1e-4)  # the same signed Δ
    summary = (failed.parent / "summary.md").read_text()
    assert "| drop |" not in summary and "Δ (run − baseline)" in summary and "FAIL: regression" in summary


def test_trend_draws_one_panel_per_metric_and_tells_every_run_apart(view):
    page = view("out/demo/regression/trend.html")
    panels = page.locator(".panels > svg")
    assert panels.count() == 3
    for i in range(3):
        series = panels.nth(i).locator("g.series")
        assert series.count() == 3 and series.nth(0).locator(".point").count() == 3  # three runs
    shapes = {panels.first.locator("g.series").nth(k).locator(".point").first.evaluate("e => e.tagName")
              for k in range(3)}
    assert len(shapes) == 3  # a marker shape per series, not only a colour
    labels = panels.first.locator("text.x-label").evaluate_all("ts => ts.map(t => t.textContent)")
    assert len(labels) == 3 and len(set(labels)) == 3
    assert page.locator(".panels .failed-ring").count() == 3 * 2  # the broken run, ringed in two series per panel


def test_runs_in_the_same_minute_or_second_get_distinct_labels(browser, tmp_path):
    from labeller.evaluation.metrics import parse_metrics
    from labeller.pipelines.history import HistoryRow
    from labeller.pipelines.trend import trend_page

    times = ["2026-12-01T12:01:05.100+00:00", "2026-12-01T12:01:40.200+00:00", "2026-12-01T12:01:40.900+00:00"]
    history = [HistoryRow(run_at=t, retriever="bm25", metric=m, value=v, judge="offline:lexical", rubric_version="x")
               for t in times for m, v in (("ndcg@10", 0.8), ("mrr@10", 0.8))]  # equal values: would overlap
    (tmp_path / "trend.html").write_text(trend_page(history, parse_metrics(["ndcg@10", "mrr@10"]), "t"))
    page = browser.new_page()
    page.goto((tmp_path / "trend.html").as_uri())
    for i in range(2):
        labels = page.locator(".panels > svg").nth(i).locator("text.x-label").evaluate_all(
            "ts => ts.map(t => t.textContent)")
        assert len(labels) == 3 and len(set(labels)) == 3 and "12:01:05" in labels[0]
    table_times = page.locator("table tbody tr td:nth-child(2)").all_inner_texts()
    assert len(set(table_times)) == 3 and any("#3" in t for t in table_times)
    page.close()
