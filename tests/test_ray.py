"""`labeller label --ray` on a real local Ray cluster (a head and two workers on loopback, tests/raycluster.py)
against the fake OpenAI API: each pair paid once across the cluster, the output byte for byte a single-process
cached rerun's, the budget and the rate limit held for the whole cluster, a worker killed mid-run losing nothing.

The nodes run without the API key in their environment and the fake API refuses any other key: the workers
can only have it from the run (through the coordinator), and it must appear in no output, store or Ray log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cli_helpers import cli
from fakeapi import FakeAPI

if not os.environ.get("CI"):  # in CI the dev extra installs Ray: a missing Ray fails there, never skips
    pytest.importorskip("ray", reason="the ray extra (pip install 'labeller-relevance[ray]') is not installed")

from ray_helpers import (KEY, MODEL, inputs, label_args, run_cli, single_process, user_prompts,  # noqa: E402
                         without_provenance)
from raycluster import RayCluster, free_port  # noqa: E402


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
