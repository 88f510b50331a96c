"""CPU a fake OpenAI server spends per chat completion: tests/fakeapi.py against tests/leanapi.py.

The same --requests (3 KB prompts, each its own) sent 64 at a time by an aiohttp client to each server in turn; the
server process's CPU (utime + stime in /proc) over those requests, and its peak RSS.

    python benchmarks/fake_server_cpu.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import aiohttp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from leanapi import start as start_leanapi  # noqa: E402
from throughput import start_fakeapi  # noqa: E402

SYSTEM = "You grade relevance. " * 150


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def send(url: str, requests: int) -> None:
    at_once = asyncio.Semaphore(64)  # a request's clock starts when it is sent, not while it queues
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64),
                                     timeout=aiohttp.ClientTimeout(total=60)) as session:
        async def one(i: int) -> None:
            body = {"model": "gpt-4.1-mini", "temperature": 0.0, "max_completion_tokens": 400,
                    "messages": [{"role": "system", "content": SYSTEM},
                                 {"role": "user", "content": f"<query>q{i}</query><document>{'word ' * 400}</document>"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {}}}}
            async with at_once, session.post(url + "/v1/chat/completions", json=body,
                                             headers={"authorization": "Bearer sk-bench-unused"}) as reply:
                assert reply.status == 200, reply.status
                await reply.read()

        await asyncio.gather(*(one(i) for i in range(requests)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    requests = parser.parse_args().requests
    for name, start in (("tests/fakeapi.py", lambda: start_fakeapi(0.0)), ("tests/leanapi.py", start_leanapi)):
        server, url = start()
        try:
            before = cpu_seconds(server.pid)
            asyncio.run(send(url, requests))
            used = cpu_seconds(server.pid) - before
            peak = next(int(line.split()[1]) for line in open(f"/proc/{server.pid}/status") if line.startswith("VmHWM"))
            print(f"{name}: {used / requests * 1e3:.2f} ms CPU a request ({requests:,} requests), "
                  f"peak RSS {peak / 1024:.0f} MB", flush=True)
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
