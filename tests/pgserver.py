"""A throwaway PostgreSQL server from the machine's own Debian package (stdlib only).

Used by .ci/run (before the test command), by the test session when no server is configured, and by
the benchmarks. initdb and pg_ctl come from /usr/lib/postgresql/<version>/bin (not on PATH); as root
they run as the postgres user (PostgreSQL refuses root), in a temp dir that user owns; trust auth on
127.0.0.1 and a unix socket in that dir only, on a free port; fsync off unless asked (the data is thrown
away, and a test's process being killed does not need a durable server).

    python3 tests/pgserver.py start DIR [--durable]   # prints the URL; DIR must not exist
    python3 tests/pgserver.py stop DIR                # stops the server and removes DIR
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path


def find_bin() -> Path | None:
    """The bin directory holding initdb and pg_ctl, newest version first; None if PostgreSQL is absent."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]), reverse=True)
    if found:
        return Path(found[0]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def start(root: str | Path, *, durable: bool = False) -> str:
    """Start a server with its data under `root` (created); return its URL."""
    bindir = find_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
    root = Path(root)
    root.mkdir(parents=True)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    subprocess.run(_as_server_user([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                                    "--no-sync", "-E", "UTF8", "--locale=C"]),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    options = f"-p {port} -k {root} -h 127.0.0.1" + ("" if durable else " -c fsync=off -c full_page_writes=off")
    subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                                    "-o", options, "-w", "-t", "60", "start"]),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    (root / "url").write_text(f"postgresql://postgres@127.0.0.1:{port}/postgres")
    return (root / "url").read_text()


def stop(root: str | Path) -> None:
    root = Path(root)
    bindir = find_bin()
    if bindir is not None and (root / "data" / "postmaster.pid").exists():
        subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    command, directory, *flags = sys.argv[1:]
    if command == "start":
        print(start(directory, durable="--durable" in flags))
    elif command == "stop":
        stop(directory)
    else:
        sys.exit(f"usage: {sys.argv[0]} start|stop DIR")
