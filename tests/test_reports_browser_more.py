"""The reports added beside the first reports pass, looked at in headless Chromium (Debian's `chromium`)
the way a person reads them: `labeller probe`, `labeller judge-bench`, `labeller agree` on labels made
with --samples (and against a baseline), and the regression page of a run whose judge drifted.

Generated once per module as a user would: the probes on the bundled sample with the offline judge (all
probes: stuffing fails; length and injection only: a pass), judge-bench with the offline judge on the
bundled gold, `label --samples 5` against tests/fakeapi.py with noise and a temperature-0 baseline, then
`agree --baseline`, and two regression runs whose second judge (a model the fake grades in reverse) drifts.
Screenshots go to /tmp/shots2 (never into the repository) for a person to look at.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from browser_helpers import launched_chromium
from evaluation_helpers import cli
from fakeapi import FakeAPI
from test_reports_browser import EMOJI

import labeller
from labeller.pipelines import run_pipeline

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pipelines" / "sample"
SHOTS = Path("/tmp/shots2")
KEY = "sk-test-reports-more-0123456789"
N_PAIRS = 60
RUBRIC = '+++\nname = "noisy"\n+++\n# Grades\n5: exactly. 4: mostly. 3: partly. 2: barely. 1: not relevant.\n'


def _noisy_inputs() -> None:
    """Pairs whose documents carry the fake's planted grade; gold is that grade, so disagreement is noise."""
    grade = [i % 5 + 1 for i in range(N_PAIRS)]
    rows = {"queries": [{"query_id": f"q{i}", "text": f"invoice question number {i} about office supplies"}
                        for i in range(10)],
            "corpus": [{"doc_id": f"d{i}", "text": f"receipt {i} for paper and toner [[grade:{grade[i]}]]"}
                       for i in range(N_PAIRS)],
            "pairs": [{"query_id": f"q{i % 10}", "doc_id": f"d{i}"} for i in range(N_PAIRS)],
            "gold": [{"query_id": f"q{i % 10}", "doc_id": f"d{i}", "grade": grade[i], "annotator": "a"}
                     for i in range(N_PAIRS)]}
    Path("noisy").mkdir()
    for name, items in rows.items():
        Path(f"noisy/{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    Path("noisy/rubric.md").write_text(RUBRIC, encoding="utf-8")


def _label(api: FakeAPI, out: str, *extra: str) -> None:
    code, _, _ = cli("label", "--queries", "noisy/queries.jsonl", "--corpus", "noisy/corpus.jsonl", "--pairs",
                     "noisy/pairs.jsonl", "--rubric", "noisy/rubric.md", "--judge", "openai:gpt-4.1-mini",
                     "--base-url", api.openai_url, "--cache", "cache", "--out", out, *extra)
    assert code == 0


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("site2")
    before = os.getcwd()
    os.chdir(root)
    console, codes = io.StringIO(), {}
    try:
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console), \
                pytest.MonkeyPatch.context() as env:
            for name in ("queries.jsonl", "corpus.jsonl"):
                shutil.copy(SAMPLE / name, name)
            shutil.copy(ROOT / "gold" / "transactions.jsonl", "gold.jsonl")
            codes["probe"] = cli("probe", "--sample", "--report", "probe", "--cache", "cache")[0]
            codes["probe-pass"] = cli("probe", "--sample", "--probes", "length,injection", "--report", "probe-pass",
                                      "--cache", "cache")[0]
            codes["bench"] = cli("judge-bench", "--judge", "offline:lexical", "--gold", "gold.jsonl", "--queries",
                                 "queries.jsonl", "--corpus", "corpus.jsonl", "--rubric", "transactions", "--report",
                                 "bench", "--cache", "cache")[0]
            _noisy_inputs()
            env.setenv("OPENAI_API_KEY", KEY)
            with FakeAPI(noise=0.45, noise_spread=2, noise_seed=1) as api:
                _label(api, "noisy/old.jsonl")  # temperature 0: the planted grade, the baseline
                _label(api, "noisy/new.jsonl", "--samples", "5", "--temperature", "0.8")
                api.model_noise = {"gpt-4o-mini": 0.3}  # the second juror errs on a share of the pairs
                _label(api, "noisy/jury.jsonl", "--judge", "openai:gpt-4o-mini")  # a jury of two judges
                codes["agree-jury"] = cli("agree", "--labels", "noisy/jury.jsonl", "--gold", "noisy/gold.jsonl",
                                          "--report", "agree-jury")[0]
                codes["agree"] = cli("agree", "--labels", "noisy/new.jsonl", "--baseline", "noisy/old.jsonl", "--gold",
                                     "noisy/gold.jsonl", "--queries", "noisy/queries.jsonl", "--corpus",
                                     "noisy/corpus.jsonl", "--report", "agree-samples")[0]
            with FakeAPI() as api:
                env.setenv("OPENAI_BASE_URL", api.openai_url)
                api.model_grades = {"gpt-4.1-nano": lambda grade: 6 - grade}
                config = ROOT / "pipelines" / "regression.toml"
                for judge in ("openai:gpt-4.1-mini", "openai:gpt-4.1-nano"):
                    codes[judge] = run_pipeline(config, out_dir="drift", judge=judge).exit_code
    finally:
        os.chdir(before)
    return {"root": root, "console": console.getvalue(), "codes": codes}


@pytest.fixture(scope="module")
def browser(site):
    yield from launched_chromium()  # after the site: Playwright's sync API holds an event loop in this thread


@pytest.fixture
def view(browser, site):
    page = browser.new_page(viewport={"width": 1200, "height": 900})

    def open_(relative: str | Path):
        page.goto((site["root"] / relative).as_uri())
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / (str(relative).replace("/", "_") + ".png")), full_page=True)
        return page

    yield open_
    page.close()


def _drift_page(site) -> Path:
    return sorted((site["root"] / "drift/reports").glob("*/index.html"))[-1].relative_to(site["root"])


def test_the_runs_end_as_a_user_would_see_them(site):
    codes = site["codes"]
    assert codes["probe"] == 1 and codes["probe-pass"] == 0 and codes["bench"] == 0
    assert codes["openai:gpt-4.1-mini"] == 0 and codes["openai:gpt-4.1-nano"] == 1  # the drifted judge fails


def test_no_new_report_or_console_summary_has_emoji_paths_scripts_or_network(site):
    root = site["root"]
    folders = ("probe", "probe-pass", "bench", "agree-samples", "agree-jury")
    reports = [p for d in folders for p in (root / d).glob("*.*") if p.suffix in (".html", ".md", ".json")]
    reports += [root / _drift_page(site), root / _drift_page(site).parent / "summary.md", root / "drift/latest.md"]
    assert len(reports) == 2 * 3 + 3 + 2 * 2 + 3
    install = str(Path(labeller.__file__).resolve().parent.parent)
    for path, text in [(p, p.read_text(encoding="utf-8")) for p in reports] + [(Path("console"), site["console"])]:
        assert not EMOJI.findall(text), f"{path.name}: emoji {EMOJI.findall(text)[:3]}"
        assert "site-packages" not in text and install not in text and str(root) not in text, path
        if path.suffix == ".html":
            assert "<script" not in text and not re.search(r'(src|href)="(https?:)?//', text), path
            assert not re.search(r"(?<![\w.:-])/(tmp|home|usr|work|root|var|opt)/", text), path


def test_probe_page_gives_each_probe_a_verdict_and_charts_its_shift_against_the_threshold(view, site):
    page = view("probe/probes.html")
    report = json.loads((site["root"] / "probe/probes.json").read_text())
    assert re.match(r"FAIL\s+1 of 4 probes beyond their threshold: stuffing", page.locator(".banner").inner_text())
    assert page.locator(".banner .mark").count() == 1
    verdicts = page.locator("h2", has_text="Probes").locator("xpath=..").locator("tbody tr td:nth-child(2)")
    assert verdicts.all_inner_texts() == [r["verdict"].upper() for r in report["probes"]]
    assert verdicts.locator("svg.mark").count() == 4
    estimates = page.locator("g.estimate")
    assert estimates.count() == 4 and page.locator("g.estimate .whisker").count() == 4  # every one with its interval
    stuffing = page.locator("g.estimate[data-figure='stuffing'] .point").get_attribute("cx")
    limits = page.locator("line.reference").evaluate_all("ls => ls.map(l => +l.getAttribute('x1'))")
    assert len(limits) == 3 and float(stuffing) > max(limits)  # beyond the +0.5 line: the failing probe
    moved = page.locator("h2", has_text="stuffing: pairs whose grade moved").locator("xpath=..").locator("tbody tr")
    stuffing_report = next(r for r in report["probes"] if r["probe"] == "stuffing")
    changed = [s for s in stuffing_report["shifts"] if s["original"] != s["perturbed"]]
    assert moved.count() == min(50, len(changed)) > 0
    cells = moved.first.locator("td")
    assert cells.nth(0).locator(".excerpt").count() == 1 and cells.nth(1).locator(".excerpt").count() == 1
    assert int(cells.nth(6).inner_text()) == int(cells.nth(5).inner_text()) - int(cells.nth(4).inner_text())
    assert "shift (perturbed − original)" in page.locator("thead").nth(1).inner_text()
    assert "labeller:gold/transactions.jsonl" in page.inner_text(".sub")
    passing = view("probe-pass/probes.html")
    assert passing.locator(".banner").inner_text().startswith("PASS")


def test_judge_bench_has_its_table_first_then_kappa_per_judge_with_intervals(view, site):
    page = view("bench/judge-bench.html")
    result = json.loads((site["root"] / "bench/judge-bench.json").read_text())
    assert page.locator("h2").first.inner_text() == "Judges side by side"
    assert page.locator(".banner").count() == 0  # a benchmark has no verdict
    estimates = page.locator("g.estimate")
    assert estimates.count() == 3 and page.locator("g.estimate .whisker").count() == 3
    kappa = page.locator("g.estimate[data-figure=\"Cohen's kappa\"] text.value").text_content()
    assert float(kappa) == pytest.approx(result["judges"][0]["kappa"]["value"], abs=5e-4)
    assert "gold.jsonl" in page.inner_text(".sub")


def test_agree_on_sampled_labels_charts_disagreement_per_band_and_old_against_new(view, site):
    page = view("agree-samples/agreement.html")
    bands = page.locator("h2", has_text="judge uncertainty").locator("xpath=..")
    rates = bands.locator("g.estimate")
    assert rates.count() >= 2 and bands.locator(".whisker").count() == rates.count()
    figures = rates.evaluate_all("gs => gs.map(g => g.dataset.figure)")
    assert figures[0].startswith("unanimous")
    gate = page.locator("h2", has_text="Prompt-change gate").locator("xpath=..")
    sides = gate.locator("g.estimate").evaluate_all("gs => gs.map(g => g.dataset.side)")
    assert sides == ["old", "new", "new − old"]
    assert gate.locator(".whisker").count() == 3  # old and new each with its interval, and the change
    assert page.locator(".banner").count() == 1


def test_agree_on_a_jury_file_charts_each_judge_and_the_jury_against_gold(view, site):
    page = view("agree-jury/agreement.html")
    section = page.locator("h2", has_text="by judge").locator("xpath=..")
    names = section.locator("tbody tr td:first-child").all_inner_texts()
    assert len(names) == 3 and {"openai:gpt-4.1-mini", "openai:gpt-4o-mini"} <= set(names)  # and the jury
    assert section.locator("g.estimate").count() == 6 and section.locator(".whisker").count() == 6
    assert "## Against gold, by judge" in (site["root"] / "agree-jury/agreement.md").read_text()


def test_a_drifted_judge_is_said_on_the_regression_page_apart_from_the_retrieval_gate(view, site):
    page = view(_drift_page(site))
    drift = page.locator("h2", has_text="Judge drift").locator("xpath=..")
    assert drift.locator(".banner").inner_text().startswith("FAIL")
    assert "JUDGE DRIFT" in drift.inner_text() and "gpt-4.1-nano" in drift.inner_text()
    headings = page.locator("h2").all_inner_texts()
    assert headings.index("Judge drift") < headings.index("Metrics")  # what failed the run comes first
    assert drift.locator("line.reference").count() == 1 and drift.locator("g.estimate .point").count() == 1
    summary = (site["root"] / _drift_page(site)).parent.joinpath("summary.md").read_text()
    assert "## Judge drift" in summary and "JUDGE DRIFT" in summary
