"""`labeller answers judge --batch` end to end: the real CLI, the real openai and anthropic SDKs over real HTTP to
the fake's batch endpoints (tests/fakebatch.py), which answer the planted claim splits and verdicts. Invariants:
every claim its planted verdict or a counted failure; no synchronous request with --batch; a run killed while
polling, then rerun without --batch, collects its batch and pays nothing twice; a rerun sends nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import cli
from fakeapi import FakeAPI
from test_answers import PLANTED, args, write_inputs

KEY = "sk-answers-batch-SECRET-51c2"
JUDGES = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-haiku-4-5"}
SYNC_PATHS = ("/v1/chat/completions", "/v1/messages")
SPLITS, CLAIMS = 7, 6  # seven answers split; six claims judged (q3 and q7 abstain with none)


EXPECTED = {q: p[4] for q, p in PLANTED.items()}


def classes(report: dict) -> dict[str, str]:
    return {a["query_id"]: a["attribution"] for a in report["answers"]}


def sync_requests(api: FakeAPI) -> int:
    return sum(api.counts[p] for p in SYNC_PATHS)


def creates(api: FakeAPI) -> int:
    return api.counts["/v1/batches"] + api.counts["/v1/messages/batches"]


@pytest.fixture
def api(monkeypatch):
    with FakeAPI(api_key=KEY) as server:
        for name, value in server.environment(KEY).items():
            monkeypatch.setenv(name, value)
        yield server


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_gives_every_planted_class_and_a_rerun_sends_nothing(api, tmp_path, capsys, provider):
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", JUDGES[provider], "--cache", tmp_path / "cache", "--json")
    code, out, err = cli(capsys, *common, "--batch", "--poll-interval", "0.05")
    assert code == 0, err
    report = json.loads(out)
    assert classes(report) == EXPECTED
    by_q = {a["query_id"]: a for a in report["answers"]}
    assert [c["verdict"] for c in by_q["q2"]["claims"]] == ["supported", "not_supported"]
    assert by_q["q6"]["contradicted"] == 1 and by_q["q7"]["claims"] == []
    assert sync_requests(api) == 0 and creates(api) == 2  # one batch of splits, one of claims
    assert sum(api.batched.values()) == SPLITS + CLAIMS and set(api.batched.values()) == {1}
    assert report["stats"]["verdicts"]["batch"]["submitted"] == 1 == report["stats"]["split"]["batch"]["submitted"]
    sent = api.total
    for extra in (["--batch", "--poll-interval", "0.05"], []):  # a rerun, with --batch or without, sends nothing
        code, again, _ = cli(capsys, *common, *extra)
        assert code == 0 and api.total == sent
        assert all(c["from_cache"] for a in json.loads(again)["answers"] for c in a["claims"])
    assert KEY not in out + err


def test_malformed_batch_replies_are_counted_failures_and_the_gate_fails(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    api.poison["<claim>\\nIt is painted gold"] = "malformed"  # q2's second claim's prompt (JSON-escaped): no schema
    code, out, err = cli(capsys, *args(files, "--judge", JUDGES["openai"], "--cache", tmp_path / "cache", "--json",
                                       "--batch", "--poll-interval", "0.05"))
    assert code == 1 and "max_failures" in err
    report = json.loads(out)
    assert [f["doc_id"] for f in report["failures"]] == ["q2#2"]
    assert report["failures"][0]["reason"].startswith("malformed reply")
    assert report["attribution"]["unattributed"] == ["q2"]  # never a verdict made up
    assert sync_requests(api) == 0


def test_killed_while_polling_then_rerun_without_batch_pays_nothing_twice(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", JUDGES["openai"], "--cache", tmp_path / "cache", "--json")
    api.batch_delay = 30.0  # the split batch stays in progress: the run is killed while polling it
    proc = subprocess.Popen([sys.executable, "-m", "labeller", *map(str, common), "--batch", "--poll-interval", "0.05"],
                            env=api.environment(KEY), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (
            creates(api) == 1 and any(p.startswith("/v1/batches/") for p in api.counts)):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert creates(api) == 1 and sum(api.batched.values()) == SPLITS and sync_requests(api) == 0
    api.batch_delay = 0.0
    code, out, err = cli(capsys, *common)  # without --batch: the open batch of splits is collected first
    assert code == 0, err
    assert classes(json.loads(out)) == EXPECTED
    assert sum(api.batched.values()) == SPLITS and set(api.batched.values()) == {1}  # no split sent twice
    assert sync_requests(api) == CLAIMS and creates(api) == 1  # only the claims, never batched, were bought
    sent = api.total
    code, _, _ = cli(capsys, *common)
    assert code == 0 and api.total == sent


def test_a_damaged_result_line_is_a_counted_failure_and_a_rerun_buys_only_it(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", JUDGES["anthropic"], "--cache", tmp_path / "cache", "--json", "--batch",
                  "--poll-interval", "0.05")
    api.batch_damage = 1  # the first line of each results file is cut in half
    code, out, err = cli(capsys, *common)
    assert code == 1 and "max_failures" in err
    failures = json.loads(out)["failures"]
    assert len(failures) == 2 and all("damaged" in f["reason"] for f in failures)  # one split, one claim
    api.batch_damage = 0
    code, out, err = cli(capsys, *common)
    assert code == 0, err
    assert classes(json.loads(out)) == EXPECTED
    assert list(api.batched.values()).count(2) == 2 and max(api.batched.values()) == 2  # only the two re-sent
    assert sync_requests(api) == 0


def test_a_jury_over_both_batch_apis_and_a_dry_run_that_sends_nothing(api, tmp_path, capsys):
    files = write_inputs(tmp_path / "in")
    common = args(files, "--judge", JUDGES["openai"], "--jury", JUDGES["anthropic"], "--cache", tmp_path / "cache",
                  "--json", "--batch", "--poll-interval", "0.05")
    code, out, _ = cli(capsys, *common, "--dry-run")
    assert code == 0 and api.total == 0
    code, out, err = cli(capsys, *common)
    assert code == 0, err
    report = json.loads(out)
    assert classes(report) == EXPECTED
    assert api.counts["/v1/batches"] == 2 and api.counts["/v1/messages/batches"] == 1  # splits, then each judge
    assert sum(api.batched.values()) == SPLITS + 2 * CLAIMS and sync_requests(api) == 0
