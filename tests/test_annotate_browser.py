"""The annotation page end to end in a real headless Chromium (Debian's `chromium`), driven by Playwright.

Two annotators grade overlapping pairs with the keyboard; one closes the page mid-way and resumes; the
server is killed (SIGKILL) and restarted in between; then the gold file, the agreement view and
`labeller agree` must all come out right. Without chromium the tests skip on a workstation and FAIL in
CI (CI=true): a browser test that silently skips in CI tests nothing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from annotate_helpers import CORPUS, QUERIES, frozen_sample, label_rows
from browser_helpers import launched_chromium

@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`labeller annotate serve` as a real process, so it can be killed like a user's would be."""

    def __init__(self, root: Path, *extra: str) -> None:
        self.root, self.extra, self.port = root, extra, _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen | None = None

    def start(self) -> Server:
        args = [sys.executable, "-m", "labeller", "annotate", "serve", "--sample", "sample.jsonl", "--gold",
                "gold.jsonl", "--queries", str(QUERIES), "--corpus", str(CORPUS), "--port", str(self.port),
                *self.extra]
        self.process = subprocess.Popen(args, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(self.process.stderr.read().decode())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("annotation server did not start")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()  # SIGKILL: no clean-up, like a crash or a closed terminal
            self.process.wait(10)


def _pair_on_page(page) -> tuple[str, str]:
    return page.inner_text("#query-id"), page.inner_text("#doc-id").split(" ·")[0]


def _press_grade(page, grade: int, note: str | None = None) -> None:
    from playwright.sync_api import expect

    query_id, doc_id = _pair_on_page(page)
    page.keyboard.press(str(grade))
    if note is not None:  # the page asks for a note: type it and press Enter
        expect(page.locator("#note-hint")).to_contain_text(f"grade {grade} needs a note")
        expect(page.locator("#note")).to_be_focused()
        page.keyboard.type(note)
        page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text(f"saved pair {query_id} / {doc_id}")


def _grade_for(who: str, judged: dict, pair: tuple[str, str], position: int) -> int:
    grade = judged[pair]
    return grade if who == "alice" or position % 5 else (grade % 5) + 1  # bob differs on every 5th pair


def _grade_pairs(page, who: str, judged: dict, count: int) -> list[tuple[str, str]]:
    done = []
    for _ in range(count):
        pair = _pair_on_page(page)
        grade = _grade_for(who, judged, pair, judged["position"][pair])
        _press_grade(page, grade, note=f"{who} on {pair[1]}" if grade in (1, 2) else None)
        done.append(pair)
    return done


def _open_as(context, url: str, who: str | None):
    page = context.new_page()
    page.goto(url)
    if who is not None:
        page.get_by_role("button", name=who, exact=True).click()
    page.wait_for_selector("#view-grade:not([hidden])")
    return page


def test_two_annotators_grade_with_the_keyboard_resume_and_agree(browser, tmp_path):
    from playwright.sync_api import expect
    from sklearn.metrics import cohen_kappa_score

    from labeller.cli import main

    shots = Path(os.environ.get("LABELLER_SCREENSHOTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    sample = frozen_sample(tmp_path, size=40, labels=label_rows(n_per_query=3))
    judged = {(r["query_id"], r["doc_id"]): r["grade"]
              for r in map(json.loads, (tmp_path / "labels.jsonl").read_text().splitlines())}
    judged["position"] = {(r.query_id, r.doc_id): r.position for r in sample.rows}
    server = Server(tmp_path, "--annotators", "alice,bob", "--overlap", "0.8", "--note-required", "1,2",
                    "--labels", "labels.jsonl").start()
    try:
        alice_ctx, bob_ctx = browser.new_context(viewport={"width": 1400, "height": 900}), \
            browser.new_context(viewport={"width": 1400, "height": 900})
        alice = _open_as(alice_ctx, server.url, "alice")
        expect(alice.locator("#progress-text")).to_have_text("0 of 36 done")
        alice.screenshot(path=str(shots / "grade.png"), full_page=True)
        assert "judge says" not in alice.content()  # blind: nothing of the judge's verdict (its justifications)
        first = _grade_pairs(alice, "alice", judged, 10)
        alice.keyboard.press("c")  # can't judge, never a grade
        expect(alice.locator("#status")).to_contain_text("can't judge")
        alice.keyboard.press("l")  # later: comes back at the end
        expect(alice.locator("#status")).to_contain_text("later")
        alice.close()  # the browser tab is closed mid-way

        bob = _open_as(bob_ctx, server.url, "bob")
        _grade_pairs(bob, "bob", judged, 20)
        server.kill()  # the server dies mid-way: nothing saved may be lost
        server.start()
        bob.reload()
        bob.wait_for_selector("#view-grade:not([hidden])")
        expect(bob.locator("#progress-text")).to_have_text("20 of 36 done")
        _grade_pairs(bob, "bob", judged, 16)
        expect(bob.locator("#done-message")).to_be_visible()

        alice = _open_as(alice_ctx, server.url, None)  # same browser: remembers who she is, resumes
        expect(alice.locator("#who")).to_contain_text("alice")
        expect(alice.locator("#progress-text")).to_have_text("11 of 36 done · 1 later · 1 can't judge")
        assert _pair_on_page(alice) not in first
        _grade_pairs(alice, "alice", judged, 24)  # the rest, then the "later" pair comes back
        alice.reload()
        alice.wait_for_selector("#view-grade:not([hidden])")
        expect(alice.locator("#status")).to_have_text("your answer: later")
        _grade_pairs(alice, "alice", judged, 1)
        expect(alice.locator("#progress-text")).to_have_text("36 of 36 done · 1 can't judge")
        expect(alice.locator("#done-message")).to_be_visible()

        rows = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
        assert len(rows) == 72
        assert {r["outcome"] for r in rows if r["annotator"] == "alice"} == {"graded", "cant_judge"}
        assert all(r["sample_id"] == sample.sample_id and r["created_at"] for r in rows)
        position = {(r.query_id, r.doc_id): r.position for r in sample.rows}
        for r in rows:
            if r["outcome"] == "graded":
                pair = (r["query_id"], r["doc_id"])
                assert r["grade"] == _grade_for(r["annotator"], judged, pair, position[pair])
                assert bool(r["note"]) == (r["grade"] in (1, 2))
        both = {}
        for r in rows:
            if r["outcome"] == "graded":
                both.setdefault((r["query_id"], r["doc_id"]), {})[r["annotator"]] = r["grade"]
        shared = [g for g in both.values() if len(g) == 2]
        assert len(shared) >= 30
        expected = cohen_kappa_score([g["alice"] for g in shared], [g["bob"] for g in shared], labels=[1, 2, 3, 4, 5])

        alice.goto(server.url + "#agreement")
        expect(alice.locator("#agreement-figures")).to_contain_text(f"{expected:.3f}")
        expect(alice.locator("#agreement-figures")).to_contain_text(f"{len(shared)}shared pairs")
        expect(alice.locator("#disagreement-table tr")).to_have_count(1 + sum(g["alice"] != g["bob"] for g in shared))
        alice.screenshot(path=str(shots / "agreement.png"), full_page=True)

        alice.goto(server.url + "#adjudicate")
        alice.fill("#adjudicator", "carol")
        card = alice.locator(".item").first
        expect(card).to_contain_text("judge")
        alice.screenshot(path=str(shots / "adjudicate.png"), full_page=True)
        card.locator("select").select_option("4")
        card.get_by_role("button", name="Save").click()
        expect(card.locator(".settled")).to_have_text("settled by carol: 4")
        assert any(json.loads(line)["outcome"] == "adjudicated"
                   for line in (tmp_path / "gold.jsonl").read_text().splitlines())
    finally:
        server.kill()

    with pytest.raises(SystemExit) as stopped:
        main(["agree", "--labels", str(tmp_path / "labels.jsonl"), "--gold", str(tmp_path / "gold.jsonl"),
              "--bootstrap", "50", "--json"])
    assert stopped.value.code == 0


def test_the_page_shows_a_stale_page_and_a_foreign_gold_file(browser, tmp_path):
    from playwright.sync_api import expect

    shots = Path(os.environ.get("LABELLER_SCREENSHOTS", tmp_path))
    frozen_sample(tmp_path, size=10)
    server = Server(tmp_path, "--annotators", "alice", "--note-required", "none").start()
    try:
        page = _open_as(browser.new_context(viewport={"width": 1400, "height": 900}), server.url, "alice")
        _press_grade(page, 4)
        server.kill()
        page.keyboard.press("5")  # the server is gone: the page says so, and the grade is not counted
        expect(page.locator("#banner")).to_contain_text("cannot be reached")
        expect(page.locator("#status")).to_have_text("not saved")
        (tmp_path / "sample.jsonl").rename(tmp_path / "old-sample.jsonl")
        (tmp_path / "gold.jsonl").rename(tmp_path / "old-gold.jsonl")
        frozen_sample(tmp_path, size=12)  # another sample, served under the same address
        (tmp_path / "labels.jsonl").unlink()
        server.start()
        page.keyboard.press("3")  # the old tab still shows the old sample
        expect(page.locator("#banner")).to_contain_text("This page was opened for sample")
        expect(page.locator("#banner")).to_contain_text("reload the page")
        page.screenshot(path=str(shots / "stale.png"))
        page.get_by_role("button", name="Reload").click()
        page.get_by_role("button", name="alice", exact=True).click()  # a new sample: who is grading?
        page.wait_for_selector("#view-grade:not([hidden])")
        expect(page.locator("#banner")).to_be_hidden()
        (tmp_path / "gold.jsonl").write_text((tmp_path / "old-gold.jsonl").read_text())  # a foreign gold file
        page.keyboard.press("3")
        expect(page.locator("#banner")).to_contain_text("this gold file holds grades of sample")
    finally:
        server.kill()
