"""`labeller label --ray` with no address: labeller starts a Ray of its own on this machine, labels through it, and
stops it again. The run is the real CLI in a process of its own, the real openai SDK against the fake API.

Every process of that Ray (GCS, raylet, workers, agents) descends from the labeller process and inherits its
environment, so a marker in that environment finds them: seen while the run is on (so the check can see them),
gone once it has exited (nothing leaked). RAY_TMPDIR keeps its session files, and any `ray start` cluster another
run may have left at the default /tmp/ray (which `--ray` alone would attach to), out of the way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

if not os.environ.get("CI"):  # in CI the dev extra installs Ray: a missing Ray fails there, never skips
    pytest.importorskip("ray", reason="the ray extra (pip install 'labeller-relevance[ray]') is not installed")

from fakeapi import FakeAPI  # noqa: E402
from ray_helpers import (KEY, inputs, label_args, planted, rows, run_cli, single_process,  # noqa: E402
                         user_prompts, without_provenance)


class LocalRay:
    """The environment a `--ray` run with no address gets, and the processes carrying its marker."""

    def __init__(self, temp: Path) -> None:
        self.marker = f"labeller-test-{uuid.uuid4().hex}"
        self.environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "RAY_ADDRESS"}
        self.environment.update(RAY_TMPDIR=str(temp), RAY_USAGE_STATS_ENABLED="0", LABELLER_TEST_MARK=self.marker,
                                PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                            os.environ.get("PYTHONPATH", "")]))

    def processes(self) -> dict[int, str]:
        """pid -> command line of every live process whose environment carries the marker."""
        found = {}
        needle = f"LABELLER_TEST_MARK={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and needle in (entry / "environ").read_bytes().split(b"\0"):
                    if "(Z)" not in (entry / "stat").read_text():  # a zombie has exited; it only awaits its parent
                        found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
        return found


@pytest.fixture
def local(tmp_path):
    temp = Path(tempfile.mkdtemp(prefix="lrl-", dir="/tmp"))  # Ray's socket paths must stay under 108 bytes
    ray = LocalRay(temp)
    yield ray
    for pid in ray.processes():  # only if the test failed: never leave them running
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    shutil.rmtree(temp, ignore_errors=True)


def test_ray_with_no_address_starts_a_local_ray_labels_like_one_process_and_stops_it(local, tmp_path, capsys):
    files = inputs(tmp_path / "in", 24)
    with FakeAPI(api_key=KEY) as api:
        api.latency = 0.1
        running = run_cli(local, api, label_args(files, tmp_path / "cache", tmp_path / "ray.jsonl", "--ray",
                                                 "--ray-block-size", 4, "--concurrency", 2, "--json"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen: dict[int, str] = {}
        while running.poll() is None:
            seen.update(local.processes())
            time.sleep(0.2)
        out, err = running.communicate()
        assert running.returncode == 0, err
        # It was a Ray of its own: its raylet and GCS carried this run's environment.
        assert any("raylet" in command for command in seen.values()), seen
        assert any("gcs_server" in command for command in seen.values()), seen
        deadline = time.monotonic() + 15
        while local.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert local.processes() == {}, "the local Ray outlived the run"

        prompts = user_prompts(api)
        assert len(prompts) == 24 and len(set(prompts)) == 24  # every pair paid once
        stats = json.loads(out.splitlines()[-1])
        assert (stats["new"], stats["failed"], stats["requests"]) == (24, 0, 24)
        assert rows(tmp_path / "ray.jsonl") == planted(24)
        # One process over the same store: nothing sent, the same bytes; into a store of its own: the same rows.
        code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache", tmp_path / "single.jsonl"))
        assert code == 0 and api.total == 24, err
        assert (tmp_path / "single.jsonl").read_bytes() == (tmp_path / "ray.jsonl").read_bytes()
        code, _, err = single_process(capsys, api, label_args(files, tmp_path / "cache2", tmp_path / "fresh.jsonl"))
        assert code == 0 and api.total == 48, err
        assert without_provenance(tmp_path / "fresh.jsonl") == without_provenance(tmp_path / "ray.jsonl")
