"""`labeller label --batch` and `labeller batch ...` end to end: the real CLI, the real openai and
anthropic SDKs, real HTTP to the fake's batch endpoints (tests/fakebatch.py).

Every document carries its right grade as a marker the fake reads, so each label is checked.
Invariants: every pair ends with the right grade or a counted failure; no synchronous request is
sent with --batch; a rerun resubmits only what failed; a run killed while polling resumes its
batches without submitting them again; a third run sends nothing; costs are half the sync price.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakeapi import FakeAPI, Faults

from labeller.prices import load_prices

KEY = "sk-batch-SECRET-7f3a9e1c"
N = 60
SYNC_PATHS = ("/v1/chat/completions", "/v1/messages")
JUDGES = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-haiku-4-5"}


def grade_of(i: int) -> int:
    return (i * 3) % 5 + 1


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "rubric.md").write_text('+++\nname = "batch"\n+++\n5: exact. 3: partly. 1: not relevant.\n',
                                      encoding="utf-8")
    rows = {"queries": [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(6)],
            "corpus": [{"doc_id": f"d{i}", "text": f"receipt {i} doc-token-{i} [[grade:{grade_of(i)}]]"}
                       for i in range(N)],
            "pairs": [{"query_id": f"q{i % 6}", "doc_id": f"d{i}"} for i in range(N)]}
    for name, items in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return folder


def inputs_args(folder: Path) -> list[str]:
    return ["--queries", str(folder / "queries.jsonl"), "--corpus", str(folder / "corpus.jsonl"),
            "--pairs", str(folder / "pairs.jsonl"), "--rubric", str(folder / "rubric.md")]


def label_cmd(folder: Path, tmp: Path, judge: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "labeller", "label", *inputs_args(folder), "--judge", judge,
            "--cache", str(tmp / "cache"), "--out", str(tmp / "labels.jsonl"), "--batch",
            "--poll-interval", "0.05", *extra]


def env_for(api: FakeAPI) -> dict[str, str]:
    return api.environment(KEY)


def run(api: FakeAPI, cmd: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=env_for(api), capture_output=True, text=True, timeout=120)
    assert KEY not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def check(tmp: Path, done: subprocess.CompletedProcess) -> tuple[list[dict], list[dict]]:
    """Every pair has its right grade exactly once, or is a counted, reported failure."""
    labels, failures = read_jsonl(tmp / "labels.jsonl"), read_jsonl(tmp / "labels.failures.jsonl")
    labelled = {(r["query_id"], r["doc_id"]) for r in labels}
    failed = {(r["query_id"], r["doc_id"]) for r in failures}
    assert len(labelled) == len(labels) and not labelled & failed
    assert len(labelled) + len(failed) == N, "no pair may go missing silently"
    for row in labels:
        assert row["grade"] == grade_of(int(row["doc_id"][1:])), row
    assert f"{len(failed)} failed" in done.stderr
    assert (done.returncode != 0) == bool(failed), done.stderr
    return labels, failures


def kill_while_polling(api: FakeAPI, cmd: list[str], batches: int) -> None:
    """Start a --batch run; SIGKILL it once it has created `batches` batches and polled one (every
    batch is recorded in the store before polling starts)."""
    proc = subprocess.Popen(cmd, env=env_for(api), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (
            creates(api) == batches and any(p.startswith(("/v1/batches/", "/v1/messages/batches/"))
                                            for p in api.counts)):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert creates(api) == batches, "killed after submitting every batch, while polling"


def sync_requests(api: FakeAPI) -> int:
    return sum(api.counts[p] for p in SYNC_PATHS)


def creates(api: FakeAPI) -> int:
    return api.counts["/v1/batches"] + api.counts["/v1/messages/batches"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_faulty_batches_three_runs(provider, inputs, tmp_path):
    faults = Faults(server_error=0.08, malformed=0.08, out_of_range=0.05, seed=4)
    with FakeAPI(faults=faults, api_key=KEY, batch_delay=0.2, batch_expire=0.05) as api:
        api.poison = {"doc-token-7 ": "range"}
        first = run(api, label_cmd(inputs, tmp_path, JUDGES[provider], "--batch-max-requests", "25"))
        labels, failures = check(tmp_path, first)
        assert sync_requests(api) == 0, "--batch must send no synchronous request"
        assert creates(api) == 3, "60 requests at 25 a batch make 3 batches"
        assert sum(api.batched.values()) == N and api.batched_twice == 0
        reasons = " | ".join(f["reason"] for f in failures)
        assert "expired" in reasons and "malformed reply" in reasons and "less than or equal to 5" in reasons
        assert ("q1", "d7") in {(f["query_id"], f["doc_id"]) for f in failures}
        assert all(not r["from_cache"] and r["cost_usd"] > 0 for r in labels)

        # Run 2: the poison and faults are gone; only the failed pairs are submitted again.
        api.poison, api.faults, api.batch_expire = {}, Faults(), 0.0
        api.reset()
        before = dict(api.batched)
        second = run(api, label_cmd(inputs, tmp_path, JUDGES[provider]))
        assert check(tmp_path, second)[1] == [] and second.returncode == 0
        resent = {cid for cid, n in api.batched.items() if n > before.get(cid, 0)}
        assert resent == {f["cache_key"] for f in failures}, "a rerun resubmits exactly what failed"
        assert sync_requests(api) == 0 and creates(api) == 1

        # Run 3: everything from the store; nothing is sent at all.
        api.reset()
        third = run(api, label_cmd(inputs, tmp_path, JUDGES[provider]))
        assert third.returncode == 0 and api.total == 0
        assert all(r["from_cache"] for r in read_jsonl(tmp_path / "labels.jsonl"))
    for path in tmp_path.rglob("*"):  # the API key is nowhere: not in the store, batch records, labels
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_damaged_result_line_is_one_counted_failure_and_reruns_work(provider, inputs, tmp_path):
    """issue 25: one line of Anthropic batch results that is not JSON crashed every run (a JSONDecodeError
    from the SDK's decoder, 0 verdicts stored). Both providers: that pair is a counted failure, the other
    59 verdicts are stored, and reruns (without --batch, then with it) finish it."""
    with FakeAPI(api_key=KEY, batch_damage=1) as api:
        first = run(api, label_cmd(inputs, tmp_path, JUDGES[provider]))
        labels, failures = check(tmp_path, first)
        assert len(labels) == N - 1 and len(failures) == 1 and first.returncode == 1
        assert "1 result line was damaged" in failures[0]["reason"], failures
        api.batch_damage = 0
        api.reset()
        sync = run(api, [a for a in label_cmd(inputs, tmp_path, JUDGES[provider]) if a != "--batch"])
        assert check(tmp_path, sync)[1] == [] and sync.returncode == 0 and sync_requests(api) == 1
        api.reset()
        again = run(api, label_cmd(inputs, tmp_path, JUDGES[provider]))
        assert again.returncode == 0 and api.total == 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_killed_while_polling_resumes_its_batches(provider, inputs, tmp_path, store_spec):
    """On both stores (a directory, and PostgreSQL): the batch records outlive the process."""
    with FakeAPI(api_key=KEY, batch_delay=3.0) as api:
        cmd = label_cmd(inputs, tmp_path, JUDGES[provider], "--batch-max-requests", "20")
        cmd[cmd.index("--cache") + 1] = store_spec
        kill_while_polling(api, cmd, batches=3)
        assert sum(api.batched.values()) == N, "killed after submitting, while polling"
        assert not (tmp_path / "labels.jsonl").exists()

        api.reset()
        second = run(api, cmd)
        labels, failures = check(tmp_path, second)
        assert failures == [] and len(labels) == N
        assert creates(api) == 0 and api.batched_twice == 0, "the rerun resumes the batches, never resubmits"
        assert sync_requests(api) == 0
        assert "3 resumed" in second.stderr

        api.reset()
        third = run(api, cmd)
        assert third.returncode == 0 and api.total == 0


def test_batches_fit_the_byte_limit_and_an_oversized_request_fails_alone(inputs, tmp_path):
    corpus = read_jsonl(inputs / "corpus.jsonl")
    corpus[5]["text"] += " " + "x" * 30_000  # one request bigger than the whole byte limit
    (inputs / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    limit = 12_000
    with FakeAPI(api_key=KEY, openai_limits=(50_000, limit)) as api:
        done = run(api, label_cmd(inputs, tmp_path, JUDGES["openai"], "--batch-max-bytes", str(limit)))
        labels, failures = check(tmp_path, done)
        assert [f["doc_id"] for f in failures] == ["d5"] and "over the batch limit" in failures[0]["reason"]
        uploads = [f["data"] for f in api.batches.files.values() if f["info"]["purpose"] == "batch"]
        assert len(uploads) == creates(api) > 1 and all(len(data) <= limit for data in uploads)
        assert sum(len(data.splitlines()) for data in uploads) == N - 1


def test_batch_prices_are_half_the_synchronous_ones_and_cached_input_is_priced_cached(inputs, tmp_path):
    with FakeAPI(api_key=KEY) as api:
        run(api, label_cmd(inputs, tmp_path, JUDGES["openai"]))
        labels = read_jsonl(tmp_path / "labels.jsonl")
    price = load_prices().lookup("openai", "gpt-4.1-mini")
    assert price.batch == 0.5
    cached_rows = [r for r in labels if r["cached_input_tokens"]]
    assert cached_rows, "the fake caches the rubric prefix after its first request"
    for row in labels:
        sync = price.cost(row["input_tokens"], row["output_tokens"], row["cached_input_tokens"])
        assert row["cost_usd"] == pytest.approx(sync / 2)
        assert row["cost_usd"] < price.cost(row["input_tokens"], row["output_tokens"]) / 2 or not row["cached_input_tokens"]


@pytest.mark.parametrize("served", [None, "gpt-4.1-mini"], ids=["no-models-endpoint", "models-endpoint-names-the-model"])
def test_same_request_and_cache_key_as_the_synchronous_path(inputs, tmp_path, served):
    with FakeAPI(api_key=KEY, served_model=served) as api:
        sync_dir, batch_dir = tmp_path / "sync", tmp_path / "batch"
        sync_dir.mkdir(), batch_dir.mkdir()
        cmd = label_cmd(inputs, sync_dir, JUDGES["openai"])
        run(api, [a for a in cmd if a not in ("--batch", "--poll-interval", "0.05")])
        sync_body = next(r.body for r in api.requests if r.path == "/v1/chat/completions")
        run(api, label_cmd(inputs, batch_dir, JUDGES["openai"]))
        line = json.loads(next(iter(f["data"] for f in api.batches.files.values()
                                    if f["info"]["purpose"] == "batch")).splitlines()[0])
        assert set(line["body"]) == set(sync_body) and line["body"]["response_format"] == sync_body["response_format"]
        keys = {r["cache_key"] for r in read_jsonl(sync_dir / "labels.jsonl")}
        assert keys == {r["cache_key"] for r in read_jsonl(batch_dir / "labels.jsonl")}
        api.reset()  # a verdict bought one way serves the other: the sync store answers a batch run
        again = run(api, label_cmd(inputs, sync_dir, JUDGES["openai"]))
        assert again.returncode == 0 and api.total == 0


def test_list_status_and_cancel(inputs, tmp_path):
    with FakeAPI(api_key=KEY, batch_delay=30.0) as api:
        cmd = label_cmd(inputs, tmp_path, JUDGES["anthropic"], "--batch-max-requests", "40")
        kill_while_polling(api, cmd, batches=2)
        cache = ["--cache", str(tmp_path / "cache")]
        listed = run(api, [sys.executable, "-m", "labeller", "batch", "list", *cache])
        ids = [line.split("\t")[1] for line in listed.stdout.splitlines()]
        assert len(ids) == 2 and "2 batches in flight" in listed.stderr
        status = run(api, [sys.executable, "-m", "labeller", "batch", "status", ids[0], *cache])
        assert "in_progress" in status.stdout and "total 40" in status.stdout
        cancelled = run(api, [sys.executable, "-m", "labeller", "batch", "cancel", ids[0], *cache])
        assert cancelled.returncode == 0 and "ended" in cancelled.stdout
        api.batch_delay = 0.0  # the second batch ends now: the rerun reads both
        for batch in api.batches.anthropic.values():
            batch["ready_at"] = 0.0
        api.reset()
        rerun = run(api, cmd)
        labels, failures = check(tmp_path, rerun)
        assert len(failures) == 40 and all("cancelled" in f["reason"] for f in failures)
        assert creates(api) == 0
        assert run(api, [sys.executable, "-m", "labeller", "batch", "list", *cache]).stdout == ""


# issue 25: a server whose /v1/models names the model put that identity in the synchronous keys only, so the
# four steps ended with every pair bought again (and a killed --batch run's pairs paid twice): both paths key alike.
SERVED = [None, "Qwen2.5-7B-Instruct"]


@pytest.mark.parametrize("served", SERVED, ids=["no-models-endpoint", "models-endpoint-names-the-model"])
def test_export_vllm_run_batch_import_round_trip(inputs, tmp_path, served):
    """export -> a batch server (the fake's OpenAI batch API standing in for vLLM run-batch) -> import -> label."""
    import openai

    base = ["--judge", "openai:Qwen2.5-7B-Instruct", "--cache", str(tmp_path / "cache")]
    with FakeAPI(served_model=served) as api:
        base += ["--base-url", api.openai_url]
        exported = tmp_path / "batch-in.jsonl"
        done = run(api, [sys.executable, "-m", "labeller", "batch", "export", *inputs_args(inputs), *base,
                         "--out", str(exported)])
        assert done.returncode == 0 and api.total == 0 and len(read_jsonl(exported)) == N

        client = openai.OpenAI(api_key="unused", base_url=api.openai_url)
        uploaded = client.files.create(file=exported.open("rb"), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        output = client.batches.retrieve(batch.id).output_file_id
        results = tmp_path / "batch-out.jsonl"
        results.write_bytes(client.files.content(output).content)
        rows = read_jsonl(results)
        rows[0]["id"] = "vllm-0f1e"  # what vLLM writes; extra body fields are taken as they come
        rows[0]["response"]["body"]["kv_transfer_params"] = None
        results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

        api.reset()
        imported = run(api, [sys.executable, "-m", "labeller", "batch", "import", *inputs_args(inputs), *base,
                             "--results", str(results)])
        assert imported.returncode == 0 and f"imported {N} verdicts" in imported.stderr and api.total == 0
        again = run(api, [sys.executable, "-m", "labeller", "batch", "import", *inputs_args(inputs), *base,
                          "--results", str(results)])
        assert "imported 0 verdicts" in again.stderr and f"{N} already stored" in again.stderr

        labelled = run(api, [sys.executable, "-m", "labeller", "label", *inputs_args(inputs), *base,
                             "--out", str(tmp_path / "labels.jsonl")])
        check(tmp_path, labelled)
        assert api.total == 0, "every pair came from the imported verdicts"
        assert "0 new" in labelled.stderr and (served is None or api.model_lists), labelled.stderr
        assert run(api, [sys.executable, "-m", "labeller", "batch", "export", *inputs_args(inputs), *base,
                         "--out", str(exported)]).returncode == 0
        assert read_jsonl(exported) == []


def test_two_processes_at_once_never_submit_a_pair_twice(inputs, tmp_path):
    with FakeAPI(api_key=KEY, batch_delay=0.5) as api:
        outs = [tmp_path / "a", tmp_path / "b"]
        procs = []
        for out in outs:
            out.mkdir()
            cmd = label_cmd(inputs, out, JUDGES["openai"], "--batch-max-requests", "10")
            cmd[cmd.index("--cache") + 1] = str(tmp_path / "shared-cache")
            procs.append(subprocess.Popen(cmd, env=env_for(api), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True))
        for proc in procs:
            proc.wait(120)
            assert proc.returncode == 0, proc.stderr.read()
        assert sum(api.batched.values()) == N and api.batched_twice == 0, "each pair paid exactly once"
        assert sync_requests(api) == 0
        grades = [{r["doc_id"]: r["grade"] for r in read_jsonl(out / "labels.jsonl")} for out in outs]
        assert grades[0] == grades[1] and len(grades[0]) == N


@pytest.mark.parametrize("served", SERVED, ids=["no-models-endpoint", "models-endpoint-names-the-model"])
def test_a_run_without_batch_finishes_the_open_batches_instead_of_paying_again(inputs, tmp_path, served):
    """A --batch run killed while polling, then the same command without --batch: the pairs in its
    batches come from those batches (polled to the end), never from a second, synchronous purchase."""
    with FakeAPI(api_key=KEY, batch_delay=1.5, served_model=served and "gpt-4.1-mini") as api:
        cmd = label_cmd(inputs, tmp_path, JUDGES["openai"], "--batch-max-requests", "25")
        kill_while_polling(api, cmd, batches=3)
        api.reset()
        sync = [a for a in cmd if a != "--batch"]
        done = run(api, sync)
        labels, failures = check(tmp_path, done)
        assert failures == [] and sync_requests(api) == 0 and creates(api) == 0
        assert served is None or api.model_lists, "the served identity was asked for and is in both paths' keys"
