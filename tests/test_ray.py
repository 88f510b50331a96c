"""`labeller label --ray` on a real local Ray cluster (a head and two workers on loopback, tests/raycluster.py)
against the fake OpenAI API: each pair paid once across the cluster, the output byte for byte a single-process
cached rerun's, the budget and the rate limit held for the whole cluster, a PostgreSQL store, the Python API and a
pipeline on the cluster, the vLLM processor's rows through Ray Data, and a driver or a worker killed mid-run losing
nothing. One cluster for the module (each start-up costs 20 to 40 s).

The nodes run without the API key in their environment and the fake API refuses any other key: the workers
can only have it from the run (through the coordinator), and it must appear in no output, store or Ray log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from cli_helpers import cli
from fakeapi import FakeAPI

if not os.environ.get("CI"):  # in CI the dev extra installs Ray: a missing Ray fails there, never skips
    pytest.importorskip("ray", reason="the ray extra (pip install 'labeller-relevance[ray]') is not installed")

from ray_helpers import (KEY, MODEL, inputs, label_args, planted, rows, run_cli, single_process,  # noqa: E402
                         user_prompts, without_provenance)
from raycluster import RayCluster, free_port  # noqa: E402

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"


@pytest.fixture(scope="module")
def cluster():
    root = Path(tempfile.mkdtemp(prefix="lray-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    nodes = RayCluster(root, workers=2)
    yield nodes
    nodes.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def api():
    with FakeAPI(api_key=KEY) as server:
        yield server


def test_the_cluster_pays_each_pair_once_and_writes_a_single_process_runs_bytes(cluster, api, tmp_path, capsys):
    files = inputs(tmp_path / "in", 24)
    done = run_cli(cluster, api, label_args(files, tmp_path / "cache", tmp_path / "ray.jsonl", "--ray", cluster.address,
                                            "--ray-block-size", 4, "--concurrency", 2, "--json"))
    assert done.returncode == 0, done.stderr
    prompts = user_prompts(api)
    assert len(prompts) == 24 and len(set(prompts)) == 24  # every pair paid, none twice, across both workers
    stats = json.loads(done.stdout.splitlines()[-1])
    assert (stats["new"], stats["cached"], stats["failed"], stats["requests"]) == (24, 0, 0, 24)
    labels = [json.loads(line) for line in (tmp_path / "ray.jsonl").open()]
    assert [(r["query_id"], r["doc_id"], r["grade"]) for r in labels] == [
        (f"q{i % 4}", f"d{i}", i % 5 + 1) for i in range(24)]  # input order, the planted grades

    # The single-process cached rerun over the same store: nothing sent, the same bytes.
    code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache", tmp_path / "single.jsonl"))
    assert code == 0, err
    assert api.total == 24
    assert (tmp_path / "single.jsonl").read_bytes() == (tmp_path / "ray.jsonl").read_bytes()
    # A first single-process run into another store: the same rows but for when and how fast each came.
    code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache2", tmp_path / "fresh.jsonl"))
    assert code == 0, err
    assert without_provenance(tmp_path / "fresh.jsonl") == without_provenance(tmp_path / "ray.jsonl")

    # The key reached the workers (the fake refuses any other) but was written nowhere.
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in api.requests)
    for root in (tmp_path, cluster.temp):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_socket():
                assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in done.stderr + done.stdout


def test_the_budget_holds_for_the_whole_cluster(cluster, api, tmp_path):
    """About $1 a request and $10 to spend: two workers with a budget each would pay about twice that."""
    files = inputs(tmp_path / "in", 40)
    prices = tmp_path / "prices.toml"
    prices.write_text('[openai."gpt-4.1-mini"]\ninput = 1000\noutput = 1000\n')
    api.latency = 0.05
    done = run_cli(cluster, api, label_args(files, tmp_path / "cache", tmp_path / "out.jsonl", "--ray", cluster.address,
                                            "--ray-block-size", 5, "--concurrency", 2, "--max-cost", 10,
                                            "--prices", prices, "--json"))
    assert done.returncode == 3, done.stderr
    assert "--max-cost reached" in done.stderr
    from labeller.store import open_store

    with open_store(str(tmp_path / "cache"), create=False) as store:
        paid = store.stats()
    assert 5 <= api.total == paid.entries  # every request paid is a stored verdict
    assert paid.cost_usd <= 10.0 + 1e-9
    stats = json.loads(done.stdout.splitlines()[-1])
    assert stats["cost_usd"] == pytest.approx(paid.cost_usd, abs=1e-6) and stats["requests"] == api.total
    assert stats["new"] == api.total and stats["skipped"] == 40 - api.total


def test_the_rate_limit_holds_for_the_whole_cluster(cluster, api, tmp_path):
    """300 requests a minute: 5 a second, a burst of at most 50 (ratelimit.TokenBucket holds ten seconds' worth).
    70 pairs then take four seconds or more from the first request to the last; a bucket per worker would let
    the two workers burst 50 each, all 70 at once."""
    files = inputs(tmp_path / "in", 70)
    done = run_cli(cluster, api, label_args(files, tmp_path / "cache", tmp_path / "out.jsonl", "--ray", cluster.address,
                                            "--ray-block-size", 10, "--concurrency", 8, "--rpm", 300))
    assert done.returncode == 0, done.stderr
    times = sorted(r.at for r in api.requests)
    assert len(times) == 70
    assert times[-1] - times[0] >= 3.6
    # Any run of requests: at most the burst plus what the rate refills over its span (and one for rounding).
    assert all(j - i + 1 <= 50 + 5 * (times[j] - times[i]) + 1 for i in range(70) for j in range(i, 70))


def test_the_python_api_and_a_pipelines_label_step_take_the_cluster(cluster, api, tmp_path, monkeypatch):
    """label(ray=...) returns the frame label() returns in one process; the label step's keys map to RayOptions."""
    import labeller
    from labeller.distributed import RayOptions
    from labeller.errors import ConfigError
    from labeller.pipelines.config import PipelineConfig
    from labeller.pipelines.steps import ray_options

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    files = inputs(tmp_path / "in", 8)
    frames = {}
    for name, ray in (("ray", RayOptions(address=cluster.address, block_size=3)), ("single", None)):
        frames[name] = labeller.label(str(files["pairs"]), queries=str(files["queries"]),
                                      corpus=str(files["corpus"]), judge=MODEL, cache=tmp_path / "cache", ray=ray)
    assert api.total == 8 and frames["ray"].equals(frames["single"])
    assert list(frames["ray"]["grade"]) == [i % 5 + 1 for i in range(8)]

    step = {"pipeline": "label_slice", "inputs": {"queries": "q.jsonl", "corpus": "c.jsonl"}}
    assert ray_options(PipelineConfig.model_validate({**step, "label": {"ray": "10.0.0.5:6379", "ray_workers": 2}})) \
        == RayOptions(address="10.0.0.5:6379", workers=2)
    assert ray_options(PipelineConfig.model_validate(step)) is None
    with pytest.raises(ConfigError, match="apply with label.ray"):
        ray_options(PipelineConfig.model_validate({**step, "label": {"ray_block_size": 10}}))


def test_a_postgresql_store_is_paid_once_by_the_cluster_and_a_rerun_pays_nothing(cluster, api, tmp_path, capsys,
                                                                                    postgres_url):
    """The multi-machine store: both workers write the same database; a second --ray run and a single process
    over it send nothing and write the same bytes; a first single-process run writes the same rows."""
    files = inputs(tmp_path / "in", 30)
    ray_args = ("--ray", cluster.address, "--ray-block-size", 5, "--concurrency", 2, "--json")
    done = run_cli(cluster, api, label_args(files, postgres_url, tmp_path / "ray.jsonl", *ray_args))
    assert done.returncode == 0, done.stderr
    prompts = user_prompts(api)
    assert len(prompts) == 30 and len(set(prompts)) == 30
    assert rows(tmp_path / "ray.jsonl") == planted(30)
    again = run_cli(cluster, api, label_args(files, postgres_url, tmp_path / "again.jsonl", *ray_args))
    assert again.returncode == 0 and api.total == 30, again.stderr
    stats = json.loads(again.stdout.splitlines()[-1])
    assert (stats["new"], stats["cached"], stats["requests"], stats["cost_usd"]) == (0, 30, 0, 0)
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "ray.jsonl").read_bytes()
    code, _, err = single_process(capsys, api, label_args(files, postgres_url, tmp_path / "single.jsonl"))
    assert code == 0 and api.total == 30, err
    assert (tmp_path / "single.jsonl").read_bytes() == (tmp_path / "ray.jsonl").read_bytes()
    code, _, err = single_process(capsys, api, label_args(files, tmp_path / "dir", tmp_path / "fresh.jsonl"))
    assert code == 0 and api.total == 60, err
    assert without_provenance(tmp_path / "fresh.jsonl") == without_provenance(tmp_path / "ray.jsonl")


def test_a_pipeline_run_with_label_ray_labels_on_the_cluster(cluster, api, tmp_path, monkeypatch):
    """`labeller run pipelines/label_slice.toml --set label.ray=ADDRESS`: the 410 pairs paid once across the
    cluster, and the same pipeline in one process over that store sends nothing and writes the same labels."""
    from labeller.pipelines import run_pipeline

    config, cache = PIPELINES / "label_slice.toml", tmp_path / "cache"
    settings = [f"output.cache={cache}"]
    on_cluster = [f"label.ray={cluster.address}", "label.ray_block_size=100", *settings]
    overrides = [word for setting in on_cluster for word in ("--set", setting)]
    done = run_cli(cluster, api, ["run", config, "--out", tmp_path / "ray", "--judge", MODEL, "--json", *overrides])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    prompts = user_prompts(api)
    assert len(prompts) == len(set(prompts)) == result["judge_requests"] == 410
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    single = run_pipeline(config, out_dir=tmp_path / "single", overrides=settings, judge=MODEL)
    assert single.status == "passed" and single.judge_requests == 0 and api.total == 410
    assert (tmp_path / "single" / "labels.jsonl").read_bytes() == (tmp_path / "ray" / "labels.jsonl").read_bytes()


def test_a_killed_driver_loses_nothing_and_a_rerun_pays_only_for_what_is_missing(cluster, api, tmp_path, capsys):
    """`--max-cost` on both runs. The driver is killed mid-run: its workers stop with it (nothing is sent after),
    the verdicts they stored stay, and the rerun pays for exactly the pairs not in the store, within a budget
    that paying for all 40 again would break."""
    from labeller.store import open_store

    files = inputs(tmp_path / "in", 40)
    prices = tmp_path / "prices.toml"
    prices.write_text('[openai."gpt-4.1-mini"]\ninput = 1000\noutput = 1000\n')
    api.latency = 0.25

    def label(out: str, budget: float, **popen):
        return run_cli(cluster, api, label_args(files, tmp_path / "cache", tmp_path / out, "--ray", cluster.address,
                                                "--ray-block-size", 5, "--concurrency", 2, "--max-cost", budget,
                                                "--prices", prices, "--json"), **popen)

    running = label("killed.jsonl", 100, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while api.total < 16 and time.monotonic() < deadline and running.poll() is None:
        time.sleep(0.05)
    assert api.total >= 16, running.communicate()[1]
    running.kill()
    at_kill = api.total
    running.communicate(timeout=30)
    quiet_since, seen = time.monotonic(), api.total  # the workers die with their driver: wait for the sending to stop
    while time.monotonic() - quiet_since < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
        if api.total != seen:
            quiet_since, seen = time.monotonic(), api.total
    with open_store(str(tmp_path / "cache"), create=False) as store:
        kept = store.stats()
    assert seen - at_kill <= 4  # at most one more attempt per worker slot (2 workers x --concurrency 2), then silence
    missing, each = 40 - kept.entries, kept.cost_usd / kept.entries
    assert 0 < missing <= 40 - 12 and not (tmp_path / "killed.jsonl").exists()

    budget = each * (missing + 6)  # room for the attempts in flight reserved at their worst case
    assert each * 40 > budget  # paying for every pair again would stop at the budget
    done = label("rerun.jsonl", budget)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.splitlines()[-1])
    assert stats["requests"] == stats["new"] == missing and api.total == seen + missing
    assert len(set(user_prompts(api))) == 40 and api.total <= 40 + 4  # only requests in flight at the kill, twice
    with open_store(str(tmp_path / "cache"), create=False) as store:
        paid = store.stats()
    assert paid.entries == 40 and stats["cost_usd"] == pytest.approx(paid.cost_usd - kept.cost_usd, abs=1e-6)
    assert rows(tmp_path / "rerun.jsonl") == planted(40)
    code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache", tmp_path / "single.jsonl"))
    assert code == 0 and api.total == seen + missing, err
    assert (tmp_path / "single.jsonl").read_bytes() == (tmp_path / "rerun.jsonl").read_bytes()


def test_the_vllm_processors_rows_cross_ray_data_intact(cluster, monkeypatch):
    """The self-hosted path as far as no GPU goes, on the cluster: ray.data.llm.build_processor runs preprocess and
    postprocess as Dataset.map stages with the rows in Arrow between them, and its vLLM stage reads sampling_params
    through Ray's own maybe_convert_ndarray_to_list. So: what would reach the engine after crossing Ray Data is the
    judge's request (messages, settings, the verdict's JSON schema), and a reply row that crossed it back becomes the
    verdict row postprocess makes of it in one process."""
    import ray
    from ray.llm._internal.batch.stages.common import maybe_convert_ndarray_to_list

    from labeller.distributed.blocks import block_frames
    from labeller.distributed.vllm import VllmJudging, split_results
    from labeller.records import Doc, Pair, Query
    from labeller.rubric import load_rubric

    judging = VllmJudging("Qwen/Qwen2.5-7B-Instruct", load_rubric("general"))
    queries = {"q1": Query(query_id="q1", text="cheap flights to Lisbon")}
    corpus = {f"d{i}": Doc(doc_id=f"d{i}", text=f"fare table {i}", fields={"title": f"Fares {i}"}) for i in range(6)}
    frames = list(block_frames([Pair(query_id="q1", doc_id=d) for d in corpus], queries, corpus, 2))

    def engine_like(row):  # what the vLLM stage reads of a row, and a reply carried over with the row's columns
        seen = {"messages": maybe_convert_ndarray_to_list(list(row["messages"])),
                "sampling_params": maybe_convert_ndarray_to_list(row["sampling_params"])}
        grade = int(row["doc_id"][1:]) % 5 + 1
        return {**row, "seen": json.dumps(seen), "num_input_tokens": 900, "num_generated_tokens": 12,
                "generated_text": json.dumps({"justification": "The fares match.", "grade": grade})}

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    try:
        replied = ray.data.from_pandas(frames).map(judging.preprocess).map(engine_like).materialize()
        crossed = replied.take_all()
        verdicts, failures = split_results(replied.map(judging.postprocess).take_all())
    finally:
        ray.shutdown()
    assert len(crossed) == 6 and not failures
    for row in crossed:
        here = judging.preprocess({k: row[k] for k in ("query_id", "doc_id", "query", "doc")})
        assert json.loads(row["seen"]) == {"messages": here["messages"], "sampling_params": here["sampling_params"]}
    assert json.loads(crossed[0]["seen"])["sampling_params"]["structured_outputs"]["json"]["required"] == [
        "justification", "grade"]
    in_one_process = [json.loads(judging.postprocess(row)["verdict"]) for row in crossed]
    verdicts, in_one_process = (sorted(({**v, "created_at": ""} for v in rows), key=lambda v: v["doc_id"])
                                for rows in (verdicts, in_one_process))  # Ray Data need not keep the order
    assert [(v["doc_id"], v["grade"]) for v in verdicts] == [(f"d{i}", i % 5 + 1) for i in range(6)]
    assert verdicts == in_one_process


def test_a_worker_killed_mid_run_loses_nothing(cluster, api, tmp_path, capsys):
    """Kept last: it takes a worker away. The surviving worker runs the dead one's blocks again; only the requests
    in flight when it died may be paid twice, and a rerun pays for nothing."""
    files = inputs(tmp_path / "in", 48)
    api.latency = 0.25
    running = run_cli(cluster, api, label_args(files, tmp_path / "cache", tmp_path / "out.jsonl", "--ray",
                                               cluster.address, "--ray-block-size", 6, "--concurrency", 2),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while api.total < 8 and time.monotonic() < deadline and running.poll() is None:
        time.sleep(0.05)
    assert api.total >= 8, running.communicate()[1]
    cluster.kill_node(cluster.groups[-1])  # the second worker node, daemons and workers
    _, err = running.communicate(timeout=150)
    assert running.returncode == 0, err
    prompts = user_prompts(api)
    assert len(set(prompts)) == 48 and len(prompts) <= 48 + 2  # at most its requests in flight again
    labels = [json.loads(line) for line in (tmp_path / "out.jsonl").open()]
    assert [(r["doc_id"], r["grade"]) for r in labels] == [(f"d{i}", i % 5 + 1) for i in range(48)]
    sent = api.total
    # a rerun (here in one process) pays for nothing
    code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache", tmp_path / "again.jsonl"))
    assert code == 0 and api.total == sent, err
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


@pytest.mark.parametrize("extra, message", [
    (["--ray", "not an address"], "is not a Ray address"),
    (["--ray", "127.0.0.1:{port}"], "no Ray cluster answers there"),
    (["--ray", "203.0.113.7:6379"], "a directory store (--cache DIR) is on one machine"),
    (["--ray", "--batch"], "--ray does not take --batch"),
    (["--ray", "--samples", "3", "--temperature", "0.5"], "--ray does not take --samples"),
    (["--ray", "--judge", "offline:lexical"], "--ray takes one --judge"),
    (["--ray-workers", "2"], "--ray-workers and --ray-block-size apply to --ray"),
])
def test_what_the_cluster_path_refuses(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    files = inputs(tmp_path / "in", 3)
    extra = [word.format(port=free_port()) for word in extra]
    code, _, err = cli(capsys, *label_args(files, tmp_path / "cache", tmp_path / "out.jsonl", *extra))
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out.jsonl").exists()
