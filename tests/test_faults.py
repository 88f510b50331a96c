"""Faults of the machine, not of the input: Ctrl-C, a full disk, outputs that cannot be written or would
replace an input, CSV cells a spreadsheet would run. Each becomes one line and nothing paid is lost.

Tests run as root, which ignores permission bits, so unwritable paths are made in ways root cannot
bypass: a parent that is a regular file, a directory where a file is expected, a path under /proc,
and RLIMIT_FSIZE for a disk that is full (a write past the limit fails with EFBIG, as one past the
end of a disk fails with ENOSPC).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from fakejudge import write_rubric

from labeller.errors import OutputError
from labeller.io.csvcells import escape_cell, unescape_cell
from labeller.io.outputs import check_outputs, guard_inputs, same_file
from labeller.io.tables import read_rows
from labeller.io.writing import write_rows, write_text

KEY = "sk-faults-secret-0123456789"


def _workspace(root: Path, n_docs: int) -> Path:
    (root / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "text": "spinach"}) + "\n")
    (root / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": f"d{i}", "text": f"spinach note {i} " + "w " * 40})
                                               + "\n" for i in range(n_docs)))
    (root / "pairs.jsonl").write_text("".join(json.dumps({"query_id": "q1", "doc_id": f"d{i}"}) + "\n"
                                              for i in range(n_docs)))
    write_rubric(root)
    return root


def _label_args(api: FakeAPI, concurrency: int = 4) -> list[str]:
    return [sys.executable, "-m", "labeller", "label", "--queries", "queries.jsonl", "--corpus", "corpus.jsonl",
            "--pairs", "pairs.jsonl", "--rubric", "rubric.md", "--judge", "openai:gpt-4.1-mini", "--base-url",
            api.openai_url, "--out", "out.jsonl", "--concurrency", str(concurrency)]


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY}


def _file_size_limit(n: int):
    def apply() -> None:  # runs in the child: every file it writes is capped at n bytes
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    return apply


def _cached(root: Path) -> int:
    from labeller.store.directory import DirectoryStore as VerdictCache

    with VerdictCache(root / ".labeller-cache", create=False) as cache:
        return cache.stats().entries


def _one_error_line(stderr: str, prefix: str = "labeller: error: ") -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr and KEY not in stderr, stderr
    assert lines and lines[-1].startswith(prefix), stderr
    return lines[-1]


# -- Ctrl-C ------------------------------------------------------------------------------------------

def _interrupt(root: Path, api: FakeAPI, presses: int) -> tuple[str, str, int, int]:
    """Start labelling 60 pairs, press Ctrl-C `presses` times once 10 requests were sent, check the exit
    and the last line; return (stderr, that line, requests the server saw, verdicts in the cache)."""
    proc = subprocess.Popen(_label_args(api, concurrency=4), cwd=root, env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while api.total < 10:  # mid-run: some verdicts paid, most pairs still to go
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run sent nothing"
        time.sleep(0.01)
    for _ in range(presses):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert not (root / "out.jsonl").exists()
    return stderr, _one_error_line(stderr, "labeller: interrupted; "), api.total, _cached(root)


def _rerun_pays(root: Path, api: FakeAPI, rows: int = 60) -> int:
    """Run the same command again, unhindered; return how many requests it sent."""
    api.reset()
    again = subprocess.run(_label_args(api), cwd=root, env=_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert len((root / "out.jsonl").read_text().splitlines()) == rows
    return api.total


def _label_on_a_full_disk(root: Path, api: FakeAPI, limit: int, concurrency: int = 4) -> str:
    """Label with every file capped at `limit` bytes; check exit 2 and no labels file; return the one line."""
    full = subprocess.run(_label_args(api, concurrency), cwd=root, env=_env(), capture_output=True, text=True,
                          timeout=120, preexec_fn=_file_size_limit(limit))
    assert full.returncode == 2, full.stderr
    assert not (root / "out.jsonl").exists()
    return _one_error_line(full.stderr)


def test_ctrl_c_waits_for_the_requests_in_flight_and_nothing_is_paid_twice(tmp_path):
    root = _workspace(tmp_path, 60)
    with FakeAPI(latency=0.2) as api:
        stderr, line, sent, safe = _interrupt(root, api, presses=1)
        assert "labeller: stopping: waiting for the requests in flight" in stderr
        assert safe == sent < 60  # every request sent was answered and stored
        assert line == (f"labeller: interrupted; {safe:,} verdicts are safe in the cache at .labeller-cache; "
                        "rerun the same command to continue")
        assert _rerun_pays(root, api) == 60 - safe  # 60 requests in all: nothing paid twice


def test_a_second_ctrl_c_stops_at_once_and_still_counts_what_is_safe(tmp_path):
    root = _workspace(tmp_path, 60)
    with FakeAPI(latency=0.5) as api:
        _, line, sent, safe = _interrupt(root, api, presses=2)
        # Stopped without waiting: the (at most --concurrency = 4) requests then in flight have no answer.
        assert sent - 4 <= safe < sent
        assert line.startswith(f"labeller: interrupted; {safe:,} verdicts are safe")
        assert _rerun_pays(root, api) == 60 - safe


# -- a full disk ---------------------------------------------------------------------------------------

def test_a_full_disk_is_found_before_anything_is_paid(tmp_path):
    root = _workspace(tmp_path, 5)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    with FakeAPI() as api:
        line = _label_on_a_full_disk(root, api, 0)
        assert "out.jsonl" in line and "cannot write --out" in line
        assert api.total == 0
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_a_disk_that_fills_mid_run_keeps_every_verdict_stored(tmp_path):
    """The cache outgrows the disk after some verdicts: one line naming the cache, exit 2, no labels file,
    and the verdicts stored before the disk filled are served from the cache by the rerun."""
    root = _workspace(tmp_path, 400)
    with FakeAPI() as api:
        line = _label_on_a_full_disk(root, api, 400_000, concurrency=8)
        assert ".labeller-cache" in line and "could not be written" in line and "kept" in line
        kept = _cached(root)
        assert 0 < kept < 400
        assert _rerun_pays(root, api, rows=400) == 400 - kept


def test_labels_that_cannot_be_written_after_labelling_cost_nothing_on_the_rerun(tmp_path):
    """The disk fills only when the labels are written (2,000 rows of one shared verdict: a tiny cache,
    a large labels file): one line saying every verdict is in the cache, and the rerun sends nothing."""
    root = _workspace(tmp_path, 1)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"doc_id": f"d{i}", "text": "spinach is green"}) + "\n"
                                               for i in range(2000)))
    (root / "pairs.jsonl").write_text("".join(json.dumps({"query_id": "q1", "doc_id": f"d{i}"}) + "\n"
                                              for i in range(2000)))
    with FakeAPI() as api:
        line = _label_on_a_full_disk(root, api, 300_000)
        assert "out.jsonl" in line and "every verdict is in the cache at .labeller-cache" in line
        assert api.total == 1
        assert _rerun_pays(root, api, rows=2000) == 0


# -- the pieces -------------------------------------------------------------------------------------------

def test_same_file_sees_through_spellings_and_links(tmp_path):
    target = tmp_path / "corpus.jsonl"
    target.write_text("x\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.jsonl").symlink_to("corpus.jsonl")
    os.link(target, tmp_path / "hard.jsonl")
    assert same_file(tmp_path / "sub" / ".." / "corpus.jsonl", target)
    assert same_file(tmp_path / "link.jsonl", target) and same_file(tmp_path / "hard.jsonl", target)
    assert not same_file(tmp_path / "other.jsonl", target)
    (tmp_path / "copy.jsonl").write_text("x\n")
    assert not same_file(tmp_path / "copy.jsonl", target)  # equal bytes, another file


@pytest.mark.parametrize("where", ["parent-is-a-file", "is-a-directory", "under-proc"])
def test_unwritable_outputs_are_refused_by_the_early_check(tmp_path, where):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir.jsonl").mkdir()
    path = {"parent-is-a-file": tmp_path / "file" / "out.jsonl", "is-a-directory": tmp_path / "dir.jsonl",
            "under-proc": Path("/proc/labeller-test/out.jsonl")}[where]
    with pytest.raises(OutputError, match="--out"):
        check_outputs(files={"--out": path})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.jsonl", "file"]  # the probe left nothing behind


def test_atomic_writes_turn_os_errors_into_one_line_and_keep_the_old_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="cannot write this file"):
        write_rows(tmp_path / "file" / "labels.jsonl", [{"a": 1}])
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(OutputError, match="cannot write this file"):
        write_text(tmp_path / "dir.jsonl", "text")
    assert (tmp_path / "dir.jsonl").is_dir() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_guard_refuses_to_replace_a_guarded_input(tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text("keep\n")
    with guard_inputs([source]):
        with pytest.raises(OutputError, match="input"):
            write_text(tmp_path / "." / "corpus.jsonl", "gone\n")
        write_text(tmp_path / "other.jsonl", "fine\n")
    assert source.read_text() == "keep\n"
    write_text(source, "replaced\n")  # outside the guard, a write is a write
    assert source.read_text() == "replaced\n"


# -- CSV cells a spreadsheet would run -------------------------------------------------------------------

@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx",
                                  "'=x", "''=x", "'plain", "plain", "-0.5", "-1e-3", "", "'", "-"])
def test_csv_cells_round_trip(text):
    assert unescape_cell(str(escape_cell(text))) == text


def test_formula_cells_are_escaped_and_numbers_are_not():
    assert escape_cell("=HYPERLINK(\"http://evil\",\"click\")") == "'=HYPERLINK(\"http://evil\",\"click\")"
    assert escape_cell("@cmd") == "'@cmd" and escape_cell("-2+3") == "'-2+3" and escape_cell("\t=1") == "'\t=1"
    assert escape_cell("-0.5") == "-0.5" and escape_cell(-0.5) == -0.5 and escape_cell(-2) == -2
    assert escape_cell("plain text") == "plain text"


def test_a_labels_csv_keeps_no_formula_and_reads_back_unchanged(tmp_path):
    rows = [{"query_id": "q1", "doc_id": "-d1", "grade": 3, "score": -0.5, "justification": "=HYPERLINK(\"u\",\"x\")"}]
    path = write_rows(tmp_path / "labels.csv", rows)
    text = path.read_text()
    assert "'=HYPERLINK" in text and ",-0.5," in text and "\n=" not in text and ",=" not in text
    (_, back), = read_rows(path)
    assert back["justification"] == rows[0]["justification"] and back["doc_id"] == "-d1"


def test_disagreements_csv_keeps_no_live_formula(tmp_path):
    from labeller.cli import main

    label = {"query_id": "q1", "doc_id": "d1", "grade": 5, "justification": "=HYPERLINK(\"http://evil\",\"open\")",
             "judge": "offline:lexical", "provider": "offline", "model": "lexical", "rubric": "t",
             "rubric_version": "v1", "cache_key": "k", "created_at": "2026-01-01T00:00:00+00:00"}
    gold = {"query_id": "q1", "doc_id": "d1", "grade": 1, "annotator": "a", "note": "@SUM(A1:A9)"}
    (tmp_path / "labels.jsonl").write_text(json.dumps(label) + "\n")
    (tmp_path / "gold.jsonl").write_text(json.dumps(gold) + "\n")
    with pytest.raises(SystemExit) as done:
        main(["agree", "--labels", str(tmp_path / "labels.jsonl"), "--gold", str(tmp_path / "gold.jsonl"),
              "--report", str(tmp_path / "r"), "--bootstrap", "10"])
    assert done.value.code in (0, None)
    import csv

    (row,) = list(csv.DictReader((tmp_path / "r" / "disagreements.csv").open(newline="")))
    assert row["judge_justification"] == "'=HYPERLINK(\"http://evil\",\"open\")"
    assert row["human_note"] == "'@SUM(A1:A9)"
    assert row["difference"] == "4"  # numbers stay numbers


# -- acceptance ---------------------------------------------------------------------------------------------

def test_acceptance_warns_when_only_some_run_queries_match(tmp_path, capsys):
    from labeller.cli import main

    (tmp_path / "q.jsonl").write_text(json.dumps({"query_id": "q1", "text": "a"}) + "\n"
                                      + json.dumps({"query_id": "q2", "text": "b"}) + "\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2.0 s\nzz Q0 d1 1 2.0 s\n")
    with pytest.raises(SystemExit) as done:
        main(["acceptance", "--queries", str(tmp_path / "q.jsonl"), "--run", str(tmp_path / "run.trec")])
    assert done.value.code in (0, None)
    err = capsys.readouterr().err
    assert "labeller: warning: 1 of the 2 query ids in" in err and "'zz'" in err


# -- a full disk, for every command that writes -------------------------------------------------------------

FULL_DISK = {
    "agree --report": (["agree", "--labels", "labels.jsonl", "--gold", "gold.jsonl", "--report", "rep"], "rep"),
    "evaluate --report": (["evaluate", "--run", "run.trec", "--labels", "labels.jsonl", "--report", "rep"], "rep"),
    "qrels export": (["qrels", "export", "gold.jsonl", "--out", "g.qrels", "--to-scale", "0-3"], "g.qrels"),
    "qrels import": (["qrels", "import", "run.qrels", "--out", "g.jsonl", "--from-scale", "0-3"], "g.jsonl"),
    "canaries plant": (["canaries", "plant", "--corpus", "corpus.jsonl", "--canaries", "c.toml", "--out",
                        "corpus.test.jsonl"], "corpus.test.jsonl"),
    "run --out": (["run", "pipe.toml", "--out", "piped"], "piped"),
    "demo --out": (["demo", "--out", "demo-out"], "demo-out"),
}


@pytest.mark.parametrize("command", FULL_DISK, ids=list(FULL_DISK))
def test_a_full_disk_is_one_line_for_every_command_that_writes(tmp_path, command):
    from test_hostile_inputs import workspace

    root = workspace(tmp_path)
    (root / "run.qrels").write_text("q1 0 d1 2\n")
    (root / "pipe.toml").write_text('pipeline = "label_slice"\n[inputs]\nqueries = "queries.jsonl"\n'
                                    'corpus = "corpus.jsonl"\n')
    (root / "c.toml").write_text('[[canary]]\nid = "c1"\nquestion = "Which code?"\n'
                                 '[[canary.fact]]\nvalue = "Z9-QUAIL-77"\npayload = "The code is Z9-QUAIL-77."\n')
    args, output = FULL_DISK[command]
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    done = subprocess.run([sys.executable, "-m", "labeller", *args], cwd=root, env=_env(), capture_output=True,
                          text=True, timeout=300, preexec_fn=_file_size_limit(0))
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert output in line and "File too large" in line, line
    assert not (root / output).exists()
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before


def test_only_a_dead_writers_temporary_files_are_removed(tmp_path):
    """io.staletemp: beside labels.jsonl, a killed writer's temporary file goes; a live writer's (held), a fresh
    one, another name, another target's and a symlink stay."""
    import multiprocessing

    from labeller.io.staletemp import STALE_AFTER
    from labeller.io.writing import atomic_file

    target = tmp_path / "labels.jsonl"
    dead = tmp_path / ".labels.jsonl.k3j9x_2q.tmp"
    others = [tmp_path / ".labels.jsonl.backup.tmp", tmp_path / ".other.jsonl.abcdefgh.tmp",
              tmp_path / "labels.jsonl.abcdefgh.tmp"]
    for path in (dead, *others):
        path.write_text("half")
    (tmp_path / ".labels.jsonl.linkxxxx.tmp").symlink_to(others[0])
    past = time.time() - 10 * STALE_AFTER
    for path in (dead, *others):
        os.utime(path, (past, past))
    live = multiprocessing.get_context("fork").Process(target=_hold_a_write, args=(str(target),))
    live.start()
    try:
        deadline = time.monotonic() + 30
        while not (held := [p for p in tmp_path.glob(".labels.jsonl.*.tmp") if p not in (dead,) and
                            not p.is_symlink() and p.stat().st_size == 5]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert held, "the live writer's temporary file"
        os.utime(held[0], (past, past))  # old, but held: a writer streaming a long run's labels
        fresh = tmp_path / ".labels.jsonl.fresh123.tmp"
        fresh.write_text("just made")  # unlocked but new: a writer between mkstemp and its lock
        with atomic_file(target) as handle:
            handle.write(b"new\n")
        assert not dead.exists() and held[0].exists() and fresh.exists()
        assert all(p.exists() for p in others) and (tmp_path / ".labels.jsonl.linkxxxx.tmp").is_symlink()
        assert target.read_bytes() == b"new\n"
    finally:
        live.terminate()
        live.join(10)


def _hold_a_write(target: str) -> None:
    from labeller.io.writing import atomic_file

    with atomic_file(target) as handle:
        handle.write(b"held\n")
        handle.flush()
        time.sleep(60)
