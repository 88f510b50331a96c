"""A real local Ray cluster on loopback for the tests and the benchmarks: a head and N worker nodes.

Each node is a `ray start` of its own (the head with no CPU, so blocks run on the workers only), every port
picked free, every file under one temp dir. A node is stopped by killing its own processes, found by their
process group (`ray start` puts each node's daemons in one) and their children: never `ray stop`, which would
stop every Ray on the machine. The nodes run without any *_API_KEY in their environment: the key reaches
the workers only through the run itself (docs/ray.md).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (pgid, parent pid, command line) of every process we can read."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        found[int(entry.name)] = (int(fields[2]), int(fields[1]), cmdline)
    return found


class RayCluster:
    def __init__(self, root: Path, workers: int = 2) -> None:
        self.root, self.temp = root, root / "ray"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: list[int] = []  # one process group per node: the head first
        self.environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.environment.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")  # loopback only
        self.environment["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
        self._start(["--head", "--port", str(self.port), "--num-cpus", "0", "--temp-dir", str(self.temp),
                     "--include-dashboard", "false", "--dashboard-port", str(free_port())])
        for _ in range(workers):
            self.add_worker()

    def _node_args(self) -> list[str]:
        return ["--node-ip-address", "127.0.0.1", "--disable-usage-stats",
                "--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(free_port()),
                "--metrics-export-port", str(free_port()), "--runtime-env-agent-port", str(free_port()),
                "--min-worker-port", "0", "--max-worker-port", "0"]

    def add_worker(self) -> None:
        self._start(["--address", self.address, "--num-cpus", "1"])

    def _start(self, args: list[str]) -> None:
        """`ray start` in a session of its own: the node's daemons inherit its process group, which names the node."""
        starter = subprocess.Popen([RAY, "start", *args, *self._node_args()], env=self.environment, cwd=self.root,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.groups.append(starter.pid)
        output, _ = starter.communicate(timeout=START_TIMEOUT)
        if starter.returncode != 0:
            self.stop()
            raise RuntimeError(f"ray start failed: {output[-2000:]}")

    def node_pids(self, group: int) -> set[int]:
        """The processes of one node: its process group and every descendant (workers start their own groups)."""
        table = _processes()
        pids = {pid for pid, (pgid, _, _) in table.items() if pgid == group}
        grew = True
        while grew:
            more = {pid for pid, (_, parent, _) in table.items() if parent in pids} - pids
            pids |= more
            grew = bool(more)
        return pids

    def kill_node(self, group: int) -> None:
        assert group != os.getpgid(0), "never this process's own group"
        for pid in self.node_pids(group):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.groups.remove(group)

    def stop(self) -> None:
        for group in reversed(list(self.groups)):
            self.kill_node(group)
        time.sleep(0.5)
