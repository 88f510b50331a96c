"""A lean, fast fake OpenAI-compatible chat-completions server for the benchmarks' large runs.

tests/fakeapi.py (aiohttp, faults, noise, batch APIs) records every request (its memory grows by each request's
body: gigabytes over a million pairs) and spends ~0.25 ms of CPU a request; this one, a raw asyncio HTTP/1.1
keep-alive server meant to run in a process of its own, keeps only counters (GET /stats) and spends ~0.09 ms
(3,000 requests of ~3 KB each, 64 at a time). In a labelling run the client's ~1.5-2 ms a pair is what bounds
the pairs a second. It answers

- POST /v1/chat/completions: the relevance verdict `{"justification": ..., "grade": N}` with N the grade
  fakeapi.expected_grade gives the user message (its `[[grade:N]]` marker, else a hash of the text), so the
  labels of a run are checkable; as the message's content (response_format json_schema/json_object, text), or
  as a forced tool call's arguments when the request has `tool_choice: {"type": "function", ...}`. Token usage
  is about four characters a token, as fakeapi counts it;
- GET /v1/models: 404, as fakeapi without `served_model` (a server that does not say what it serves);
- GET /stats: {"total": judge requests answered, "connections": connections accepted}.

No faults, latency, logprobs or claim tasks: those are fakeapi's. A body must come with Content-Length
(the openai SDK always sends it); chunked bodies get 411.

Standalone: python tests/leanapi.py [--port 8124]  (prints "leanapi listening on http://127.0.0.1:PORT")
In a test:  with LeanAPI() as api: ... api.url  (the server in a child process)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakeapi import _text, expected_grade  # noqa: E402  (the same grade as fakeapi: one rule for both servers)

_REASONS = {200: b"OK", 400: b"Bad Request", 404: b"Not Found", 411: b"Length Required"}


def verdict_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    """The chat completion answering `body`: the verdict of its user message, as content or a tool call."""
    messages = body.get("messages") or []
    system = "".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    user = "".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
    grade = expected_grade(user)
    content = orjson.dumps({"justification": f"The document matches the query at grade {grade}.",
                            "grade": grade}).decode()
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name", "")
        message = {"role": "assistant", "content": None, "refusal": None,
                   "tool_calls": [{"id": f"call_{number}", "type": "function",
                                   "function": {"name": name, "arguments": content}}]}
    prompt_tokens = (len(system) + len(user)) // 4 + 1
    return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "unknown"),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "message": message}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20,
                      "prompt_tokens_details": {"cached_tokens": 0}}}


class Server:
    def __init__(self) -> None:
        self.total = 0
        self.connections = 0

    def answer(self, method: bytes, path: bytes, body: bytes) -> tuple[int, bytes]:
        path = path.split(b"?", 1)[0]
        if method == b"POST" and path == b"/v1/chat/completions":
            try:
                request = orjson.loads(body)
            except orjson.JSONDecodeError:
                return 400, orjson.dumps({"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            if not isinstance(request, dict):
                return 400, orjson.dumps({"error": {"message": "body is not an object", "type": "invalid_request_error"}})
            self.total += 1
            return 200, orjson.dumps(verdict_reply(request, self.total))
        if method == b"GET" and path == b"/stats":
            return 200, orjson.dumps({"total": self.total, "connections": self.connections})
        return 404, orjson.dumps({"error": {"message": f"no route {path.decode(errors='replace')}",
                                            "type": "not_found"}})

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.split(b"\r\n")
                method, path, version = (lines[0].split(b" ") + [b"", b""])[:3]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    headers[name.strip().lower()] = value.strip()
                if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                    status, reply, close = 411, b'{"error": {"message": "send Content-Length"}}', True
                else:
                    body = await reader.readexactly(int(headers.get(b"content-length", b"0") or 0))
                    status, reply = self.answer(method, path, body)
                    close = headers.get(b"connection", b"").lower() == b"close" or version == b"HTTP/1.0"
                writer.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s"
                             % (status, _REASONS[status], len(reply),
                                b"connection: close\r\n" if close else b"", reply))
                await writer.drain()
                if close:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return
        finally:
            writer.close()


async def serve(port: int) -> None:
    server = Server()
    listening = await asyncio.start_server(server.connection, "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(f"leanapi listening on http://127.0.0.1:{listening.sockets[0].getsockname()[1]}", flush=True)
    async with listening:
        await stop.wait()
    print(orjson.dumps({"total": server.total, "connections": server.connections}).decode(), flush=True)


def start(port: int = 0) -> tuple[subprocess.Popen, str]:
    """The server in a child process: (process, base URL without /v1)."""
    proc = subprocess.Popen([sys.executable, "-P", __file__, "--port", str(port)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ""})
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"leanapi did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


class LeanAPI:
    """`with LeanAPI() as api:` a server in a child process; api.url, api.stop() gives its final counts."""

    def __enter__(self) -> LeanAPI:
        self.proc, self.url = start()
        return self

    def stop(self) -> dict[str, int]:
        if self.proc.poll() is None:
            self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        return orjson.loads(out.strip().splitlines()[-1]) if out.strip() else {}

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(serve(parser.parse_args().port))
